package vision

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func init() {
	ops.Register(ops.Schema{
		OpType: "NonMaxSuppression", MinOpset: 10,
		MinInputs: 2, MaxInputs: 5,
		Types: floatTypes,

		Infer: func(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
			return []graph.ValueType{{Kind: "tensor", DType: graph.Int64, Shape: graph.Shape{{Value: -1}, {Value: 3}}}}, nil
		},
	})
}
