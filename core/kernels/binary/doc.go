// Package binary holds reference CPU kernels; see package kernels for the contracts.
package binary
