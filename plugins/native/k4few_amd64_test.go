package native

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/ggml"
)

// BenchmarkK4FewMem: Qwen2.5-0.5B's ffn_down shapes (Q4_K and Q6_K, 896
// × 4864) copied to about 64 MB so that they stream from memory, one
// thread: the single-row path (m1, one activation row) and the product
// of m = 4 rows (variants in a random order each round): the least CPU
// µs of one product each.
func BenchmarkK4FewMem(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 9))
	for _, ty := range []ggml.Type{ggml.Q4_K, ggml.Q6_K} {
		n, k := 896, 4864
		w0 := gemmWeights(rng, ty, n, k)
		ws := make([]*bqWeights, max(1, (64<<20)/len(w0.raw)))
		for i := range ws {
			raw := w0.raw
			if i > 0 {
				raw = append([]byte(nil), w0.raw...)
			}
			ws[i] = &bqWeights{n: n, k: k, typ: ty, raw: raw, rb: w0.rb, gk: w0.gk}
			ws[i].acts.New = func() any { return new(ggml.Act) }
		}
		for _, m := range []int{2, 4} {
			x := make([]float32, m*k)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			y := make([]float32, m*n)
			names := []string{"m1", "tiles", "few"}
			b.Run(fmt.Sprintf("%s/m%d", ty, m), func(b *testing.B) {
				best := make([]float64, len(names))
				for i := range best {
					best[i] = math.Inf(1)
				}
				for b.Loop() {
					for _, i := range rng.Perm(len(names)) {
						v := names[i]
						k4fewOff = v == "tiles"
						t0 := cpuTime()
						for _, w := range ws {
							if v == "m1" {
								w.runGGMLInt(nil, x[:k], y[:n], 1)
							} else if !w.runGEMM(nil, x, y, m) {
								b.Fatal("runGEMM declined")
							}
						}
						best[i] = min(best[i], float64((cpuTime()-t0).Nanoseconds())/1e3/float64(len(ws)))
					}
				}
				k4fewOff = false
				for i, v := range names {
					b.ReportMetric(best[i], "us-"+v)
				}
			})
		}
	}
}

// TestK4FewSameBits: the few-row kernels of the K types (m = 2…4), on
// shapes with several groups a call and rows left over, one and two
// threads, give every output the bits of core/ggml's Dot of that row
// alone.
func TestK4FewSameBits(t *testing.T) {
	if !hasFewZ || !bqAsm {
		t.Skip("no few-row kernels here (amd64 with AVX-512 BW, BITALG, VNNI)")
	}
	rng := rand.New(rand.NewPCG(28, 5))
	for ty := range k4fewKernels {
		for _, K := range []int{256, 4864} {
			for _, N := range []int{4, 72, 133, 600} {
				w := gemmWeights(rng, ty, N, K)
				for m := 2; m <= fewMaxRows; m++ {
					for _, threads := range []int{1, 2} {
						name := fmt.Sprintf("%s/K%d/N%d/m%d/t%d", ty, K, N, m, threads)
						x := make([]float32, m*K)
						for i := range x {
							x[i] = float32(rng.NormFloat64())
						}
						x[1] = -3e3
						y := make([]float32, m*N)
						var p *pool
						if threads > 1 {
							p = newPool(threads)
						}
						ok := w.runK4Few(p, x, y, m)
						p.close()
						if !ok {
							t.Fatalf("%s: runK4Few declined", name)
						}
						var a ggml.Act
						a.Quantize(x, m, K, ggml.QK)
						for r := 0; r < m; r++ {
							for n := range N {
								want := ggml.Dot(ty, w.raw[n*w.rb:(n+1)*w.rb], &a, r)
								if got := y[r*N+n]; math.Float32bits(got) != math.Float32bits(want) {
									t.Fatalf("%s: y[%d,%d] = %v, Dot %v", name, r, n, got, want)
								}
							}
						}
					}
				}
			}
		}
	}
}

// BenchmarkK4FewKernel: the few-row kernel of four weight rows and the
// 4×R tile of qgemm.go on the same packed activations, in the L1 cache
// (K 4864, Qwen2.5-0.5B's ffn_down), alternating: the least CPU ns a
// super-block of the four rows, R = 2…4.
func BenchmarkK4FewKernel(b *testing.B) {
	if !hasFewZ || !bqAsm {
		b.Skip("no few-row kernels here")
	}
	for ty, fns := range k4fewKernels {
		_, kf := qgemmKernels(ty, "vnni")
		rng := rand.New(rand.NewPCG(1, 2))
		K, N := 4864, 4
		nb := K / 256
		w := gemmWeights(rng, ty, N, K)
		for R := 2; R <= 4; R++ {
			x := make([]float32, R*K)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			var a ggml.Act
			quantizeGGMLAct(&a, x, R, K, 256)
			var pk qgemmPack
			pk.packK(&a, ty, 0, R, nb)
			y := make([]float32, R*N)
			ap := unsafe.Slice((*int8)(unsafe.Pointer(&pk.buf[0])), 4*len(pk.buf))
			b.Run(fmt.Sprintf("%s/R%d", ty, R), func(b *testing.B) {
				best := [2]time.Duration{1 << 62, 1 << 62}
				for b.Loop() {
					for v := range 2 {
						t0 := cpuTime()
						for range 1000 {
							if v == 0 {
								kf[R-1](nb, &w.raw[0], w.rb, &ap[0], &y[0], 4*N)
							} else {
								fns[R-2](nb, &w.raw[0], w.rb, &ap[0], &y[0], 4*N, 1, 4*w.rb, 16, 4)
							}
						}
						best[v] = min(best[v], cpuTime()-t0)
					}
				}
				b.ReportMetric(float64(best[0].Nanoseconds())/1000/float64(nb), "ns-tile")
				b.ReportMetric(float64(best[1].Nanoseconds())/1000/float64(nb), "ns-few")
			})
		}
	}
}
