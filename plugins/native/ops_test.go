package native_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/plugins/cpu"
	"github.com/switchyard-hal/switchyard/plugins/native"
	"github.com/switchyard-hal/switchyard/runtime"
)

type opCase struct {
	name   string
	nodes  []*graph.Node
	inputs map[string][]int // graph inputs (random float32) by name
	consts map[string][]int // random float32 initializers
	fixed  map[string]*graph.Tensor
	out    string
}

func attrs(kv ...any) map[string]*graph.Attribute {
	m := map[string]*graph.Attribute{}
	for i := 0; i < len(kv); i += 2 {
		name := kv[i].(string)
		switch v := kv[i+1].(type) {
		case int:
			m[name] = &graph.Attribute{Name: name, Type: graph.AttrInt, I: int64(v)}
		case []int64:
			m[name] = &graph.Attribute{Name: name, Type: graph.AttrInts, Ints: v}
		case float32:
			m[name] = &graph.Attribute{Name: name, Type: graph.AttrFloat, F: v}
		case string:
			m[name] = &graph.Attribute{Name: name, Type: graph.AttrString, S: v}
		}
	}
	return m
}

func node(op string, in []string, out string, at map[string]*graph.Attribute) *graph.Node {
	return &graph.Node{Name: op + "_" + out, OpType: op, Inputs: in, Outputs: []string{out}, Attrs: at}
}

