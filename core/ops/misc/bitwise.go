package misc

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

var uintTypes = []graph.DType{graph.Uint8, graph.Uint16, graph.Uint32, graph.Uint64}

func init() {
	ops.Register(ops.Schema{OpType: "BitShift", MinOpset: 11, MinInputs: 2, MaxInputs: 2, Types: uintTypes, Infer: ops.BroadcastInfer(graph.Undefined)})
	for _, op := range []string{"BitwiseAnd", "BitwiseOr", "BitwiseXor"} {
		ops.Register(ops.Schema{OpType: op, MinOpset: 18, MinInputs: 2, MaxInputs: 2, Types: ops.IntTypes, Infer: ops.BroadcastInfer(graph.Undefined)})
	}
	ops.Register(ops.Schema{OpType: "BitwiseNot", MinOpset: 18, MinInputs: 1, MaxInputs: 1, Types: ops.IntTypes, Infer: ops.SameAsInput})
}
