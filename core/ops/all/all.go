// Package all registers every operator schema (arity, opset range, dtypes,
// shape inference) with core/ops; import it for effects. It links no
// kernel: core/kernels/all adds the reference kernels on top.
package all

import (
	_ "github.com/switchyard-hal/switchyard/core/ops/attention"
	_ "github.com/switchyard-hal/switchyard/core/ops/binary"
	_ "github.com/switchyard-hal/switchyard/core/ops/contrib"
	_ "github.com/switchyard-hal/switchyard/core/ops/control"
	_ "github.com/switchyard-hal/switchyard/core/ops/elementwise"
	_ "github.com/switchyard-hal/switchyard/core/ops/index"
	_ "github.com/switchyard-hal/switchyard/core/ops/loss"
	_ "github.com/switchyard-hal/switchyard/core/ops/misc"
	_ "github.com/switchyard-hal/switchyard/core/ops/nn"
	_ "github.com/switchyard-hal/switchyard/core/ops/quant"
	_ "github.com/switchyard-hal/switchyard/core/ops/reduce"
	_ "github.com/switchyard-hal/switchyard/core/ops/resize"
	_ "github.com/switchyard-hal/switchyard/core/ops/rnn"
	_ "github.com/switchyard-hal/switchyard/core/ops/shape"
	_ "github.com/switchyard-hal/switchyard/core/ops/vision"
)