func convCases() []opCase {
	var cs []opCase
	type conv struct {
		cin, cout, group, h, w, k int
		at                        map[string]*graph.Attribute
	}
	for i, c := range []conv{
		{3, 8, 1, 9, 11, 3, attrs("pads", []int64{1, 1, 1, 1})},
		{4, 6, 1, 7, 7, 1, nil},                                  // pointwise
		{5, 7, 1, 10, 9, 3, attrs("strides", []int64{2, 2})},     // strided
		{6, 6, 6, 12, 13, 3, attrs("pads", []int64{1, 1, 1, 1})}, // depthwise
		{6, 6, 6, 12, 13, 5, attrs("pads", []int64{2, 2, 2, 2})}, // depthwise 5×5
		{6, 6, 6, 12, 13, 3, attrs("strides", []int64{2, 2}, "pads", []int64{0, 1, 1, 0})},
		{4, 4, 4, 9, 9, 3, attrs("dilations", []int64{2, 2}, "pads", []int64{2, 2, 2, 2})},
		{4, 8, 2, 8, 8, 3, attrs("auto_pad", "SAME_UPPER")},                           // groups
		{3, 6, 3, 8, 8, 3, attrs("auto_pad", "SAME_LOWER", "strides", []int64{2, 2})}, // channel multiplier 2
		{3, 5, 1, 6, 17, 2, attrs("pads", []int64{0, 1, 1, 0})},
		// depthwise geometries of the tile kernels: widths that are whole
		// vectors (written in place) and not, strides 2 and 3 (phase
		// planes), dilation with stride, asymmetric and no padding, fewer
		// rows than a tile, a 1×1 filter, SAME padding
		{8, 8, 8, 16, 16, 5, attrs("pads", []int64{2, 2, 2, 2})},
		{5, 5, 5, 33, 64, 5, attrs("strides", []int64{2, 2}, "auto_pad", "SAME_UPPER")},
		{3, 3, 3, 13, 29, 3, attrs("strides", []int64{3, 3}, "pads", []int64{1, 0, 2, 1})},
		{4, 4, 4, 11, 21, 3, attrs("strides", []int64{2, 2}, "dilations", []int64{2, 3}, "pads", []int64{1, 3, 0, 2})},
		{2, 2, 2, 3, 5, 3, nil},
		{7, 7, 7, 6, 9, 1, attrs("strides", []int64{1, 2})},
		{3, 3, 3, 7, 40, 3, attrs("auto_pad", "SAME_LOWER")},
		{2, 2, 2, 5, 1, 1, attrs("strides", []int64{2, 2})}, // one column: a phase with no input column
		// stride 1 read in place: masked tiles of 16 columns at both edges,
		// plain and masked vectors between (wide dilated padding), a row
		// stride of 2
		{4, 4, 4, 6, 37, 5, attrs("dilations", []int64{1, 3}, "pads", []int64{2, 6, 2, 6})},
		{3, 3, 3, 9, 150, 3, attrs("pads", []int64{1, 1, 1, 1})}, // 64-column tiles between the edges
		{3, 3, 3, 11, 70, 3, attrs("strides", []int64{2, 1}, "pads", []int64{1, 1, 1, 1})},
		// stride 2 over an odd width: whole vectors of both column phases and a tail
		{4, 4, 4, 10, 35, 3, attrs("strides", []int64{2, 2}, "pads", []int64{0, 0, 1, 1})},
		{4, 4, 4, 9, 51, 5, attrs("strides", []int64{2, 2}, "pads", []int64{2, 2, 2, 2})},
		// more output positions than one packed block of B holds
		{3, 16, 1, 64, 64, 3, attrs("pads", []int64{1, 1, 1, 1})},
		{64, 20, 1, 40, 41, 1, nil},
		// 1×1 read in place: more input channels than one kc block, a
		// partial last panel; groups
		{300, 17, 1, 5, 13, 1, nil},
		{8, 30, 2, 9, 7, 1, nil},
		// wide rows (row stride 1 through the phase planes, output width
		// near a whole vector): padded, dilated, column stride 2, groups
		{16, 16, 1, 30, 40, 3, attrs("pads", []int64{1, 1, 1, 1})},
		{4, 6, 1, 12, 40, 3, attrs("dilations", []int64{2, 2}, "pads", []int64{2, 2, 2, 2})},
		{5, 7, 1, 9, 80, 3, attrs("strides", []int64{1, 2}, "pads", []int64{1, 1, 1, 1})},
		{8, 8, 2, 10, 40, 3, attrs("pads", []int64{1, 1, 1, 1})},
		// the indirect GEMM (a window over constant weights): output rows
		// of whole panels written in place (a first layer at stride 2, a
		// dilated window at stride 2), a partial last panel under a mask,
		// wide rows over several passes of 256 rows of B, a column
		// stride of 3 (the generic fill), more output channels than a
		// row tile
		{3, 16, 1, 20, 64, 3, attrs("strides", []int64{2, 2}, "pads", []int64{1, 1, 1, 1})},
		{6, 30, 1, 7, 64, 3, attrs("strides", []int64{2, 2}, "dilations", []int64{2, 2}, "pads", []int64{2, 2, 2, 2})},
		{4, 5, 1, 5, 62, 3, attrs("pads", []int64{1, 1, 1, 1})},
		{40, 20, 1, 6, 33, 3, attrs("pads", []int64{1, 1, 1, 1})},
		{3, 4, 1, 10, 100, 3, attrs("strides", []int64{3, 3}, "pads", []int64{0, 2, 1, 1})},
		{30, 9, 1, 4, 60, 3, attrs("pads", []int64{1, 1, 1, 1})}, // a masked partial panel over two passes of B
		{64, 16, 1, 4, 5, 3, attrs("pads", []int64{1, 1, 1, 1})}, // few positions, one wide panel: not transposed
		// few output positions: computed transposed (positions on rows)
		{8, 20, 1, 3, 9, 3, attrs("strides", []int64{3, 3})},
		{5, 19, 1, 4, 4, 3, attrs("strides", []int64{2, 2}, "pads", []int64{1, 1, 1, 1})},
		{40, 3, 1, 2, 2, 1, nil},
		// depthwise over whole blocks of 8 or 16 channels on small planes
		// (the packed, channels-last path): padded, strided, dilated with
		// a row stride, 5×5, no padding, widths under a vector and with a
		// tail, SAME padding, a column stride it does not take (3)
		{16, 16, 16, 8, 10, 3, attrs("pads", []int64{1, 1, 1, 1})},
		{24, 24, 24, 15, 20, 3, attrs("strides", []int64{2, 2}, "pads", []int64{1, 1, 1, 1})},
		{32, 32, 32, 7, 5, 5, attrs("pads", []int64{2, 2, 2, 2})},
		{16, 16, 16, 9, 13, 3, attrs("strides", []int64{2, 1}, "dilations", []int64{1, 2}, "pads", []int64{1, 2, 0, 2})},
		{8, 8, 8, 6, 11, 3, attrs("strides", []int64{2, 2}, "pads", []int64{0, 1, 1, 0})},
		{16, 16, 16, 4, 4, 3, nil},
		{48, 48, 48, 12, 12, 5, attrs("strides", []int64{2, 2}, "auto_pad", "SAME_UPPER")},
		{16, 16, 16, 10, 19, 3, attrs("strides", []int64{3, 3}, "pads", []int64{1, 1, 1, 1})},
	} {
		w := []int{c.cout, c.cin / c.group, c.k, c.k}
		cs = append(cs, opCase{name: fmt.Sprintf("conv%d", i),
			nodes:  []*graph.Node{node("Conv", []string{"x", "w", "b"}, "c", attrsWith(c.at, "group", c.group)), node("Relu", []string{"c"}, "y", nil)},
			inputs: map[string][]int{"x": {2, c.cin, c.h, c.w}}, consts: map[string][]int{"w": w, "b": {c.cout}}, out: "y"})
	}
	// 1-D, BatchNormalization folded, Clip fused
	cs = append(cs, opCase{name: "conv1d-bn-clip",
		nodes: []*graph.Node{node("Conv", []string{"x", "w"}, "c", attrs("pads", []int64{1, 1})),
			node("BatchNormalization", []string{"c", "s", "o", "m", "v"}, "n", nil),
			node("Clip", []string{"n", "lo", "hi"}, "y", nil)},
		inputs: map[string][]int{"x": {1, 4, 30}}, consts: map[string][]int{"w": {5, 4, 3}, "s": {5}, "o": {5}, "m": {5}},
		fixed: map[string]*graph.Tensor{"v": graph.MustFromSlice([]int{5}, []float32{1, 2, 0.5, 3, 1}), "lo": graph.Scalar(float32(-0.5)), "hi": graph.Scalar(float32(0.5))}, out: "y"})
	// depthwise 1-D with Clip fused, and a non-square depthwise filter
	cs = append(cs, opCase{name: "dw1d-clip",
		nodes: []*graph.Node{node("Conv", []string{"x", "w", "b"}, "c", attrs("group", 6, "pads", []int64{2, 1}, "strides", []int64{2})),
			node("Clip", []string{"c", "lo", "hi"}, "y", nil)},
		inputs: map[string][]int{"x": {2, 6, 37}}, consts: map[string][]int{"w": {6, 1, 4}, "b": {6}},
		fixed: map[string]*graph.Tensor{"lo": graph.Scalar(float32(-0.5)), "hi": graph.Scalar(float32(0.7))}, out: "y"})
	cs = append(cs, opCase{name: "dw-rect",
		nodes:  []*graph.Node{node("Conv", []string{"x", "w"}, "y", attrs("group", 3, "pads", []int64{0, 2, 1, 3}))},
		inputs: map[string][]int{"x": {1, 3, 10, 19}}, consts: map[string][]int{"w": {3, 1, 2, 5}}, out: "y"})
	// element-wise chains after a Conv: affine by scalars, the decomposed
	// hard-swish (both Mul operand orders), scalar-first Sub and Div, an
	// activation; and a chain cut where a value has another reader
	sc := func(v float32) *graph.Tensor { return graph.MustFromSlice([]int{1}, []float32{v}) }
	cs = append(cs, opCase{name: "conv-chain",
		nodes: []*graph.Node{node("Conv", []string{"x", "w", "b"}, "c", attrs("pads", []int64{1, 1, 1, 1})),
			node("Mul", []string{"c", "s1"}, "m1", nil), node("Add", []string{"m1", "b1"}, "a1", nil),
			node("Add", []string{"a1", "three"}, "h1", nil), node("Clip", []string{"h1", "zero", "six"}, "h2", nil),
			node("Mul", []string{"a1", "h2"}, "h3", nil), node("Div", []string{"h3", "six"}, "h4", nil),
			node("Sub", []string{"s1", "h4"}, "r1", nil), node("Add", []string{"r1", "three"}, "g1", nil),
			node("Clip", []string{"g1", "zero", "six"}, "g2", nil), node("Mul", []string{"g2", "r1"}, "g3", nil),
			node("Div", []string{"six", "g3"}, "d1", nil), node("Sigmoid", []string{"d1"}, "y", nil)},
		inputs: map[string][]int{"x": {2, 3, 9, 10}}, consts: map[string][]int{"w": {5, 3, 3, 3}, "b": {5}},
		fixed: map[string]*graph.Tensor{"s1": sc(0.75), "b1": graph.Scalar(float32(-0.25)), "three": sc(3), "zero": sc(0), "six": sc(6)}, out: "y"})
	// residual additions after a Conv: a graph input (either operand
	// order), another Conv's output, a broadcast one (not fused)
	cs = append(cs, opCase{name: "conv-residual",
		nodes: []*graph.Node{node("Conv", []string{"x", "w", "b"}, "c", attrs("pads", []int64{1, 1, 1, 1})),
			node("Add", []string{"r", "c"}, "a", nil), node("Relu", []string{"a"}, "a2", nil),
			node("Conv", []string{"a2", "w2"}, "c2", nil), node("Mul", []string{"c2", "s1"}, "m", nil),
			node("Add", []string{"m", "a2"}, "a3", nil), node("Conv", []string{"a3", "w2"}, "c3", nil),
			node("Add", []string{"c3", "rb"}, "y", nil)},
		inputs: map[string][]int{"x": {2, 3, 6, 7}, "r": {2, 5, 6, 7}, "rb": {5, 1, 1}}, consts: map[string][]int{"w": {5, 3, 3, 3}, "b": {5}, "w2": {5, 5, 1, 1}},
		fixed: map[string]*graph.Tensor{"s1": sc(0.5)}, out: "y"})
	cs = append(cs, opCase{name: "conv-silu",
		nodes: []*graph.Node{node("Conv", []string{"x", "w"}, "c", nil), node("Sigmoid", []string{"c"}, "s", nil),
			node("Mul", []string{"c", "s"}, "m", nil), node("Relu", []string{"m"}, "y", nil)},
		inputs: map[string][]int{"x": {1, 4, 7, 9}}, consts: map[string][]int{"w": {6, 4, 3, 3}}, out: "y"})
	cs = append(cs, opCase{name: "dw-chain-cut",
		nodes: []*graph.Node{node("Conv", []string{"x", "w"}, "c", attrs("group", 4, "pads", []int64{1, 1, 1, 1})),
			node("Mul", []string{"c", "s1"}, "m1", nil), node("Add", []string{"m1", "c"}, "y", nil)},
		inputs: map[string][]int{"x": {1, 4, 9, 17}}, consts: map[string][]int{"w": {4, 1, 3, 3}},
		fixed: map[string]*graph.Tensor{"s1": sc(0.5)}, out: "y"})
	// PRelu in a Conv's chain, every slope layout it takes: per channel
	// ([C,1,1], and [1,C,1,1] after a residual Add, as MediaPipe's
	// blocks), a scalar, per column ([W]), a full-size slope; then one
	// whose slope is another PRelu's (kept apart: one layout a chain)
	for i, ss := range [][]int{{5, 1, 1}, {1, 5, 1, 1}, {1}, {7}, {5, 6, 7}} {
		cs = append(cs, opCase{name: fmt.Sprintf("conv-prelu%d", i),
			nodes: []*graph.Node{node("Conv", []string{"x", "w", "b"}, "c", attrs("pads", []int64{1, 1, 1, 1})),
				node("PRelu", []string{"c", "s"}, "p", nil), node("Add", []string{"p", "r"}, "a", nil),
				node("PRelu", []string{"a", "s2"}, "y", nil)},
			inputs: map[string][]int{"x": {2, 3, 6, 7}, "r": {2, 5, 6, 7}}, consts: map[string][]int{"w": {5, 3, 3, 3}, "b": {5}, "s": ss, "s2": {1, 5, 1, 1}}, out: "y"})
	}
	cs = append(cs, opCase{name: "dw-prelu",
		nodes: []*graph.Node{node("Conv", []string{"x", "w"}, "c", attrs("group", 16, "pads", []int64{1, 1, 1, 1})),
			node("PRelu", []string{"c", "s"}, "y", nil)},
		inputs: map[string][]int{"x": {1, 16, 12, 12}}, consts: map[string][]int{"w": {16, 1, 3, 3}, "s": {16, 1, 1}}, out: "y"})
	// a zero Pad of the spatial axes folded into the Conv (padfold.go):
	// TFLite's asymmetric pad before a stride-2 depthwise, on top of the
	// Conv's own pads, 1-D; a non-zero value, a channel pad and a Pad
	// read twice stay Pads
	i64 := func(v ...int64) *graph.Tensor { return graph.MustFromSlice([]int{len(v)}, v) }
	for i, c := range []struct {
		pads  *graph.Tensor
		value float32
		at    map[string]*graph.Attribute
		x     []int
		group int
	}{
		{i64(0, 0, 0, 0, 0, 0, 1, 1), 0, attrs("strides", []int64{2, 2}), []int{1, 16, 12, 14}, 16},
		{i64(0, 0, 2, 1, 0, 0, 0, 3), 0, attrs("pads", []int64{1, 0, 1, 2}), []int{2, 4, 9, 8}, 1},
		{i64(0, 0, 1, 0, 0, 2), 0, attrs("strides", []int64{2}), []int{1, 4, 19}, 1},
		{i64(0, 0, 1, 1, 0, 0, 1, 1), 0.5, attrs("strides", []int64{2, 2}), []int{1, 16, 12, 14}, 16},
		{i64(0, 2, 0, 0, 0, 2, 0, 0), 0, nil, []int{1, 4, 6, 7}, 1},
	} {
		cin := c.x[1] + int(graph.Data[int64](c.pads)[1]+graph.Data[int64](c.pads)[len(c.x)+1])
		w := []int{cin, cin / c.group, 3, 3}
		if len(c.x) == 3 {
			w = w[:3]
		}
		cs = append(cs, opCase{name: fmt.Sprintf("pad-conv%d", i),
			nodes: []*graph.Node{node("Pad", []string{"x", "p", "v"}, "xp", nil),
				node("Conv", []string{"xp", "w", "b"}, "y", attrsWith(c.at, "group", c.group))},
			inputs: map[string][]int{"x": c.x}, consts: map[string][]int{"w": w, "b": {cin}},
			fixed: map[string]*graph.Tensor{"p": c.pads, "v": graph.Scalar(c.value)}, out: "y"})
	}
	cs = append(cs, opCase{name: "pad-read-twice",
		nodes: []*graph.Node{node("Pad", []string{"x", "p"}, "xp", nil), node("Conv", []string{"xp", "w"}, "c", nil),
			node("ReduceMean", []string{"xp"}, "m", attrs("keepdims", 1)), node("Add", []string{"c", "m"}, "y", nil)},
		inputs: map[string][]int{"x": {1, 1, 6, 6}}, consts: map[string][]int{"w": {1, 1, 3, 3}},
		fixed: map[string]*graph.Tensor{"p": i64(0, 0, 1, 1, 0, 0, 1, 1)}, out: "y"})
	// weights computed at run time
	cs = append(cs, opCase{name: "conv-dynamic-weights",
		nodes:  []*graph.Node{node("Conv", []string{"x", "wi"}, "y", attrs("pads", []int64{1, 1, 1, 1}))},
		inputs: map[string][]int{"x": {1, 3, 8, 8}, "wi": {4, 3, 3, 3}}, out: "y"})
	return cs
}

