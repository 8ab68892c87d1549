package xnnpack

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

// BenchmarkMatMulOverhead compares MatMul 512³ at 1 thread through the
// backend (Execute: boundary copies included) with XNNPACK's own runtime
// invoke on the same instance, alternating the two in every iteration. It
// reports both times per op and their ratio (backend/raw; 1.00 = no
// overhead).
func BenchmarkMatMulOverhead(b *testing.B) {
	be := OpenForTest(b, Options{Threads: 1})
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
	exe, err := be.Compile(context.Background(), &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}}, hal.CompileOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer exe.Release()
	e := exe.(*Executable)
	in := []*graph.Tensor{graph.MustFromSlice([]int{n, n}, append([]float32{}, w...))}
	out := []*graph.Tensor{{}}
	if err := e.Execute(context.Background(), in, out); err != nil { // warm: the instance exists
		b.Fatal(err)
	}
	inst := e.idle[0]
	var through, raw time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if err := e.Execute(context.Background(), in, out); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if st := inst.lib.invokeRuntime(inst.rts[0]); st != xnnStatusSuccess {
			b.Fatalf("xnn_invoke_runtime: %s", statusString(st))
		}
		through += t1.Sub(t0)
		raw += time.Since(t1)
	}
	flops := 2.0 * n * n * n * float64(b.N)
	b.ReportMetric(float64(through.Nanoseconds())/float64(b.N), "backend-ns/op")
	b.ReportMetric(float64(raw.Nanoseconds())/float64(b.N), "raw-ns/op")
	b.ReportMetric(flops/through.Seconds()/1e9, "backend-GFLOP/s")
	b.ReportMetric(through.Seconds()/raw.Seconds(), "backend/raw")
}

// TestDirectOutputs: a MatMul partition's output is written by XNNPACK
// straight into the caller's tensor (no buffer, no copy), run after run
// with different tensors; a Concat with zeros stays in one runtime.
func TestDirectOutputs(t *testing.T) {
	b := OpenForTest(t, Options{Threads: 1})
	const m, k, n = 5, 7, 3
	rng := rand.New(rand.NewPCG(3, 4))
	rnd := func(c int) []float32 {
		v := make([]float32, c)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	w := rnd(k * n)
	g := &graph.Graph{Name: "mm", Initializers: map[string]*graph.Tensor{"b": graph.MustFromSlice([]int{k, n}, w)},
		Inputs:  []graph.ValueInfo{{Name: "a", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(m, k)}}},
		Outputs: []graph.ValueInfo{{Name: "y"}, {Name: "r"}},
		Nodes: []*graph.Node{{Name: "mm", OpType: "MatMul", Inputs: []string{"a", "b"}, Outputs: []string{"y"}},
			{Name: "relu", OpType: "Relu", Inputs: []string{"y"}, Outputs: []string{"r"}}}}
	exe, err := b.Compile(context.Background(), &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}}, hal.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Release()
	e := exe.(*Executable)
	inst := e.idle[0]
	if inst.emitted {
		t.Fatal("the instance lowered at compile time was emitted before its first run")
	}
	if err := inst.emitOnce(e.pool); err != nil {
		t.Fatal(err)
	}
	if got := inst.direct[0]; len(got) != 1 || got[0].out != 1 {
		t.Fatalf("direct outputs %+v, want only output 1 (output 0 is read by the Relu)", got)
	}
	for rep := 0; rep < 3; rep++ {
		a := rnd(m * k)
		in := []*graph.Tensor{graph.MustFromSlice([]int{m, k}, a)}
		out := []*graph.Tensor{{}, graph.MustFromSlice([]int{m, n}, make([]float32, m*n))}
		if rep == 1 {
			out[1] = &graph.Tensor{}
		}
		if err := e.Execute(context.Background(), in, out); err != nil {
			t.Fatal(err)
		}
		y, r := graph.Data[float32](out[0]), graph.Data[float32](out[1])
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				var s float32
				for l := 0; l < k; l++ {
					s += a[i*k+l] * w[l*n+j]
				}
				if d := y[i*n+j] - s; d > 1e-4 || d < -1e-4 {
					t.Fatalf("run %d: y[%d,%d] = %v, want %v", rep, i, j, y[i*n+j], s)
				}
				if want := max(s, 0); r[i*n+j]-want > 1e-4 || want-r[i*n+j] > 1e-4 {
					t.Fatalf("run %d: r[%d,%d] = %v, want %v", rep, i, j, r[i*n+j], want)
				}
			}
		}
	}
	// a caller tensor of the wrong shape is refused before anything runs
	bad := []*graph.Tensor{{}, graph.MustFromSlice([]int{n, m}, make([]float32, m*n))}
	if err := e.Execute(context.Background(), []*graph.Tensor{graph.MustFromSlice([]int{m, k}, rnd(m*k))}, bad); hal.CodeOf(err) != hal.CodeInvalidArgument {
		t.Fatalf("wrong output shape: %v, want InvalidArgument", err)
	}

	// Concat(zeros, conv, zeros) feeding an Add: one XNNPACK stage, a pad
	z := func(c int) *graph.Tensor { return graph.MustFromSlice([]int{1, c, 3, 3}, make([]float32, 9*c)) }
	cg := &graph.Graph{Initializers: map[string]*graph.Tensor{"w": graph.MustFromSlice([]int{2, 2, 1, 1}, rnd(4)), "z1": z(1), "z2": z(3)},
		Inputs:  []graph.ValueInfo{{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(1, 2, 3, 3)}}},
		Outputs: []graph.ValueInfo{{Name: "y"}},
		Nodes: []*graph.Node{{Name: "c", OpType: "Conv", Inputs: []string{"x", "w"}, Outputs: []string{"c"}},
			{Name: "cat", OpType: "Concat", Inputs: []string{"z1", "c", "z2"}, Outputs: []string{"cc"}, Attrs: map[string]*graph.Attribute{"axis": {Name: "axis", Type: graph.AttrInt, I: 1}}},
			{Name: "r", OpType: "Relu", Inputs: []string{"cc"}, Outputs: []string{"y"}}}}
	p, err := lower(cg, []graph.Opset{{Version: 17}}, [][]int{{1, 2, 3, 3}}, cg.Initializers)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.stages) != 1 || p.stages[0].goRun != nil {
		t.Fatalf("Concat with zeros split the partition into %d stages", len(p.stages))
	}
	pads := 0
	for _, x := range p.stages[0].ops {
		if x.kind == "pad" {
			pads++
			if want := []int{0, 0, 0, 1, 0, 0, 0, 3}; fmt.Sprint(x.sz) != fmt.Sprint(want) {
				t.Fatalf("pad sizes %v, want %v (channels last)", x.sz, want)
			}
		}
	}
	if pads != 1 {
		t.Fatalf("%d pads, want 1", pads)
	}
}
