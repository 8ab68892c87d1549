package native

//go:noescape
func dotGGMLAVX512(n int, x, y *float32) float32

//go:noescape
func dot16AVX512(n int, x, y *float32) float32
