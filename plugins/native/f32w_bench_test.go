package native

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkF32Weights: one product y = x·Wᵀ of an F32 weight read in
// place (f32w) beside the float32 MatMul path it replaced (W transposed
// and packed at load, the packed GEMM), for m activation rows, on
// stories260K's shapes (cache-resident) and Qwen2.5-0.5B's (from memory).
// Compare the two sub-benchmarks of one shape as a ratio, run together.
func BenchmarkF32Weights(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	kern := bestKernel()
	for _, sz := range []struct{ n, k int }{{64, 64}, {172, 64}, {64, 172}, {512, 64}, {896, 896}, {4864, 896}, {896, 4864}} {
		for _, m := range []int{1, 2, 16} {
			raw := randomF32Rows(rng, sz.n, sz.k, false)
			w := &f32Weights{n: sz.n, k: sz.k, w: f32View(raw), kern: f32wKernelFor("", 4*sz.n*sz.k > f32wStreamBytes, shortChunks(sz.k))}
			wt := make([]float32, sz.n*sz.k)
			for r := 0; r < sz.n; r++ {
				for c := 0; c < sz.k; c++ {
					wt[c*sz.n+r] = w.w[r*sz.k+c]
				}
			}
			packed := make([]float32, packedLen(sz.k, sz.n, kern.nr))
			packB(packed, wt, sz.k, sz.n, kern.nr, sz.n, 1)
			x := randomActs(rng, false, m, sz.k, false, false)
			y := make([]float32, m*sz.n)
			name := fmt.Sprintf("n=%d/k=%d/m=%d", sz.n, sz.k, m)
			b.Run(name+"/inplace", func(b *testing.B) {
				b.SetBytes(int64(4 * sz.n * sz.k))
				cpuLoop(b, func() { w.run(nil, x, y, m) })
			})
			b.Run(name+"/packed", func(b *testing.B) {
				b.SetBytes(int64(4 * sz.n * sz.k))
				cpuLoop(b, func() {
					gemm(&kern, nil, &gemmOp{m: m, n: sz.n, k: sz.k, a: x, lda: sz.k, b: packed, c: y, ldc: sz.n, lo: negInf, hi: posInf})
				})
			})
		}
	}
}
