package runtime

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// defaulted is y = (x + b)[-rows:] where b and rows are inputs with an
// initializer (their defaults: [10, 20, 30] and 0, every row), in an ONNX
// model of IR version ir.
func defaulted(ir int64) *graph.Model {
	i64 := func(name string) graph.ValueInfo {
		return graph.ValueInfo{Name: name, Type: graph.ValueType{Kind: "tensor", DType: graph.Int64, Shape: graph.Shape{{Value: 1}}}}
	}
	g := &graph.Graph{
		Name:    "defaults",
		Inputs:  []graph.ValueInfo{f32("x", graph.Dim{Value: 3}), f32("b", graph.Dim{Value: 3}), i64("rows")},
		Outputs: []graph.ValueInfo{f32("y")},
		Initializers: map[string]*graph.Tensor{
			"b":    vec(10, 20, 30),
			"rows": graph.MustFromSlice([]int{1}, []int64{0}),
			"end":  graph.MustFromSlice([]int{1}, []int64{math.MaxInt64}),
		},
		Nodes: []*graph.Node{
			{OpType: "Add", Inputs: []string{"x", "b"}, Outputs: []string{"s"}},
			{OpType: "Neg", Inputs: []string{"rows"}, Outputs: []string{"start"}},
			{OpType: "Slice", Inputs: []string{"s", "start", "end"}, Outputs: []string{"y"}},
		},
	}
	return &graph.Model{IRVersion: ir, Opsets: []graph.Opset{{Version: 17}}, Graph: g}
}

// TestInputDefaults: from IR version 4 a graph input with an initializer
// is an input with a default value (ONNX): listed among the inputs (with
// HasDefault), used when the run omits it, the fed value when given
// (checked as any input's), and never folded as a constant (the Slice's
// rows stay a run-time value). Before IR version 4 such an initializer
// is a weight: a constant, not an input.
func TestInputDefaults(t *testing.T) {
	ctx := context.Background()
	m := load(t, defaulted(8))
	defer m.Close()
	var names []string
	for _, in := range m.Inputs() {
		names = append(names, in.Name)
	}
	if !slices.Equal(names, []string{"x", "b", "rows"}) || m.HasDefault("x") || !m.HasDefault("b") || !m.HasDefault("rows") {
		t.Fatalf("inputs %v, defaults x %v b %v rows %v; want x, b, rows with b and rows defaulted", names, m.HasDefault("x"), m.HasDefault("b"), m.HasDefault("rows"))
	}
	for _, c := range []struct {
		name  string
		feeds map[string]*graph.Tensor
		want  []float32
	}{
		{"defaults", map[string]*graph.Tensor{"x": vec(1, 2, 3)}, []float32{11, 22, 33}},
		{"b fed", map[string]*graph.Tensor{"x": vec(1, 2, 3), "b": vec(-1, -2, -3)}, []float32{0, 0, 0}},
		{"rows fed", map[string]*graph.Tensor{"x": vec(1, 2, 3), "rows": graph.MustFromSlice([]int{1}, []int64{1})}, []float32{33}},
		{"both fed", map[string]*graph.Tensor{"x": vec(1, 2, 3), "b": vec(5, 5, 5), "rows": graph.MustFromSlice([]int{1}, []int64{2})}, []float32{7, 8}},
		{"defaults again", map[string]*graph.Tensor{"x": vec(0, 0, 0)}, []float32{10, 20, 30}},
	} {
		out, err := m.Run(ctx, c.feeds)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := graph.Data[float32](out["y"]); !slices.Equal(got, c.want) {
			t.Errorf("%s: y = %v, want %v", c.name, got, c.want)
		}
	}
	for name, feeds := range map[string]map[string]*graph.Tensor{
		"b's dtype":  {"x": vec(1, 2, 3), "b": graph.MustFromSlice([]int{3}, []int64{1, 2, 3})},
		"b's shape":  {"x": vec(1, 2, 3), "b": vec(1, 2)},
		"x missing":  {"b": vec(1, 2, 3)},
		"rows' rank": {"x": vec(1, 2, 3), "rows": graph.MustFromSlice([]int{1, 1}, []int64{1})},
	} {
		if _, err := m.Run(ctx, feeds); !errors.Is(err, kernels.ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}

	old := load(t, defaulted(3))
	defer old.Close()
	if ins := old.Inputs(); len(ins) != 1 || ins[0].Name != "x" || old.HasDefault("b") {
		t.Fatalf("IR 3: inputs %v, want x alone (b and rows are weights)", ins)
	}
	out, err := old.Run(ctx, map[string]*graph.Tensor{"x": vec(1, 2, 3)})
	if err != nil || !slices.Equal(graph.Data[float32](out["y"]), []float32{11, 22, 33}) {
		t.Fatalf("IR 3: %v, %v", out, err)
	}
	if _, err := old.Run(ctx, map[string]*graph.Tensor{"x": vec(1, 2, 3), "b": vec(1, 2, 3)}); err == nil {
		t.Error("IR 3: feeding the weight b ran, want an unknown-input error")
	}
}
