package native

// UsePointwiseT turns the transposed 1×1 convolution (conv1x1t.go) on or
// off and reports whether the machine takes it at all (tests run both
// paths).
func UsePointwiseT(on bool) bool {
	usePointwiseT = on
	k := bestKernel()
	return k.packedA != nil && has8x8Transpose
}

// PointwiseTWins is pointwiseTWins on the machine's best kernel.
func PointwiseTWins(cout, cin, hw int) bool {
	k := bestKernel()
	return pointwiseTWins(&k, cout, cin, hw)
}

// PackXTAgrees packs channels [c0, c1) of a c×hw x for mr rows in
// assembly and in Go and reports whether the two agree (true where the
// machine has no assembly for it).
func PackXTAgrees(c, hw, mr, c0, c1 int) bool {
	x := make([]float32, c*hw)
	for i := range x {
		x[i] = float32(i + 1)
	}
	n := packedALen(hw, c, mr)
	a, g := make([]float32, n), make([]float32, n)
	for i := range a {
		a[i], g[i] = -1, -1 // what neither writes stays equal
	}
	if !packXTAsm(a, x, c, hw, mr, c0, c1) {
		return true
	}
	packXTGo(g, x, c, hw, mr, c0, c1)
	for i := range a {
		if a[i] != g[i] {
			return false
		}
	}
	return true
}
