package opcost

import (
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
)

type typeMap map[string]graph.ValueType

func (m typeMap) TypeOf(name string) (graph.ValueType, bool) {
	t, ok := m[name]
	return t, ok
}

func f32(dims ...int) graph.ValueType {
	return graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(dims...)}
}

func node(op string, in []string, out string, attrs ...*graph.Attribute) *graph.Node {
	n := &graph.Node{OpType: op, Inputs: in, Outputs: []string{out}, Attrs: map[string]*graph.Attribute{}}
	for _, a := range attrs {
		n.Attrs[a.Name] = a
	}
	return n
}

func ints(name string, v ...int64) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrInts, Ints: v}
}

func TestCounts(t *testing.T) {
	ts := typeMap{
		"x": f32(1, 32, 24, 40), "w": f32(64, 32, 3, 3), "y": f32(1, 64, 24, 40),
		"dw": f32(32, 1, 3, 3), "dy": f32(1, 32, 24, 40),
		"a": f32(2, 40, 120), "b": f32(120, 360), "ab": f32(2, 40, 360),
		"p": f32(1, 32, 12, 20), "g": f32(1, 32, 1, 1),
		"ct": f32(32, 16, 2, 2), "cy": f32(1, 16, 48, 80),
		"ga": f32(120, 40), "gb": f32(120, 50), "gy": f32(40, 50),
	}
	for _, c := range []struct {
		n     *graph.Node
		class Class
		flops float64
	}{
		{node("Conv", []string{"x", "w"}, "y"), Conv, 2 * 64 * 24 * 40 * 32 * 9},
		{node("Conv", []string{"x", "dw"}, "dy", &graph.Attribute{Name: "group", Type: graph.AttrInt, I: 32}), DepthwiseConv, 2 * 32 * 24 * 40 * 9},
		{node("ConvTranspose", []string{"x", "ct"}, "cy"), Conv, 2 * 32 * 24 * 40 * 16 * 4},
		{node("MatMul", []string{"a", "b"}, "ab"), Gemm, 2 * 2 * 40 * 360 * 120},
		{node("Gemm", []string{"ga", "gb"}, "gy", &graph.Attribute{Name: "transA", Type: graph.AttrInt, I: 1}), Gemm, 2 * 40 * 50 * 120},
		{node("MaxPool", []string{"x"}, "p", ints("kernel_shape", 2, 2)), Pool, 32 * 12 * 20 * 4},
		{node("GlobalAveragePool", []string{"x"}, "g"), Reduce, 32 * 24 * 40},
		{node("Add", []string{"x", "x"}, "dy"), Elementwise, 32 * 24 * 40},
		{node("Sigmoid", []string{"x"}, "dy"), Transcendental, 12 * 32 * 24 * 40},
		{node("Transpose", []string{"x"}, "dy"), Move, 0},
		{node("Reshape", []string{"x"}, "dy"), View, 0},
		{node("Shape", []string{"x"}, "s"), Meta, 0},
	} {
		w := Of(c.n, ts)
		if w.Class != c.class || w.FLOPs != c.flops {
			t.Errorf("%s: class %s flops %.0f, want %s %.0f", c.n.OpType, w.Class, w.FLOPs, c.class, c.flops)
		}
	}
	w := Of(node("Add", []string{"x", "g"}, "dy"), ts)
	if w.BytesIn != 4*(32*24*40+32) || w.BytesOut != 4*32*24*40 || w.Elems != 32*24*40 || !w.Exact {
		t.Errorf("Add bytes: %+v", w)
	}
}

