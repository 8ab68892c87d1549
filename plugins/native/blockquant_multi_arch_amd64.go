package native

import (
	"github.com/switchyard-hal/switchyard/core/ggml"
	"golang.org/x/sys/cpu"
)

var hasBQMulti = hasAVX2FMA && cpu.X86.HasF16C

// multiOK says w has multi-row kernels: int8 blocks of 32 (one group),
// Q5_0, Q4_K or Q6_K, on the float path.
func (w *bqWeights) multiOK() bool {
	if !hasBQMulti || w.gk != nil || w.ik != nil {
		return false
	}
	switch w.typ {
	case ggml.Q5_0, ggml.Q4_K, ggml.Q6_K:
		return true
	case 0:
		return w.bits == 8 && w.block == 32 && w.g == 1
	}
	return false
}

// needSums says the kernels take the rows' 32-value sums (Q4_K).
func (w *bqWeights) needSums() bool { return w.typ == ggml.Q4_K }

type (
	multiFn  = func(nb int, w *uint8, x *float32, ldx int, y *float32, ldy int)
	multiQ8  = func(nb int, q *int8, s *float32, x *float32, ldx int, y *float32, ldy int)
	multiKFn = func(nb int, w *uint8, x *float32, ldx int, xs *float32, y *float32, ldy int)
)

// the kernels by rows (index R-2)
var (
	multiQ5_0 = [3]multiFn{bqkQ5_0Float2AVX2, bqkQ5_0Float3AVX2, bqkQ5_0Float4AVX2}
	multiQ4K  = [3]multiKFn{bqkQ4KFloat2AVX2, bqkQ4KFloat3AVX2, bqkQ4KFloat4AVX2}
	multiQ6K  = [3]multiKFn{bqkQ6KFloat2AVX2, bqkQ6KFloat3AVX2, bqkQ6KFloat4AVX2}
	multiBQ8  = [3]multiQ8{bq8Dot2AVX2, bq8Dot3AVX2, bq8Dot4AVX2}
)

// multiDot computes feature n of R rows (2 ≤ R ≤ 4) of x (K floats
// apart) into y (N floats apart); xs: Q4_K's sums of the R rows, per
// super-block the R rows' eight one after the other.
func (w *bqWeights) multiDot(n int, x, y, xs []float32, R int) {
	K, N := w.k, w.n
	_, _ = x[(R-1)*K+K-1], y[(R-1)*N]
	switch w.typ {
	case ggml.Q5_0:
		nb := K / 32
		row := w.raw[n*w.rb : n*w.rb+nb*22]
		multiQ5_0[R-2](nb, &row[0], &x[0], 4*K, &y[0], 4*N)
	case ggml.Q4_K:
		nb := K / 256
		row := w.raw[n*w.rb : n*w.rb+nb*144]
		_ = xs[nb*R*8-1]
		multiQ4K[R-2](nb, &row[0], &x[0], 4*K, &xs[0], &y[0], 4*N)
	case ggml.Q6_K:
		nb := K / 256
		row := w.raw[n*w.rb : n*w.rb+nb*210]
		multiQ6K[R-2](nb, &row[0], &x[0], 4*K, nil, &y[0], 4*N)
	default:
		nb := K / 32
		q, s := w.q8[n*K:n*K+K], w.s[n*nb:n*nb+nb]
		multiBQ8[R-2](nb, &q[0], &s[0], &x[0], 4*K, &y[0], 4*N)
	}
}

// singleDot is the single-row kernel of a weight multiOK accepts (xs:
// the row's Q4_K sums).
func (w *bqWeights) singleDot(n int, x, xs []float32) float32 {
	switch w.typ {
	case ggml.Q5_0:
		nb := w.k / 32
		row := w.raw[n*w.rb : n*w.rb+nb*22]
		return bqkQ5_0FloatAVX2(nb, &row[0], &x[0], nil)
	case ggml.Q4_K:
		nb := w.k / 256
		row := w.raw[n*w.rb : n*w.rb+nb*144]
		_ = xs[nb*8-1]
		return bqkQ4KFloatAVX2(nb, &row[0], &x[0], &xs[0])
	case ggml.Q6_K:
		nb := w.k / 256
		row := w.raw[n*w.rb : n*w.rb+nb*210]
		return bqkQ6KFloatAVX2(nb, &row[0], &x[0], nil)
	}
	return w.rowDot(n, x)
}
