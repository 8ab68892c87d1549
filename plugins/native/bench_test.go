//go:build amd64

package native_test

import (
	"context"
	"fmt"
	"github.com/switchyard-hal/switchyard/internal/backendtest"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/plugins/native"
	"github.com/switchyard-hal/switchyard/plugins/xnnpack"
)

func matmulGraph(n int, w []float32) *hal.Subgraph {
	g := &graph.Graph{Name: "mm", Initializers: map[string]*graph.Tensor{"b": graph.MustFromSlice([]int{n, n}, w)},
		Inputs:  []graph.ValueInfo{{Name: "a", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(n, n)}}},
		Outputs: []graph.ValueInfo{{Name: "y", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(n, n)}}},
		Nodes:   []*graph.Node{{Name: "mm", OpType: "MatMul", Inputs: []string{"a", "b"}, Outputs: []string{"y"}}}}
	return &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}}
}

// BenchmarkMatMulVsXNNPACK runs MatMul 512³ (constant B) through each
// backend's Execute at 1 and 2 threads, alternating the two in every
// iteration (the machine is shared), and reports each one's GFLOP/s from
// the summed times and from the fastest iteration, and native/xnnpack
// (speed ratio of the sums; > 1: native is faster). Skips without
// XNNPACK's libraries.
func BenchmarkMatMulVsXNNPACK(b *testing.B) {
	const n = 512
	rng := rand.New(rand.NewPCG(1, 1))
	w, a := make([]float32, n*n), make([]float32, n*n)
	for i := range w {
		w[i], a[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
	}
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			xb, err := xnnpack.New(context.Background(), xnnpack.Options{Threads: threads})
			if err != nil {
				if backendtest.Required(xnnpack.Name) {
					b.Fatalf("xnnpack required by SWITCHYARD_REQUIRE_BACKENDS but unavailable: %v", err)
				}
				b.Skipf("xnnpack unavailable: %v", err)
			}
			defer xb.Close()
			nb := native.New(native.Options{Threads: threads})
			defer nb.Close()
			var exes [2]hal.Executable
			for i, be := range []hal.Backend{nb, xb} {
				e, err := be.Compile(context.Background(), matmulGraph(n, w), hal.CompileOptions{Threads: threads})
				if err != nil {
					b.Fatal(err)
				}
				defer e.Release()
				exes[i] = e
			}
			in := []*graph.Tensor{graph.MustFromSlice([]int{n, n}, a)}
			outs := [2][]*graph.Tensor{{graph.MustFromSlice([]int{n, n}, make([]float32, n*n))}, {graph.MustFromSlice([]int{n, n}, make([]float32, n*n))}}
			for i := range exes { // warm
				if err := exes[i].Execute(context.Background(), in, outs[i]); err != nil {
					b.Fatal(err)
				}
			}
			var sum, best [2]time.Duration
			best = [2]time.Duration{time.Hour, time.Hour}
			b.ResetTimer()
			for it := 0; it < b.N; it++ {
				for i := range exes {
					t0 := time.Now()
					if err := exes[i].Execute(context.Background(), in, outs[i]); err != nil {
						b.Fatal(err)
					}
					d := time.Since(t0)
					sum[i] += d
					best[i] = min(best[i], d)
				}
			}
			flop := 2.0 * n * n * n
			b.ReportMetric(flop*float64(b.N)/sum[0].Seconds()/1e9, "native-GFLOP/s")
			b.ReportMetric(flop*float64(b.N)/sum[1].Seconds()/1e9, "xnnpack-GFLOP/s")
			b.ReportMetric(flop/best[0].Seconds()/1e9, "native-best-GFLOP/s")
			b.ReportMetric(flop/best[1].Seconds()/1e9, "xnnpack-best-GFLOP/s")
			b.ReportMetric(sum[1].Seconds()/sum[0].Seconds(), "native/xnnpack")
		})
	}
}
