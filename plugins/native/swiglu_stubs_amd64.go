package native

//go:noescape
func swiglu16AVX512(n int, y, a, b *float32)
