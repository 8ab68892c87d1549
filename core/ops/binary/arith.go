package binary

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func init() {
	register("Add", 1, ops.NumericTypes, graph.Undefined, true)
	register("Sub", 1, ops.NumericTypes, graph.Undefined, true)
	register("Mul", 1, ops.NumericTypes, graph.Undefined, true)
	register("Div", 1, ops.NumericTypes, graph.Undefined, true)
	register("Mod", 10, ops.NumericTypes, graph.Undefined, false)
	register("Pow", 1, ops.NumericTypes, graph.Undefined, true)
	ops.Register(ops.Schema{
		OpType:    "PRelu",
		MinOpset:  1,
		MinInputs: 2, MaxInputs: 2,
		MinOutputs: 1, MaxOutputs: 1,
		Types: ops.NumericTypes,

		Infer: ops.SameAsInput,
	})
}
