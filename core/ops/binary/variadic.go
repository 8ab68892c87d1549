package binary

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func whereInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	if len(in) < 3 {
		return nil, nil
	}
	dt := in[1].Type.DType
	if dt == graph.Undefined {
		dt = in[2].Type.DType
	}
	return ops.BroadcastInfer(dt)(n, opset, in)
}

func init() {
	reg := func(op string, types []graph.DType) {
		ops.Register(ops.Schema{
			OpType:    op,
			MinOpset:  1,
			MinInputs: 1, MaxInputs: -1,
			MinOutputs: 1, MaxOutputs: 1,
			Types: types,
			Infer: ops.BroadcastInfer(graph.Undefined),
		})
	}
	reg("Max", ops.NumericTypes)
	reg("Min", ops.NumericTypes)
	reg("Sum", ops.NumericTypes)
	reg("Mean", ops.FloatTypes)
	ops.Register(ops.Schema{
		OpType:    "Where",
		MinOpset:  9,
		MinInputs: 3, MaxInputs: 3,
		MinOutputs: 1, MaxOutputs: 1,
		TypeInput: 1,
		Types:     ops.AllTypes,

		Infer: whereInfer,
	})
}
