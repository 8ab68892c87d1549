// Package all registers every reference CPU kernel; import it for effects.
package all

import (
	_ "github.com/switchyard-hal/switchyard/core/kernels/attention"
	_ "github.com/switchyard-hal/switchyard/core/kernels/binary"
	_ "github.com/switchyard-hal/switchyard/core/kernels/blockquant"
	_ "github.com/switchyard-hal/switchyard/core/kernels/contrib"
	_ "github.com/switchyard-hal/switchyard/core/kernels/control"
	_ "github.com/switchyard-hal/switchyard/core/kernels/elementwise"
	_ "github.com/switchyard-hal/switchyard/core/kernels/index"
	_ "github.com/switchyard-hal/switchyard/core/kernels/loss"
	_ "github.com/switchyard-hal/switchyard/core/kernels/misc"
	_ "github.com/switchyard-hal/switchyard/core/kernels/nn"
	_ "github.com/switchyard-hal/switchyard/core/kernels/quant"
	_ "github.com/switchyard-hal/switchyard/core/kernels/reduce"
	_ "github.com/switchyard-hal/switchyard/core/kernels/resize"
	_ "github.com/switchyard-hal/switchyard/core/kernels/rnn"
	_ "github.com/switchyard-hal/switchyard/core/kernels/shape"
	_ "github.com/switchyard-hal/switchyard/core/kernels/vision"
	_ "github.com/switchyard-hal/switchyard/core/ops/all" // every schema, also those of ops without a kernel
)
