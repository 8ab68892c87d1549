package vision

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func affineGridInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	dt := in[0].Type.DType
	var shape graph.Shape
	if c := in[1].Const; c != nil {
		sz := c.Int64s()
		if len(sz) != 4 && len(sz) != 5 {
			return nil, ops.Invalidf(n, "size must have 4 or 5 values, got %v", sz)
		}
		for _, v := range sz {
			if v < 0 {
				return nil, ops.Invalidf(n, "size %v has a negative value", sz)
			}
		}
		shape = graph.Shape{{Value: sz[0]}}
		for _, v := range sz[2:] {
			shape = append(shape, graph.Dim{Value: v})
		}
		shape = append(shape, graph.Dim{Value: int64(len(sz) - 2)})
	} else if s := in[1].Type.Shape; len(s) == 1 && s[0].Static() && (s[0].Value == 4 || s[0].Value == 5) {
		r := int(s[0].Value) - 2
		shape = unknownDims(r + 2)
		shape[0] = dimOf(in[0].Type.Shape, 0)
		shape[r+1] = graph.Dim{Value: int64(r)}
	}
	return []graph.ValueType{{Kind: "tensor", DType: dt, Shape: shape}}, nil
}
