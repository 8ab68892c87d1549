package native

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestGemmInPlaceB: a row-major B read in place (ldb) gives what the
// packed B gives, over partial panels, partial row tiles and k blocks.
func TestGemmInPlaceB(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, kern := range kernelsAvailable {
		for _, sh := range [][3]int{{16, 12, 100}, {5, 300, 33}, {29, 7, 64}, {1, 1, 1}, {40, 257, 70}} {
			m, k, n := sh[0], sh[1], sh[2]
			a := make([]float32, m*k)
			b := make([]float32, k*(n+3))
			for i := range a {
				a[i] = float32(rng.NormFloat64())
			}
			for i := range b {
				b[i] = float32(rng.NormFloat64())
			}
			ldb := n + 3
			packed := make([]float32, packedLen(k, n, kern.nr))
			packB(packed, b, k, n, kern.nr, ldb, 1)
			want := make([]float32, m*n)
			got := make([]float32, m*n)
			bias := make([]float32, (m+kern.mr-1)/kern.mr*kern.mr)
			for i := range bias {
				bias[i] = float32(i)
			}
			p := newPool(1)
			gemm(&kern, p, &gemmOp{m: m, n: n, k: k, a: a, lda: k, b: packed, c: want, ldc: n, bias: bias, biasMode: initRowBias})
			gemm(&kern, p, &gemmOp{m: m, n: n, k: k, a: a, lda: k, b: b, ldb: ldb, c: got, ldc: n, bias: bias, biasMode: initRowBias})
			p.close()
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("%s %v: c[%d] = %v, want %v", kern.name, sh, i, got[i], want[i])
				}
			}
		}
	}
}

// BenchmarkPointwiseB: a 1×1 convolution's GEMM (m output channels, k
// input channels, n positions) with B packed per call vs read in place.
func BenchmarkPointwiseB(b *testing.B) {
	kern := bestKernel()
	p := newPool(1)
	defer p.close()
	for _, sh := range [][3]int{{32, 16, 19200}, {16, 32, 10816}, {64, 64, 2704}, {32, 128, 2704}, {128, 256, 169}} {
		m, k, n := sh[0], sh[1], sh[2]
		a := make([]float32, m*k)
		x := make([]float32, k*n)
		c := make([]float32, m*n)
		bias := make([]float32, (m+kern.mr-1)/kern.mr*kern.mr)
		packed := make([]float32, packedLen(k, n, kern.nr))
		b.Run(fmt.Sprintf("packed/%dx%dx%d", m, k, n), func(b *testing.B) {
			for b.Loop() {
				packBRows(packed, x, k, n, kern.nr, n, 0, panelsOf(n, kern.nr))
				gemm(&kern, p, &gemmOp{m: m, n: n, k: k, a: a, lda: k, b: packed, c: c, ldc: n, bias: bias, biasMode: initRowBias})
			}
		})
		b.Run(fmt.Sprintf("inplace/%dx%dx%d", m, k, n), func(b *testing.B) {
			for b.Loop() {
				gemm(&kern, p, &gemmOp{m: m, n: n, k: k, a: a, lda: k, b: x, ldb: n, c: c, ldc: n, bias: bias, biasMode: initRowBias})
			}
		})
	}
}

// BenchmarkIm2colRows: the transposed path's im2col (few output
// positions, many input channels: UltraFace's 256→16 3×3 heads at 4×5).
func BenchmarkIm2colRows(b *testing.B) {
	w := window{autoPad: "NOTSET", nd: 2, kh: 3, kw: 3, sh: 1, sw: 1, dh: 1, dw: 1, pt: 1, pl: 1, pb: 1, pr: 1}
	g, err := w.at(4, 5)
	if err != nil {
		b.Fatal(err)
	}
	c := 256
	x := make([]float32, c*g.ih*g.iw)
	dst := make([]float32, g.oh*g.ow*c*9)
	t := make([]float32, c*g.ih*g.iw)
	xp := make([]float32, c*(g.ih+2)*(g.iw+2))
	for b.Loop() {
		im2colRows(dst, x, c, &g, t, xp)
	}
}
