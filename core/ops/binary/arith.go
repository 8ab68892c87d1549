package binary

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func init() {
	reg := func(op string, minOpset int64, types []graph.DType, legacy bool) {
		ops.Register(ops.Schema{
			OpType:    op,
			MinOpset:  minOpset,
			MinInputs: 2, MaxInputs: 2,
			MinOutputs: 1, MaxOutputs: 1,
			Types: types,
			Infer: binaryInfer(graph.Undefined, legacy),
		})
	}
	reg("Add", 1, ops.NumericTypes, true)
	reg("Sub", 1, ops.NumericTypes, true)
	reg("Mul", 1, ops.NumericTypes, true)
	reg("Div", 1, ops.NumericTypes, true)
	reg("Mod", 10, ops.NumericTypes, false)
	reg("Pow", 1, ops.NumericTypes, true)
	ops.Register(ops.Schema{
		OpType:    "PRelu",
		MinOpset:  1,
		MinInputs: 2, MaxInputs: 2,
		MinOutputs: 1, MaxOutputs: 1,
		Types: ops.NumericTypes,

		Infer: ops.SameAsInput,
	})
}
