// Package control holds reference CPU kernels; see package kernels for the contracts.
package control
