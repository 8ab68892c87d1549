// Package nn holds reference CPU kernels; see package kernels for the contracts.
package nn

import _ "github.com/switchyard-hal/switchyard/core/ops/nn" // the schemas these kernels implement
