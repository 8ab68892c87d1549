package native

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/ggml"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

// BenchmarkBQGroupDecode: one decode step's sibling products of a
// Qwen2.5-0.5B layer (Q, K, V with biases; gate and up), Q8_0, on the
// integer path at 1 and 2 threads: the nodes apart and grouped, run
// alternately in one loop (a loaded machine's drift hits both), reported
// as the median of each (apart-µs, group-µs).
func BenchmarkBQGroupDecode(b *testing.B) {
	specs := []bqSpec{
		{"q", "a", ggml.Q8_0, 896, 1}, {"k", "a", ggml.Q8_0, 128, 1}, {"v", "a", ggml.Q8_0, 128, 1},
		{"gate", "a2", ggml.Q8_0, 4864, 0}, {"up", "a2", ggml.Q8_0, 4864, 0},
	}
	sg, in := bqGroupGraph(rand.New(rand.NewPCG(41, 4)), 1, 896, specs)
	ctx := context.Background()
	for _, threads := range []int{1, 2} {
		b.Run(map[int]string{1: "t1", 2: "t2"}[threads], func(b *testing.B) {
			var exes [2]hal.Executable
			var outs [2][]*graph.Tensor
			for i, noFuse := range []bool{true, false} {
				be := New(Options{})
				defer be.Close()
				be.noFuse = noFuse
				exe, err := be.Compile(ctx, sg, hal.CompileOptions{Threads: threads, Precision: hal.PrecisionInt8})
				if err != nil {
					b.Fatal(err)
				}
				exes[i] = exe
				outs[i] = make([]*graph.Tensor, len(specs))
				for o := range outs[i] {
					outs[i][o] = &graph.Tensor{}
				}
			}
			var ns [2][]float64
			for b.Loop() {
				for i, exe := range exes {
					t0 := time.Now()
					if err := exe.Execute(ctx, in, outs[i]); err != nil {
						b.Fatal(err)
					}
					ns[i] = append(ns[i], float64(time.Since(t0).Nanoseconds()))
				}
			}
			for i, unit := range []string{"apart-µs", "group-µs"} {
				slices.Sort(ns[i])
				b.ReportMetric(ns[i][len(ns[i])/2]/1e3, unit)
			}
		})
	}
}
