package native

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

// BenchmarkBlockQuantMatMul: one BlockQuantMatMul of an LLM layer's
// shape (K×N 2048×2048 and 4096×11008, Q8_0 and Q4_0, synthetic weights)
// for M = 1 (decode) and 16 (prefill) rows, on one thread: the float path
// against the integer path (hal.PrecisionInt8) of each kernel family
// (generic for M = 1 only: it is slow). GOP/s counts 2·M·N·K.
//
//	GOMAXPROCS=1 SWITCHYARD_NATIVE_THREADS=1 go test -run ^$ -bench BlockQuantMatMul ./plugins/native
func BenchmarkBlockQuantMatMul(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	be := New(Options{Threads: 1})
	defer be.Close()
	ctx := context.Background()
	for _, kn := range [][2]int{{2048, 2048}, {4096, 11008}} {
		for _, bits := range []int{8, 4} {
			K, N := kn[0], kn[1]
			sg, _ := bqGraph(rng, bqCase{N, K, bits, 32, []int{1, K}})
			for _, m := range []int{1, 16} {
				av := make([]float32, m*K)
				for i := range av {
					av[i] = float32(rng.NormFloat64())
				}
				a := graph.MustFromSlice([]int{m, K}, av)
				sg.Graph.Inputs[0].Type.Shape = graph.StaticShape(m, K)
				paths := []string{"float"}
				for _, f := range QuantKernelFamilies() {
					if f != "generic" || m == 1 {
						paths = append(paths, "int8-"+f)
					}
				}
				for _, path := range paths {
					b.Run(fmt.Sprintf("q%d_K%d_N%d_M%d/%s", bits, K, N, m, path), func(b *testing.B) {
						opts := hal.CompileOptions{Threads: 1}
						if path != "float" {
							b.Setenv(qkernelEnv, path[len("int8-"):])
							opts.Precision = hal.PrecisionInt8
						}
						exe, err := be.Compile(ctx, sg, opts)
						if err != nil {
							b.Fatal(err)
						}
						out := []*graph.Tensor{{}}
						in := []*graph.Tensor{a}
						if err := exe.Execute(ctx, in, out); err != nil {
							b.Fatal(err)
						}
						b.ResetTimer()
						for i := 0; i < b.N; i++ {
							if err := exe.Execute(ctx, in, out); err != nil {
								b.Fatal(err)
							}
						}
						b.ReportMetric(2*float64(m*N*K)*float64(b.N)/float64(b.Elapsed().Nanoseconds()), "GOP/s")
					})
				}
			}
		}
	}
}
