//go:build !amd64

package native

// spmm1x1Kernels: the sparse 1×1 kernels are amd64 assembly only (pruned
// 1×1 convolutions run dense elsewhere).
var spmm1x1Kernels []spmm1x1Fn
