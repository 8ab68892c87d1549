//go:build !amd64

package native

// spinPause is the spin-wait hint; without one it does nothing.
func spinPause() {}
