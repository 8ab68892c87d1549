package control

import (
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func init() {
	ops.Register(ops.Schema{OpType: "Scan", MinOpset: 8, MinInputs: 1, MaxInputs: -1, MinOutputs: 1, MaxOutputs: -1})
}
