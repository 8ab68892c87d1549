package attention

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func init() {
	ops.Register(ops.Schema{OpType: "RotaryEmbedding", MinOpset: 23, MinInputs: 3, MaxInputs: 4, Types: ops.FloatTypes, Infer: rotaryInfer})
}

func rotaryInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	x := ops.InputType(in, 0)
	if x.Shape != nil {
		switch len(x.Shape) {
		case 3:
			if n.AttrInt("num_heads", 0) <= 0 {
				return nil, ops.Invalidf(n, "3-D X %v needs the num_heads attribute", x.Shape)
			}
		case 4:
		default:
			return nil, ops.Invalidf(n, "X must be 3-D or 4-D, got shape %v", x.Shape)
		}
	}
	return []graph.ValueType{ops.TensorType(x.DType, ops.CopyShape(x.Shape))}, nil
}
