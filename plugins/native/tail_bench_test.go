package native

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/ggml"
)

// tailBenchKnobs are BenchmarkTailChain's experiments: each sets the
// setting of a pass (off: the other one than built).
var tailBenchKnobs = map[string]func(off bool){
	"split": func(off bool) { tailSplitOff.Store(off) },
	"pf":    func(off bool) { pfOff.Store(off) },
}

// BenchmarkTailChain: Qwen2.5-0.5B's decode products (Q, K, V, O, gate,
// up, down: one activation row, 256 MiB of weights in all, so every
// byte comes from memory) through a pool of two threads with a little
// serial work between them (BenchmarkDecodeChain's), each experiment of
// tailBenchKnobs on and off pass by pass, so that both settings meet the
// same machine; reports each one's median pass time and their ratio.
//
//	go test -run '^$' -bench TailChain -benchtime 60x ./plugins/native
func BenchmarkTailChain(b *testing.B) {
	const total = 256 << 20
	rng := rand.New(rand.NewPCG(32, 32))
	shapes := [][2]int{{896, 896}, {128, 896}, {128, 896}, {896, 896}, {4864, 896}, {4864, 896}, {896, 4864}}
	for _, ty := range []ggml.Type{ggml.Q4_0} {
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
		y := make([]float32, 4864)
		for _, exp := range []string{"split", "pf"} {
			knob := tailBenchKnobs[exp]
			b.Run(fmt.Sprintf("%s_%s", ty, exp), func(b *testing.B) {
				p := newPool(2)
				defer p.close()
				p.begin()
				defer p.end()
				defer knob(false)
				var times [2][]float64
				var sink float32
				b.SetBytes(bytes)
				for i := 0; i < b.N; i++ {
					off := i%2 == 1
					knob(off)
					t0 := time.Now()
					for _, w := range ws {
						w.run(p, x[:w.k], y[:w.n], 1)
						sink += serialWork(y[:896], 4)
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
