package binary

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func init() {
	eqTypes := append(append([]graph.DType{}, ops.NumericTypes...), graph.Bool, graph.String)
	register("Equal", 1, eqTypes, graph.Bool, true)
	register("Less", 1, ops.NumericTypes, graph.Bool, true)
	register("Greater", 1, ops.NumericTypes, graph.Bool, true)
	register("LessOrEqual", 12, ops.NumericTypes, graph.Bool, false)
	register("GreaterOrEqual", 12, ops.NumericTypes, graph.Bool, false)
	boolT := []graph.DType{graph.Bool}
	register("And", 1, boolT, graph.Bool, true)
	register("Or", 1, boolT, graph.Bool, true)
	register("Xor", 1, boolT, graph.Bool, true)
}
