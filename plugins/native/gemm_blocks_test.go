package native

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// gemmPackedA's blocks of panels (several row tiles over a short k):
// packed A against A read in place, B packed and in place, over more
// panels than a block holds and a partial last one, clamped, at k on
// both sides of smallKC.
func TestGemmPackedABlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, kern := range kernelsAvailable {
		if kern.packedA == nil {
			continue
		}
		for _, sh := range [][3]int{{32, 16, 2000}, {2*kern.mr + 1, 3, 700}, {kern.mr + 1, smallKC, 1500}, {40, smallKC + 1, 300}} {
			m, k, n := sh[0], sh[1], sh[2]
			a, b := randSlice(rng, m*k), randSlice(rng, k*n)
			pa := make([]float32, packedALen(m, k, kern.mr))
			packA(pa, a, m, k, k, kern.mr)
			packed := make([]float32, packedLen(k, n, kern.nr))
			packB(packed, b, k, n, kern.nr, n, 1)
			bias := randSlice(rng, (m+kern.mr-1)/kern.mr*kern.mr)
			want := make([]float32, m*n)
			gemm(&kern, nil, &gemmOp{m: m, n: n, k: k, a: a, lda: k, b: packed, c: want, ldc: n, bias: bias, biasMode: initRowBias, clamp: true, lo: -1, hi: 2})
			for _, inPlace := range []bool{false, true} {
				got := make([]float32, m*n)
				op := &gemmOp{m: m, n: n, k: k, a: pa, lda: k, apacked: true, b: packed, c: got, ldc: n, bias: bias, biasMode: initRowBias, clamp: true, lo: -1, hi: 2}
				if inPlace {
					op.b, op.ldb = b, n
				}
				gemm(&kern, nil, op)
				name := fmt.Sprintf("%s %v in place %v", kern.name, sh, inPlace)
				for i := range want {
					if d := got[i] - want[i]; d > 1e-5*(1+abs32(want[i])) || -d > 1e-5*(1+abs32(want[i])) {
						t.Fatalf("%s: c[%d] = %v, want %v", name, i, got[i], want[i])
					}
				}
			}
		}
	}
}
