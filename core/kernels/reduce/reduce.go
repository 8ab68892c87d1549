package reduce

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	reduceops "github.com/switchyard-hal/switchyard/core/ops/reduce"
)

// The Reduce* table, axes handling and inference live in core/ops/reduce.
type (
	reduceKind = reduceops.Kind
	reduceOp   = reduceops.Op
)

const (
	rSum       = reduceops.Sum
	rMean      = reduceops.Mean
	rMax       = reduceops.Max
	rMin       = reduceops.Min
	rProd      = reduceops.Prod
	rL1        = reduceops.L1
	rL2        = reduceops.L2
	rLogSum    = reduceops.LogSum
	rLogSumExp = reduceops.LogSumExp
	rSumSquare = reduceops.SumSquare
)

func init() {
	for _, op := range reduceops.Ops {
		kernels.RegisterKernel("", op.Name, func(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
			return reduceKernel(op, ctx, n, in)
		})
	}
}

// reduceKernel is the kernel of the Reduce* op op.
func reduceKernel(op reduceOp, ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := in[0]
	if err := checkTensor(n, x, "data"); err != nil {
		return nil, err
	}
	axesT := kernels.Input(in, 1)
	if axesT != nil {
		if err := axesT.Check(); err != nil {
			return nil, kernels.Invalidf(n, "axes: %v", err)
		}
		if !axesT.DType.IsInteger() {
			return nil, kernels.Invalidf(n, "axes has dtype %v, want int64", axesT.DType)
		}
		if axesT.Rank() > 1 {
			return nil, kernels.Invalidf(n, "axes must be 1-D, got shape %v", axesT.Shape)
		}
	}
	axes, _, noop := op.AxesSpec(n, ctx.Opset, axesT, axesT != nil)
	if len(axes) == 0 && noop {
		return []*graph.Tensor{x.Clone()}, nil
	}
	mask, err := reduceops.ReducedMask(n, axes, x.Rank())
	if err != nil {
		return nil, err
	}
	keep := n.AttrInt("keepdims", 1) != 0
	var outShape []int
	count := 1 // elements folded into each output
	for i, d := range x.Shape {
		switch {
		case !mask[i]:
			outShape = append(outShape, d)
		case keep:
			outShape = append(outShape, 1)
			count *= d
		default:
			count *= d
		}
	}
	if outShape == nil {
		outShape = []int{}
	}
	if x.DType == graph.Bool && op.Kind != rMax && op.Kind != rMin {
		return nil, kernels.Unsupportedf(n, "dtype bool")
	}
	out, err := ctx.New(x.DType, outShape)
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	// the index map and the float64 widening are passes over the whole
	// input: not started once the context is done
	if ctx.Stopped() {
		return nil, ctx.Stop(n)
	}
	idx := outIndex(x.Shape, mask)
	if ctx.Stopped() {
		return nil, ctx.Stop(n)
	}
	switch d := x.Data.(type) {
	case []float32, []float64, []graph.F16, []graph.BF16:
		vals := reduceFloat(kernels.DoneOf(ctx), op.Kind, x.Float64s(), idx, out.Len(), count)
		storeFloat64(out, vals)
	case []int8:
		reduceInts(kernels.DoneOf(ctx), op.Kind, d, idx, out.Data.([]int8), count)
	case []int16:
		reduceInts(kernels.DoneOf(ctx), op.Kind, d, idx, out.Data.([]int16), count)
	case []int32:
		reduceInts(kernels.DoneOf(ctx), op.Kind, d, idx, out.Data.([]int32), count)
	case []int64:
		reduceInts(kernels.DoneOf(ctx), op.Kind, d, idx, out.Data.([]int64), count)
	case []uint8:
		reduceInts(kernels.DoneOf(ctx), op.Kind, d, idx, out.Data.([]uint8), count)
	case []uint16:
		reduceInts(kernels.DoneOf(ctx), op.Kind, d, idx, out.Data.([]uint16), count)
	case []uint32:
		reduceInts(kernels.DoneOf(ctx), op.Kind, d, idx, out.Data.([]uint32), count)
	case []uint64:
		reduceInts(kernels.DoneOf(ctx), op.Kind, d, idx, out.Data.([]uint64), count)
	case []bool:
		o := out.Data.([]bool)
		all := op.Kind == rMin // identity: Max → false (any), Min → true (all)
		for i := range o {
			o[i] = all
		}
		for i, v := range d {
			if all {
				o[idx[i]] = o[idx[i]] && v
			} else {
				o[idx[i]] = o[idx[i]] || v
			}
		}
	default:
		return nil, kernels.Unsupportedf(n, "dtype %v", x.DType)
	}
	if ctx.Stopped() {
		return nil, ctx.Stop(n)
	}
	return ctx.Outputs(out), nil
}