// ifCases: an If whose branches hold Convs (constant weights from a
// Constant node of the branch, from a main-graph initializer, and through
// a nested If), with a fused Relu, taken either way.
func ifCases() []opCase {
	rng := rand.New(rand.NewPCG(3, 4))
	rt := func(shape ...int) *graph.Tensor {
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return graph.MustFromSlice(shape, v)
	}
	body := func(name string, nodes ...*graph.Node) *graph.Graph {
		return &graph.Graph{Name: name, Nodes: nodes, Initializers: map[string]*graph.Tensor{}, Outputs: []graph.ValueInfo{{Name: name + "_out"}}}
	}
	gattr := func(then, els *graph.Graph) map[string]*graph.Attribute {
		return map[string]*graph.Attribute{
			"then_branch": {Name: "then_branch", Type: graph.AttrGraph, G: then},
			"else_branch": {Name: "else_branch", Type: graph.AttrGraph, G: els},
		}
	}
	var cs []opCase
	for _, cond := range []bool{true, false} {
		then := body("then",
			&graph.Node{Name: "wc", OpType: "Constant", Outputs: []string{"wt"}, Attrs: map[string]*graph.Attribute{"value": {Name: "value", Type: graph.AttrTensor, T: rt(6, 3, 3)}}},
			node("Conv", []string{"x", "wt"}, "tc", attrs("pads", []int64{1, 1})),
			node("Relu", []string{"tc"}, "then_out", nil))
		inner := body("inner", node("Conv", []string{"x", "w", "b"}, "inner_out", attrs("strides", []int64{2}, "pads", []int64{1, 1})))
		innerElse := body("innerElse", node("Identity", []string{"x"}, "innerElse_out", nil))
		els := body("else",
			&graph.Node{Name: "inner_if", OpType: "If", Inputs: []string{"c2"}, Outputs: []string{"ii"}, Attrs: gattr(inner, innerElse)},
			node("Relu", []string{"ii"}, "else_out", nil))
		cs = append(cs, opCase{name: fmt.Sprintf("if-%v", cond),
			nodes:  []*graph.Node{{Name: "if", OpType: "If", Inputs: []string{"c"}, Outputs: []string{"y"}, Attrs: gattr(then, els)}},
			inputs: map[string][]int{"x": {2, 3, 17}}, consts: map[string][]int{"w": {6, 3, 3}, "b": {6}},
			fixed: map[string]*graph.Tensor{"c": graph.Scalar(cond), "c2": graph.Scalar(true)}, out: "y"})
	}
	return cs
}

