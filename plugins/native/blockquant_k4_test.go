package native

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/ggml"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

// BenchmarkBlockQuantGGMLKernel: one K-type kernel of the integer path
// alone (no graph, one thread) over a rows×K weight, the one-row kernel
// against the four-row one, per family; bytes/s counts the weight's
// bytes. 2048×2048 stays in cache (the kernel's compute speed);
// 8192×2048 (Llama-3.2-1B's up projection) streams from memory.
func BenchmarkBlockQuantGGMLKernel(b *testing.B) {
	rng := rand.New(rand.NewPCG(34, 5))
	for _, ty := range []ggml.Type{ggml.Q4_K, ggml.Q6_K} {
		for _, rows := range []int{2048, 8192} {
			const K = 2048
			raw := randomGGML(rng, ty, rows, K)
			w := &bqWeights{n: rows, k: K, typ: ty, raw: raw, rb: len(raw) / rows}
			x := make([]float32, K)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			var a ggml.Act
			a.Quantize(x, 1, K, ggml.ActBlock(ty))
			y := make([]float32, rows)
			for _, fam := range []string{"", "avx2", "generic"} {
				k := bqkGo
				if ak := archBQKKernel(ty, fam); ak != nil {
					k = ak
				}
				for _, four := range []bool{false, true} {
					if four && k.dot4 == nil {
						continue
					}
					b.Run(fmt.Sprintf("%s_%dx%d_%s_rows%d", ty, rows, K, k.name, map[bool]int{false: 1, true: 4}[four]), func(b *testing.B) {
						b.SetBytes(int64(len(raw)))
						for i := 0; i < b.N; i++ {
							if four {
								for j := 0; j+4 <= rows; j += 4 {
									k.dot4(w, j, &a, 0, y[j:j+4])
								}
							} else {
								for j := 0; j < rows; j++ {
									y[j] = k.dot(w, j, &a, 0)
								}
							}
						}
					})
				}
			}
		}
	}
}

// BenchmarkBlockQuantGGMLThreads: a decode step's product (M = 1) with
// an 8192×2048 typed weight (Llama-3.2-1B's up projection: larger than
// the caches here) at int8, on one thread and two, the rows split
// between them; bytes/s counts the weight's bytes.
func BenchmarkBlockQuantGGMLThreads(b *testing.B) {
	rng := rand.New(rand.NewPCG(35, 6))
	be := New(Options{})
	defer be.Close()
	ctx := context.Background()
	for _, ty := range []ggml.Type{ggml.Q4_K, ggml.Q6_K} {
		const n, k = 8192, 2048
		sg, a := ggmlGraph(rng, ty, n, k, []int{1, 1, k})
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s_t%d", ty, threads), func(b *testing.B) {
				exe, err := be.Compile(ctx, sg, hal.CompileOptions{Threads: threads, Precision: hal.PrecisionInt8})
				if err != nil {
					b.Fatal(err)
				}
				defer exe.Release()
				out := []*graph.Tensor{{}}
				rb, _ := ty.RowBytes(k)
				b.SetBytes(int64(n * rb))
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := exe.Execute(ctx, []*graph.Tensor{a}, out); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
