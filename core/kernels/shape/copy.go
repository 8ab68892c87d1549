package shape

import (
	"fmt"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// plan describes a strided block copy: for every index vector i over shape,
// dst[dOff + Σ i[k]*dSt[k]] = src[sOff + Σ i[k]*sSt[k]]. Source strides may be
// zero (broadcast) or negative (reversed slices).
type plan struct {
	shape    []int
	sSt, dSt []int
	sOff     int
	dOff     int
}

// runPlan polls done every kernels.StopCheckElems elements and stops early
// once it is closed (copyPlan then returns the context's error).

// simplify drops size-1 dims and merges adjacent dims that are contiguous in
// both source and destination, so the innermost loop is as long as possible.
func (p plan) simplify() plan {
	var q plan
	q.sOff, q.dOff = p.sOff, p.dOff
	for k, d := range p.shape {
		if d == 1 {
			continue
		}
		if n := len(q.shape); n > 0 && q.sSt[n-1] == p.sSt[k]*d && q.dSt[n-1] == p.dSt[k]*d {
			q.shape[n-1] *= d
			q.sSt[n-1] = p.sSt[k]
			q.dSt[n-1] = p.dSt[k]
			continue
		}
		q.shape = append(q.shape, d)
		q.sSt = append(q.sSt, p.sSt[k])
		q.dSt = append(q.dSt, p.dSt[k])
	}
	return q
}

func runPlan[T any](done <-chan struct{}, dst, src []T, p plan) {
	for _, d := range p.shape {
		if d == 0 {
			return
		}
	}
	p = p.simplify()
	n := len(p.shape)
	if n == 0 {
		dst[p.dOff] = src[p.sOff]
		return
	}
	inner, iss, ids := p.shape[n-1], p.sSt[n-1], p.dSt[n-1]
	outer := 1
	for _, d := range p.shape[:n-1] {
		outer *= d
	}
	counter := make([]int, n)
	so, do := p.sOff, p.dOff
	sinceCheck := 0
	for k := 0; k < outer; k++ {
		if sinceCheck += inner; sinceCheck >= kernels.StopCheckElems {
			if kernels.Done(done) {
				return
			}
			sinceCheck = 0
		}
		switch {
		case iss == 1 && ids == 1:
			copy(dst[do:do+inner], src[so:so+inner])
		case iss == 0:
			v := src[so]
			for j, o := 0, do; j < inner; j, o = j+1, o+ids {
				dst[o] = v
			}
		default:
			for j, s, o := 0, so, do; j < inner; j, s, o = j+1, s+iss, o+ids {
				dst[o] = src[s]
			}
		}
		for d := n - 2; d >= 0; d-- {
			counter[d]++
			so += p.sSt[d]
			do += p.dSt[d]
			if counter[d] < p.shape[d] {
				break
			}
			so -= p.sSt[d] * p.shape[d]
			do -= p.dSt[d] * p.shape[d]
			counter[d] = 0
		}
	}
}

// copyPlan runs p from src into dst, which must hold the same slice type,
// until ctx is done (then it returns the node's stop error).
func copyPlan(ctx *kernels.Context, n *graph.Node, dst, src *graph.Tensor, p plan) error {
	if err := copyPlanUntil(kernels.DoneOf(ctx), dst, src, p); err != nil {
		return err
	}
	if ctx.Stopped() {
		return ctx.Stop(n)
	}
	return nil
}

func copyPlanUntil(done <-chan struct{}, dst, src *graph.Tensor, p plan) error {
	if dst.DType != src.DType {
		return fmt.Errorf("%w: dtype mismatch %v vs %v", kernels.ErrInvalid, dst.DType, src.DType)
	}
	switch d := dst.Data.(type) {
	case []float32:
		runPlan(done, d, src.Data.([]float32), p)
	case []float64:
		runPlan(done, d, src.Data.([]float64), p)
	case []graph.F16:
		runPlan(done, d, src.Data.([]graph.F16), p)
	case []graph.BF16:
		runPlan(done, d, src.Data.([]graph.BF16), p)
	case []int8:
		runPlan(done, d, src.Data.([]int8), p)
	case []int16:
		runPlan(done, d, src.Data.([]int16), p)
	case []int32:
		runPlan(done, d, src.Data.([]int32), p)
	case []int64:
		runPlan(done, d, src.Data.([]int64), p)
	case []uint8:
		runPlan(done, d, src.Data.([]uint8), p)
	case []uint16:
		runPlan(done, d, src.Data.([]uint16), p)
	case []uint32:
		runPlan(done, d, src.Data.([]uint32), p)
	case []uint64:
		runPlan(done, d, src.Data.([]uint64), p)
	case []bool:
		runPlan(done, d, src.Data.([]bool), p)
	case []string:
		runPlan(done, d, src.Data.([]string), p)
	default:
		return fmt.Errorf("%w: dtype %v", kernels.ErrUnsupported, dst.DType)
	}
	return nil
}

// checkInput verifies that a kernel input tensor is internally consistent,
// so that kernels can index its data without panicking.
func checkInput(n *graph.Node, t *graph.Tensor, what string) error {
	if t == nil {
		return kernels.Invalidf(n, "missing input %s", what)
	}
	if err := t.Check(); err != nil {
		return kernels.Invalidf(n, "input %s: %v", what, err)
	}
	return nil
}

// copyReshaped is a tensor of shape with in's elements in order: a view
// of in where the executor allows one (Context.View), else a copy.
func copyReshaped(ctx *kernels.Context, n *graph.Node, in *graph.Tensor, shape []int) (*graph.Tensor, error) {
	cnt, err := graph.NumElements(shape)
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	if cnt != in.Len() {
		return nil, kernels.Invalidf(n, "cannot reshape %v (%d elements) to %v (%d elements)", in.Shape, in.Len(), shape, cnt)
	}
	if v := ctx.View(in, shape); v != nil {
		return v, nil
	}
	out, err := ctx.NewUninit(in.DType, shape)
	if err != nil {
		return nil, kernels.Errorf(n, "%w", err)
	}
	graph.CopyData(out.Data, in.Data)
	return out, nil
}

// intsInput reads an integer tensor input (shape, axes, repeats…) as int64s.
func intsInput(n *graph.Node, t *graph.Tensor, what string) ([]int64, error) {
	if err := checkInput(n, t, what); err != nil {
		return nil, err
	}
	if !t.DType.IsInteger() {
		return nil, kernels.Invalidf(n, "input %s must be an integer tensor, got %v", what, t.DType)
	}
	if t.Rank() > 1 {
		return nil, kernels.Invalidf(n, "input %s must be 1-D, got shape %v", what, t.Shape)
	}
	return t.Int64s(), nil
}