// lstmNode is an LSTM over the inputs of lstmInputs with the outputs
// named (empty: not asked for).
func lstmNode(y, yh, yc string, at map[string]*graph.Attribute) *graph.Node {
	return &graph.Node{Name: "lstm", OpType: "LSTM", Inputs: []string{"x", "w", "r", "b", "", "h0", "c0"}, Outputs: []string{y, yh, yc}, Attrs: at}
}

func lstmInputs(seq, batch, in, hidden int) map[string][]int {
	return map[string][]int{"x": {seq, batch, in}, "w": {1, 4 * hidden, in}, "r": {1, 4 * hidden, hidden}, "b": {1, 8 * hidden},
		"h0": {1, batch, hidden}, "c0": {1, batch, hidden}}
}

func attrsWith(m map[string]*graph.Attribute, kv ...any) map[string]*graph.Attribute {
	out := attrs(kv...)
	for k, v := range m {
		out[k] = v
	}
	return out
}

func otherCases() []opCase {
	return []opCase{
		{name: "matmul-const-relu", nodes: []*graph.Node{node("MatMul", []string{"a", "w"}, "m", nil), node("Relu", []string{"m"}, "y", nil)},
			inputs: map[string][]int{"a": {2, 37, 45}}, consts: map[string][]int{"w": {45, 70}}, out: "y"},
		{name: "matmul-batched", nodes: []*graph.Node{node("MatMul", []string{"a", "b"}, "y", nil)},
			inputs: map[string][]int{"a": {2, 3, 17, 9}, "b": {3, 9, 21}}, out: "y"},
		{name: "gemm-transB-bias", nodes: []*graph.Node{node("Gemm", []string{"a", "w", "c"}, "y", attrs("transB", 1, "alpha", float32(0.5), "beta", float32(2)))},
			inputs: map[string][]int{"a": {19, 33}}, consts: map[string][]int{"w": {40, 33}, "c": {40}}, out: "y"},
		{name: "add-channel-relu", nodes: []*graph.Node{node("Add", []string{"a", "c"}, "s", nil), node("Relu", []string{"s"}, "y", nil)},
			inputs: map[string][]int{"a": {2, 5, 4, 3}}, consts: map[string][]int{"c": {5, 1, 1}}, out: "y"},
		{name: "sub-scalar-first", nodes: []*graph.Node{node("Sub", []string{"c", "a"}, "y", nil)},
			inputs: map[string][]int{"a": {3, 7}}, consts: map[string][]int{"c": {1}}, out: "y"},
		{name: "div-rows", nodes: []*graph.Node{node("Div", []string{"a", "c"}, "y", nil)},
			inputs: map[string][]int{"a": {4, 6, 7}}, consts: map[string][]int{"c": {6, 1}}, out: "y"},
		{name: "mul-general-broadcast", nodes: []*graph.Node{node("Mul", []string{"a", "c"}, "y", nil)},
			inputs: map[string][]int{"a": {3, 1, 5}, "c": {4, 1}}, out: "y"},
		{name: "maxpool-ceil", nodes: []*graph.Node{node("MaxPool", []string{"x"}, "y", attrs("kernel_shape", []int64{3, 3}, "strides", []int64{2, 2}, "ceil_mode", 1))},
			inputs: map[string][]int{"x": {1, 3, 10, 11}}, out: "y"},
		{name: "maxpool-2x2", nodes: []*graph.Node{node("MaxPool", []string{"x"}, "y", attrs("kernel_shape", []int64{2, 2}, "strides", []int64{2, 2}))},
			inputs: map[string][]int{"x": {2, 3, 16, 13}}, out: "y"},
		// whole tensors of even planes (layout.go): rows under a vector,
		// a vector and a tail, whole vectors, rows of several vectors
		{name: "maxpool-2x2-rows6", nodes: []*graph.Node{node("MaxPool", []string{"x"}, "y", attrs("kernel_shape", []int64{2, 2}, "strides", []int64{2, 2}))},
			inputs: map[string][]int{"x": {2, 5, 12, 12}}, out: "y"},
		{name: "maxpool-2x2-rows21", nodes: []*graph.Node{node("MaxPool", []string{"x"}, "y", attrs("kernel_shape", []int64{2, 2}, "strides", []int64{2, 2}))},
			inputs: map[string][]int{"x": {1, 3, 8, 42}}, out: "y"},
		{name: "maxpool-2x2-rows48", nodes: []*graph.Node{node("MaxPool", []string{"x"}, "y", attrs("kernel_shape", []int64{2, 2}, "strides", []int64{2, 2}, "auto_pad", "SAME_UPPER"))},
			inputs: map[string][]int{"x": {1, 4, 96, 96}}, out: "y"},
		{name: "maxpool-2x2-pad", nodes: []*graph.Node{node("MaxPool", []string{"x"}, "y", attrs("kernel_shape", []int64{2, 2}, "strides", []int64{1, 2}, "pads", []int64{1, 0, 0, 1}))},
			inputs: map[string][]int{"x": {1, 2, 7, 9}}, out: "y"},
		{name: "maxpool-dilated", nodes: []*graph.Node{node("MaxPool", []string{"x"}, "y", attrs("kernel_shape", []int64{3, 2}, "dilations", []int64{2, 2}, "pads", []int64{1, 1, 2, 0}))},
			inputs: map[string][]int{"x": {1, 2, 11, 8}}, out: "y"},
		{name: "maxpool-1d", nodes: []*graph.Node{node("MaxPool", []string{"x"}, "y", attrs("kernel_shape", []int64{3}, "strides", []int64{2}, "pads", []int64{1, 1}))},
			inputs: map[string][]int{"x": {2, 3, 20}}, out: "y"},
		{name: "avgpool-interior", nodes: []*graph.Node{node("AveragePool", []string{"x"}, "y", attrs("kernel_shape", []int64{3, 2}, "strides", []int64{2, 1}, "pads", []int64{1, 0, 1, 1}, "ceil_mode", 1))},
			inputs: map[string][]int{"x": {1, 3, 12, 10}}, out: "y"},
		{name: "avgpool-pad", nodes: []*graph.Node{node("AveragePool", []string{"x"}, "y", attrs("kernel_shape", []int64{3, 3}, "pads", []int64{1, 1, 1, 1}, "count_include_pad", 1))},
			inputs: map[string][]int{"x": {1, 3, 7, 6}}, out: "y"},
		{name: "avgpool-nopad", nodes: []*graph.Node{node("AveragePool", []string{"x"}, "y", attrs("kernel_shape", []int64{2, 3}, "pads", []int64{1, 0, 1, 2}))},
			inputs: map[string][]int{"x": {2, 2, 7, 6}}, out: "y"},
		{name: "reducemean-last", nodes: []*graph.Node{node("ReduceMean", []string{"x"}, "y", attrs("axes", []int64{-1}))}, inputs: map[string][]int{"x": {2, 3, 37}}, out: "y"},
		{name: "reducemean-two-flat", nodes: []*graph.Node{node("ReduceMean", []string{"x"}, "y", attrs("axes", []int64{2, 1}, "keepdims", 0))}, inputs: map[string][]int{"x": {2, 3, 9}}, out: "y"},
		{name: "reducemean-middle", nodes: []*graph.Node{node("ReduceMean", []string{"x"}, "y", attrs("axes", []int64{1}))}, inputs: map[string][]int{"x": {2, 3, 4}}, out: "y"},
		{name: "gap", nodes: []*graph.Node{node("GlobalAveragePool", []string{"x"}, "y", nil)}, inputs: map[string][]int{"x": {2, 3, 5, 4}}, out: "y"},
		{name: "softmax-axis1", nodes: []*graph.Node{node("Softmax", []string{"x"}, "y", attrs("axis", 1))}, inputs: map[string][]int{"x": {2, 5, 3}}, out: "y"},
		{name: "softmax-short", nodes: []*graph.Node{node("Softmax", []string{"x"}, "y", attrs("axis", -1))}, inputs: map[string][]int{"x": {1, 4420, 2}}, out: "y"},
		{name: "softmax-short5", nodes: []*graph.Node{node("Softmax", []string{"x"}, "y", attrs("axis", 2))}, inputs: map[string][]int{"x": {3, 7, 5}}, out: "y"},
		{name: "softmax-last", nodes: []*graph.Node{node("Softmax", []string{"x"}, "y", attrs("axis", -1))}, inputs: map[string][]int{"x": {3, 4, 37}}, out: "y"},
		{name: "softmax-scaled", nodes: []*graph.Node{node("Mul", []string{"x", "k"}, "s", nil), node("Softmax", []string{"s"}, "y", nil)},
			inputs: map[string][]int{"x": {2, 80}}, fixed: map[string]*graph.Tensor{"k": graph.Scalar(float32(30))}, out: "y"},
		{name: "lstm-y", nodes: []*graph.Node{lstmNode("y", "", "", nil)}, inputs: lstmInputs(3, 2, 5, 4), out: "y"},
		{name: "lstm-yh", nodes: []*graph.Node{lstmNode("", "yh", "", attrs("hidden_size", 4))}, inputs: lstmInputs(3, 2, 5, 4), out: "yh"},
		{name: "lstm-yc-long", nodes: []*graph.Node{lstmNode("y", "yh", "yc", nil)}, inputs: lstmInputs(2, 1, 37, 19), out: "yc"},
		{name: "lstm-reverse", nodes: []*graph.Node{lstmNode("y", "", "", attrs("direction", "reverse"))}, inputs: lstmInputs(3, 2, 5, 4), out: "y"},
		{name: "concat-channels", nodes: []*graph.Node{node("Concat", []string{"a", "b", "c"}, "y", attrs("axis", 1))},
			inputs: map[string][]int{"a": {2, 3, 4, 5}, "b": {2, 1, 4, 5}}, consts: map[string][]int{"c": {2, 2, 4, 5}}, out: "y"},
		{name: "concat-zero-channels", nodes: []*graph.Node{node("Concat", []string{"a", "z", "b"}, "y", attrs("axis", 1))},
			inputs: map[string][]int{"a": {2, 3, 4, 5}, "b": {2, 1, 4, 5}},
			fixed:  map[string]*graph.Tensor{"z": graph.MustFromSlice([]int{2, 2, 4, 5}, make([]float32, 80))}, out: "y"},
		{name: "concat-last-neg", nodes: []*graph.Node{node("Concat", []string{"a", "b"}, "y", attrs("axis", -1))},
			inputs: map[string][]int{"a": {3, 7}, "b": {3, 2}}, out: "y"},
		{name: "concat-first", nodes: []*graph.Node{node("Concat", []string{"a", "b"}, "y", attrs("axis", 0))},
			inputs: map[string][]int{"a": {1, 6}, "b": {4, 6}}, out: "y"},
		{name: "concat-short-runs", nodes: []*graph.Node{node("Concat", []string{"a", "b"}, "y", attrs("axis", 2))},
			inputs: map[string][]int{"a": {1, 4420, 2}, "b": {1, 4420, 2}}, out: "y"},
		{name: "concat-short-runs-pool", nodes: []*graph.Node{node("Concat", []string{"a", "z", "b"}, "y", attrs("axis", 3))},
			inputs: map[string][]int{"a": {2, 40, 300, 2}, "b": {2, 40, 300, 3}},
			fixed:  map[string]*graph.Tensor{"z": graph.MustFromSlice([]int{2, 40, 300, 1}, make([]float32, 24000))}, out: "y"},
		{name: "concat-long-runs-pool", nodes: []*graph.Node{node("Concat", []string{"a", "b", "c"}, "y", attrs("axis", 1))},
			inputs: map[string][]int{"a": {5, 64, 200}, "b": {5, 32, 200}}, consts: map[string][]int{"c": {5, 3, 200}}, out: "y"},
		{name: "pow-square", nodes: []*graph.Node{node("Pow", []string{"x", "two"}, "y", nil)}, inputs: map[string][]int{"x": {3, 37}},
			fixed: map[string]*graph.Tensor{"two": graph.Scalar(float32(2))}, out: "y"},
		{name: "depthtospace-dcr", nodes: []*graph.Node{node("DepthToSpace", []string{"x"}, "y", attrs("blocksize", 2))}, inputs: map[string][]int{"x": {2, 12, 5, 7}}, out: "y"},
		{name: "depthtospace-crd", nodes: []*graph.Node{node("DepthToSpace", []string{"x"}, "y", attrs("blocksize", 2, "mode", "CRD"))}, inputs: map[string][]int{"x": {1, 8, 3, 9}}, out: "y"},
		{name: "depthtospace-bs3", nodes: []*graph.Node{node("DepthToSpace", []string{"x"}, "y", attrs("blocksize", 3, "mode", "CRD"))}, inputs: map[string][]int{"x": {1, 18, 40, 33}}, out: "y"},
		{name: "depthtospace-crd-wide", nodes: []*graph.Node{node("DepthToSpace", []string{"x"}, "y", attrs("blocksize", 2, "mode", "CRD"))}, inputs: map[string][]int{"x": {2, 8, 3, 37}}, out: "y"},
		{name: "depthtospace-large", nodes: []*graph.Node{node("DepthToSpace", []string{"x"}, "y", attrs("blocksize", 2))}, inputs: map[string][]int{"x": {1, 64, 40, 40}}, out: "y"},
		{name: "hardswish-sigmoid", nodes: []*graph.Node{node("HardSwish", []string{"x"}, "h", nil), node("Sigmoid", []string{"h"}, "y", nil)}, inputs: map[string][]int{"x": {40}}, out: "y"},
	}
}

