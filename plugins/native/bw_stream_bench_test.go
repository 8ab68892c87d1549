package native

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/ggml"
)

// BenchmarkDecodeStream: decode's products alone (one activation row), a
// layer's worth of weights after another as a model's decode step runs
// them (Qwen2.5-0.5B's or Llama-3.2-1B's shapes: Q, K, V, O, gate, up,
// down), 256 MiB in all so that every byte comes from memory, through a
// pool of 1 or 2 threads exactly as the nodes call it (runGGMLInt, its
// tasks and barriers), beside a read-only stream of as many bytes split
// the same way (the rate memory gives now). Bytes/s is weight bytes over
// wall time; cpu-MB/s over the process's CPU time. The gap between the
// products' rate and the read stream is the kernels' and the pool's; the
// gap between the products' rate here and a model's decode is the rest
// of a step (attention, norms, the executor).
//
//	go test -run '^$' -bench DecodeStream ./plugins/native
func BenchmarkDecodeStream(b *testing.B) {
	const total = 256 << 20
	rng := rand.New(rand.NewPCG(30, 30))
	shapes := map[string][][2]int{ // [N, K] of one layer's products
		"qwen":  {{896, 896}, {128, 896}, {128, 896}, {896, 896}, {4864, 896}, {4864, 896}, {896, 4864}},
		"llama": {{2048, 2048}, {512, 2048}, {512, 2048}, {2048, 2048}, {8192, 2048}, {8192, 2048}, {2048, 8192}},
	}
	for _, model := range []string{"qwen", "llama"} {
		for _, ty := range []ggml.Type{ggml.Q8_0, ggml.Q4_0} {
			var ws []*bqWeights
			var bytes int64
			maxN, maxK := 0, 0
			for bytes < total {
				for _, s := range shapes[model] {
					N, K := s[0], s[1]
					rb, _ := ty.RowBytes(K)
					w := &bqWeights{n: N, k: K, typ: ty, raw: randomGGML(rng, ty, N, K), rb: rb}
					w.gk = bqkKernelFor(ty)
					w.acts.New = func() any { return new(ggml.Act) }
					ws = append(ws, w)
					bytes += int64(len(w.raw))
					maxN, maxK = max(maxN, N), max(maxK, K)
				}
			}
			x := make([]float32, maxK)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			y := make([]float32, maxN)
			for _, th := range []int{1, 2} {
				b.Run(fmt.Sprintf("%s_%s_t%d", model, ty, th), func(b *testing.B) {
					p := newPool(th)
					defer p.close()
					p.begin()
					defer p.end()
					streamRun(b, bytes, func() {
						for _, w := range ws {
							w.run(p, x[:w.k], y[:w.n], 1)
						}
					})
				})
				b.Run(fmt.Sprintf("%s_%s_read_t%d", model, ty, th), func(b *testing.B) {
					p := newPool(th)
					defer p.close()
					p.begin()
					defer p.end()
					var sink [2]uint64
					streamRun(b, bytes, func() {
						for _, w := range ws {
							per := max(len(w.raw)/(4*th), 1<<16) &^ 63
							n := (len(w.raw) + per - 1) / per
							p.parallel(n, func(t int) {
								sink[t&1] += readSum(w.raw[t*per : min(len(w.raw), (t+1)*per)])
							})
						}
					})
				})
			}
		}
	}
}

// readSum reads b once (eight independent sums of 64-bit words).
func readSum(b []byte) uint64 {
	var s [8]uint64
	for i := 0; i+64 <= len(b); i += 64 {
		c := b[i : i+64 : i+64]
		for j := range s {
			s[j] += uint64(c[8*j]) | uint64(c[8*j+7])<<56
		}
	}
	return s[0] + s[1] + s[2] + s[3] + s[4] + s[5] + s[6] + s[7]
}
