package native

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/ggml"
)

// gemmWeights is a random typed weight on the integer path.
func gemmWeights(rng *rand.Rand, t ggml.Type, n, k int) *bqWeights {
	raw := randomGGML(rng, t, n, k)
	w := &bqWeights{n: n, k: k, typ: t, raw: raw, rb: len(raw) / n}
	w.gk = bqkKernelFor(t)
	w.acts.New = func() any { return new(ggml.Act) }
	return w
}

// TestQGEMMSameBits: m rows through the tile kernels give every output
// the bits of core/ggml's Dot of that row alone (the single-row kernels'
// arithmetic), for every m, N not a multiple of 4, one and two threads,
// and a row holding a NaN (NaN outputs, the others untouched).
func TestQGEMMSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 6))
	for _, ty := range []ggml.Type{ggml.Q4_0, ggml.Q5_0, ggml.Q8_0, ggml.Q4_K, ggml.Q6_K} {
		for _, K := range []int{32, 96, 256, 896, 4864} {
			if K%ty.BlockSize() != 0 {
				continue
			}
			Ns := []int{4, 13}
			if ty == ggml.Q4_0 {
				Ns = append(Ns, 37) // the panels take whole panels of 16 rows
			}
			for _, N := range Ns {
				w := gemmWeights(rng, ty, N, K)
				if f, kf := qgemmKernels(ty, w.gk.name); f == nil && kf == nil && !hasQ40Panels(ty, w.gk.name) {
					t.Skipf("%s: no tile kernels here (amd64 with AVX-512 VNNI)", ty)
				}
				for _, m := range []int{2, 3, 4, 5, 6, 7, 8, 9, 10, 13, 16, 19, 23} {
					for _, threads := range []int{1, 2} {
						name := fmt.Sprintf("%s/K%d/N%d/m%d/t%d", ty, K, N, m, threads)
						x := make([]float32, m*K)
						for i := range x {
							x[i] = float32(rng.NormFloat64())
						}
						x[0] = 1e4
						if m > 3 {
							x[2*K+K/2] = float32(math.NaN())
						}
						y := make([]float32, m*N)
						var p *pool
						if threads > 1 {
							p = newPool(threads)
						}
						if !w.runGEMM(p, x, y, m) {
							if ty.BlockSize() == 256 && m < qgemmKMinRows || ty == ggml.Q4_0 && N < 16 {
								w.runGGMLInt(p, x, y, m) // the rows path: the same bits
							} else {
								t.Fatalf("%s: runGEMM declined", name)
							}
						}
						p.close()
						var a ggml.Act
						a.Quantize(x, m, K, ggml.ActBlock(ty))
						for r := 0; r < m; r++ {
							for n := range N {
								want := ggml.Dot(ty, w.raw[n*w.rb:(n+1)*w.rb], &a, r)
								alone := w.gk.dot(w, n, &a, r)
								got := y[r*N+n]
								if math.Float32bits(got) != math.Float32bits(want) || math.Float32bits(alone) != math.Float32bits(want) {
									t.Fatalf("%s: y[%d,%d] = %v (alone %v), Dot %v", name, r, n, got, alone, want)
								}
								if isNaN := got != got; isNaN != (r == 2 && m > 3) {
									t.Fatalf("%s: y[%d,%d] = %v", name, r, n, got)
								}
							}
						}
					}
				}
			}
		}
	}
}

// BenchmarkQGEMM is a product of m rows (128: a prompt's prefill; 2, 4,
// 8: a batched decode step of that many sequences; 1: one sequence) on
// the tiles and on the single-row kernels (4 weight rows a call, row
// after row). Besides wall time it reports the least CPU time of one call
// (cpu-ns/op, which the machine's other work does not inflate) and that
// per activation row (cpu-ns/row): a batched decode step costs little
// more than one row where cpu-ns/op at m = 4 is close to m = 1's.
func BenchmarkQGEMM(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, ty := range []ggml.Type{ggml.Q4_0, ggml.Q5_0, ggml.Q8_0, ggml.Q4_K, ggml.Q6_K} {
		for _, s := range [][2]int{{896, 4864}, {4864, 896}, {2048, 8192}} {
			K, N := s[0], s[1]
			if K%ty.BlockSize() != 0 {
				continue
			}
			w := gemmWeights(rng, ty, N, K)
			for _, m := range []int{128, 8, 4, 2, 1} {
				x := make([]float32, m*K)
				for i := range x {
					x[i] = float32(rng.NormFloat64())
				}
				y := make([]float32, m*N)
				for _, path := range []string{"tiles", "rows"} {
					if m == 1 && path == "tiles" {
						continue
					}
					b.Run(fmt.Sprintf("%s/K%d/N%d/m%d/%s", ty, K, N, m, path), func(b *testing.B) {
						if f, kf := qgemmKernels(ty, w.gk.name); path == "tiles" && f == nil && kf == nil && !hasQ40Panels(ty, w.gk.name) {
							b.Skip("no tile kernels here")
						}
						best := time.Duration(1 << 62)
						for b.Loop() {
							t0 := cpuTime()
							if path == "rows" || !w.runGEMM(nil, x, y, m) {
								w.runGGMLInt(nil, x, y, m)
							}
							best = min(best, cpuTime()-t0)
						}
						b.ReportMetric(float64(m*N*K)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
						b.ReportMetric(float64(best.Nanoseconds()), "cpu-ns/op")
						b.ReportMetric(float64(best.Nanoseconds())/float64(m), "cpu-ns/row")
					})
				}
			}
		}
	}
}

// hasQ40Panels: t is Q4_0 and its panels (qgemm_q40.go) run here.
func hasQ40Panels(t ggml.Type, fam string) bool {
	return t == ggml.Q4_0 && q40Panels(fam) != nil
}
