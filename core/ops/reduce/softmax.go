package reduce

import (
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func init() {
	ops.Register(ops.Schema{OpType: "Softmax", MinOpset: 1, MinInputs: 1, MaxInputs: 1, Types: floatTypes, Infer: ops.SameAsInput})
	ops.Register(ops.Schema{OpType: "LogSoftmax", MinOpset: 1, MinInputs: 1, MaxInputs: 1, Types: floatTypes, Infer: ops.SameAsInput})
	ops.Register(ops.Schema{OpType: "Hardmax", MinOpset: 1, MinInputs: 1, MaxInputs: 1, Types: floatTypes, Infer: ops.SameAsInput})
}
