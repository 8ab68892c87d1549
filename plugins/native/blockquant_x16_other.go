//go:build !amd64

package native

// x16Usable: the x16 kernels are amd64 assembly only.
func x16Usable() bool { return false }
