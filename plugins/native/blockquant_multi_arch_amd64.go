package native

import (
	"github.com/switchyard-hal/switchyard/core/ggml"
	"golang.org/x/sys/cpu"
)

var hasBQMulti = hasAVX2FMA && cpu.X86.HasF16C

// multiOK says w has multi-row kernels: int8 blocks of 32 (one group) or
// Q5_0, on the float path.
func (w *bqWeights) multiOK() bool {
	if !hasBQMulti || w.gk != nil || w.ik != nil {
		return false
	}
	return w.typ == ggml.Q5_0 || w.typ == 0 && w.bits == 8 && w.block == 32 && w.g == 1
}

// multiDot computes feature n of R rows of x (K floats apart) into y (N
// floats apart).
func (w *bqWeights) multiDot(n int, x, y []float32, R int) {
	K, N := w.k, w.n
	_, _ = x[(R-1)*K+K-1], y[(R-1)*N]
	if w.typ == ggml.Q5_0 {
		nb := K / 32
		row := w.raw[n*w.rb : n*w.rb+nb*22]
		if R == 4 {
			bqkQ5_0Float4AVX2(nb, &row[0], &x[0], 4*K, &y[0], 4*N)
		} else {
			bqkQ5_0Float2AVX2(nb, &row[0], &x[0], 4*K, &y[0], 4*N)
		}
		return
	}
	nb := K / 32
	q, s := w.q8[n*K:n*K+K], w.s[n*nb:n*nb+nb]
	if R == 4 {
		bq8Dot4AVX2(nb, &q[0], &s[0], &x[0], 4*K, &y[0], 4*N)
	} else {
		bq8Dot2AVX2(nb, &q[0], &s[0], &x[0], 4*K, &y[0], 4*N)
	}
}

// singleDot is the single-row kernel of a weight multiOK accepts.
func (w *bqWeights) singleDot(n int, x []float32) float32 {
	if w.typ == ggml.Q5_0 {
		nb := w.k / 32
		row := w.raw[n*w.rb : n*w.rb+nb*22]
		return bqkQ5_0FloatAVX2(nb, &row[0], &x[0], nil)
	}
	return w.rowDot(n, x)
}
