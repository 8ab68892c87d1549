package native

import (
	"context"
	cexec "github.com/switchyard-hal/switchyard/core/exec"
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

// com.microsoft Gelu and FastGelu on native (erf.go's kernels) agree with
// the reference kernels, with and without FastGelu's bias.
func TestContribGeluAgainstReference(t *testing.T) {
	ctx := context.Background()
	f32 := func(dims ...int) graph.ValueType {
		return graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(dims...)}
	}
	x := make([]float32, 3*37)
	for i := range x {
		x[i] = float32(i%23)/3 - 3.5
	}
	bias := graph.MustFromSlice([]int{37}, make([]float32, 37))
	for i := range bias.Data.([]float32) {
		bias.Data.([]float32)[i] = float32(i) / 40
	}
	for _, c := range []struct {
		op   string
		bias bool
	}{{"Gelu", false}, {"FastGelu", false}, {"FastGelu", true}} {
		in := []string{"x"}
		g := &graph.Graph{Initializers: map[string]*graph.Tensor{},
			Inputs: []graph.ValueInfo{{Name: "x", Type: f32(3, 37)}}, Outputs: []graph.ValueInfo{{Name: "y", Type: f32(3, 37)}}}
		if c.bias {
			g.Initializers["b"] = bias
			in = append(in, "b")
		}
		g.Nodes = []*graph.Node{{Name: "g", OpType: c.op, Domain: "com.microsoft", Inputs: in, Outputs: []string{"y"}}}
		sg := &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}, {Domain: "com.microsoft", Version: 1}}}
		b := New(Options{Threads: 1})
		v, err := b.Supports(ctx, sg)
		if err != nil || !v[0].Supported {
			t.Fatalf("%s: not supported: %v %+v", c.op, err, v)
		}
		exe, err := b.Compile(ctx, sg, hal.CompileOptions{Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		out := []*graph.Tensor{{}}
		if err := exe.Execute(ctx, []*graph.Tensor{graph.MustFromSlice([]int{3, 37}, x)}, out); err != nil {
			t.Fatal(err)
		}
		ref, err := cexec.Compile(g, cexec.Options{Opsets: sg.Opsets})
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.Run(ctx, map[string]*graph.Tensor{"x": graph.MustFromSlice([]int{3, 37}, x)})
		if err != nil {
			t.Fatal(err)
		}
		got, w := graph.Data[float32](out[0]), graph.Data[float32](want["y"])
		for i := range w {
			if d := got[i] - w[i]; d > 2e-6 || d < -2e-6 {
				t.Fatalf("%s (bias %v) at %d: %v, reference %v", c.op, c.bias, i, got[i], w[i])
			}
		}
	}
}
