//go:build !amd64

package native

// archQFamilies: only the portable int8 kernels for this GOARCH.
func archQFamilies() []string { return []string{"generic"} }

// archQKernels: no int8 assembly for this GOARCH (the portable kernel).
func archQKernels() []qkernel { return nil }

// archDWQ: no int8 depthwise assembly for this GOARCH.
func archDWQ() (func(nt, taps int, offs *int, w *int32, x *int8, xstep int, rq *int32, y *int8, ystep int, mask uint64), bool) {
	return nil, false
}

// archQAdd: no int8 Add assembly for this GOARCH.
func archQAdd() func(n int, a, b *int8, p *int32, y *int8) { return nil }

// archQKernelsF: no int8 assembly for this GOARCH.
func archQKernelsF() []qkernel { return nil }

// archDWQF: no int8 depthwise assembly for this GOARCH.
func archDWQF() (func(nt, taps int, offs *int, w *int32, x *int8, xstep int, rq *int32, y *int8, ystep int, mask uint64), bool) {
	return nil, false
}
