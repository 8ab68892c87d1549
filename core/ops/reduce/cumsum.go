package reduce

import (
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func init() {
	ops.Register(ops.Schema{OpType: "CumSum", MinOpset: 11, MinInputs: 2, MaxInputs: 2, Types: numericTypes, Infer: ops.SameAsInput})
}
