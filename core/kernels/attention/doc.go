// Package attention holds reference CPU kernels beyond the core operator list; see package kernels for the contracts.
package attention

import _ "github.com/switchyard-hal/switchyard/core/ops/attention" // the schemas these kernels implement
