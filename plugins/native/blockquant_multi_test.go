package native

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/ggml"
)

// multiCases are weights with multi-row kernels: Q5_0, Q4_K and Q6_K in
// ggml's layout and int8 blocks of 32 (GGUF's Q8_0 as formats/llama
// splits it); the K types only for K a multiple of 256.
func multiCases(rng *rand.Rand, n, k int) map[string]*bqWeights {
	out := map[string]*bqWeights{}
	for _, t := range []ggml.Type{ggml.Q5_0, ggml.Q4_K, ggml.Q6_K} {
		if k%t.BlockSize() != 0 {
			continue
		}
		raw := randomGGML(rng, t, n, k)
		out[t.String()] = &bqWeights{n: n, k: k, typ: t, raw: raw, rb: len(raw) / n}
	}
	q8 := &bqWeights{n: n, k: k, bits: 8, block: 32, g: 1, q8: make([]int8, n*k), s: make([]float32, n*k/32)}
	for i := range q8.q8 {
		q8.q8[i] = int8(rng.IntN(256) - 128)
	}
	for i := range q8.s {
		q8.s[i] = float32(rng.NormFloat64() * 0.01)
	}
	out["Q8"] = q8
	return out
}

// TestBlockQuantMultiRowSameBits: m rows computed together (the
// multi-row kernels, 4 and 2 at a time and a last one alone) give every
// output the bits of the row computed alone, for every m.
func TestBlockQuantMultiRowSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, K := range []int{32, 256, 896, 4864} {
		const N = 9
		for name, w := range multiCases(rng, N, K) {
			if !w.multiOK() {
				t.Skipf("%s: no multi-row kernel here (it needs amd64 with AVX2, FMA and F16C)", name)
			}
			for _, m := range []int{2, 3, 4, 5, 7, 8} {
				x := make([]float32, m*K)
				for i := range x {
					x[i] = float32(rng.NormFloat64())
				}
				x[0] = 1e6
				y := make([]float32, m*N)
				p := newPool(2)
				w.run(p, x, y, m)
				p.close()
				for r := 0; r < m; r++ {
					alone := make([]float32, N)
					w.run(nil, x[r*K:r*K+K], alone, 1)
					for n := range N {
						if math.Float32bits(y[r*N+n]) != math.Float32bits(alone[n]) {
							t.Fatalf("%s K %d m %d: row %d feature %d: %v together, %v alone", name, K, m, r, n, y[r*N+n], alone[n])
						}
					}
				}
			}
		}
	}
}

// BenchmarkBlockQuantMultiRow: m rows of a 4864×1024 product at one
// thread, multi-row kernels against row by row; the ns/op of m=4 over
// m=1 is the batch's cost.
func BenchmarkBlockQuantMultiRow(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 10))
	const N, K = 4864, 1024
	for name, w := range multiCases(rng, N, K) {
		for _, m := range []int{1, 2, 4} {
			for _, multi := range []bool{true, false} {
				if m == 1 && !multi {
					continue
				}
				b.Run(fmt.Sprintf("%s/m=%d/multi=%v", name, m, multi), func(b *testing.B) {
					x := make([]float32, m*K)
					for i := range x {
						x[i] = float32(rng.NormFloat64())
					}
					y := make([]float32, m*N)
					for range b.N {
						if multi {
							w.run(nil, x, y, m)
						} else {
							for r := range m {
								w.run(nil, x[r*K:r*K+K], y[r*N:r*N+N], 1)
							}
						}
					}
				})
			}
		}
	}
}
