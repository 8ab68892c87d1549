package vision

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func col2imInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	dt := in[0].Type.DType
	xs := in[0].Type.Shape
	var shape graph.Shape
	if img := in[1].Const; img != nil {
		iv := img.Int64s()
		shape = graph.Shape{dimOf(xs, 0), {Value: -1}}
		for _, v := range iv {
			if v < 0 {
				return nil, ops.Invalidf(n, "image_shape %v has a negative value", iv)
			}
			shape = append(shape, graph.Dim{Value: v})
		}
		if blk := in[2].Const; blk != nil && len(xs) == 3 && xs[1].Static() {
			k := int64(1)
			for _, v := range blk.Int64s() {
				k *= v
			}
			if k > 0 && xs[1].Value%k == 0 {
				shape[1] = graph.Dim{Value: xs[1].Value / k}
			}
		}
	} else if s := in[1].Type.Shape; len(s) == 1 && s[0].Static() && s[0].Value <= 64 {
		shape = unknownDims(int(s[0].Value) + 2)
		shape[0] = dimOf(xs, 0)
	}
	return []graph.ValueType{{Kind: "tensor", DType: dt, Shape: shape}}, nil
}
