// Package nn holds reference CPU kernels; see package kernels for the contracts.
package nn
