package reduce

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.RegisterKernel("", "CumSum", cumsumKernel)
}

// cumsumKernel sums along the axis given by input 1 (a scalar or a
// one-element 1-D int32/int64 tensor); exclusive=1 leaves out the element
// itself, reverse=1 sums from the end.
func cumsumKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := in[0]
	if err := checkTensor(n, x, "x"); err != nil {
		return nil, err
	}
	at := kernels.Input(in, 1)
	if err := checkTensor(n, at, "axis"); err != nil {
		return nil, err
	}
	if !at.DType.IsInteger() || at.Len() != 1 || at.Rank() > 1 {
		return nil, kernels.Invalidf(n, "axis must be an int32/int64 scalar, got %v", at)
	}
	if x.Rank() == 0 {
		return nil, kernels.Invalidf(n, "input must have rank >= 1")
	}
	axis, err := kernels.NormAxis(at.Int64At(0), x.Rank())
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	excl := n.AttrInt("exclusive", 0) != 0
	rev := n.AttrInt("reverse", 0) != 0
	outer, d, inner := splitAt(x.Shape, axis)
	out, err := ctx.New(x.DType, x.Shape)
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	switch xd := x.Data.(type) {
	case []float32, []float64, []graph.F16, []graph.BF16:
		y := make([]float64, x.Len())
		cumsum(x.Float64s(), y, outer, d, inner, excl, rev)
		storeFloat64(out, y)
	case []int8:
		cumsum(xd, out.Data.([]int8), outer, d, inner, excl, rev)
	case []int16:
		cumsum(xd, out.Data.([]int16), outer, d, inner, excl, rev)
	case []int32:
		cumsum(xd, out.Data.([]int32), outer, d, inner, excl, rev)
	case []int64:
		cumsum(xd, out.Data.([]int64), outer, d, inner, excl, rev)
	case []uint8:
		cumsum(xd, out.Data.([]uint8), outer, d, inner, excl, rev)
	case []uint16:
		cumsum(xd, out.Data.([]uint16), outer, d, inner, excl, rev)
	case []uint32:
		cumsum(xd, out.Data.([]uint32), outer, d, inner, excl, rev)
	case []uint64:
		cumsum(xd, out.Data.([]uint64), outer, d, inner, excl, rev)
	default:
		return nil, kernels.Unsupportedf(n, "dtype %v", x.DType)
	}
	return ctx.Outputs(out), nil
}

func cumsum[T graph.Numeric](x, y []T, outer, d, inner int, excl, rev bool) {
	for a := 0; a < outer; a++ {
		for c := 0; c < inner; c++ {
			base := a*d*inner + c
			var acc T
			for j := 0; j < d; j++ {
				k := j
				if rev {
					k = d - 1 - j
				}
				i := base + k*inner
				if excl {
					y[i] = acc
					acc += x[i]
				} else {
					acc += x[i]
					y[i] = acc
				}
			}
		}
	}
}
