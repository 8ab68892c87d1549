package misc

import (
	miscops "github.com/switchyard-hal/switchyard/core/ops/misc"

	"fmt"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.RegisterKernel("", "Einsum", einsumKernel)
}

// odometer advances the multi-index cnt over sizes sz, keeping each
// operand's offset off[k] in step (st[k][j] is label j's stride in operand k).
func odometer(cnt, sz []int, st [][]int, off []int) {
	for j := len(cnt) - 1; j >= 0; j-- {
		cnt[j]++
		for k := range off {
			off[k] += st[k][j]
		}
		if cnt[j] < sz[j] {
			return
		}
		for k := range off {
			off[k] -= st[k][j] * sz[j]
		}
		cnt[j] = 0
	}
}

type operand[T graph.Numeric] struct {
	data   []T
	labels []int
	shape  []int
}

// contract computes out[outLabels] = sum over the other labels of the
// product of the operands.
func contract[T graph.Numeric](ops []operand[T], outLabels []int, ld map[int]int) operand[T] {
	inOut := map[int]bool{}
	for _, l := range outLabels {
		inOut[l] = true
	}
	var sumLabels []int
	seen := map[int]bool{}
	for _, op := range ops {
		for _, l := range op.labels {
			if !inOut[l] && !seen[l] {
				seen[l] = true
				sumLabels = append(sumLabels, l)
			}
		}
	}
	// per operand, per label: element stride (repeated labels add up, which
	// walks the diagonal; broadcast size-1 dims contribute 0)
	stride := make([]map[int]int, len(ops))
	for k, op := range ops {
		st := kernels.Strides(op.shape)
		stride[k] = map[int]int{}
		for p, l := range op.labels {
			if op.shape[p] != 1 {
				stride[k][l] += st[p]
			}
		}
	}
	sizes := func(labels []int) ([]int, int) {
		sz := make([]int, len(labels))
		total := 1
		for i, l := range labels {
			sz[i] = ld[l]
			total *= sz[i]
		}
		return sz, total
	}
	steps := func(labels []int) [][]int {
		st := make([][]int, len(ops))
		for k := range ops {
			st[k] = make([]int, len(labels))
			for j, l := range labels {
				st[k][j] = stride[k][l]
			}
		}
		return st
	}
	oSz, outN := sizes(outLabels)
	sSz, sumN := sizes(sumLabels)
	oSt, sSt := steps(outLabels), steps(sumLabels)
	res := operand[T]{data: make([]T, outN), labels: append([]int{}, outLabels...), shape: oSz}
	base := make([]int, len(ops))
	off := make([]int, len(ops))
	oCnt, sCnt := make([]int, len(oSz)), make([]int, len(sSz))
	for i := 0; i < outN; i++ {
		var acc T
		copy(off, base)
		for s := 0; s < sumN; s++ {
			p := T(1)
			for k, op := range ops {
				p *= op.data[off[k]]
			}
			acc += p
			odometer(sCnt, sSz, sSt, off)
		}
		res.data[i] = acc
		odometer(oCnt, oSz, oSt, base)
	}
	return res
}

// einsumRun contracts the operands left to right, keeping at each step only
// the labels still needed by later operands or the output.
func einsumRun[T graph.Numeric](sp *miscops.EinsumSpec, datas [][]T, shapes [][]int, ld map[int]int) (operand[T], error) {
	ops := make([]operand[T], len(datas))
	for i := range datas {
		ops[i] = operand[T]{data: datas[i], labels: sp.Terms[i], shape: shapes[i]}
	}
	if len(ops) == 1 {
		return contract(ops, sp.Out, ld), nil
	}
	cur := ops[0]
	for i := 1; i < len(ops); i++ {
		keep := sp.Out
		if i < len(ops)-1 {
			need := map[int]bool{}
			for _, l := range sp.Out {
				need[l] = true
			}
			for _, op := range ops[i+1:] {
				for _, l := range op.labels {
					need[l] = true
				}
			}
			keep = nil
			seen := map[int]bool{}
			for _, l := range append(append([]int{}, cur.labels...), ops[i].labels...) {
				if need[l] && !seen[l] {
					seen[l] = true
					keep = append(keep, l)
				}
			}
		}
		shape := make([]int, len(keep))
		for j, l := range keep {
			shape[j] = ld[l]
		}
		if _, err := graph.CheckAlloc(graph.Float64, shape); err != nil {
			return cur, fmt.Errorf("intermediate result: %w", err)
		}
		cur = contract([]operand[T]{cur, ops[i]}, keep, ld)
	}
	return cur, nil
}

