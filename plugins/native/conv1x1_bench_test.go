package native

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkConv1x1 runs deeplab_v3's 1×1 convolutions (m output
// channels, k input channels, n positions) as compute does (B read in
// place when small, else packed a block of panels at a time), with the
// weights read in place and packed once (packA), in CPU time per run.
func BenchmarkConv1x1(b *testing.B) {
	kern := bestKernel()
	if kern.packedA == nil {
		b.Skip("no packed-A kernel on this machine")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, sh := range [][3]int{{64, 64, 2704}, {32, 128, 2704}, {80, 64, 2704}, {256, 256, 169}, {256, 512, 169}, {32, 32, 10816}} {
		m, k, n := sh[0], sh[1], sh[2]
		a, x, c := randSlice(rng, m*k), randSlice(rng, k*n), make([]float32, m*n)
		pa := make([]float32, packedALen(m, k, kern.mr))
		packA(pa, a, m, k, k, kern.mr)
		bias := make([]float32, (m+kern.mr-1)/kern.mr*kern.mr)
		np := panelsOf(n, kern.nr)
		block := min(np, max(1, (256<<10)/4/(k*kern.nr)))
		packed := make([]float32, packedLen(k, block*kern.nr, kern.nr))
		for _, apk := range []bool{false, true} {
			b.Run(fmt.Sprintf("%dx%dx%d/packedA=%v", m, k, n, apk), func(b *testing.B) {
				aw := a
				if apk {
					aw = pa
				}
				cpuLoop(b, func() {
					if k*n <= 64<<10 {
						gemm(&kern, nil, &gemmOp{m: m, n: n, k: k, a: aw, lda: k, apacked: apk, b: x, ldb: n, c: c, ldc: n, bias: bias, biasMode: initRowBias})
						return
					}
					for c0 := 0; c0 < np; c0 += block {
						c1 := min(c0+block, np)
						packBRows(packed, x, k, n, kern.nr, n, c0, c1)
						j0 := c0 * kern.nr
						gemm(&kern, nil, &gemmOp{m: m, n: min(c1*kern.nr, n) - j0, k: k, a: aw, lda: k, apacked: apk, b: packed,
							c: c[j0:], ldc: n, bias: bias, biasMode: initRowBias})
					}
				})
			})
		}
	}
}
