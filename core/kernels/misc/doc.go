// Package misc holds reference CPU kernels beyond the core operator list; see package kernels for the contracts.
package misc
