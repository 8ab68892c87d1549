package native

// bqRowAsm is rowDot in assembly (w.g > 0), false where the CPU lacks
// AVX2 and FMA.
func bqRowAsm(w *bqWeights, j int, x []float32) (float32, bool) {
	if !hasAVX2FMA {
		return 0, false
	}
	K := w.k
	nb := K / w.block
	_ = x[K-1]
	s := w.s[j*nb : j*nb+nb]
	if w.bits == 8 {
		q := w.q8[j*K : j*K+K]
		return bq8DotAVX2(nb, w.g, &x[0], &q[0], &s[0]), true
	}
	q := w.q4[j*K/2 : j*K/2+K/2]
	return bq4DotAVX2(nb, w.g, &x[0], &q[0], &s[0]), true
}
