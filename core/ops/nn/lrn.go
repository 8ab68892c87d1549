package nn

import (
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func init() {
	ops.Register(ops.Schema{
		OpType: "LRN", MinOpset: 1,
		MinInputs: 1, MaxInputs: 1,
		Types: ops.FloatTypes,

		Infer: ops.SameAsInput,
	})
}
