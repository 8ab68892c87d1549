package native

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/ggml"
	"golang.org/x/sys/cpu"
)

// TestQ4decDot8VSameBits: bqkQ4_0Dot8V (four blocks of a row a register)
// gives bqkQ4_0Dot8G's bits (which TestBlockQuantGGMLKernelsAgree and
// TestBlockQuantQ4_0ZVariants tie to core/ggml's Dot), for one and
// several groups, rows of 4..152 blocks (Qwen2.5-0.5B's 896 and 4864,
// Llama-3.2-1B's 2048), extreme quants and activations included.
func TestQ4decDot8VSameBits(t *testing.T) {
	if !(hasBQKAVX2 && hasBQIVNNI && cpu.X86.HasAVX512BW && hasQ4decV8) {
		t.Skip("needs AVX-512 BW, VNNI, VBMI and GFNI")
	}
	rng := rand.New(rand.NewPCG(30, 4))
	for _, K := range []int{128, 384, 896, 2048, 4864} {
		for _, rows := range []int{8, 48} {
			raw := randomGGML(rng, ggml.Q4_0, rows, K)
			rb := len(raw) / rows
			if rows == 8 { // every quant 0 or 15: the int8 products' extremes
				for i := range raw {
					if i%rb%18 >= 2 {
						raw[i] = []byte{0x00, 0xFF, 0x0F, 0xF0}[rng.IntN(4)]
					}
				}
			}
			x := make([]float32, K)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
				if rows == 8 && i%7 == 0 {
					x[i] = float32(math.Copysign(3, float64(x[i])))
				}
			}
			var a ggml.Act
			a.Quantize(x, 1, K, 32)
			nb := K / 32
			s := rows / 8
			yg, yv := make([]float32, rows), make([]float32, rows)
			for i := range yv {
				yv[i] = float32(math.NaN())
			}
			bqkQ4_0Dot8G(nb, &raw[0], s*rb, &a.Q[0], &a.D[0], &a.Sum[0], &yg[0], s, rb, s)
			bqkQ4_0Dot8V(nb, &raw[0], s*rb, &a.Q[0], &a.D[0], &a.Sum[0], &yv[0], s, rb, s)
			for i := range yg {
				if math.Float32bits(yg[i]) != math.Float32bits(yv[i]) {
					t.Fatalf("K %d, %d rows, row %d: Dot8G %v, Dot8V %v", K, rows, i, yg[i], yv[i])
				}
			}
		}
	}
}

// BenchmarkQ4decStream: decode's Q4_0 products (one activation row) of
// Qwen2.5-0.5B's and Llama-3.2-1B's layer shapes, 256 MiB in all so every
// byte comes from memory, through a pool of 1 or 2 threads as the nodes
// run them, with bqkQ4_0Dot8V (new) and bqkQ4_0Dot8G (old) alternating
// pass by pass with a read of the same bytes (a byte a cache line: what
// memory gives now), so that all three meet the same machine. Reports
// each one's median pass's GB/s (wall time) and CPU time (ms).
//
//	go test -run '^$' -bench Q4decStream -benchtime 40x ./plugins/native
func BenchmarkQ4decStream(b *testing.B) {
	if !hasQ4decV8 {
		b.Skip("no bqkQ4_0Dot8V here")
	}
	const total = 256 << 20
	rng := rand.New(rand.NewPCG(30, 31))
	shapes := map[string][][2]int{ // [N, K] of one layer's products
		"qwen":  {{896, 896}, {128, 896}, {128, 896}, {896, 896}, {4864, 896}, {4864, 896}, {896, 4864}},
		"llama": {{2048, 2048}, {512, 2048}, {512, 2048}, {2048, 2048}, {8192, 2048}, {8192, 2048}, {2048, 8192}},
	}
	for _, model := range []string{"qwen", "llama"} {
		var ws []*bqWeights
		var bytes int64
		for bytes < total {
			for _, s := range shapes[model] {
				N, K := s[0], s[1]
				rb, _ := ggml.Q4_0.RowBytes(K)
				w := &bqWeights{n: N, k: K, typ: ggml.Q4_0, raw: randomGGML(rng, ggml.Q4_0, N, K), rb: rb}
				w.gk = bqkKernelFor(ggml.Q4_0)
				w.acts.New = func() any { return new(ggml.Act) }
				ws = append(ws, w)
				bytes += int64(len(w.raw))
			}
		}
		x := make([]float32, 8192)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		y := make([]float32, 8192)
		for _, th := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s_t%d", model, th), func(b *testing.B) {
				p := newPool(th)
				defer p.close()
				p.begin()
				defer p.end()
				defer func() { q4decOff = false }()
				var wall, cpu [3][]float64 // [new, old, read]
				for i := 0; i < b.N; i++ {
					k := i % 3
					q4decOff = k == 1
					t0, c0 := time.Now(), cpuTime()
					for _, w := range ws {
						if k == 2 { // a byte a cache line, split as DecodeStream's read
							per := max(len(w.raw)/(4*th), 1<<16) &^ 63
							n := (len(w.raw) + per - 1) / per
							p.parallel(n, func(t int) {
								pfSink.Add(uint32(touchLines(w.raw[t*per : min(len(w.raw), (t+1)*per)])))
							})
							continue
						}
						w.run(p, x[:w.k], y[:w.n], 1)
					}
					cpu[k] = append(cpu[k], float64((cpuTime() - c0).Nanoseconds()))
					wall[k] = append(wall[k], float64(time.Since(t0).Nanoseconds()))
				}
				if len(wall[2]) == 0 {
					return
				}
				for k, name := range []string{"new", "old", "read"} {
					b.ReportMetric(float64(bytes)/median(wall[k]), name+"-GB/s")
					b.ReportMetric(median(cpu[k])/1e6, name+"-cpu-ms")
				}
			})
		}
	}
}

// TestQ4decDot4nAgree: Q4_0's dot4n through q4decDot4n (eight-row
// groups, then four by bqkQ4_0Dot4G) gives core/ggml's Dot (the Go kernel)
// bit for bit, for 4..11 groups of four rows from rows 0 and 3, on
// activations with a zero block and a large value.
func TestQ4decDot4nAgree(t *testing.T) {
	k := bqkKernelFor(ggml.Q4_0)
	if k == nil || k.dot4n == nil || !hasQ4decV8 {
		t.Skip("no ZMM Q4_0 kernels here")
	}
	rng := rand.New(rand.NewPCG(30, 5))
	for _, K := range []int{128, 896, 2048} {
		const rows, m = 47, 3
		raw := randomGGML(rng, ggml.Q4_0, rows, K)
		w := &bqWeights{n: rows, k: K, typ: ggml.Q4_0, raw: raw, rb: len(raw) / rows}
		x := make([]float32, m*K)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		for i := 0; i < 32; i++ {
			x[K+32+i] = 0 // row 1: a zero block
		}
		x[2*K+7] = 1e6 // row 2: one large value
		var a ggml.Act
		a.Quantize(x, m, K, 32)
		for _, j0 := range []int{0, 3} {
			for ng := 2; ng <= 11; ng++ {
				for r := 0; r < m; r++ {
					y := make([]float32, 4*ng)
					k.dot4n(w, j0, ng, &a, r, y)
					for i, g := range y {
						if want := bqkGo.dot(w, j0+i, &a, r); math.Float32bits(g) != math.Float32bits(want) {
							t.Fatalf("K %d, rows %d.. act %d, %d groups of 4: row %d %v, Go %v", K, j0, r, ng, i, g, want)
						}
					}
				}
			}
		}
	}
}