// Each case on native against the reference kernels (the cpu backend),
// float32 results within 1e-4 relative (the accumulation order differs).
func TestOpsAgainstReference(t *testing.T) {
	testOps(t, append(append(convCases(), otherCases()...), ifCases()...))
}

// The convolutions again on the AVX2 depthwise kernels where the machine
// would pick the AVX-512 ones.
func TestConvWithoutAVX512Depthwise(t *testing.T) {
	if !native.UseDW512(false) {
		t.Skip("no AVX-512 depthwise kernels here: TestOpsAgainstReference ran the others")
	}
	defer native.UseDW512(true)
	testOps(t, convCases())
}

// The convolutions again with the packed depthwise path off (the planar
// tiles compute what it would).
func TestConvWithoutPackedDepthwise(t *testing.T) {
	if !native.UsePackedDW(false) {
		t.Skip("no packed depthwise kernels here: TestOpsAgainstReference ran the planar ones")
	}
	defer native.UsePackedDW(true)
	testOps(t, convCases())
}

func testOps(t *testing.T, cases []opCase) {
	rng := rand.New(rand.NewPCG(5, 6))
	rnd := func(shape []int) *graph.Tensor {
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return graph.MustFromSlice(shape, v)
	}
	nb := native.New(native.Options{Threads: 2})
	defer nb.Close()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := &graph.Graph{Name: c.name, Nodes: c.nodes, Initializers: map[string]*graph.Tensor{}, Outputs: []graph.ValueInfo{{Name: c.out}}}
			var ins []*graph.Tensor
			for _, name := range sortedNames(c.inputs) {
				x := rnd(c.inputs[name])
				ins = append(ins, x)
				g.Inputs = append(g.Inputs, graph.ValueInfo{Name: name, Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(x.Shape...)}})
			}
			for name, shape := range c.consts {
				g.Initializers[name] = rnd(shape)
			}
			for name, v := range c.fixed {
				g.Initializers[name] = v
			}
			sg := &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}}
			types, issues := runtime.InferTypes(&graph.Model{Graph: g, Opsets: sg.Opsets})
			if len(issues) > 0 {
				t.Fatalf("inference: %v", issues)
			}
			for _, n := range g.Nodes {
				for _, o := range n.Outputs {
					g.ValueInfo = append(g.ValueInfo, graph.ValueInfo{Name: o, Type: types[o]})
				}
			}
			vs, err := nb.Supports(context.Background(), sg)
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range vs {
				if !v.Supported {
					t.Fatalf("node %d declined: %s", i, v.Reason)
				}
			}
			run := func(b hal.Backend) *graph.Tensor {
				e, err := b.Compile(context.Background(), sg, hal.CompileOptions{})
				if err != nil {
					t.Fatal(err)
				}
				defer e.Release()
				out := []*graph.Tensor{{}}
				if err := e.Execute(context.Background(), ins, out); err != nil {
					t.Fatal(err)
				}
				return out[0]
			}
			got, want := run(nb), run(cpu.New())
			if !graph.SameShape(got.Shape, want.Shape) {
				t.Fatalf("shape %v, want %v", got.Shape, want.Shape)
			}
			gv, wv := graph.Data[float32](got), graph.Data[float32](want)
			for i := range wv {
				if d := math.Abs(float64(gv[i] - wv[i])); !(d <= 1e-5+1e-4*math.Abs(float64(wv[i]))) {
					t.Fatalf("element %d: %v, want %v", i, gv[i], wv[i])
				}
			}
		})
	}
}

