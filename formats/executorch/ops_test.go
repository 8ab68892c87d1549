package executorch_test

import (
	"math"
	"slices"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
)

const (
	stInt   = 3
	stLong  = 4
	stFloat = 6
	stBool  = 11
)

// TestOps checks one kernel call at a time against values computed by
// hand from PyTorch's definitions of the operators.
func TestOps(t *testing.T) {
	f32 := func(shape []int, v ...float32) *graph.Tensor { return graph.MustFromSlice(shape, v) }
	cases := []struct {
		name  string
		build func(p *prog) // sets p.in / p.out
		in    []*graph.Tensor
		dt    graph.DType
		shape []int
		want  []float64
	}{
		{"add alpha", func(p *prog) {
			x, y, o := p.tensor(stFloat, []int32{3}, nil), p.f32([]int32{3}, 10, 20, 30), p.tensor(stFloat, []int32{3}, nil)
			p.call("aten::add", "out", x, y, p.int(2), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{f32([]int{3}, 1, 2, 3)}, graph.Float32, []int{3}, []float64{21, 42, 63}},
		{"sub int scalar", func(p *prog) {
			x, o := p.tensor(stInt, []int32{3}, nil), p.tensor(stInt, []int32{3}, nil)
			p.call("aten::sub", "Scalar_out", x, p.int(5), p.int(1), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{graph.MustFromSlice([]int{3}, []int32{1, 2, 3})}, graph.Int32, []int{3}, []float64{-4, -3, -2}},
		{"int tensor + float 0-d tensor promotes to float", func(p *prog) {
			x, y, o := p.tensor(stInt, []int32{3}, nil), p.f32([]int32{}, 0.5), p.tensor(stFloat, []int32{3}, nil)
			p.call("aten::add", "out", x, y, p.int(1), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{graph.MustFromSlice([]int{3}, []int32{1, 2, 3})}, graph.Float32, []int{3}, []float64{1.5, 2.5, 3.5}},
		{"int × float scalar", func(p *prog) {
			x, o := p.tensor(stInt, []int32{2}, nil), p.tensor(stFloat, []int32{2}, nil)
			p.call("aten::mul", "Scalar_out", x, p.double(1.5), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{graph.MustFromSlice([]int{2}, []int32{1, 2})}, graph.Float32, []int{2}, []float64{1.5, 3}},
		{"true division of ints", func(p *prog) {
			x, y, o := p.tensor(stLong, []int32{2}, nil), p.i64t([]int32{2}, 2, 2), p.tensor(stFloat, []int32{2}, nil)
			p.call("aten::div", "out", x, y, o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{graph.MustFromSlice([]int{2}, []int64{7, -7})}, graph.Float32, []int{2}, []float64{3.5, -3.5}},
		{"floor division of ints", func(p *prog) {
			x, y, o := p.tensor(stLong, []int32{2}, nil), p.i64t([]int32{2}, 2, 2), p.tensor(stLong, []int32{2}, nil)
			p.call("aten::div", "out_mode", x, y, p.str("floor"), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{graph.MustFromSlice([]int{2}, []int64{7, -7})}, graph.Int64, []int{2}, []float64{3, -4}},
		{"trunc division of floats", func(p *prog) {
			x, y, o := p.tensor(stFloat, []int32{2}, nil), p.f32([]int32{2}, 2, 2), p.tensor(stFloat, []int32{2}, nil)
			p.call("aten::div", "out_mode", x, y, p.str("trunc"), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{f32([]int{2}, 7, -7)}, graph.Float32, []int{2}, []float64{3, -3}},
		{"eq scalar", func(p *prog) {
			x, o := p.tensor(stFloat, []int32{2}, nil), p.tensor(stBool, []int32{2}, nil)
			p.call("aten::eq", "Scalar_out", x, p.int(2), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{f32([]int{2}, 1, 2)}, graph.Bool, []int{2}, []float64{0, 1}},
		{"permute", func(p *prog) {
			x, o := p.tensor(stFloat, []int32{2, 3}, nil), p.tensor(stFloat, []int32{3, 2}, nil)
			p.call("aten::permute_copy", "out", x, p.ints(1, 0), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{f32([]int{2, 3}, 1, 2, 3, 4, 5, 6)}, graph.Float32, []int{3, 2}, []float64{1, 4, 2, 5, 3, 6}},
		{"cat on dim -1", func(p *prog) {
			x, y, o := p.tensor(stFloat, []int32{1, 2}, nil), p.f32([]int32{1, 2}, 7, 8), p.tensor(stFloat, []int32{1, 4}, nil)
			p.call("aten::cat", "out", p.tensors(x, y), p.int(-1), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{f32([]int{1, 2}, 1, 2)}, graph.Float32, []int{1, 4}, []float64{1, 2, 7, 8}},
		{"slice from 1 by 2", func(p *prog) {
			x, o := p.tensor(stFloat, []int32{5}, nil), p.tensor(stFloat, []int32{2}, nil)
			p.call("aten::slice_copy", "Tensor_out", x, p.int(0), p.int(1), p.null(), p.int(2), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{f32([]int{5}, 0, 1, 2, 3, 4)}, graph.Float32, []int{2}, []float64{1, 3}},
		{"select index -1", func(p *prog) {
			x, o := p.tensor(stFloat, []int32{2, 3}, nil), p.tensor(stFloat, []int32{2}, nil)
			p.call("aten::select_copy", "int_out", x, p.int(1), p.int(-1), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{f32([]int{2, 3}, 1, 2, 3, 4, 5, 6)}, graph.Float32, []int{2}, []float64{3, 6}},
		{"constant_pad_nd last dim then rows", func(p *prog) {
			x, o := p.tensor(stFloat, []int32{1, 2}, nil), p.tensor(stFloat, []int32{2, 3}, nil)
			p.call("aten::constant_pad_nd", "out", x, p.ints(1, 0, 0, 1), p.double(9), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{f32([]int{1, 2}, 1, 2)}, graph.Float32, []int{2, 3}, []float64{9, 1, 2, 9, 9, 9}},
		{"mean keepdim", func(p *prog) {
			x, o := p.tensor(stFloat, []int32{2, 2}, nil), p.tensor(stFloat, []int32{2, 1}, nil)
			p.call("aten::mean", "out", x, p.ints(1), p.boolean(true), p.null(), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{f32([]int{2, 2}, 1, 2, 3, 5)}, graph.Float32, []int{2, 1}, []float64{1.5, 4}},
		{"sum of int32 over all dims gives int64", func(p *prog) {
			x, o := p.tensor(stInt, []int32{2, 2}, nil), p.tensor(stLong, []int32{}, nil)
			p.call("aten::sum", "IntList_out", x, p.null(), p.boolean(false), p.null(), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{graph.MustFromSlice([]int{2, 2}, []int32{1, 2, 3, 2147483647})}, graph.Int64, []int{}, []float64{2147483653}},
		{"argmax first of ties", func(p *prog) {
			x, o := p.tensor(stFloat, []int32{2, 3}, nil), p.tensor(stLong, []int32{2}, nil)
			p.call("aten::argmax", "out", x, p.int(1), p.boolean(false), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{f32([]int{2, 3}, 1, 5, 5, 9, 0, 9)}, graph.Int64, []int{2}, []float64{1, 0}},
		{"embedding", func(p *prog) {
			w, idx, o := p.f32([]int32{3, 2}, 0, 1, 10, 11, 20, 21), p.tensor(stLong, []int32{2}, nil), p.tensor(stFloat, []int32{2, 2}, nil)
			p.call("aten::embedding", "out", w, idx, p.int(-1), p.boolean(false), p.boolean(false), o)
			p.in, p.out = []int32{idx}, []int32{o}
		}, []*graph.Tensor{graph.MustFromSlice([]int{2}, []int64{2, 0})}, graph.Float32, []int{2, 2}, []float64{20, 21, 0, 1}},
		{"index_select columns", func(p *prog) {
			x, o := p.tensor(stFloat, []int32{2, 3}, nil), p.tensor(stFloat, []int32{2, 2}, nil)
			p.call("aten::index_select", "out", x, p.int(-1), p.i64t([]int32{2}, 2, 0), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{f32([]int{2, 3}, 1, 2, 3, 4, 5, 6)}, graph.Float32, []int{2, 2}, []float64{3, 1, 6, 4}},
		{"scatter src along dim 1", func(p *prog) {
			x, o := p.tensor(stFloat, []int32{2, 2}, nil), p.tensor(stFloat, []int32{2, 2}, nil)
			p.call("aten::scatter", "src_out", x, p.int(1), p.i64t([]int32{2, 1}, 1, 0), p.f32([]int32{2, 1}, 5, 7), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{f32([]int{2, 2}, 1, 2, 3, 4)}, graph.Float32, []int{2, 2}, []float64{1, 5, 7, 4}},
		{"dequantize_per_channel", func(p *prog) {
			x, o := p.tensor(0, []int32{2, 2}, nil), p.tensor(stFloat, []int32{2, 2}, nil)
			sc := p.tensor(7, []int32{2}, append(f64le(0.5), f64le(0.25)...))
			p.call("quantized_decomposed::dequantize_per_channel", "out", x, sc, p.i64t([]int32{2}, 0, 1), p.int(0), p.int(0), p.int(255), p.int(0), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{graph.MustFromSlice([]int{2, 2}, []uint8{2, 4, 5, 9})}, graph.Float32, []int{2, 2}, []float64{1, 2, 1, 2}},
		{"native_layer_norm", func(p *prog) {
			x, w, b := p.tensor(stFloat, []int32{1, 2}, nil), p.f32([]int32{2}, 2, 2), p.f32([]int32{2}, 0, 1)
			o, m, r := p.tensor(stFloat, []int32{1, 2}, nil), p.tensor(stFloat, []int32{1, 1}, nil), p.tensor(stFloat, []int32{1, 1}, nil)
			p.call("aten::native_layer_norm", "out", x, p.ints(2), w, b, p.double(0), o, m, r)
			p.in, p.out = []int32{x}, []int32{o, m, r}
		}, []*graph.Tensor{f32([]int{1, 2}, 1, 3)}, graph.Float32, []int{1, 2}, []float64{-2, 3}},
		{"convolution", func(p *prog) {
			x, w, o := p.tensor(stFloat, []int32{1, 1, 3, 3}, nil), p.f32([]int32{1, 1, 2, 2}, 1, 1, 1, 1), p.tensor(stFloat, []int32{1, 1, 2, 2}, nil)
			p.call("aten::convolution", "out", x, w, p.null(), p.ints(1, 1), p.ints(0, 0), p.ints(1, 1), p.boolean(false), p.ints(0, 0), p.int(1), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{f32([]int{1, 1, 3, 3}, 1, 2, 3, 4, 5, 6, 7, 8, 9)}, graph.Float32, []int{1, 1, 2, 2}, []float64{12, 16, 24, 28}},
		{"avg_pool2d without pad counting", func(p *prog) {
			x, o := p.tensor(stFloat, []int32{1, 1, 2, 2}, nil), p.tensor(stFloat, []int32{1, 1, 3, 3}, nil)
			p.call("aten::avg_pool2d", "out", x, p.ints(2, 2), p.ints(1, 1), p.ints(1, 1), p.boolean(false), p.boolean(false), p.null(), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{f32([]int{1, 1, 2, 2}, 1, 2, 3, 4)}, graph.Float32, []int{1, 1, 3, 3}, []float64{1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4}},
		{"max_pool2d indices per plane", func(p *prog) {
			x, o, idx := p.tensor(stFloat, []int32{1, 2, 2, 2}, nil), p.tensor(stFloat, []int32{1, 2, 1, 1}, nil), p.tensor(stLong, []int32{1, 2, 1, 1}, nil)
			p.call("aten::max_pool2d_with_indices", "out", x, p.ints(2, 2), p.ints(2, 2), p.ints(0, 0), p.ints(1, 1), p.boolean(false), o, idx)
			p.in, p.out = []int32{x}, []int32{idx, o}
		}, []*graph.Tensor{f32([]int{1, 2, 2, 2}, 1, 4, 3, 2, 0, 0, 7, 1)}, graph.Int64, []int{1, 2, 1, 1}, []float64{1, 2}},
		{"addmm beta alpha", func(p *prog) {
			b, m1, m2, o := p.f32([]int32{2}, 1, 1), p.tensor(stFloat, []int32{1, 2}, nil), p.f32([]int32{2, 2}, 1, 0, 0, 1), p.tensor(stFloat, []int32{1, 2}, nil)
			p.call("aten::addmm", "out", b, m1, m2, p.double(2), p.double(0.5), o)
			p.in, p.out = []int32{m1}, []int32{o}
		}, []*graph.Tensor{f32([]int{1, 2}, 4, 6)}, graph.Float32, []int{1, 2}, []float64{4, 5}},
		{"gelu tanh", func(p *prog) {
			x, o := p.tensor(stFloat, []int32{2}, nil), p.tensor(stFloat, []int32{2}, nil)
			p.call("aten::gelu", "out", x, p.str("tanh"), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{f32([]int{2}, 1, -1)}, graph.Float32, []int{2}, []float64{0.8411920, -0.1588080}},
		{"expand", func(p *prog) {
			x, o := p.tensor(stFloat, []int32{1, 2}, nil), p.tensor(stFloat, []int32{3, 2}, nil)
			p.call("aten::expand_copy", "out", x, p.ints(3, -1), p.boolean(false), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{f32([]int{1, 2}, 1, 2)}, graph.Float32, []int{3, 2}, []float64{1, 2, 1, 2, 1, 2}},
		{"bmm", func(p *prog) {
			x, y, o := p.tensor(stFloat, []int32{2, 1, 2}, nil), p.f32([]int32{2, 2, 1}, 1, 1, 2, 3), p.tensor(stFloat, []int32{2, 1, 1}, nil)
			p.call("aten::bmm", "out", x, y, o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{f32([]int{2, 1, 2}, 1, 2, 3, 4)}, graph.Float32, []int{2, 1, 1}, []float64{3, 18}},
		{"rsqrt of int", func(p *prog) {
			x, o := p.tensor(stLong, []int32{2}, nil), p.tensor(stFloat, []int32{2}, nil)
			p.call("aten::rsqrt", "out", x, o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{graph.MustFromSlice([]int{2}, []int64{4, 16})}, graph.Float32, []int{2}, []float64{0.5, 0.25}},
		{"clamp min only", func(p *prog) {
			x, o := p.tensor(stFloat, []int32{3}, nil), p.tensor(stFloat, []int32{3}, nil)
			p.call("aten::clamp", "out", x, p.double(0), p.null(), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{f32([]int{3}, -1, 0.5, 7)}, graph.Float32, []int{3}, []float64{0, 0.5, 7}},
		{"_softmax", func(p *prog) {
			x, o := p.tensor(stFloat, []int32{2}, nil), p.tensor(stFloat, []int32{2}, nil)
			p.call("aten::_softmax", "out", x, p.int(0), p.boolean(false), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{f32([]int{2}, 0, float32(math.Log(3)))}, graph.Float32, []int{2}, []float64{0.25, 0.75}},
		{"where with scalar promotion", func(p *prog) {
			x, c, o := p.tensor(stFloat, []int32{2}, nil), p.tensor(stBool, []int32{2}, nil), p.tensor(stFloat, []int32{2}, nil)
			p.call("aten::gt", "Scalar_out", x, p.int(0), c)
			p.call("aten::where", "self_out", c, x, p.f32([]int32{}, -1), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{f32([]int{2}, 2, -3)}, graph.Float32, []int{2}, []float64{2, -1}},
		{"quantize_per_tensor rounds half to even, clamps to quant range", func(p *prog) {
			x, o := p.tensor(stFloat, []int32{5}, nil), p.tensor(1, []int32{5}, nil)
			p.call("quantized_decomposed::quantize_per_tensor", "out", x, p.double(0.5), p.int(1), p.int(-128), p.int(100), p.int(1), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{f32([]int{5}, 0.5, 1, -3, 100, 0.25)}, graph.Int8, []int{5}, []float64{2, 3, -5, 100, 1}},
		{"dequantize_per_tensor", func(p *prog) {
			x, o := p.tensor(1, []int32{2}, nil), p.tensor(stFloat, []int32{2}, nil)
			p.call("quantized_decomposed::dequantize_per_tensor", "out", x, p.double(0.5), p.int(1), p.int(-128), p.int(127), p.int(1), p.null(), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{graph.MustFromSlice([]int{2}, []int8{2, -5})}, graph.Float32, []int{2}, []float64{0.5, -3}},
		{"quantize_per_channel", func(p *prog) {
			x, o := p.tensor(stFloat, []int32{2, 2}, nil), p.tensor(0, []int32{2, 2}, nil)
			sc := p.tensor(7, []int32{2}, append(f64le(0.5), f64le(0.25)...))
			p.call("quantized_decomposed::quantize_per_channel", "out", x, sc, p.i64t([]int32{2}, 0, 1), p.int(0), p.int(0), p.int(255), p.int(0), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{f32([]int{2, 2}, 1, 1, 1, -1)}, graph.Uint8, []int{2, 2}, []float64{2, 2, 5, 0}},
		{"bool × bool is and", func(p *prog) {
			x, y, o := p.tensor(stBool, []int32{2}, nil), p.tensor(stBool, []int32{2}, []byte{1, 0}), p.tensor(stBool, []int32{2}, nil)
			p.call("aten::mul", "out", x, y, o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{graph.MustFromSlice([]int{2}, []bool{true, true})}, graph.Bool, []int{2}, []float64{1, 0}},
		{"max_pool2d ceil_mode drops a window starting in the padding", func(p *prog) {
			x, o, idx := p.tensor(stFloat, []int32{1, 1, 1, 5}, nil), p.tensor(stFloat, []int32{1, 1, 1, 3}, nil), p.tensor(stLong, []int32{1, 1, 1, 3}, nil)
			p.call("aten::max_pool2d_with_indices", "out", x, p.ints(1, 2), p.ints(1, 2), p.ints(0, 1), p.ints(1, 1), p.boolean(true), o, idx)
			p.in, p.out = []int32{x}, []int32{o, idx}
		}, []*graph.Tensor{f32([]int{1, 1, 1, 5}, 1, 5, 2, 3, 4)}, graph.Float32, []int{1, 1, 1, 3}, []float64{1, 5, 4}},
		{"silu", func(p *prog) {
			x, o := p.tensor(stFloat, []int32{2}, nil), p.tensor(stFloat, []int32{2}, nil)
			p.call("aten::silu", "out", x, o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{f32([]int{2}, 0, 1)}, graph.Float32, []int{2}, []float64{0, 0.7310586}},
		{"hardsigmoid and hardswish", func(p *prog) {
			x, h, o := p.tensor(stFloat, []int32{3}, nil), p.tensor(stFloat, []int32{3}, nil), p.tensor(stFloat, []int32{3}, nil)
			p.call("aten::hardsigmoid", "out", x, h)
			p.call("aten::hardswish", "out", h, o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{f32([]int{3}, -4, 0, 3)}, graph.Float32, []int{3}, []float64{0, 0.5 * 3.5 / 6, 4.0 / 6}},
		{"leaky_relu", func(p *prog) {
			x, o := p.tensor(stFloat, []int32{2}, nil), p.tensor(stFloat, []int32{2}, nil)
			p.call("aten::leaky_relu", "out", x, p.double(0.1), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{f32([]int{2}, -2, 3)}, graph.Float32, []int{2}, []float64{-0.2, 3}},
		{"log2 then trunc", func(p *prog) {
			x, a, o := p.tensor(stFloat, []int32{2}, nil), p.tensor(stFloat, []int32{2}, nil), p.tensor(stFloat, []int32{2}, nil)
			p.call("aten::log2", "out", x, a) // 3.17, -2
			p.call("aten::trunc", "out", a, o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{f32([]int{2}, 9, 0.25)}, graph.Float32, []int{2}, []float64{3, -2}},
		{"log1p", func(p *prog) {
			x, o := p.tensor(stFloat, []int32{2}, nil), p.tensor(stFloat, []int32{2}, nil)
			p.call("aten::log1p", "out", x, o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{f32([]int{2}, 0, float32(math.E-1))}, graph.Float32, []int{2}, []float64{0, 1}},
		{"masked_fill", func(p *prog) {
			x, m, o := p.tensor(stFloat, []int32{3}, nil), p.tensor(stBool, []int32{3}, []byte{1, 0, 1}), p.tensor(stFloat, []int32{3}, nil)
			p.call("aten::masked_fill", "Scalar_out", x, m, p.double(-7), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{f32([]int{3}, 1, 2, 3)}, graph.Float32, []int{3}, []float64{-7, 2, -7}},
		{"stack dim 1", func(p *prog) {
			x, y, o := p.tensor(stFloat, []int32{2}, nil), p.f32([]int32{2}, 5, 6), p.tensor(stFloat, []int32{2, 2}, nil)
			p.call("aten::stack", "out", p.tensors(x, y), p.int(1), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{f32([]int{2}, 1, 2)}, graph.Float32, []int{2, 2}, []float64{1, 5, 2, 6}},
		{"repeat with a new leading dim", func(p *prog) {
			x, o := p.tensor(stFloat, []int32{2}, nil), p.tensor(stFloat, []int32{2, 4}, nil)
			p.call("aten::repeat", "out", x, p.ints(2, 2), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{f32([]int{2}, 1, 2)}, graph.Float32, []int{2, 4}, []float64{1, 2, 1, 2, 1, 2, 1, 2}},
		{"arange + cumsum", func(p *prog) {
			x, r, s, o := p.tensor(stLong, []int32{1}, nil), p.tensor(stLong, []int32{4}, nil), p.tensor(stLong, []int32{4}, nil), p.tensor(stLong, []int32{4}, nil)
			p.call("aten::arange", "start_out", p.int(1), p.int(9), p.int(2), r) // 1 3 5 7
			p.call("aten::cumsum", "out", r, p.int(0), p.null(), s)              // 1 4 9 16
			p.call("aten::add", "out", s, x, p.int(1), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{graph.MustFromSlice([]int{1}, []int64{100})}, graph.Int64, []int{4}, []float64{101, 104, 109, 116}},
		{"batch norm (inference)", func(p *prog) {
			x, o := p.tensor(stFloat, []int32{1, 2, 1, 1}, nil), p.tensor(stFloat, []int32{1, 2, 1, 1}, nil)
			mean, vr := p.f32([]int32{2}, 1, 2), p.f32([]int32{2}, 4, 16)
			p.call("aten::_native_batch_norm_legit_no_training", "out", x, p.null(), p.f32([]int32{2}, 10, 20), mean, vr, p.double(0.1), p.double(0), o, p.tensor(stFloat, []int32{0}, nil), p.tensor(stFloat, []int32{0}, nil))
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{f32([]int{1, 2, 1, 1}, 3, 6)}, graph.Float32, []int{1, 2, 1, 1}, []float64{11, 21}},
		{"index with one tensor on dim 1", func(p *prog) {
			x, o := p.tensor(stFloat, []int32{2, 3}, nil), p.tensor(stFloat, []int32{2, 2}, nil)
			idx := p.i64t([]int32{2}, 2, 0)
			list := p.add(val{kind: 11, items: []int64{int64(p.null()), int64(idx)}})
			p.call("aten::index", "Tensor_out", x, list, o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{f32([]int{2, 3}, 1, 2, 3, 4, 5, 6)}, graph.Float32, []int{2, 2}, []float64{3, 1, 6, 4}},
		{"split_with_sizes then the second piece", func(p *prog) {
			x, a, b := p.tensor(stFloat, []int32{5}, nil), p.tensor(stFloat, []int32{2}, nil), p.tensor(stFloat, []int32{3}, nil)
			p.call("aten::split_with_sizes_copy", "out", x, p.ints(2, 3), p.int(0), p.tensors(a, b))
			p.in, p.out = []int32{x}, []int32{b, a}
		}, []*graph.Tensor{f32([]int{5}, 1, 2, 3, 4, 5)}, graph.Float32, []int{3}, []float64{3, 4, 5}},
		{"unbind", func(p *prog) {
			x, a, b := p.tensor(stFloat, []int32{2, 2}, nil), p.tensor(stFloat, []int32{2}, nil), p.tensor(stFloat, []int32{2}, nil)
			p.call("aten::unbind_copy", "int_out", x, p.int(1), p.tensors(a, b))
			p.in, p.out = []int32{x}, []int32{b, a}
		}, []*graph.Tensor{f32([]int{2, 2}, 1, 2, 3, 4)}, graph.Float32, []int{2}, []float64{2, 4}},
		{"flip", func(p *prog) {
			x, o := p.tensor(stFloat, []int32{2, 2}, nil), p.tensor(stFloat, []int32{2, 2}, nil)
			p.call("aten::flip", "out", x, p.ints(-1), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{f32([]int{2, 2}, 1, 2, 3, 4)}, graph.Float32, []int{2, 2}, []float64{2, 1, 4, 3}},
		{"remainder of floats is Python's", func(p *prog) {
			x, o := p.tensor(stFloat, []int32{2}, nil), p.tensor(stFloat, []int32{2}, nil)
			p.call("aten::remainder", "Scalar_out", x, p.double(3), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{f32([]int{2}, -1, 7)}, graph.Float32, []int{2}, []float64{2, 1}},
		{"fmod of ints is C's", func(p *prog) {
			x, o := p.tensor(stLong, []int32{2}, nil), p.tensor(stLong, []int32{2}, nil)
			p.call("aten::fmod", "Scalar_out", x, p.int(3), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{graph.MustFromSlice([]int{2}, []int64{-1, 7})}, graph.Int64, []int{2}, []float64{-1, 1}},
		{"pixel_shuffle", func(p *prog) {
			x, o := p.tensor(stFloat, []int32{1, 4, 1, 1}, nil), p.tensor(stFloat, []int32{1, 1, 2, 2}, nil)
			p.call("aten::pixel_shuffle", "out", x, p.int(2), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{f32([]int{1, 4, 1, 1}, 1, 2, 3, 4)}, graph.Float32, []int{1, 1, 2, 2}, []float64{1, 2, 3, 4}},
		{"upsample nearest ×1.5", func(p *prog) {
			x, o := p.tensor(stFloat, []int32{1, 1, 1, 2}, nil), p.tensor(stFloat, []int32{1, 1, 1, 3}, nil)
			p.call("aten::upsample_nearest2d", "vec_out", x, p.ints(1, 3), p.null(), o)
			p.in, p.out = []int32{x}, []int32{o}
		}, []*graph.Tensor{f32([]int{1, 1, 1, 2}, 1, 2)}, graph.Float32, []int{1, 1, 1, 3}, []float64{1, 1, 2}},
	}
	for _, c := range cases {
		p := &prog{}
		c.build(p)
		got := p.exec(t, c.in...)[0]
		if got.DType != c.dt || !slices.Equal(got.Shape, c.shape) {
			t.Errorf("%s: got %v%v, want %v%v", c.name, got.DType, got.Shape, c.dt, c.shape)
			continue
		}
		g := got.Float64s()
		for i := range c.want {
			if math.Abs(g[i]-c.want[i]) > 2e-6*math.Max(1, math.Abs(c.want[i])) {
				t.Errorf("%s: got %v, want %v", c.name, g, c.want)
				break
			}
		}
	}
}

// TestUnmappedNamed: every operator without a mapping is named with its
// instruction indices in one error, before anything is built.
func TestUnmappedNamed(t *testing.T) {
	p := &prog{}
	x, o1, o2 := p.tensor(stFloat, []int32{2}, nil), p.tensor(stFloat, []int32{2}, nil), p.tensor(stFloat, []int32{2}, nil)
	p.call("aten::relu", "out", x, o1)
	p.call("aten::frobnicate", "out", o1, o2)
	p.call("aten::relu", "out", o2, o1)
	p.call("aten::frobnicate", "out", o1, o2)
	p.call("vendor::thing", "out", o2, o1)
	p.in, p.out = []int32{x}, []int32{o1}
	pr, err := executorchParse(p.build())
	if err != nil {
		t.Fatal(err)
	}
	_, err = pr.Lower(executorchOptions())
	want := "method forward cannot run: operator aten::frobnicate.out (instructions 0.1, 0.3) has no mapping; operator vendor::thing.out (instructions 0.4) has no mapping: unsupported"
	if err == nil || err.Error() != "executorch: "+want {
		t.Fatalf("got %v\nwant executorch: %s", err, want)
	}
}
