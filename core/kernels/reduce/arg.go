package reduce

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.RegisterKernel("", "ArgMax", argKernel(true))
	kernels.RegisterKernel("", "ArgMin", argKernel(false))
}

// argKernel implements ArgMax (max=true) and ArgMin. Like numpy (the ONNX
// reference), a NaN wins over every number: the first NaN's index is
// returned, or the last one's with select_last_index=1.
func argKernel(max bool) kernels.Func {
	return func(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		x := in[0]
		if err := checkTensor(n, x, "data"); err != nil {
			return nil, err
		}
		if x.Rank() == 0 {
			return nil, kernels.Invalidf(n, "input must have rank >= 1")
		}
		axis, err := kernels.NormAxis(n.AttrInt("axis", 0), x.Rank())
		if err != nil {
			return nil, kernels.Invalidf(n, "%v", err)
		}
		keep := n.AttrInt("keepdims", 1) != 0
		last := ctx.Opset >= 12 && n.AttrInt("select_last_index", 0) != 0
		outer, d, inner := splitAt(x.Shape, axis)
		if d == 0 && outer*inner > 0 {
			return nil, kernels.Invalidf(n, "cannot take %s over an empty axis (shape %v)", n.OpType, x.Shape)
		}
		shape := reducedShape(x.Shape, axis, keep)
		out, err := ctx.New(graph.Int64, shape)
		if err != nil {
			return nil, kernels.Invalidf(n, "%v", err)
		}
		o := out.Data.([]int64)
		switch v := kernels.ToFloat32(x).Data.(type) {
		case []float32:
			argIndex(v, o, outer, d, inner, max, last)
		case []float64:
			argIndex(v, o, outer, d, inner, max, last)
		case []int8:
			argIndex(v, o, outer, d, inner, max, last)
		case []int16:
			argIndex(v, o, outer, d, inner, max, last)
		case []int32:
			argIndex(v, o, outer, d, inner, max, last)
		case []int64:
			argIndex(v, o, outer, d, inner, max, last)
		case []uint8:
			argIndex(v, o, outer, d, inner, max, last)
		case []uint16:
			argIndex(v, o, outer, d, inner, max, last)
		case []uint32:
			argIndex(v, o, outer, d, inner, max, last)
		case []uint64:
			argIndex(v, o, outer, d, inner, max, last)
		default:
			return nil, kernels.Unsupportedf(n, "dtype %v", x.DType)
		}
		return ctx.Outputs(out), nil
	}
}

// reducedShape drops (or, with keep, sets to 1) dimension axis.
func reducedShape(shape []int, axis int, keep bool) []int {
	out := make([]int, 0, len(shape))
	for i, d := range shape {
		switch {
		case i != axis:
			out = append(out, d)
		case keep:
			out = append(out, 1)
		}
	}
	return out
}

// better reports whether v beats the current best b (NaN beats everything
// except another NaN; ties are decided by the caller).
func better[T graph.Numeric](v, b T, max bool) bool {
	if b != b {
		return false
	}
	if v != v {
		return true
	}
	if max {
		return v > b
	}
	return v < b
}

// argIndex writes, for each (outer, inner) slice along the axis, the index
// of its maximum (or minimum).
func argIndex[T graph.Numeric](x []T, o []int64, outer, d, inner int, max, last bool) {
	for a := 0; a < outer; a++ {
		for c := 0; c < inner; c++ {
			base := a*d*inner + c
			best, bi := x[base], 0
			for k := 1; k < d; k++ {
				v := x[base+k*inner]
				if better(v, best, max) || (last && v == best) || (last && v != v && best != best) {
					best, bi = v, k
				}
			}
			o[a*inner+c] = int64(bi)
		}
	}
}
