// Package resize holds reference CPU kernels; see package kernels for the contracts.
package resize

import _ "github.com/switchyard-hal/switchyard/core/ops/resize" // the schemas these kernels implement
