package native

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/ggml"
)

// BenchmarkFewKernel: the Q5_0 and Q8_0 few-row kernels (groups of
// four and of eight weight rows) and the tiles of qgemm.go alone on data
// in the L1 cache (K 896, 16 weight rows, R = 2…4 activation rows): CPU
// ns of one (weight row, activation row, block) product. (TestQGEMMSameBits checks their bits.)
func BenchmarkFewKernel(b *testing.B) {
	for _, ty := range []ggml.Type{ggml.Q5_0, ggml.Q8_0} {
		fns, _ := qgemmKernels(ty, "vnni")
		if fns == nil || !hasFewZ {
			b.Skip("no ZMM kernels here")
		}
		rng := rand.New(rand.NewPCG(1, 2))
		K, N := 896, 16
		nb := K / 32
		w := gemmWeights(rng, ty, N, K)
		for R := 2; R <= 4; R++ {
			x := make([]float32, R*K)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			var a ggml.Act
			quantizeGGMLAct(&a, x, R, K, 32)
			var pk qgemmPack
			pk.pack(&a, 0, R, nb, qgemmOffset(ty))
			ap := unsafe.Slice((*int8)(unsafe.Pointer(&pk.buf[0])), 4*len(pk.buf))
			y := make([]float32, R*N)
			f0 := make([]uint8, fewStride(R)*nb+64)
			fb := f0[(64-int(uintptr(unsafe.Pointer(&f0[0]))%64))%64:]
			packFew(fb, &a, R, nb, fewOffset(ty))
			for _, v := range []string{"few4", "few8", "tiles"} {
				name := fmt.Sprintf("%s/R%d/%s", ty, R, v)
				G := map[string]int{"few4": 4, "few8": 8}[v]
				few := fewZKernels[fewVariant{ty, G}]
				b.Run(name, func(b *testing.B) {
					ldw, gw, gy, ldo := fewLayout(ty, N/max(G, 1), G, w.rb)
					best := time.Duration(1 << 62)
					for b.Loop() {
						t0 := cpuTime()
						for range 1000 {
							if G == 0 {
								for n := 0; n < N; n += 4 {
									fns[R-1](nb, &w.raw[n*w.rb], w.rb, &ap[0], &y[n], 4*N)
								}
							} else {
								few[R-2](nb, &w.raw[0], ldw, &fb[0], &y[0], 4*N, N/G, gw, gy, ldo)
							}
						}
						best = min(best, cpuTime()-t0)
					}
					b.ReportMetric(float64(best.Nanoseconds())/1000/float64(nb*N*R), "cpu-ns/product")
				})
			}
		}
	}
}

// BenchmarkFewShapes is a Qwen2.5-0.5B "Q4_K_M" decode step's products
// on their real shapes and types (attention's 896×896 and the MLP's
// 4864×896 in Q5_0, the down projection 896×4864 in Q4_K or Q6_K, the
// tied classifier 151936×896 in Q8_0), at m = 1, 2 and 4 activation rows
// (a step of that many sequences), the three alternating in one loop,
// each weight copied to about 64 MB so that it comes from memory as in a
// step. It reports the least CPU µs of one product at each m (t=2: on
// two threads) and m2/m1, m4/m1: what a step of 2 or 4 sequences costs
// over one (m4tiles: the tiles of qgemm.go where the few-row kernels
// take m = 4). The four run in a random order each round: in a fixed
// cyclic order the same kernel measured up to twice as fast in one place
// as in another.
func BenchmarkFewShapes(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	shapes := []struct {
		ty   ggml.Type
		n, k int
	}{{ggml.Q5_0, 896, 896}, {ggml.Q5_0, 4864, 896}, {ggml.Q4_K, 896, 4864}, {ggml.Q6_K, 896, 4864}, {ggml.Q8_0, 151936, 896}}
	for _, s := range shapes {
		w0 := gemmWeights(rng, s.ty, s.n, s.k)
		ws := make([]*bqWeights, max(1, (64<<20)/len(w0.raw)))
		for i := range ws {
			raw := w0.raw
			if i > 0 {
				raw = append([]byte(nil), w0.raw...)
			}
			ws[i] = &bqWeights{n: s.n, k: s.k, typ: s.ty, raw: raw, rb: w0.rb, gk: w0.gk}
			ws[i].acts.New = func() any { return new(ggml.Act) }
		}
		x := make([]float32, 4*s.k)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		y := make([]float32, 4*s.n)
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/N%d/K%d/t%d", s.ty, s.n, s.k, threads), func(b *testing.B) {
				var p *pool
				if threads > 1 {
					p = newPool(threads)
					defer p.close()
				}
				ms := []int{1, 2, 4, 4}
				best := make([]time.Duration, len(ms))
				for i := range best {
					best[i] = 1 << 62
				}
				for b.Loop() {
					for _, i := range rng.Perm(len(ms)) {
						m := ms[i]
						fewOff = i == 3
						t0 := cpuTime()
						for _, w := range ws {
							if m == 1 || !w.runGEMM(p, x[:m*s.k], y[:m*s.n], m) {
								w.runGGMLInt(p, x[:m*s.k], y[:m*s.n], m)
							}
						}
						best[i] = min(best[i], cpuTime()-t0)
					}
				}
				fewOff = false
				us := func(i int) float64 { return float64(best[i].Nanoseconds()) / 1e3 / float64(len(ws)) }
				b.ReportMetric(us(0), "cpu-us-m1")
				b.ReportMetric(us(2), "cpu-us-m4")
				b.ReportMetric(us(1)/us(0), "m2/m1")
				b.ReportMetric(us(2)/us(0), "m4/m1")
				if fewKernels(s.ty) != nil {
					b.ReportMetric(us(3)/us(0), "m4tiles/m1")
				}
			})
		}
	}
}
