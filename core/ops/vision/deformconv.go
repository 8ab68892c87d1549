package vision

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func deformConvInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	vt := graph.ValueType{Kind: "tensor", DType: in[0].Type.DType}
	xs, ws, os := in[0].Type.Shape, in[1].Type.Shape, in[2].Type.Shape
	rank := -1
	for _, s := range []graph.Shape{xs, ws, os} {
		if s != nil {
			if rank >= 0 && len(s) != rank {
				return nil, ops.Invalidf(n, "X %v, W %v and offset %v must have the same rank", xs, ws, os)
			}
			rank = len(s)
		}
	}
	if rank < 0 {
		return []graph.ValueType{vt}, nil
	}
	if rank < 3 {
		return nil, ops.Invalidf(n, "inputs must have rank >= 3")
	}
	vt.Shape = unknownDims(rank)
	vt.Shape[0] = dimOf(xs, 0)
	if xs == nil {
		vt.Shape[0] = dimOf(os, 0)
	}
	vt.Shape[1] = dimOf(ws, 0)
	if os != nil {
		copy(vt.Shape[2:], os[2:])
	}
	return []graph.ValueType{vt}, nil
}
