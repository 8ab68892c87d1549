package native

//go:noescape
func swiglu16AVX512(n int, y, a, b *float32)

//go:noescape
func expSub16AVX512(n int, y, x *float32, m float32)