// Unknown shapes count as 1 and say so; malformed nodes (missing inputs,
// ranks that do not fit the op, unknown ops and domains) never panic.
func TestUnknownAndMalformed(t *testing.T) {
	ts := typeMap{
		"sym":    {Kind: "tensor", DType: graph.Float32, Shape: graph.Shape{{Param: "N"}, {Value: 8}}},
		"norank": {Kind: "tensor", DType: graph.Float32},
		"v":      f32(3),
		"i":      {Kind: "tensor", DType: graph.Undefined, Shape: graph.StaticShape(2)},
	}
	w := Of(node("Relu", []string{"sym"}, "sym"), ts)
	if w.Exact || w.Elems != 8 {
		t.Errorf("symbolic: %+v", w)
	}
	for _, n := range []*graph.Node{
		node("Conv", nil, "nothing"),
		node("Conv", []string{"v", "v"}, "v"),
		node("MatMul", []string{"norank", "norank"}, "norank"),
		node("Gemm", []string{"", "v"}, "v", &graph.Attribute{Name: "transA", Type: graph.AttrInt, I: 1}),
		node("LSTM", []string{"v"}, "v"),
		node("MaxPool", []string{"v"}, "v", ints("kernel_shape", -1, 0)),
		node("Frobnicate", []string{"v"}, "v"),
		{OpType: "Relu", Domain: "com.example", Inputs: []string{"v"}, Outputs: []string{"v"}},
		{OpType: "Relu"},
		node("Add", []string{"i", "missing"}, "i"),
	} {
		w := Of(n, ts)
		if w.FLOPs < 0 || w.BytesIn < 0 || w.BytesOut < 0 {
			t.Errorf("%s: negative work %+v", n.OpType, w)
		}
	}
	if w := Of(node("Add", []string{"i", "missing"}, "i"), ts); w.Exact {
		t.Errorf("an unknown dtype or value must make the count inexact: %+v", w)
	}
}

// If runs one branch: it costs the dearer; bodies read outer values.
func TestControlFlowTakesTheDearerBranch(t *testing.T) {
	body := func(op string, n int) *graph.Graph {
		g := &graph.Graph{Outputs: []graph.ValueInfo{{Name: "o"}}}
		for i := 0; i < n; i++ {
			g.Nodes = append(g.Nodes, node(op, []string{"x"}, "o"))
		}
		return g
	}
	n := &graph.Node{OpType: "If", Inputs: []string{"c"}, Outputs: []string{"y"}, Attrs: map[string]*graph.Attribute{
		"then_branch": {Name: "then_branch", Type: graph.AttrGraph, G: body("Sigmoid", 3)},
		"else_branch": {Name: "else_branch", Type: graph.AttrGraph, G: body("Relu", 1)},
	}}
	ts := typeMap{"x": f32(10), "o": f32(10), "y": f32(10)}
	w := Of(n, ts)
	if w.Class != Control || w.FLOPs != 3*12*10 || w.Exact {
		t.Errorf("If: %+v", w)
	}
}

func TestRateOf(t *testing.T) {
	opsR := map[string]Rate{"Relu": {Fixed: 1}, "Conv": {Fixed: 2}}
	classes := map[Class]Rate{Conv: {Fixed: 3}, Elementwise: {Fixed: 4}, Other: {Fixed: 5}}
	for _, c := range []struct {
		op    string
		class Class
		want  float64
	}{{"Relu", Elementwise, 1}, {"Conv", Conv, 3}, {"Add", Elementwise, 4}, {"Foo", Reduce, 5}} {
		if got := RateOf(opsR, classes, c.op, c.class).Fixed; got != c.want {
			t.Errorf("RateOf(%s, %s) = %v, want %v", c.op, c.class, got, c.want)
		}
	}
	r := Rate{PerFLOP: 2, PerByte: 0.5}
	if got := r.Compute(Work{FLOPs: 10, BytesIn: 4, BytesOut: 4}); got != 24 {
		t.Errorf("Compute = %v, want 24", got)
	}
	if got := Spread(17, 2); got != 10 {
		t.Errorf("Spread(17, 2) = %v, want 10", got)
	}
	if got := Spread(17, 1); got != 17 {
		t.Errorf("Spread(17, 1) = %v, want 17", got)
	}
}

// The integer LSTM is priced by its products (two int8 matrix-vector
// products per step and sequence), not per output element.
func TestQuantLSTMWork(t *testing.T) {
	ts := typeMap{
		"x": {DType: graph.Int8, Shape: graph.StaticShape(2, 3, 257)},
		"W": {DType: graph.Int8, Shape: graph.StaticShape(4, 128, 257)},
		"R": {DType: graph.Int8, Shape: graph.StaticShape(4, 128, 128)},
		"y": {DType: graph.Int8, Shape: graph.StaticShape(2, 3, 128)},
	}
	n := &graph.Node{Domain: "switchyard.quant", OpType: "LSTM", Inputs: []string{"x", "xs", "xz", "W", "R", "ws", "B", "h0", "hs", "hz", "c0"}, Outputs: []string{"y"}}
	w := Of(n, ts)
	if want := 2.0 * 2 * 3 * 4 * 128 * (257 + 128); w.FLOPs != want || w.Class != Other {
		t.Fatalf("work %+v, want %v FLOPs of class other", w, want)
	}
	if got := Family(n, ts); got != "switchyard.quant:LSTM" {
		t.Fatalf("family %q", got)
	}
}