func sortedNames(m map[string][]int) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// After a warm-up run, Execute at one thread with caller-allocated
// outputs allocates nothing for the cases computed by native's own
// kernels (testing.AllocsPerRun counts, it does not time).
func TestExecuteAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	nb := native.New(native.Options{Threads: 1})
	defer nb.Close()
	for _, c := range append(convCases(), otherCases()...) {
		g := &graph.Graph{Name: c.name, Nodes: c.nodes, Initializers: map[string]*graph.Tensor{}, Outputs: []graph.ValueInfo{{Name: c.out}}}
		var ins []*graph.Tensor
		for _, name := range sortedNames(c.inputs) {
			n := 1
			for _, d := range c.inputs[name] {
				n *= d
			}
			v := make([]float32, n)
			for i := range v {
				v[i] = float32(rng.NormFloat64())
			}
			x := graph.MustFromSlice(c.inputs[name], v)
			ins = append(ins, x)
			g.Inputs = append(g.Inputs, graph.ValueInfo{Name: name, Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(x.Shape...)}})
		}
		for name, shape := range c.consts {
			n := 1
			for _, d := range shape {
				n *= d
			}
			g.Initializers[name] = graph.MustFromSlice(shape, make([]float32, n))
		}
		for name, v := range c.fixed {
			g.Initializers[name] = v
		}
		sg := &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}}
		types, _ := runtime.InferTypes(&graph.Model{Graph: g, Opsets: sg.Opsets})
		for _, n := range g.Nodes {
			for _, o := range n.Outputs {
				g.ValueInfo = append(g.ValueInfo, graph.ValueInfo{Name: o, Type: types[o]})
			}
		}
		e, err := nb.Compile(context.Background(), sg, hal.CompileOptions{Threads: 1})
		if err != nil {
			t.Fatal(err)
		}
		first := []*graph.Tensor{{}}
		if err := e.Execute(context.Background(), ins, first); err != nil {
			t.Fatal(err)
		}
		out := []*graph.Tensor{first[0].Clone()}
		allocs := testing.AllocsPerRun(10, func() {
			if err := e.Execute(context.Background(), ins, out); err != nil {
				t.Fatal(err)
			}
		})
		e.Release()
		if why, known := allocatingCases[c.name]; known {
			if allocs == 0 { // (may differ by GOARCH: conv-silu allocates on amd64 only)
				t.Logf("%s: no longer allocates here (%s)", c.name, why)
			}
			continue
		}
		if allocs != 0 {
			t.Errorf("%s: %v allocations per Execute after warm-up, want 0", c.name, allocs)
		}
	}
}

// allocatingCases are the cases that still allocate per Execute, and why.
var allocatingCases = map[string]string{
	"conv-dynamic-weights":  "weights computed at run time: the Conv is planned per call",
	"matmul-batched":        "broadcast batch indices computed per call",
	"mul-general-broadcast": "no fast path: the reference kernel",
	"reducemean-middle":     "axes not trailing: the reference kernel",
	"pad-read-twice":        "its ReduceMean over every axis runs on the reference kernel",
	"lstm-y":                "the LSTM kernel's per-call state",
	"lstm-yh":               "the LSTM kernel's per-call state",
	"lstm-yc-long":          "the LSTM kernel's per-call state",
	"lstm-reverse":          "the LSTM kernel's per-call state",
	"conv-silu":             "one allocation in the chain with an activation between a save and its use, not traced yet",
}

// The convolutions again with the indirect GEMM off (the im2col and
// tapped paths compute what it would).
func TestConvWithoutIndirect(t *testing.T) {
	if !native.UseIndirect(false) {
		t.Skip("no indirect GEMM kernels here: TestOpsAgainstReference ran the others")
	}
	defer native.UseIndirect(true)
	testOps(t, convCases())
}
