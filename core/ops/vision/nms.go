package vision

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

// nmsInfer: NonMaxSuppression selects [?, 3] int64 indices.
func nmsInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	return []graph.ValueType{{Kind: "tensor", DType: graph.Int64, Shape: graph.Shape{{Value: -1}, {Value: 3}}}}, nil
}