// outIndex maps every input element (row-major) to the flat index of the
// output element it folds into; mask marks the reduced dimensions.
func outIndex(shape []int, mask []bool) []int {
	// output strides per input dim (0 for reduced dims)
	st := make([]int, len(shape))
	acc := 1
	for i := len(shape) - 1; i >= 0; i-- {
		if !mask[i] {
			st[i] = acc
			acc *= shape[i]
		}
	}
	return kernels.StridedOffsets(shape, st)
}

// reduceFloat reduces x (already widened to float64) into outN results,
// a block of kernels.StopCheckElems inputs at a time until done is closed
// (then the result is incomplete: the kernel returns its stop error).
func reduceFloat(done <-chan struct{}, kind reduceKind, x []float64, idx []int, outN, count int) []float64 {
	acc := make([]float64, outN)
	init := 0.0
	switch kind {
	case rMax, rLogSumExp:
		init = math.Inf(-1)
	case rMin:
		init = math.Inf(1)
	case rProd:
		init = 1
	}
	for i := range acc {
		acc[i] = init
	}
	blocks(done, len(x), func(lo, hi int) {
		xs, is := x[lo:hi], idx[lo:hi]
		switch kind {
		case rSum, rMean, rLogSum:
			for i, v := range xs {
				acc[is[i]] += v
			}
		case rSumSquare, rL2:
			for i, v := range xs {
				acc[is[i]] += v * v
			}
		case rL1:
			for i, v := range xs {
				acc[is[i]] += math.Abs(v)
			}
		case rProd:
			for i, v := range xs {
				acc[is[i]] *= v
			}
		case rMax, rLogSumExp:
			for i, v := range xs {
				// NaN propagates: once acc is NaN no comparison replaces it.
				if a := acc[is[i]]; v != v || v > a {
					if a == a {
						acc[is[i]] = v
					}
				}
			}
		case rMin:
			for i, v := range xs {
				if a := acc[is[i]]; v != v || v < a {
					if a == a {
						acc[is[i]] = v
					}
				}
			}
		}
	})
	switch kind {
	case rMean:
		for i := range acc {
			acc[i] /= float64(count) // empty set: 0/0 = NaN
		}
	case rL2:
		for i := range acc {
			acc[i] = math.Sqrt(acc[i])
		}
	case rLogSum:
		for i := range acc {
			acc[i] = math.Log(acc[i])
		}
	case rLogSumExp:
		maxes := acc
		sums := make([]float64, outN)
		blocks(done, len(x), func(lo, hi int) {
			for i, v := range x[lo:hi] {
				j := idx[lo+i]
				if m := maxes[j]; !math.IsInf(m, 0) && m == m {
					sums[j] += math.Exp(v - m)
				}
			}
		})
		for i, m := range maxes {
			if !math.IsInf(m, 0) && m == m {
				acc[i] = m + math.Log(sums[i])
			}
			// an infinite or NaN maximum is the result itself (empty → -inf)
		}
	}
	return acc
}

// reduceInts reduces integer data with native (wrapping) arithmetic; the
// mean, L2, LogSum and LogSumExp are computed in float64 and truncated.
// Like reduceFloat it gives up once done is closed.
func reduceInts[T intElem](done <-chan struct{}, kind reduceKind, x []T, idx []int, out []T, count int) {
	switch kind {
	case rMean, rL2, rLogSum, rLogSumExp:
		xf := make([]float64, len(x))
		for i, v := range x {
			xf[i] = float64(v)
		}
		vals := reduceFloat(done, kind, xf, idx, len(out), count)
		for i, v := range vals {
			out[i] = kernels.SatInt[T](math.Trunc(v))
		}
		return
	}
	lo, hi, _, _ := kernels.IntRange[T]()
	switch kind {
	case rMax:
		for i := range out {
			out[i] = lo
		}
	case rMin:
		for i := range out {
			out[i] = hi
		}
	case rProd:
		for i := range out {
			out[i] = 1
		}
	}
	blocks(done, len(x), func(b, e int) {
		xs, is := x[b:e], idx[b:e]
		switch kind {
		case rMax:
			for i, v := range xs {
				if v > out[is[i]] {
					out[is[i]] = v
				}
			}
		case rMin:
			for i, v := range xs {
				if v < out[is[i]] {
					out[is[i]] = v
				}
			}
		case rProd:
			for i, v := range xs {
				out[is[i]] *= v
			}
		case rSum:
			for i, v := range xs {
				out[is[i]] += v
			}
		case rSumSquare:
			for i, v := range xs {
				out[is[i]] += v * v
			}
		case rL1:
			for i, v := range xs {
				if v < 0 {
					v = -v
				}
				out[is[i]] += v
			}
		}
	})
}

// blocks calls fn over [0,n) in blocks of kernels.StopCheckElems, checking
// done before each; it stops early once done is closed.
func blocks(done <-chan struct{}, n int, fn func(lo, hi int)) {
	for lo := 0; lo < n; lo += kernels.StopCheckElems {
		if kernels.Done(done) {
			return
		}
		fn(lo, min(lo+kernels.StopCheckElems, n))
	}
}
