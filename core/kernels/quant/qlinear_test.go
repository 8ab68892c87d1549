package quant

import (
	"reflect"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func onnxNode(domain, op string, attrs ...*graph.Attribute) *graph.Node {
	n := node(op, attrs...)
	n.Domain = domain
	return n
}

func runONNX(t *testing.T, n *graph.Node, in ...*graph.Tensor) *graph.Tensor {
	t.Helper()
	s, ok := kernels.Lookup(n.Domain, n.OpType)
	if !ok {
		t.Fatalf("no kernel %s::%s", n.Domain, n.OpType)
	}
	out, err := s.Kernel(&kernels.Context{Opset: 21}, n, in)
	if err != nil {
		t.Fatalf("%s: %v", n.OpType, err)
	}
	return out[0]
}

func u8(shape []int, v ...uint8) *graph.Tensor { return graph.MustFromSlice(shape, v) }
func zu(v uint8) *graph.Tensor                 { return graph.Scalar(v) }
func f32s(v ...float32) *graph.Tensor          { return graph.MustFromSlice([]int{len(v)}, v) }
func i8s(v ...int8) *graph.Tensor              { return graph.MustFromSlice([]int{len(v)}, v) }

func wantData(t *testing.T, what string, got *graph.Tensor, shape []int, want any) {
	t.Helper()
	if !graph.SameShape(got.Shape, shape) || !reflect.DeepEqual(got.Data, want) {
		t.Errorf("%s = %v %v, want %v %v", what, got.Shape, got.Data, shape, want)
	}
}

// TestQLinearConvRounding: x' = x − 10 = [0 10 20 30], w' = 3 − 1 = 2,
// acc = [0 20 40 60], M = 0.5·1/4 = 1/8: acc·M = [0 2.5 5 7.5] rounds to
// even [0 2 5 8], then + yz. Rounding after adding yz = 1 would give
// [1 4 6 8] instead of [1 3 6 9]; yz = 250 saturates the last two.
func TestQLinearConvRounding(t *testing.T) {
	x := u8([]int{1, 1, 2, 2}, 10, 20, 30, 40)
	w := u8([]int{1, 1, 1, 1}, 3)
	n := onnxNode("", "QLinearConv")
	got := runONNX(t, n, x, sc(0.5), zu(10), w, sc(1), zu(1), sc(4), zu(1))
	wantData(t, "QLinearConv", got, []int{1, 1, 2, 2}, []uint8{1, 3, 6, 9})
	got = runONNX(t, n, x, sc(0.5), zu(10), w, sc(1), zu(1), sc(4), zu(250))
	wantData(t, "QLinearConv saturating", got, []int{1, 1, 2, 2}, []uint8{250, 252, 255, 255})
	// a bias of 4 adds 4·M = 0.5 before rounding: [0.5 3 5.5 8] → [0 3 6 8]
	got = runONNX(t, n, x, sc(0.5), zu(10), w, sc(1), zu(1), sc(4), zu(0), graph.MustFromSlice([]int{1}, []int32{4}))
	wantData(t, "QLinearConv with bias", got, []int{1, 1, 2, 2}, []uint8{0, 3, 6, 8})
}

// TestQLinearConvGroupsPadsPerChannel: two groups of one channel, a 1×1
// filter [2, −1] with per-channel scales [0.5, 0.25] and one pixel of
// padding: the border is 0, the inside x·2·0.5 and x·(−1)·0.25 rounded
// to even (−1.25 −1.5 −1.75 −2 → −1 −2 −2 −2).
func TestQLinearConvGroupsPadsPerChannel(t *testing.T) {
	x := q8([]int{1, 2, 2, 2}, 1, 2, 3, 4, 5, 6, 7, 8)
	w := q8([]int{2, 1, 1, 1}, 2, -1)
	n := onnxNode("", "QLinearConv", &graph.Attribute{Name: "group", Type: graph.AttrInt, I: 2}, aints("pads", 1, 1, 1, 1))
	got := runONNX(t, n, x, sc(1), zp(0), w, f32s(0.5, 0.25), i8s(0, 0), sc(1), zp(0))
	want := []int8{
		0, 0, 0, 0,
		0, 1, 2, 0,
		0, 3, 4, 0,
		0, 0, 0, 0,

		0, 0, 0, 0,
		0, -1, -2, 0,
		0, -2, -2, 0,
		0, 0, 0, 0,
	}
	wantData(t, "QLinearConv grouped", got, []int{1, 2, 4, 4}, want)

	// ConvInteger of the same: the bare accumulators
	n = onnxNode("", "ConvInteger", &graph.Attribute{Name: "group", Type: graph.AttrInt, I: 2})
	got = runONNX(t, n, x, w, zp(1), i8s(0, 1))
	// x' = x − 1; w' = [2, −2]
	wantData(t, "ConvInteger", got, []int{1, 2, 2, 2}, []int32{0, 2, 4, 6, -8, -10, -12, -14})
}

// TestQLinearMatMulPerColumn: a times the identity with column scales
// [0.5, 1.5]: [[0.5 3] [1.5 6]] rounds to [[0 3] [2 6]].
func TestQLinearMatMulPerColumn(t *testing.T) {
	a := q8([]int{2, 2}, 1, 2, 3, 4)
	b := q8([]int{2, 2}, 1, 0, 0, 1)
	got := runONNX(t, onnxNode("", "QLinearMatMul"), a, sc(1), zp(0), b, f32s(0.5, 1.5), i8s(0, 0), sc(1), zp(0))
	wantData(t, "QLinearMatMul", got, []int{2, 2}, []int8{0, 3, 2, 6})
	// float16 scales: the multiplier is computed in float16
	h := func(v float32) *graph.Tensor { return graph.Scalar(graph.F16FromFloat32(v)) }
	got = runONNX(t, onnxNode("", "QLinearMatMul"), a, h(1), zp(0), b, h(0.5), zp(0), h(1), zp(0))
	wantData(t, "QLinearMatMul float16", got, []int{2, 2}, []int8{0, 1, 2, 2})
}

// TestMatMulIntegerPerRow: A' = A − [1, 0] per row = [[10 6 2] [10 6 2]],
// B' = B − 1 = [0 1 2]ᵀ: both rows give 10.
func TestMatMulIntegerPerRow(t *testing.T) {
	a := u8([]int{2, 3}, 11, 7, 3, 10, 6, 2)
	b := u8([]int{3, 1}, 1, 2, 3)
	got := runONNX(t, onnxNode("", "MatMulInteger"), a, b, u8([]int{2}, 1, 0), zu(1))
	wantData(t, "MatMulInteger", got, []int{2, 1}, []int32{10, 10})
	// batched, broadcast over A's leading dim
	a3 := q8([]int{2, 1, 2}, 1, 2, -1, -2)
	b2 := q8([]int{2, 1}, 3, 4)
	got = runONNX(t, onnxNode("", "MatMulInteger"), a3, b2)
	wantData(t, "MatMulInteger batched", got, []int{2, 1, 1}, []int32{11, -11})
}

// TestContribOps: QLinearAdd, QLinearMul, QLinearGlobalAveragePool,
// QLinearSigmoid and QLinearConcat on hand-computed values.
func TestContribOps(t *testing.T) {
	const ms = "com.microsoft"
	a, b := i8s(10, -10), i8s(4)
	// reals: a = [5 −5], b = 0.5; C = round(sum) − 1
	got := runONNX(t, onnxNode(ms, "QLinearAdd"), a, sc(0.5), zp(0), b, sc(0.25), zp(2), sc(1), zp(-1))
	wantData(t, "QLinearAdd", got, []int{2}, []int8{5, -5}) // 5.5 → 6, −4.5 → −4
	got = runONNX(t, onnxNode(ms, "QLinearMul"), a, sc(0.5), zp(0), b, sc(0.25), zp(2), sc(1), zp(-1))
	wantData(t, "QLinearMul", got, []int{2}, []int8{1, -3}) // 2.5 → 2, −2.5 → −2

	x := u8([]int{1, 2, 2, 2}, 1, 2, 3, 4, 10, 10, 10, 11)
	got = runONNX(t, onnxNode(ms, "QLinearGlobalAveragePool"), x, sc(1), zu(1), sc(1), zu(0))
	wantData(t, "QLinearGlobalAveragePool", got, []int{1, 2, 1, 1}, []uint8{2, 9}) // 1.5 → 2, 9.25 → 9
	xl := u8([]int{1, 2, 2, 2}, 1, 10, 2, 10, 3, 10, 4, 11)
	got = runONNX(t, onnxNode(ms, "QLinearGlobalAveragePool", &graph.Attribute{Name: "channels_last", Type: graph.AttrInt, I: 1}), xl, sc(1), zu(1), sc(1), zu(0))
	wantData(t, "QLinearGlobalAveragePool channels_last", got, []int{1, 1, 1, 2}, []uint8{2, 9})

	// sigmoid(0) = 0.5 → 128 − 128; sigmoid(12.7)·256 saturates; sigmoid(−12.8)·256 < 0.5
	got = runONNX(t, onnxNode(ms, "QLinearSigmoid"), i8s(0, 127, -128), sc(0.1), zp(0), sc(1.0/256), zp(-128))
	wantData(t, "QLinearSigmoid", got, []int{3}, []int8{0, 127, -128})

	// the first input has the output's parameters (copied), the second is
	// requantised: (3−1)·0.5 = 1, (4−1)·0.5 = 1.5 → 2
	got = runONNX(t, onnxNode(ms, "QLinearConcat", &graph.Attribute{Name: "axis", Type: graph.AttrInt, I: 1}),
		sc(1), zp(0), q8([]int{1, 2}, 1, 2), sc(1), zp(0), q8([]int{1, 2}, 3, 4), sc(0.5), zp(1))
	wantData(t, "QLinearConcat", got, []int{1, 4}, []int8{1, 2, 1, 2})
}

// TestQLinearBadInput: malformed parameters are errors naming the
// problem, never panics.
func TestQLinearBadInput(t *testing.T) {
	x := u8([]int{1, 1, 2, 2}, 10, 20, 30, 40)
	w := u8([]int{1, 1, 1, 1}, 3)
	conv := onnxNode("", "QLinearConv")
	cases := []struct {
		name string
		n    *graph.Node
		in   []*graph.Tensor
		want string
	}{
		{"zero point type", conv, []*graph.Tensor{x, sc(0.5), zp(10), w, sc(1), zu(1), sc(4), zu(1)}, "zero point of x is int8"},
		{"scale count", conv, []*graph.Tensor{x, sc(0.5), zu(10), w, f32s(1, 2), u8([]int{2}, 1, 1), sc(4), zu(1)}, "scale shape"},
		{"zero scale", conv, []*graph.Tensor{x, sc(0), zu(10), w, sc(1), zu(1), sc(4), zu(1)}, "positive"},
		{"group", onnxNode("", "QLinearConv", &graph.Attribute{Name: "group", Type: graph.AttrInt, I: 3}),
			[]*graph.Tensor{x, sc(0.5), zu(10), w, sc(1), zu(1), sc(4), zu(1)}, "group"},
		{"bias", conv, []*graph.Tensor{x, sc(0.5), zu(10), w, sc(1), zu(1), sc(4), zu(1), f32s(1)}, "bias"},
		{"float x", conv, []*graph.Tensor{f32s(1, 2), sc(0.5), zu(10), w, sc(1), zu(1), sc(4), zu(1)}, "int8 or uint8"},
		{"matmul inner", onnxNode("", "MatMulInteger"), []*graph.Tensor{u8([]int{1, 2}, 1, 2), u8([]int{3, 1}, 1, 2, 3)}, "inner"},
		{"matmul zp rows", onnxNode("", "MatMulInteger"), []*graph.Tensor{u8([]int{1, 2}, 1, 2), u8([]int{2, 1}, 1, 2), u8([]int{3}, 1, 2, 3)}, "zero point of A"},
		{"concat arity", onnxNode("com.microsoft", "QLinearConcat"), []*graph.Tensor{sc(1), zp(0), i8s(1), sc(1)}, "triples"},
		{"add types", onnxNode("com.microsoft", "QLinearAdd"), []*graph.Tensor{i8s(1), sc(1), zp(0), u8([]int{1}, 1), sc(1), zu(0), sc(1), zp(0)}, "A is int8 and B uint8"},
	}
	for _, c := range cases {
		s, _ := kernels.Lookup(c.n.Domain, c.n.OpType)
		_, err := s.Kernel(&kernels.Context{Opset: 21}, c.n, c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
}
