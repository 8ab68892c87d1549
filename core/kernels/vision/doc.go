// Package vision holds reference CPU kernels beyond the core operator list; see package kernels for the contracts.
package vision

import _ "github.com/switchyard-hal/switchyard/core/ops/vision" // the schemas these kernels implement
