//go:build !amd64

package native

// archKernels: no assembly kernels for this GOARCH yet.
func archKernels() []microKernel { return nil }
