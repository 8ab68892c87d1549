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

// TestQ40PanelPack: the panel packer gives the x16 layout's bytes
// (x16Q40Repack) for rows with a stride larger than a row.
func TestQ40PanelPack(t *testing.T) {
	fns := q40Panels("vnni")
	if fns == nil {
		t.Skip("no Q4_0 panel kernels here (amd64 with AVX-512 VNNI)")
	}
	rng := rand.New(rand.NewPCG(41, 1))
	const K = 896
	nb := K / 32
	rb := 18*nb + 7 // rows further apart than their bytes
	raw := make([]byte, 16*rb)
	for i := range raw {
		raw[i] = byte(rng.Uint32())
	}
	want, got := make([]byte, x16Q40Size(nb)), make([]byte, x16Q40Size(nb))
	x16Q40Repack(want, raw, rb, nb)
	fns.pack(nb, &raw[0], rb, &got[0])
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("byte %d (block %d, offset %d): %#x, want %#x", i, i/x16Q40Block, i%x16Q40Block, got[i], want[i])
		}
	}
}

// TestQ40PanelsSameBits: every row count of the panel kernels (1 to 16
// rows in a last group, several groups, more than the five that prefetch
// the next panel), N with a tail past the last whole panel, one and two
// threads, gives every output core/ggml's Dot's bits; a NaN activation
// gives its row NaN outputs only.
func TestQ40PanelsSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 2))
	const K, N = 320, 53
	w := gemmWeights(rng, ggml.Q4_0, N, K)
	if q40Panels(w.gk.name) == nil {
		t.Skip("no Q4_0 panel kernels here (amd64 with AVX-512 VNNI)")
	}
	for _, m := range []int{2, 3, 5, 8, 16, 17, 23, 31, 32, 40, 47, 100} {
		for _, threads := range []int{1, 2} {
			x := make([]float32, m*K)
			for i := range x {
				x[i] = float32(rng.NormFloat64()) * 3
			}
			nan := m - 2
			x[nan*K+5] = float32(math.NaN())
			y := make([]float32, m*N)
			var p *pool
			if threads > 1 {
				p = newPool(threads)
			}
			if !w.runGEMM(p, x, y, m) {
				t.Fatalf("m%d: runGEMM declined", m)
			}
			p.close()
			var a ggml.Act
			a.Quantize(x, m, K, 32)
			for r := 0; r < m; r++ {
				for n := range N {
					got := y[r*N+n]
					if r == nan {
						if !math.IsNaN(float64(got)) {
							t.Fatalf("m%d/t%d: y[%d,%d] = %v, want NaN", m, threads, r, n, got)
						}
						continue
					}
					want := ggml.Dot(ggml.Q4_0, w.raw[n*w.rb:(n+1)*w.rb], &a, r)
					if math.Float32bits(got) != math.Float32bits(want) {
						t.Fatalf("m%d/t%d: y[%d,%d] = %v, Dot %v", m, threads, r, n, got, want)
					}
				}
			}
		}
	}
}

// BenchmarkQ40Panels: Q4_0 products of m rows on the panel kernels
// (panels) and on the single-row kernels row after row (rows),
// alternating within one run, on the shapes of Qwen2.5-0.5B's and
// Llama-3.2-1B's MLP. cpu-ns/op is the least
// CPU time of one product (the machine's load does not inflate it).
//
//	go test -run '^$' -bench Q40Panels -cpu 1 -count 3 ./plugins/native
func BenchmarkQ40Panels(b *testing.B) {
	rng := rand.New(rand.NewPCG(41, 3))
	for _, s := range [][2]int{{896, 4864}, {4864, 896}, {2048, 8192}, {8192, 2048}} {
		K, N := s[0], s[1]
		w := gemmWeights(rng, ggml.Q4_0, N, K)
		if q40Panels(w.gk.name) == nil {
			b.Skip("no Q4_0 panel kernels here")
		}
		for _, m := range []int{128, 32, 16, 8, 5, 3, 2} {
			x := make([]float32, m*K)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			y := make([]float32, m*N)
			for _, path := range []string{"rows", "panels"} {
				if path == "rows" && m > 8 {
					continue
				}
				b.Run(fmt.Sprintf("K%d/N%d/m%d/%s", K, N, m, path), func(b *testing.B) {
					old := q40PanelMinRows
					q40PanelMinRows = 2
					defer func() { q40PanelMinRows = old }()
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
				})
			}
		}
	}
}

