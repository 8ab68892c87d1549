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
