package native

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/ggml"
)

// BenchmarkQGEMMKernel is the Q5_0 4×8 tile kernel alone on data in the
// L1 cache (K 896): CPU ns per step of a ZMM accumulator (two (n, r)
// pairs of one block: VPDPBUSD, conversion, scale product,
// multiplication, addition), the figure the kernel's design turns on.
func BenchmarkQGEMMKernel(b *testing.B) {
	fns, _ := qgemmKernels(ggml.Q5_0, "vnni")
	if fns == nil {
		b.Skip("no tile kernels here")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	K, N, m := 896, 4, 8
	w := gemmWeights(rng, ggml.Q5_0, N, K)
	x := make([]float32, m*K)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	var a ggml.Act
	quantizeGGMLAct(&a, x, m, K, 32)
	var pk qgemmPack
	nb := K / 32
	pk.pack(&a, 0, m, nb, 8)
	y := make([]float32, m*N)
	ap := unsafe.Slice((*int8)(unsafe.Pointer(&pk.buf[0])), 4*len(pk.buf))
	best := time.Duration(1 << 62)
	for b.Loop() {
		t0 := cpuTime()
		for range 1000 {
			fns[7](nb, &w.raw[0], w.rb, &ap[0], &y[0], 4*N)
		}
		best = min(best, cpuTime()-t0)
	}
	b.ReportMetric(float64(best.Nanoseconds())/1000/float64(nb*16), "cpu-ns/acc")
}

// BenchmarkQGEMMBatchedDecode is a batched decode step's products: m = 1,
// 2, 4 rows against 24 weights of a Qwen2.5-0.5B layer's MLP shape (about
// 60 MB together: read from memory, not from the cache, as in a real
// step), m = 1 on the single-row kernels and m ≥ 2 on the tiles. cpu-ns
// is the least CPU time of one product; a step of m sequences costs
// little more than one where cpu-ns at m = 4 is close to m = 1's.
func BenchmarkQGEMMBatchedDecode(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, ty := range []ggml.Type{ggml.Q4_0, ggml.Q5_0, ggml.Q8_0, ggml.Q4_K, ggml.Q6_K} {
		K, N := 896, 4864
		if ty.BlockSize() == 256 {
			K, N = 4864, 896
		}
		w0 := gemmWeights(rng, ty, N, K)
		ws := make([]*bqWeights, 24)
		for i := range ws {
			raw := append([]byte(nil), w0.raw...)
			ws[i] = &bqWeights{n: N, k: K, typ: ty, raw: raw, rb: w0.rb, gk: w0.gk}
			ws[i].acts.New = func() any { return new(ggml.Act) }
		}
		for _, m := range []int{1, 2, 4} {
			x := make([]float32, m*K)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			y := make([]float32, m*N)
			for _, tiles := range []bool{false, true} {
				name := fmt.Sprintf("%s/K%d/N%d/m%d", ty, K, N, m)
				if tiles { // the tiles of qgemm.go where the few-row kernels would take it
					if m == 1 || ty != ggml.Q5_0 {
						continue
					}
					name += "/tiles"
				}
				b.Run(name, func(b *testing.B) {
					fewOff = tiles
					defer func() { fewOff = false }()
					best := time.Duration(1 << 62)
					for b.Loop() {
						t0 := cpuTime()
						for _, w := range ws {
							if m == 1 || !w.runGEMM(nil, x, y, m) {
								w.runGGMLInt(nil, x, y, m)
							}
						}
						best = min(best, cpuTime()-t0)
					}
					b.ReportMetric(float64(best.Nanoseconds())/float64(len(ws)), "cpu-ns/op")
					b.ReportMetric(float64(best.Nanoseconds())/float64(len(ws)*m), "cpu-ns/row")
				})
			}
		}
	}
}

// BenchmarkQGEMMKernelK is a K type's 4×R tile kernels alone on data in
// the L1 cache (K 2048): CPU ns a super-block of the four weight rows,
// R = 1…4 (how the tile's cost grows with the rows).
func BenchmarkQGEMMKernelK(b *testing.B) {
	for _, ty := range []ggml.Type{ggml.Q4_K, ggml.Q6_K} {
		_, kf := qgemmKernels(ty, "vnni")
		if kf == nil {
			b.Skip("no tile kernels here")
		}
		rng := rand.New(rand.NewPCG(1, 2))
		K, N := 2048, 4
		nb := K / 256
		w := gemmWeights(rng, ty, N, K)
		for R := 1; R <= 4; R++ {
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
				best := time.Duration(1 << 62)
				for b.Loop() {
					t0 := cpuTime()
					for range 1000 {
						kf[R-1](nb, &w.raw[0], w.rb, &ap[0], &y[0], 4*N)
					}
					best = min(best, cpuTime()-t0)
				}
				b.ReportMetric(float64(best.Nanoseconds())/1000/float64(nb), "cpu-ns/superblock")
			})
		}
	}
}
