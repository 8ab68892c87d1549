// Package index holds reference CPU kernels; see package kernels for the contracts.
package index

import _ "github.com/switchyard-hal/switchyard/core/ops/index" // the schemas these kernels implement