// BenchmarkQ40PanelKernel is the 16×16 panel kernel alone on data in the
// L1 cache (K 896): CPU ns per block of the panel (128 VPDPBUSD).
func BenchmarkQ40PanelKernel(b *testing.B) {
	fns := q40Panels("vnni")
	if fns == nil {
		b.Skip("no Q4_0 panel kernels here")
	}
	rng := rand.New(rand.NewPCG(41, 4))
	const K, m = 896, 16
	nb := K / 32
	w := gemmWeights(rng, ggml.Q4_0, 16, K)
	x := make([]float32, m*K)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	var a ggml.Act
	quantizeGGMLAct(&a, x, m, K, 32)
	var pa, pb q40PanelAct
	pa.pack(&a, m, nb)
	pb.buf = make([]byte, x16Q40Size(nb))
	fns.pack(nb, &w.raw[0], w.rb, &pb.buf[0])
	y := make([]float32, m*16)
	for _, R := range []int{16, 8, 4} {
		b.Run(fmt.Sprintf("R%d", R), func(b *testing.B) {
			best := time.Duration(1 << 62)
			for b.Loop() {
				t0 := cpuTime()
				for range 1000 {
					fns.kern[R-1](nb, &pb.buf[0], (*int8)(unsafe.Pointer(&pa.buf[0])), &y[0], 64, uintptr(unsafe.Pointer(&pb.buf[0])), 0)
				}
				best = min(best, cpuTime()-t0)
			}
			b.ReportMetric(float64(best.Nanoseconds())/1000/float64(nb), "cpu-ns/block")
			b.ReportMetric(float64(16*R*32*nb*1000)/float64(best.Nanoseconds()), "MAC/ns")
		})
	}
	b.Run("pack", func(b *testing.B) {
		best := time.Duration(1 << 62)
		for b.Loop() {
			t0 := cpuTime()
			for range 1000 {
				fns.pack(nb, &w.raw[0], w.rb, &pb.buf[0])
			}
			best = min(best, cpuTime()-t0)
		}
		b.ReportMetric(float64(best.Nanoseconds())/1000/float64(nb), "cpu-ns/block")
	})
}

// BenchmarkQ40PanelPackMemory: packing panels of weights read from
// memory (64 MiB, K 2048), panel after panel into one buffer: the
// packer's rate when its rows are not in cache.
func BenchmarkQ40PanelPackMemory(b *testing.B) {
	fns := q40Panels("vnni")
	if fns == nil {
		b.Skip("no Q4_0 panel kernels here")
	}
	rng := rand.New(rand.NewPCG(41, 5))
	const K = 2048
	nb := K / 32
	rb := 18 * nb
	n := (64 << 20) / rb &^ 15
	raw := randomGGML(rng, ggml.Q4_0, n, K)
	buf := make([]byte, x16Q40Size(nb))
	best := time.Duration(1 << 62)
	for b.Loop() {
		t0 := cpuTime()
		for p := 0; p < n; p += 16 {
			fns.pack(nb, &raw[p*rb], rb, &buf[0])
		}
		best = min(best, cpuTime()-t0)
	}
	b.ReportMetric(float64(best.Nanoseconds())/float64(n/16*nb), "cpu-ns/block")
	b.ReportMetric(float64(len(raw))/float64(best.Nanoseconds()), "GB/s")
}

// BenchmarkQ40PanelsMemory: m = 128 and m = 4 products on 8 weights of
// Llama-3.2-1B's MLP shape (K 2048, N 8192: 75 MB together, more than
// the L3 cache), one after the other as a prompt's layers read them: the
// panels' packing then reads each weight from memory, not from the cache
// (BenchmarkQ40Panels's single weight stays in L3). cpu-ns/op is the
// least CPU time of the 8 products.
func BenchmarkQ40PanelsMemory(b *testing.B) {
	rng := rand.New(rand.NewPCG(41, 6))
	const K, N = 2048, 8192
	ws := make([]*bqWeights, 8)
	for i := range ws {
		ws[i] = gemmWeights(rng, ggml.Q4_0, N, K)
	}
	if q40Panels(ws[0].gk.name) == nil {
		b.Skip("no Q4_0 panel kernels here")
	}
	for _, m := range []int{128, 4} {
		x := make([]float32, m*K)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		y := make([]float32, m*N)
		b.Run(fmt.Sprintf("m%d", m), func(b *testing.B) {
			best := time.Duration(1 << 62)
			for b.Loop() {
				t0 := cpuTime()
				for _, w := range ws {
					w.runGEMM(nil, x, y, m)
				}
				best = min(best, cpuTime()-t0)
			}
			b.ReportMetric(float64(best.Nanoseconds()), "cpu-ns/op")
		})
	}
}
