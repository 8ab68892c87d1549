package native

import (
	"context"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

// A profiled call reports one kernel per node of the program (named by
// op, listing the node, the unnamed one by its output), inside the call's
// span, and computes what Execute computes.
func TestExecuteProfiled(t *testing.T) {
	ctx := context.Background()
	f32 := func(dims ...int) graph.ValueType {
		return graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(dims...)}
	}
	g := &graph.Graph{
		Inputs:  []graph.ValueInfo{{Name: "x", Type: f32(4, 8)}},
		Outputs: []graph.ValueInfo{{Name: "y", Type: f32(8, 4)}},
		Nodes: []*graph.Node{
			{Name: "t", OpType: "Transpose", Inputs: []string{"x"}, Outputs: []string{"xt"}},
			{OpType: "Exp", Inputs: []string{"xt"}, Outputs: []string{"y"}},
		},
		ValueInfo: []graph.ValueInfo{{Name: "xt", Type: f32(8, 4)}},
	}
	b := New(Options{Threads: 1})
	exe, err := b.Compile(ctx, &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}}, hal.CompileOptions{Threads: 1, Profile: true})
	if err != nil {
		t.Fatal(err)
	}
	pe, ok := exe.(hal.ProfilingExecutable)
	if !ok {
		t.Fatal("native's executable does not profile calls")
	}
	x := make([]float32, 32)
	for i := range x {
		x[i] = float32(i) / 32
	}
	in := []*graph.Tensor{graph.MustFromSlice([]int{4, 8}, x)}
	plain, profiled := []*graph.Tensor{{}}, []*graph.Tensor{{}}
	if err := exe.Execute(ctx, in, plain); err != nil {
		t.Fatal(err)
	}
	p, err := pe.ExecuteProfiled(ctx, in, profiled)
	if err != nil {
		t.Fatal(err)
	}
	a, c := graph.Data[float32](plain[0]), graph.Data[float32](profiled[0])
	for i := range a {
		if a[i] != c[i] {
			t.Fatalf("profiled call computed %v at %d, plain %v", c[i], i, a[i])
		}
	}
	if len(p.Kernels) != 2 || p.Kernels[0].Name != "Transpose" || p.Kernels[1].Name != "Exp" {
		t.Fatalf("kernels %+v", p.Kernels)
	}
	if p.Kernels[0].Nodes[0] != "t" || p.Kernels[1].Nodes[0] != "y" {
		t.Fatalf("kernel nodes %v, %v", p.Kernels[0].Nodes, p.Kernels[1].Nodes)
	}
	for _, k := range p.Kernels {
		if k.StartNS < p.StartNS || k.EndNS > p.EndNS || k.EndNS < k.StartNS {
			t.Fatalf("kernel %+v outside the call [%d, %d]", k, p.StartNS, p.EndNS)
		}
	}
}
