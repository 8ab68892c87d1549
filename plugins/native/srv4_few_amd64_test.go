package native

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/ggml"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

// TestSrv4FewSameBits: the few-row kernels (m = 2…4), groups of four and
// of eight weight rows, on shapes with several groups a call (TestQGEMMSameBits'
// N of 4 and 13 make at most one) and rows left over, one and two
// threads, give every output the bits of core/ggml's Dot of that row
// alone.
func TestSrv4FewSameBits(t *testing.T) {
	if !hasFewZ || !bqAsm {
		t.Skip("no few-row kernels here (amd64 with AVX-512 BW, BITALG, VNNI)")
	}
	defer func(g int) { fewGroup = g }(fewGroup)
	rng := rand.New(rand.NewPCG(28, 4))
	for _, ty := range []ggml.Type{ggml.Q5_0, ggml.Q8_0} {
		for _, K := range []int{32, 896} {
			for _, N := range []int{72, 133, 600} {
				w := gemmWeights(rng, ty, N, K)
				for _, G := range []int{4, 8} {
					fewGroup = G
					for m := 2; m <= fewMaxRows; m++ {
						for _, threads := range []int{1, 2} {
							name := fmt.Sprintf("%s/K%d/N%d/G%d/m%d/t%d", ty, K, N, G, m, threads)
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
							ok := w.runFew(p, x, y, m)
							p.close()
							if !ok {
								t.Fatalf("%s: runFew declined", name)
							}
							var a ggml.Act
							a.Quantize(x, m, K, 32)
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
}

// BenchmarkSrv4FewMem: the few-row kernels (groups of four or eight
// weight rows), the tiles of qgemm.go
// (fewOff) and the single-row path (m = 1) on a Qwen2.5-0.5B MLP weight
// (Q5_0, 4864 × 896) and its classifier (Q8_0, 151936 × 896), each
// weight copied to about 64 MB so that it streams from memory, at m = 4
// (m = 1 for the single-row path), one thread, the variants in a random
// order each round: the least CPU µs of one product each.
func BenchmarkSrv4FewMem(b *testing.B) {
	if !hasFewZ || !bqAsm {
		b.Skip("no few-row kernels here")
	}
	defer func(g int) { fewGroup = g }(fewGroup)
	rng := rand.New(rand.NewPCG(7, 8))
	for _, s := range []struct {
		ty   ggml.Type
		n, k int
	}{{ggml.Q5_0, 4864, 896}, {ggml.Q8_0, 151936, 896}} {
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
		const m = 4
		x := make([]float32, m*s.k)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		y := make([]float32, m*s.n)
		names := []string{"m1", "few4", "few8", "tiles"}
		b.Run(fmt.Sprintf("%s/N%d", s.ty, s.n), func(b *testing.B) {
			best := make([]float64, len(names))
			for i := range best {
				best[i] = math.Inf(1)
			}
			for b.Loop() {
				for _, i := range rng.Perm(len(names)) {
					v := names[i]
					fewOff = v == "tiles"
					fewGroup = map[bool]int{false: 4, true: 8}[v == "few8"]
					t0 := cpuTime()
					for _, w := range ws {
						if v == "m1" {
							w.runGGMLInt(nil, x[:s.k], y[:s.n], 1)
						} else if !w.runGEMM(nil, x, y, m) {
							b.Fatal("runGEMM declined")
						}
					}
					best[i] = min(best[i], float64((cpuTime()-t0).Nanoseconds())/1e3/float64(len(ws)))
				}
			}
			fewOff = false
			for i, v := range names {
				b.ReportMetric(best[i], "us-"+v)
			}
		})
	}
}

// TestSrv4FewGroupSameBits: a group of Q5_0 and Q8_0 siblings (bias Adds
// taken in) at m = 2…4 activation rows (runFewGroup: one loop, one
// quantization) gives each output the bits the nodes give apart, one
// thread and two.
func TestSrv4FewGroupSameBits(t *testing.T) {
	if !hasFewZ || !bqAsm {
		t.Skip("no few-row kernels here")
	}
	rng := rand.New(rand.NewPCG(41, 5))
	ctx := context.Background()
	specs := []bqSpec{{"q", "a", ggml.Q5_0, 200, 1}, {"k", "a", ggml.Q5_0, 40, 0}, {"v", "a", ggml.Q8_0, 136, 2}, {"o", "a2", ggml.Q5_0, 24, 0}}
	for m := 2; m <= fewMaxRows; m++ {
		sg, in := bqGroupGraph(rng, m, 896, specs)
		for _, threads := range []int{1, 2} {
			var res [2][]*graph.Tensor
			for i, noFuse := range []bool{true, false} {
				b := New(Options{})
				b.noFuse = noFuse
				exe, err := b.Compile(ctx, sg, hal.CompileOptions{Threads: threads, Precision: hal.PrecisionInt8})
				if err != nil {
					t.Fatal(err)
				}
				res[i] = []*graph.Tensor{{}, {}, {}, {}}
				if err := exe.Execute(ctx, in, res[i]); err != nil {
					t.Fatal(err)
				}
				b.Close()
			}
			for o := range res[0] {
				want, got := graph.Data[float32](res[0][o]), graph.Data[float32](res[1][o])
				if len(got) != len(want) || len(got) == 0 {
					t.Fatalf("m %d threads %d output %d: %d values, want %d", m, threads, o, len(got), len(want))
				}
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("m %d threads %d output %d [%d]: %v, apart %v", m, threads, o, i, got[i], want[i])
					}
				}
			}
		}
	}
}
