// Package binary holds reference CPU kernels; see package kernels for the contracts.
package binary

import _ "github.com/switchyard-hal/switchyard/core/ops/binary" // the schemas these kernels implement
