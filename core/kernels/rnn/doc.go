// Package rnn holds reference CPU kernels; see package kernels for the contracts.
package rnn
