// Package elementwise holds reference CPU kernels; see package kernels for the contracts.
package elementwise

import _ "github.com/switchyard-hal/switchyard/core/ops/elementwise" // the schemas these kernels implement
