// Package misc holds reference CPU kernels beyond the core operator list; see package kernels for the contracts.
package misc

import _ "github.com/switchyard-hal/switchyard/core/ops/misc" // the schemas these kernels implement
