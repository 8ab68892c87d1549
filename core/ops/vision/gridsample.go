package vision

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func gridSampleInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	dt := in[0].Type.DType
	xs, gs := in[0].Type.Shape, in[1].Type.Shape
	var shape graph.Shape
	switch {
	case gs != nil:
		r := len(gs) - 2
		if r < 1 || (xs != nil && len(xs) != r+2) {
			return nil, ops.Invalidf(n, "grid shape %v does not fit X shape %v", gs, xs)
		}
		shape = append(graph.Shape{dimOf(xs, 0), dimOf(xs, 1)}, gs[1:len(gs)-1]...)
		if xs == nil {
			shape[0] = gs[0]
		}
	case xs != nil:
		if len(xs) < 3 {
			return nil, ops.Invalidf(n, "X must have rank >= 3, got %v", xs)
		}
		shape = append(graph.Shape{xs[0], xs[1]}, unknownDims(len(xs)-2)...)
	}
	return []graph.ValueType{{Kind: "tensor", DType: dt, Shape: shape}}, nil
}
