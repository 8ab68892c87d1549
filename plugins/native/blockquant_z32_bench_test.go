package native

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/ggml"
)

// BenchmarkBlockQuantZ32: decode's product (one activation row) of a
// Q4_0 or Q8_0 weight through the kernel the node takes (dot4n over all
// rows in one call, as runGGMLInt's task does), one thread; bytes/s
// counts the weight's bytes. 4864 rows of K 896 (Qwen2.5-0.5B's up
// projection, 2.4 MB in Q4_0) or 2048 (Llama-3.2-1B's shape) mostly stay
// in the caches (the kernel's compute rate); the 64 MiB ones stream from
// memory.
//
//	go test -run '^$' -bench BlockQuantZ32 ./plugins/native
func BenchmarkBlockQuantZ32(b *testing.B) {
	rng := rand.New(rand.NewPCG(32, 32))
	for _, ty := range []ggml.Type{ggml.Q4_0, ggml.Q8_0} {
		for _, K := range []int{896, 2048} {
			rb, _ := ty.RowBytes(K)
			for _, rows := range []int{4864, (64 << 20) / rb / 8 * 8} {
				raw := randomGGML(rng, ty, rows, K)
				w := &bqWeights{n: rows, k: K, typ: ty, raw: raw, rb: rb}
				k := bqkKernelFor(ty)
				x := make([]float32, K)
				for i := range x {
					x[i] = float32(rng.NormFloat64())
				}
				var a ggml.Act
				a.Quantize(x, 1, K, 32)
				y := make([]float32, rows)
				b.Run(fmt.Sprintf("%s_%dx%d_%s", ty, rows, K, k.name), func(b *testing.B) {
					if k.dot4n == nil {
						b.Skip("no dot4n kernel here")
					}
					streamRun(b, int64(len(raw)), func() { k.dot4n(w, 0, rows/4, &a, 0, y) })
				})
			}
		}
	}
}
