// Package loss holds reference CPU kernels beyond the core operator list; see package kernels for the contracts.
package loss

import _ "github.com/switchyard-hal/switchyard/core/ops/loss" // the schemas these kernels implement
