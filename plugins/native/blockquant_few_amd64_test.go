package native

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/ggml"
)

// BenchmarkFewKernel: the Q5_0 few-row kernels and the tiles of
// qgemm.go alone on data in the L1 cache (K 896, 16 weight rows, R =
// 2…4 activation rows): CPU ns of one (weight row, activation row,
// block) product. (TestQGEMMSameBits checks their bits.)
func BenchmarkFewKernel(b *testing.B) {
	fns, _ := qgemmKernels(ggml.Q5_0, "vnni")
	if fns == nil || !hasFewZ {
		b.Skip("no ZMM kernels here")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	K, N := 896, 16
	nb := K / 32
	w := gemmWeights(rng, ggml.Q5_0, N, K)
	for R := 2; R <= 4; R++ {
		x := make([]float32, R*K)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		var a ggml.Act
		quantizeGGMLAct(&a, x, R, K, 32)
		var pk qgemmPack
		pk.pack(&a, 0, R, nb, 16)
		ap := unsafe.Slice((*int8)(unsafe.Pointer(&pk.buf[0])), 4*len(pk.buf))
		f0 := make([]uint8, fewStride(R)*nb+64)
		fb := f0[(64-int(uintptr(unsafe.Pointer(&f0[0]))%64))%64:]
		packFew(fb, &a, R, nb)
		y := make([]float32, R*N)
		for _, tiles := range []bool{false, true} {
			name := fmt.Sprintf("R%d/few", R)
			if tiles {
				name = fmt.Sprintf("R%d/tiles", R)
			}
			b.Run(name, func(b *testing.B) {
				best := time.Duration(1 << 62)
				for b.Loop() {
					t0 := cpuTime()
					for range 1000 {
						if tiles {
							for n := 0; n < N; n += 4 {
								fns[R-1](nb, &w.raw[n*w.rb], w.rb, &ap[0], &y[n], 4*N)
							}
						} else {
							fewQ5_0[R-2](nb, &w.raw[0], w.rb, &fb[0], &y[0], 4*N, N/4)
						}
					}
					best = min(best, cpuTime()-t0)
				}
				b.ReportMetric(float64(best.Nanoseconds())/1000/float64(nb*N*R), "cpu-ns/product")
			})
		}
	}
}
