// Package reduce holds reference CPU kernels; see package kernels for the contracts.
package reduce
