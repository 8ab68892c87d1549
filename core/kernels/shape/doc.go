// Package shape holds reference CPU kernels; see package kernels for the contracts.
package shape

import _ "github.com/switchyard-hal/switchyard/core/ops/shape" // the schemas these kernels implement
