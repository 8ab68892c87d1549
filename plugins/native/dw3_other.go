//go:build !amd64

package native

// dw3Kernels: the 3×3 depthwise row kernels are amd64 assembly only.
var dw3Kernels []dw3Fn
