// Package control holds reference CPU kernels; see package kernels for the contracts.
package control

import _ "github.com/switchyard-hal/switchyard/core/ops/control" // the schemas these kernels implement
