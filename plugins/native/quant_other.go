//go:build !amd64

package native

// archQKernels: no int8 assembly for this GOARCH (the portable kernel).
func archQKernels() []qkernel { return nil }
