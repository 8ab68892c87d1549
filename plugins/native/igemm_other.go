//go:build !amd64

package native

// igemmKernels: no indirect micro-kernels on this architecture (the
// convolutions take the im2col paths).
var igemmKernels []igemmFn
