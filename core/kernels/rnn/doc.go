// Package rnn holds reference CPU kernels; see package kernels for the contracts.
package rnn

import _ "github.com/switchyard-hal/switchyard/core/ops/rnn" // the schemas these kernels implement