func einsumTyped[T graph.Numeric](ctx *kernels.Context, n *graph.Node, sp *miscops.EinsumSpec, in []*graph.Tensor, ld map[int]int) (*graph.Tensor, error) {
	datas := make([][]T, len(in))
	shapes := make([][]int, len(in))
	for i, t := range in {
		datas[i] = t.Data.([]T)
		shapes[i] = t.Shape
	}
	r, err := einsumRun(sp, datas, shapes, ld)
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	out, err := alloc(ctx, n, in[0].DType, r.shape)
	if err != nil {
		return nil, err
	}
	copy(out.Data.([]T), r.data)
	return out, nil
}

// einsumKernel evaluates the Einstein summation: labels repeated within an
// operand take the diagonal, labels absent from the output are summed, "..."
// broadcasts, and an implicit output lists the ellipsis dims and then the
// labels seen once, in ASCII order.
func einsumKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	if len(in) == 0 {
		return nil, kernels.Invalidf(n, "no inputs")
	}
	ranks := make([]int, len(in))
	shapes := make([][]int, len(in))
	for i, t := range in {
		if err := checkIn(n, t, fmt.Sprintf("Inputs[%d]", i)); err != nil {
			return nil, err
		}
		if t.DType != in[0].DType {
			return nil, kernels.Invalidf(n, "input dtypes differ: %v and %v", in[0].DType, t.DType)
		}
		ranks[i], shapes[i] = t.Rank(), t.Shape
	}
	sp, err := miscops.ParseEinsum(n.AttrString("equation", ""), ranks)
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	ld, err := sp.LabelDims(shapes)
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	oshape := make([]int, len(sp.Out))
	for i, l := range sp.Out {
		oshape[i] = ld[l]
	}
	if _, err := graph.CheckAlloc(in[0].DType, oshape); err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	var out *graph.Tensor
	switch in[0].Data.(type) {
	case []float32, []float64, []graph.F16, []graph.BF16:
		datas := make([][]float64, len(in))
		for i, t := range in {
			datas[i] = t.Float64s()
		}
		r, e := einsumRun(sp, datas, shapes, ld)
		if e != nil {
			return nil, kernels.Invalidf(n, "%v", e)
		}
		out, err = floatsOut(ctx, n, in[0].DType, r.shape, r.data)
	case []int8:
		out, err = einsumTyped[int8](ctx, n, sp, in, ld)
	case []int16:
		out, err = einsumTyped[int16](ctx, n, sp, in, ld)
	case []int32:
		out, err = einsumTyped[int32](ctx, n, sp, in, ld)
	case []int64:
		out, err = einsumTyped[int64](ctx, n, sp, in, ld)
	case []uint8:
		out, err = einsumTyped[uint8](ctx, n, sp, in, ld)
	case []uint16:
		out, err = einsumTyped[uint16](ctx, n, sp, in, ld)
	case []uint32:
		out, err = einsumTyped[uint32](ctx, n, sp, in, ld)
	case []uint64:
		out, err = einsumTyped[uint64](ctx, n, sp, in, ld)
	default:
		return nil, kernels.Unsupportedf(n, "dtype %v", in[0].DType)
	}
	return wrap(out, err)
}
