package xnnpack_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/plugins/xnnpack"
)

// A profiled call reports the input's layout conversion, then one kernel
// per stage (an XNNPACK runtime naming its ops and listing its nodes, a Go
// step its node), inside the call's span, and computes what Execute
// computes.
func TestExecuteProfiled(t *testing.T) {
	ctx := context.Background()
	f32 := func(dims ...int) graph.ValueType {
		return graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(dims...)}
	}
	rng := rand.New(rand.NewPCG(7, 7))
	g := &graph.Graph{
		Inputs:       []graph.ValueInfo{{Name: "x", Type: f32(1, 3, 6, 8)}},
		Outputs:      []graph.ValueInfo{{Name: "y", Type: f32(1, 4, 6, 4)}},
		Initializers: map[string]*graph.Tensor{"w": randT(rng, 4, 3, 1, 1), "s": i64(0), "e": i64(1 << 40), "ax": i64(3), "st": i64(2)},
		Nodes: []*graph.Node{
			node("Conv", []string{"x", "w"}, []string{"c"}),
			node("Relu", []string{"c"}, []string{"r"}),
			node("Slice", []string{"r", "s", "e", "ax", "st"}, []string{"h"}),
			node("Sigmoid", []string{"h"}, []string{"y"}),
		},
	}
	b := xnnpack.OpenForTest(t, xnnpack.Options{Threads: 1})
	exe, err := b.Compile(ctx, &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}}, hal.CompileOptions{Threads: 1, Profile: true})
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Release()
	pe, ok := exe.(hal.ProfilingExecutable)
	if !ok {
		t.Fatal("xnnpack's executable does not profile calls")
	}
	in := []*graph.Tensor{randT(rng, 1, 3, 6, 8)}
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
	var names []string
	for _, k := range p.Kernels {
		names = append(names, k.Name+"["+strings.Join(k.Nodes, ",")+"]")
		if k.StartNS < p.StartNS || k.EndNS > p.EndNS || k.EndNS < k.StartNS {
			t.Fatalf("kernel %+v outside the call [%d, %d]", k, p.StartNS, p.EndNS)
		}
	}
	want := "input layout[x] xnnpack runtime Conv,Relu[Conv_c,Relu_r] go step Slice[Slice_h] xnnpack runtime Sigmoid[Sigmoid_y]"
	if got := strings.Join(names, " "); !strings.HasPrefix(got, want) {
		t.Fatalf("kernels %q, want %q (then the output's layout)", got, want)
	}
}
