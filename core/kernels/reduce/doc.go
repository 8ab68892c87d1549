// Package reduce holds reference CPU kernels; see package kernels for the contracts.
package reduce

import _ "github.com/switchyard-hal/switchyard/core/ops/reduce" // the schemas these kernels implement
