//go:build !arm64

package native

// fma32 is a·b+c rounded once to float32 (fma32Soft).
func fma32(a, b, c float32) float32 { return fma32Soft(a, b, c) }
