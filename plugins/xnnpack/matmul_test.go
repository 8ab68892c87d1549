package xnnpack

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

// TestMatMulOverhead compares MatMul 512³ through the backend (Execute:
// boundary copies included) with XNNPACK's own runtime invoke on the same
// instance. Reported, not asserted tightly (shared machines are noisy).
func TestMatMulOverhead(t *testing.T) {
	if testing.Short() {
		t.Skip("measurement")
	}
	b, err := New(context.Background(), Options{Threads: 1})
	if err != nil {
		t.Skipf("xnnpack unavailable: %v", err)
	}
	defer b.Close()
	const n = 512
	rng := rand.New(rand.NewPCG(1, 1))
	w := make([]float32, n*n)
	for i := range w {
		w[i] = float32(rng.NormFloat64())
	}
	g := &graph.Graph{Name: "mm", Initializers: map[string]*graph.Tensor{"b": graph.MustFromSlice([]int{n, n}, w)},
		Inputs:  []graph.ValueInfo{{Name: "a", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(n, n)}}},
		Outputs: []graph.ValueInfo{{Name: "y", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(n, n)}}},
		Nodes:   []*graph.Node{{Name: "mm", OpType: "MatMul", Inputs: []string{"a", "b"}, Outputs: []string{"y"}}}}
	exe, err := b.Compile(context.Background(), &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}}, hal.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Release()
	e := exe.(*Executable)
	in := []*graph.Tensor{graph.MustFromSlice([]int{n, n}, append([]float32{}, w...))}
	out := []*graph.Tensor{{}}
	runs := 20
	best := func(f func()) time.Duration {
		f()
		var m time.Duration = 1 << 62
		for i := 0; i < runs; i++ {
			t0 := time.Now()
			f()
			if d := time.Since(t0); d < m {
				m = d
			}
		}
		return m
	}
	through := best(func() {
		if err := e.Execute(context.Background(), in, out); err != nil {
			t.Fatal(err)
		}
	})
	inst := e.idle[0]
	raw := best(func() { inst.lib.invokeRuntime(inst.rts[0]) })
	flops := 2.0 * n * n * n
	t.Logf("MatMul 512³ 1 thread: backend %.1f GFLOP/s (%v), raw XNNPACK %.1f GFLOP/s (%v), overhead %.1f%%",
		flops/through.Seconds()/1e9, through, flops/raw.Seconds()/1e9, raw, 100*(through.Seconds()/raw.Seconds()-1))
}
