package nn

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func poolInfer(isMax bool) ops.InferFunc {
	return func(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
		if len(in) < 1 {
			return nil, nil
		}
		xs := in[0].Type.Shape
		var ch graph.Dim
		if len(xs) >= 2 {
			ch = xs[1]
		}
		ceil := n.AttrInt("ceil_mode", 0) != 0
		out, err := inferWindowOut(n, xs, ch, nil, ceil)
		if err != nil {
			return nil, ops.Errorf(n, "%w", err)
		}
		res := []graph.ValueType{{Kind: "tensor", DType: in[0].Type.DType, Shape: out}}
		if isMax && len(n.Outputs) > 1 {
			res = append(res, graph.ValueType{Kind: "tensor", DType: graph.Int64, Shape: out})
		}
		return res, nil
	}
}

func globalPoolInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	if len(in) < 1 {
		return nil, nil
	}
	xs := in[0].Type.Shape
	var out graph.Shape
	if xs != nil {
		if len(xs) < 2 {
			return nil, ops.Invalidf(n, "X must have rank >= 2, got %v", xs)
		}
		out = append(graph.Shape{}, xs...)
		for i := 2; i < len(out); i++ {
			out[i] = graph.Dim{Value: 1}
		}
	}
	return []graph.ValueType{{Kind: "tensor", DType: in[0].Type.DType, Shape: out}}, nil
}
