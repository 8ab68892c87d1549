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
			Infer: binaryInfer(graph.Bool, legacy),
		})
	}
	eqTypes := append(append([]graph.DType{}, ops.NumericTypes...), graph.Bool, graph.String)
	reg("Equal", 1, eqTypes, true)
	reg("Less", 1, ops.NumericTypes, true)
	reg("Greater", 1, ops.NumericTypes, true)
	reg("LessOrEqual", 12, ops.NumericTypes, false)
	reg("GreaterOrEqual", 12, ops.NumericTypes, false)
	boolT := []graph.DType{graph.Bool}
	reg("And", 1, boolT, true)
	reg("Or", 1, boolT, true)
	reg("Xor", 1, boolT, true)
}
