package native

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/ggml"
)

// BenchmarkDecodeStream: decode's products alone (one activation row), a
// layer's worth of weights after another as a model's decode step runs
// them (Qwen2.5-0.5B's or Llama-3.2-1B's shapes: Q, K, V, O, gate, up,
// down), 256 MiB in all so that every byte comes from memory, through a
// pool of 1 or 2 threads exactly as the nodes call it (runGGMLInt, its
// tasks and barriers), beside a read-only stream of as many bytes split
// the same way (touchLines: a byte a cache line, the rate memory gives
// now). Bytes/s is weight bytes over
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
					streamRun(b, bytes, func() {
						for _, w := range ws {
							per := max(len(w.raw)/(4*th), 1<<16) &^ 63
							n := (len(w.raw) + per - 1) / per
							p.parallel(n, func(t int) {
								pfSink.Add(uint32(touchLines(w.raw[t*per : min(len(w.raw), (t+1)*per)])))
							})
						}
					})
				})
			}
		}
	}
}

// BenchmarkDecodeChain: decode's products (Qwen2.5-0.5B's layer shapes in
// Q8_0 or Q4_0, 256 MiB in all) through a pool of two threads with
// serial work on the caller between them (gap: about what a step's
// norms, attention and executor cost a product at one thread, as
// multiply-adds over a 896-float row), with the weight prefetch
// (bw_prefetch.go) on and off, alternating pass by pass so that both meet
// the same machine; reports each one's median pass time and their ratio.
//
//	go test -run '^$' -bench DecodeChain -benchtime 40x ./plugins/native
func BenchmarkDecodeChain(b *testing.B) {
	const total = 256 << 20
	rng := rand.New(rand.NewPCG(31, 31))
	shapes := [][2]int{{1152, 896}, {896, 896}, {9728, 896}, {896, 4864}} // QKV, O, gate+up, down
	for _, ty := range []ggml.Type{ggml.Q8_0, ggml.Q4_0} {
		for _, gap := range []int{0, 16, 48} {
			var ws []*bqWeights
			var ch pfChain
			p2 := &pool{workers: 1} // the task sizes of two threads
			var bytes int64
			for bytes < total {
				for _, s := range shapes {
					N, K := s[0], s[1]
					rb, _ := ty.RowBytes(K)
					w := &bqWeights{n: N, k: K, typ: ty, raw: randomGGML(rng, ty, N, K), rb: rb}
					w.gk = bqkKernelFor(ty)
					w.acts.New = func() any { return new(ggml.Act) }
					w.pfl = ch.link(w.intTaskRows(p2, 1)*w.rb, w.raw)
					ws = append(ws, w)
					bytes += int64(len(w.raw))
				}
			}
			x := make([]float32, 4864)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			y := make([]float32, 9728)
			b.Run(fmt.Sprintf("%s_gap%d", ty, gap), func(b *testing.B) {
				p := newPool(2)
				defer p.close()
				p.begin()
				defer p.end()
				defer pfOff.Store(false)
				var times [2][]float64
				var sink float32
				b.SetBytes(bytes)
				for i := 0; i < b.N; i++ {
					off := i%2 == 1
					pfOff.Store(off)
					t0 := time.Now()
					for _, w := range ws {
						w.run(p, x[:w.k], y[:w.n], 1)
						sink += serialWork(y[:896], gap)
					}
					k := 0
					if off {
						k = 1
					}
					times[k] = append(times[k], float64(time.Since(t0).Nanoseconds()))
				}
				_ = sink
				if len(times[1]) > 0 {
					on, off := median(times[0]), median(times[1])
					b.ReportMetric(on/1e6, "on-ms")
					b.ReportMetric(off/1e6, "off-ms")
					b.ReportMetric(on/off, "on/off")
				}
			})
		}
	}
}

// serialWork is reps passes of multiply-adds over x (a caller's serial
// node between two products).
func serialWork(x []float32, reps int) float32 {
	var s float32
	for r := 0; r < reps; r++ {
		for i, v := range x {
			s += v * x[len(x)-1-i]
		}
	}
	return s
}

// median is the middle of v (sorted in place).
func median(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}
