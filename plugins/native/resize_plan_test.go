package native_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/plugins/native"
)

// TestResizePlanFollowsInputs: native's Resize keeps the plan it derived
// (output shape, source maps) for the next call; one executable called
// with other input shapes and other run-time sizes, back and forth, must
// match the reference kernel every time (a stale plan would not).
func TestResizePlanFollowsInputs(t *testing.T) {
	n := node("Resize", []string{"x", "", "", "sz"}, "y", attrs("mode", "linear"))
	g := &graph.Graph{Name: "resize-plan", Nodes: []*graph.Node{n}, Initializers: map[string]*graph.Tensor{},
		Inputs: []graph.ValueInfo{
			{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.Shape{{Param: "n"}, {Param: "c"}, {Param: "h"}, {Param: "w"}}}},
			{Name: "sz", Type: graph.ValueType{Kind: "tensor", DType: graph.Int64, Shape: graph.StaticShape(4)}},
		},
		Outputs: []graph.ValueInfo{{Name: "y"}}}
	sg := &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}}
	nb := native.New(native.Options{Threads: 2})
	defer nb.Close()
	e, err := nb.Compile(context.Background(), sg, hal.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Release()
	ref, _ := kernels.Lookup("", "Resize")
	rng := rand.New(rand.NewPCG(7, 8))
	cases := []struct{ x, sz []int }{
		{[]int{1, 3, 7, 7}, []int{1, 3, 14, 14}},
		{[]int{1, 3, 7, 7}, []int{1, 3, 14, 14}},
		{[]int{1, 3, 7, 7}, []int{1, 3, 21, 10}},
		{[]int{1, 3, 7, 7}, []int{1, 3, 14, 14}},
		{[]int{2, 4, 9, 40}, []int{2, 4, 18, 80}},
		{[]int{1, 3, 7, 7}, []int{1, 3, 14, 14}},
		{[]int{1, 3, 8, 7}, []int{1, 3, 14, 14}},
	}
	for i, c := range cases {
		v := make([]float32, c.x[0]*c.x[1]*c.x[2]*c.x[3])
		for k := range v {
			v[k] = float32(rng.NormFloat64())
		}
		sz := make([]int64, 4)
		for k, d := range c.sz {
			sz[k] = int64(d)
		}
		in := []*graph.Tensor{graph.MustFromSlice(c.x, v), graph.MustFromSlice([]int{4}, sz)}
		out := []*graph.Tensor{{}}
		if err := e.Execute(context.Background(), in, out); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		want, err := ref.Kernel(&kernels.Context{Opset: 17}, n, []*graph.Tensor{in[0], nil, nil, in[1]})
		if err != nil {
			t.Fatal(err)
		}
		if !graph.SameShape(out[0].Shape, want[0].Shape) {
			t.Fatalf("case %d: shape %v, want %v", i, out[0].Shape, want[0].Shape)
		}
		gv, wv := graph.Data[float32](out[0]), graph.Data[float32](want[0])
		for k := range wv {
			if d := math.Abs(float64(gv[k] - wv[k])); !(d <= 1e-5+1e-4*math.Abs(float64(wv[k]))) {
				t.Fatalf("case %d element %d: %v, want %v", i, k, gv[k], wv[k])
			}
		}
	}
}
