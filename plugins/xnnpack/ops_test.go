package xnnpack_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/onnxtest"
	"github.com/switchyard-hal/switchyard/partitioner"
	"github.com/switchyard-hal/switchyard/plugins/xnnpack"
	"github.com/switchyard-hal/switchyard/runtime"
)

type opCase struct {
	name    string
	opset   int64
	inputs  map[string][]int // dynamic float32 inputs and shapes
	consts  map[string]*graph.Tensor
	nodes   []*graph.Node
	outputs []string
	claimed int // nodes expected on xnnpack (-1: all)
}

func ints(name string, v ...int64) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrInts, Ints: v}
}
func iattr(name string, v int64) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrInt, I: v}
}
func fattr(name string, v float32) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrFloat, F: v}
}
func sattr(name, v string) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrString, S: v}
}

func node(op string, in, out []string, attrs ...*graph.Attribute) *graph.Node {
	n := &graph.Node{Name: op + "_" + out[0], OpType: op, Inputs: in, Outputs: out, Attrs: map[string]*graph.Attribute{}}
	for _, a := range attrs {
		n.Attrs[a.Name] = a
	}
	return n
}

func randT(rng *rand.Rand, shape ...int) *graph.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	d := make([]float32, n)
	for i := range d {
		d[i] = float32(rng.NormFloat64())
	}
	return graph.MustFromSlice(shape, d)
}

func i64(v ...int64) *graph.Tensor { return graph.MustFromSlice([]int{len(v)}, v) }

// run checks a case on xnnpack against the cpu backend (reference kernels).
func (c opCase) run(t *testing.T, dev *hal.Device, rng *rand.Rand) {
	t.Helper()
	opset := c.opset
	if opset == 0 {
		opset = 17
	}
	g := &graph.Graph{Name: c.name, Initializers: map[string]*graph.Tensor{}, Nodes: c.nodes}
	feeds := map[string]*graph.Tensor{}
	for name, shape := range c.inputs {
		g.Inputs = append(g.Inputs, graph.ValueInfo{Name: name, Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(shape...)}})
		feeds[name] = randT(rng, shape...)
	}
	for name, v := range c.consts {
		g.Initializers[name] = v
	}
	for _, o := range c.outputs {
		g.Outputs = append(g.Outputs, graph.ValueInfo{Name: o})
	}
	model := func() *graph.Model {
		return &graph.Model{IRVersion: 8, Opsets: []graph.Opset{{Version: opset}}, Graph: g}
	}
	ctx := context.Background()
	ref, err := runtime.Prepare(ctx, model(), nil)
	if err != nil {
		t.Fatalf("cpu prepare: %v", err)
	}
	want, err := ref.Run(ctx, feeds)
	if err != nil {
		t.Fatalf("cpu run: %v", err)
	}
	m, err := runtime.Prepare(ctx, model(), &runtime.Options{Backends: []*hal.Device{dev}, Policy: partitioner.Policy{IgnoreCosts: true}}) // the kernels under test, not placement
	if err != nil {
		t.Fatalf("xnnpack prepare: %v", err)
	}
	defer m.Close()
	claimed := m.Plan().Summary()[xnnpack.Name]
	exp := c.claimed
	if exp < 0 {
		exp = len(c.nodes)
	}
	if claimed != exp {
		t.Fatalf("%d of %d nodes on xnnpack, want %d:\n%s", claimed, len(c.nodes), exp, m.Plan().Text())
	}
	for rep := 0; rep < 2; rep++ { // twice: the instance is reused
		got, err := m.Run(ctx, feeds)
		if err != nil {
			t.Fatalf("xnnpack run: %v", err)
		}
		for _, o := range c.outputs {
			if err := onnxtest.Compare(got[o], want[o], 1e-4, 1e-5); err != nil {
				t.Fatalf("output %s: %v", o, err)
			}
		}
	}
}

func TestOpsAgainstCPU(t *testing.T) {
	dev := device(t, xnnpack.Options{Threads: 1})
	rng := rand.New(rand.NewPCG(1, 2))
	w := func(s ...int) *graph.Tensor { return randT(rng, s...) }
	x4 := map[string][]int{"x": {2, 6, 9, 11}}
	cases := []opCase{
		{name: "conv", inputs: x4, consts: map[string]*graph.Tensor{"w": w(8, 6, 3, 3), "b": w(8)},
			nodes: []*graph.Node{node("Conv", []string{"x", "w", "b"}, []string{"y"}, ints("pads", 1, 0, 2, 1), ints("strides", 2, 1))}},
		{name: "conv_dilated_nobias", inputs: x4, consts: map[string]*graph.Tensor{"w": w(4, 6, 3, 2)},
			nodes: []*graph.Node{node("Conv", []string{"x", "w"}, []string{"y"}, ints("dilations", 2, 3))}},
		{name: "conv_groups", inputs: x4, consts: map[string]*graph.Tensor{"w": w(4, 3, 3, 3), "b": w(4)},
			nodes: []*graph.Node{node("Conv", []string{"x", "w", "b"}, []string{"y"}, iattr("group", 2), sattr("auto_pad", "SAME_UPPER"))}},
		{name: "conv_depthwise_bn_relu6", inputs: x4, consts: map[string]*graph.Tensor{"w": w(6, 1, 3, 3), "s": w(6), "bb": w(6), "mu": w(6), "var": graph.MustFromSlice([]int{6}, []float32{1, 2, 3, 0.5, 0.25, 4}), "lo": graph.Scalar(float32(0)), "hi": graph.Scalar(float32(6))},
			nodes: []*graph.Node{
				node("Conv", []string{"x", "w"}, []string{"c"}, iattr("group", 6), ints("pads", 1, 1, 1, 1)),
				node("BatchNormalization", []string{"c", "s", "bb", "mu", "var"}, []string{"n"}),
				node("Clip", []string{"n", "lo", "hi"}, []string{"y"})}},
		{name: "depth_multiplier", inputs: x4, consts: map[string]*graph.Tensor{"w": w(12, 1, 3, 3)},
			nodes: []*graph.Node{node("Conv", []string{"x", "w"}, []string{"y"}, iattr("group", 6))}},
		{name: "batchnorm_alone", inputs: x4, consts: map[string]*graph.Tensor{"s": w(6), "bb": w(6), "mu": w(6), "var": graph.MustFromSlice([]int{6}, []float32{1, 2, 3, 0.5, 0.25, 4})},
			nodes: []*graph.Node{node("BatchNormalization", []string{"x", "s", "bb", "mu", "var"}, []string{"y"})}},
		{name: "pools", inputs: x4, nodes: []*graph.Node{
			node("MaxPool", []string{"x"}, []string{"a"}, ints("kernel_shape", 3, 3), ints("strides", 2, 2), ints("pads", 1, 1, 1, 1)),
			node("AveragePool", []string{"x"}, []string{"b"}, ints("kernel_shape", 2, 3), ints("strides", 1, 2)),
			node("AveragePool", []string{"x"}, []string{"c"}, ints("kernel_shape", 3, 3), ints("pads", 1, 1, 1, 1)),
			node("MaxPool", []string{"x"}, []string{"d"}, ints("kernel_shape", 2, 2), ints("strides", 2, 2), iattr("ceil_mode", 1)),
			node("GlobalAveragePool", []string{"x"}, []string{"e"})}, outputs: []string{"a", "b", "c", "d", "e"}},
		{name: "activations", inputs: x4, nodes: []*graph.Node{
			node("Relu", []string{"x"}, []string{"a"}),
			node("HardSigmoid", []string{"a"}, []string{"b"}, fattr("alpha", 0.3)),
			node("HardSwish", []string{"x"}, []string{"c"}),
			node("Sigmoid", []string{"x"}, []string{"d"}),
			node("LeakyRelu", []string{"x"}, []string{"e"}, fattr("alpha", 0.1)),
			node("Elu", []string{"x"}, []string{"f"}),
			node("Abs", []string{"x"}, []string{"g"}),
			node("Neg", []string{"g"}, []string{"h"}),
			node("Clip", []string{"x"}, []string{"i"})}, outputs: []string{"b", "c", "d", "e", "f", "h", "i"}},
		{name: "broadcast_binary", inputs: map[string][]int{"x": {2, 6, 9, 11}, "y": {6, 1, 1}, "z": {11}}, consts: map[string]*graph.Tensor{"k": w(1, 6, 1, 1), "s": graph.Scalar(float32(3))},
			nodes: []*graph.Node{
				node("Add", []string{"x", "y"}, []string{"a"}),
				node("Mul", []string{"a", "k"}, []string{"b"}),
				node("Sub", []string{"b", "z"}, []string{"c"}),
				node("Div", []string{"c", "s"}, []string{"d"}),
				node("Add", []string{"d", "x"}, []string{"e"})}, outputs: []string{"e"}},
		{name: "conv_then_broadcast", inputs: map[string][]int{"x": {1, 6, 9, 11}, "y": {6, 1, 1}}, consts: map[string]*graph.Tensor{"w": w(6, 6, 1, 1)},
			nodes: []*graph.Node{
				node("Conv", []string{"x", "w"}, []string{"a"}),
				node("Mul", []string{"a", "y"}, []string{"b"})}, outputs: []string{"b"}},
		{name: "prelu", inputs: x4, consts: map[string]*graph.Tensor{"s": w(6, 1, 1)},
			nodes: []*graph.Node{node("PRelu", []string{"x", "s"}, []string{"y"})}},
		// TFLite's layout: NHWC data, slope [1,1,C]; behind a Conv (NCHW
		// in XNNPACK's NHWC) through a Transpose, as the importer writes it
		{name: "prelu_channels_last", inputs: map[string][]int{"x": {1, 5, 7, 6}}, consts: map[string]*graph.Tensor{"s": w(1, 1, 6), "t": w(6)},
			nodes: []*graph.Node{node("PRelu", []string{"x", "s"}, []string{"a"}), node("PRelu", []string{"a", "t"}, []string{"y"})}},
		{name: "conv_transpose_prelu_last", inputs: map[string][]int{"x": {1, 6, 9, 11}}, consts: map[string]*graph.Tensor{"w": w(6, 6, 1, 1), "s": w(1, 1, 6)},
			nodes: []*graph.Node{
				node("Conv", []string{"x", "w"}, []string{"a"}),
				node("Transpose", []string{"a"}, []string{"b"}, &graph.Attribute{Name: "perm", Type: graph.AttrInts, Ints: []int64{0, 2, 3, 1}}),
				node("PRelu", []string{"b", "s"}, []string{"y"})}},
		{name: "softmax", inputs: map[string][]int{"x": {3, 4, 5}}, nodes: []*graph.Node{
			node("Softmax", []string{"x"}, []string{"a"}),
			node("Softmax", []string{"x"}, []string{"b"}, iattr("axis", 1))}, outputs: []string{"a", "b"}},
		{name: "softmax_opset11", opset: 11, inputs: map[string][]int{"x": {3, 4, 5}}, nodes: []*graph.Node{
			node("Softmax", []string{"x"}, []string{"a"}, iattr("axis", 1))}, outputs: []string{"a"}},
		{name: "gemm_matmul", inputs: map[string][]int{"x": {5, 7}}, consts: map[string]*graph.Tensor{"b": w(7, 3), "bt": w(4, 3), "c": w(4), "m": w(4, 6)},
			nodes: []*graph.Node{
				node("Gemm", []string{"x", "b"}, []string{"a"}, fattr("alpha", 0.5)),
				node("Gemm", []string{"a", "bt", "c"}, []string{"g"}, iattr("transB", 1), fattr("beta", 2)),
				node("MatMul", []string{"g", "m"}, []string{"y"})}},
		{name: "matmul_batched_a", inputs: map[string][]int{"x": {2, 3, 5}}, consts: map[string]*graph.Tensor{"m": w(5, 4)},
			nodes: []*graph.Node{node("MatMul", []string{"x", "m"}, []string{"y"})}},
		{name: "pad_concat_reshape_transpose", inputs: map[string][]int{"x": {1, 4, 5, 6}, "z": {1, 2, 5, 6}}, consts: map[string]*graph.Tensor{"w": w(4, 4, 1, 1), "p": i64(0, 0, 1, 2, 0, 1, 3, 0), "v": graph.Scalar(float32(0.5)), "sh": i64(1, -1, 6)},
			nodes: []*graph.Node{
				node("Conv", []string{"x", "w"}, []string{"c"}),
				node("Concat", []string{"c", "z"}, []string{"cc"}, iattr("axis", 1)),
				node("Pad", []string{"cc", "p", "v"}, []string{"pd"}),
				node("Transpose", []string{"pd"}, []string{"t"}, ints("perm", 0, 2, 3, 1)),
				node("Reshape", []string{"t", "sh"}, []string{"y"})}, outputs: []string{"y", "pd"}},
		// Concat with constants of one value is a constant pad (one runtime)
		{name: "concat_zero_channels_as_pad", inputs: map[string][]int{"x": {1, 4, 5, 6}}, consts: map[string]*graph.Tensor{"w": w(4, 4, 1, 1), "w2": w(9, 4, 1, 1), "z1": graph.MustFromSlice([]int{1, 2, 5, 6}, make([]float32, 60)), "z2": graph.MustFromSlice([]int{1, 3, 5, 6}, make([]float32, 90))},
			nodes: []*graph.Node{
				node("Conv", []string{"x", "w"}, []string{"c"}),
				node("Relu", []string{"c"}, []string{"r"}),
				node("Concat", []string{"z1", "r", "z2"}, []string{"cc"}, iattr("axis", 1)),
				node("Conv", []string{"x", "w2"}, []string{"d"}),
				node("Add", []string{"cc", "d"}, []string{"y"})}},
		{name: "concat_uniform_last_axis", inputs: map[string][]int{"x": {3, 4, 5}}, consts: map[string]*graph.Tensor{"k": graph.MustFromSlice([]int{3, 4, 2}, []float32{2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5, 2.5})},
			nodes: []*graph.Node{
				node("Sigmoid", []string{"x"}, []string{"s"}),
				node("Concat", []string{"s", "k"}, []string{"y"}, iattr("axis", -1))}},
		{name: "concat_nonuniform_const", inputs: map[string][]int{"x": {1, 4, 5, 6}}, consts: map[string]*graph.Tensor{"w": w(4, 4, 1, 1), "k": w(1, 2, 5, 6)},
			nodes: []*graph.Node{
				node("Conv", []string{"x", "w"}, []string{"c"}),
				node("Concat", []string{"c", "k"}, []string{"y"}, iattr("axis", 1))}},
		// inputs empty along the axis are dropped (they used to decline the
		// partition: rotary embeddings with nothing left unrotated)
		{name: "concat_empty_inputs", inputs: map[string][]int{"x": {2, 3, 4}, "e": {2, 0, 4}, "y": {2, 2, 4}},
			nodes: []*graph.Node{
				node("Concat", []string{"e", "x", "e", "y"}, []string{"c"}, iattr("axis", 1)),
				node("Relu", []string{"c"}, []string{"r"})}, outputs: []string{"r"}},
		{name: "concat_one_nonempty", inputs: map[string][]int{"x": {2, 3, 4}, "e": {2, 3, 0}},
			nodes: []*graph.Node{
				node("Sigmoid", []string{"x"}, []string{"s"}),
				node("Concat", []string{"s", "e"}, []string{"y"}, iattr("axis", -1))}},
		{name: "flatten_after_conv", inputs: x4, consts: map[string]*graph.Tensor{"w": w(3, 6, 3, 3)},
			nodes: []*graph.Node{
				node("Conv", []string{"x", "w"}, []string{"c"}),
				node("Flatten", []string{"c"}, []string{"y"})}},
		{name: "depth_to_space", inputs: map[string][]int{"x": {1, 8, 3, 4}}, consts: map[string]*graph.Tensor{"w": w(8, 8, 1, 1)},
			nodes: []*graph.Node{
				node("Conv", []string{"x", "w"}, []string{"c"}),
				node("DepthToSpace", []string{"c"}, []string{"y"}, iattr("blocksize", 2))}},
		{name: "resize_half_pixel_sizes", inputs: map[string][]int{"x": {2, 3, 5, 7}}, consts: map[string]*graph.Tensor{"sz": i64(2, 3, 9, 4)},
			nodes: []*graph.Node{node("Resize", []string{"x", "", "", "sz"}, []string{"y"}, sattr("mode", "linear"))}},
		{name: "resize_scales_after_conv", inputs: map[string][]int{"x": {1, 4, 5, 6}}, consts: map[string]*graph.Tensor{"w": w(4, 4, 1, 1), "sc": graph.MustFromSlice([]int{4}, []float32{1, 1, 2, 3})},
			nodes: []*graph.Node{
				node("Conv", []string{"x", "w"}, []string{"c"}),
				node("Resize", []string{"c", "", "sc"}, []string{"y"}, sattr("mode", "linear"))}},
		{name: "resize_align_corners", inputs: map[string][]int{"x": {1, 2, 4, 5}}, consts: map[string]*graph.Tensor{"sz": i64(1, 2, 7, 3)},
			nodes: []*graph.Node{node("Resize", []string{"x", "", "", "sz"}, []string{"y"}, sattr("mode", "linear"), sattr("coordinate_transformation_mode", "align_corners"))}},
		{name: "resize_asymmetric", inputs: map[string][]int{"x": {1, 2, 4, 5}}, consts: map[string]*graph.Tensor{"sz": i64(1, 2, 8, 3)},
			nodes: []*graph.Node{node("Resize", []string{"x", "", "", "sz"}, []string{"y"}, sattr("mode", "linear"), sattr("coordinate_transformation_mode", "asymmetric"))}},
		{name: "resize_pytorch_half_pixel", inputs: map[string][]int{"x": {1, 2, 4, 5}}, consts: map[string]*graph.Tensor{"sz": i64(1, 2, 6, 2)},
			nodes: []*graph.Node{node("Resize", []string{"x", "", "", "sz"}, []string{"y"}, sattr("mode", "linear"), sattr("coordinate_transformation_mode", "pytorch_half_pixel"))}},
		{name: "resize_opset10", opset: 10, inputs: map[string][]int{"x": {1, 2, 3, 4}}, consts: map[string]*graph.Tensor{"sc": graph.MustFromSlice([]int{4}, []float32{1, 1, 2, 2})},
			nodes: []*graph.Node{node("Resize", []string{"x", "sc"}, []string{"y"}, sattr("mode", "linear"))}},
		{name: "conv_transpose", inputs: map[string][]int{"x": {2, 4, 5, 6}}, consts: map[string]*graph.Tensor{"w": w(4, 3, 3, 3), "b": w(3)},
			nodes: []*graph.Node{node("ConvTranspose", []string{"x", "w", "b"}, []string{"y"})}},
		{name: "conv_transpose_strided_padded", inputs: map[string][]int{"x": {1, 4, 5, 6}}, consts: map[string]*graph.Tensor{"w": w(4, 2, 3, 4)},
			nodes: []*graph.Node{node("ConvTranspose", []string{"x", "w"}, []string{"y"}, ints("strides", 2, 3), ints("pads", 1, 0, 2, 1), ints("output_padding", 1, 2))}},
		{name: "conv_transpose_groups_dilated", inputs: map[string][]int{"x": {1, 6, 4, 5}}, consts: map[string]*graph.Tensor{"w": w(6, 2, 3, 2), "b": w(6), "cw": w(6, 6, 1, 1)},
			nodes: []*graph.Node{
				node("Conv", []string{"x", "cw"}, []string{"c"}),
				node("ConvTranspose", []string{"c", "w", "b"}, []string{"y"}, iattr("group", 3), ints("dilations", 2, 1), ints("strides", 2, 2))}},
		{name: "conv_transpose_depthwise", inputs: map[string][]int{"x": {1, 4, 5, 5}}, consts: map[string]*graph.Tensor{"w": w(4, 1, 4, 4)},
			nodes: []*graph.Node{node("ConvTranspose", []string{"x", "w"}, []string{"y"}, iattr("group", 4), ints("strides", 2, 2), ints("pads", 1, 1, 1, 1))}},
		{name: "split_sizes_nhwc", inputs: map[string][]int{"x": {1, 4, 5, 6}}, consts: map[string]*graph.Tensor{"w": w(7, 4, 1, 1), "sp": i64(2, 4, 1)},
			nodes: []*graph.Node{
				node("Conv", []string{"x", "w"}, []string{"c"}),
				node("Split", []string{"c", "sp"}, []string{"a", "b", "d"}, iattr("axis", 1)),
				node("Relu", []string{"b"}, []string{"e"})}, outputs: []string{"a", "e", "d"}},
		{name: "split_equal_last_axis", inputs: map[string][]int{"x": {3, 4, 6}},
			nodes: []*graph.Node{node("Split", []string{"x"}, []string{"a", "b", "d"}, iattr("axis", -1))}, outputs: []string{"a", "b", "d"}},
		{name: "split_num_outputs_opset18", opset: 18, inputs: map[string][]int{"x": {7, 2}},
			nodes: []*graph.Node{node("Split", []string{"x"}, []string{"a", "b", "d"}, iattr("num_outputs", 3))}, outputs: []string{"a", "b", "d"}},
		// nearest Resize/Upsample and Slice as Go steps inside the partition
		{name: "conv_resize_nearest_modes", inputs: map[string][]int{"x": {1, 3, 5, 7}}, consts: map[string]*graph.Tensor{"w": w(4, 3, 1, 1), "s2": graph.MustFromSlice([]int{4}, []float32{1, 1, 2, 2}), "s3": graph.MustFromSlice([]int{4}, []float32{1, 1, 3, 1.5}), "z": i64(1, 4, 3, 11)},
			nodes: []*graph.Node{
				node("Conv", []string{"x", "w"}, []string{"c"}),
				node("Resize", []string{"c", "", "s2"}, []string{"a"}),
				node("Resize", []string{"c", "", "s3"}, []string{"b"}, sattr("coordinate_transformation_mode", "asymmetric"), sattr("nearest_mode", "floor")),
				node("Resize", []string{"c", "", "", "z"}, []string{"d"}, sattr("coordinate_transformation_mode", "align_corners"), sattr("nearest_mode", "round_prefer_ceil")),
				node("Resize", []string{"c", "", "", "z"}, []string{"e"}, sattr("coordinate_transformation_mode", "pytorch_half_pixel"), sattr("nearest_mode", "ceil")),
				node("Relu", []string{"a"}, []string{"ya"}), node("Relu", []string{"b"}, []string{"yb"}),
				node("Relu", []string{"d"}, []string{"yd"}), node("Relu", []string{"e"}, []string{"ye"})},
			outputs: []string{"ya", "yb", "yd", "ye"}},
		{name: "upsample9_nearest_and_linear", opset: 9, inputs: map[string][]int{"x": {1, 3, 5, 7}}, consts: map[string]*graph.Tensor{"w": w(4, 3, 1, 1), "s2": graph.MustFromSlice([]int{4}, []float32{1, 1, 2, 2})},
			nodes: []*graph.Node{
				node("Conv", []string{"x", "w"}, []string{"c"}),
				node("Upsample", []string{"c", "s2"}, []string{"a"}),
				node("Upsample", []string{"c", "s2"}, []string{"b"}, sattr("mode", "linear")),
				node("Relu", []string{"a"}, []string{"ya"}), node("Relu", []string{"b"}, []string{"yb"})},
			outputs: []string{"ya", "yb"}},
		{name: "slices_focus_and_negative_steps", inputs: map[string][]int{"x": {1, 3, 8, 10}}, consts: map[string]*graph.Tensor{"w": w(12, 12, 1, 1), "w2": w(4, 3, 1, 1),
			"s0": i64(0), "s1": i64(1), "e": i64(1 << 40), "ax2": i64(2), "ax3": i64(3), "st2": i64(2),
			"ns": i64(-1, 6), "ne": i64(-100, 1), "nax": i64(3, 2), "nst": i64(-2, -3)},
			nodes: []*graph.Node{
				node("Slice", []string{"x", "s0", "e", "ax2", "st2"}, []string{"h0"}),
				node("Slice", []string{"x", "s1", "e", "ax2", "st2"}, []string{"h1"}),
				node("Slice", []string{"h0", "s0", "e", "ax3", "st2"}, []string{"q0"}),
				node("Slice", []string{"h1", "s0", "e", "ax3", "st2"}, []string{"q1"}),
				node("Slice", []string{"h0", "s1", "e", "ax3", "st2"}, []string{"q2"}),
				node("Slice", []string{"h1", "s1", "e", "ax3", "st2"}, []string{"q3"}),
				node("Concat", []string{"q0", "q1", "q2", "q3"}, []string{"f"}, iattr("axis", 1)),
				node("Conv", []string{"f", "w"}, []string{"y"}),
				// a slice of NHWC data, with negative steps
				node("Conv", []string{"x", "w2"}, []string{"c"}),
				node("Slice", []string{"c", "ns", "ne", "nax", "nst"}, []string{"z"}),
				node("Relu", []string{"z"}, []string{"yz"})},
			outputs: []string{"y", "yz"}},
		// space-to-depth slicing read by nothing else: gathered at the
		// partition boundary (YOLOX's Focus, phases in its order), or
		// as one Go step from a value inside the partition
		{name: "focus_at_boundary", inputs: map[string][]int{"x": {2, 3, 8, 10}}, consts: map[string]*graph.Tensor{"w": w(5, 12, 3, 3), "b": w(5),
			"s0": i64(0), "s1": i64(1), "e": i64(1 << 40), "ax2": i64(2), "ax3": i64(3), "st2": i64(2)},
			nodes: []*graph.Node{
				node("Slice", []string{"x", "s0", "e", "ax3", "st2"}, []string{"a0"}),
				node("Slice", []string{"a0", "s0", "e", "ax2", "st2"}, []string{"q0"}),
				node("Slice", []string{"x", "s0", "e", "ax3", "st2"}, []string{"a1"}),
				node("Slice", []string{"a1", "s1", "e", "ax2", "st2"}, []string{"q1"}),
				node("Slice", []string{"x", "s1", "e", "ax3", "st2"}, []string{"a2"}),
				node("Slice", []string{"a2", "s0", "e", "ax2", "st2"}, []string{"q2"}),
				node("Slice", []string{"x", "s1", "e", "ax3", "st2"}, []string{"a3"}),
				node("Slice", []string{"a3", "s1", "e", "ax2", "st2"}, []string{"q3"}),
				node("Concat", []string{"q0", "q1", "q2", "q3"}, []string{"f"}, iattr("axis", 1)),
				node("Conv", []string{"f", "w", "b"}, []string{"y"}, ints("pads", 1, 1, 1, 1))}},
		{name: "focus_inside_block3_repeated_phase", inputs: map[string][]int{"x": {1, 2, 9, 6}}, consts: map[string]*graph.Tensor{"w0": w(3, 2, 1, 1), "w": w(4, 9, 1, 1),
			"s0": i64(0, 0), "s2": i64(2, 1), "e": i64(1<<40, 1<<40), "ax": i64(2, 3), "st3": i64(3, 3)},
			nodes: []*graph.Node{
				node("Conv", []string{"x", "w0"}, []string{"c"}),
				node("Slice", []string{"c", "s0", "e", "ax", "st3"}, []string{"q0"}),
				node("Slice", []string{"c", "s2", "e", "ax", "st3"}, []string{"q1"}),
				node("Concat", []string{"q1", "q0", "q1"}, []string{"f"}, iattr("axis", 1)),
				node("Conv", []string{"f", "w"}, []string{"y"})}},
		// as TFLite's converter writes it: four-axis slices, each
		// followed by a Reshape to the shape it has
		{name: "focus_slice_reshape", inputs: map[string][]int{"x": {1, 3, 8, 10}}, consts: map[string]*graph.Tensor{"w": w(5, 12, 3, 3),
			"z": i64(0, 0, 0, 0), "h1": i64(0, 0, 1, 0), "w1": i64(0, 0, 0, 1), "e": i64(1, 3, 8, 10), "ax": i64(0, 1, 2, 3), "sh": i64(1, 1, 2, 1), "sw": i64(1, 1, 1, 2),
			"r1": i64(1, 3, 4, 10), "r2": i64(1, 3, 4, 5), "r3": i64(0, 3, -1, 5)},
			nodes: []*graph.Node{
				node("Slice", []string{"x", "h1", "e", "ax", "sh"}, []string{"a"}),
				node("Reshape", []string{"a", "r1"}, []string{"ar"}),
				node("Slice", []string{"x", "z", "e", "ax", "sh"}, []string{"b"}),
				node("Reshape", []string{"b", "r1"}, []string{"br"}),
				node("Slice", []string{"ar", "z", "e", "ax", "sw"}, []string{"q0"}),
				node("Reshape", []string{"q0", "r2"}, []string{"q0r"}),
				node("Slice", []string{"ar", "w1", "e", "ax", "sw"}, []string{"q1"}),
				node("Reshape", []string{"q1", "r3"}, []string{"q1r"}),
				node("Slice", []string{"br", "z", "e", "ax", "sw"}, []string{"q2"}),
				node("Reshape", []string{"q2", "r2"}, []string{"q2r"}),
				node("Slice", []string{"br", "w1", "e", "ax", "sw"}, []string{"q3"}),
				node("Reshape", []string{"q3", "r2"}, []string{"q3r"}),
				node("Concat", []string{"q2r", "q0r", "q3r", "q1r"}, []string{"f"}, iattr("axis", 1)),
				node("Conv", []string{"f", "w"}, []string{"y"}, ints("pads", 1, 1, 1, 1))}},
		// bounds that are not space-to-depth: lowered as written
		{name: "focus_partial_rows", inputs: map[string][]int{"x": {1, 3, 8, 10}}, consts: map[string]*graph.Tensor{"w": w(5, 6, 1, 1),
			"s0": i64(0, 0), "s1": i64(1, 0), "e": i64(6, 1<<40), "ax": i64(2, 3), "st": i64(2, 2)},
			nodes: []*graph.Node{
				node("Slice", []string{"x", "s0", "e", "ax", "st"}, []string{"q0"}),
				node("Slice", []string{"x", "s1", "e", "ax", "st"}, []string{"q1"}),
				node("Concat", []string{"q0", "q1"}, []string{"f"}, iattr("axis", 1)),
				node("Conv", []string{"f", "w"}, []string{"y"})}},
		{name: "head_reshape_keeps_nhwc", inputs: map[string][]int{"x": {1, 3, 5, 7}}, consts: map[string]*graph.Tensor{"w": w(6, 3, 1, 1), "sh": i64(1, 6, -1)},
			nodes: []*graph.Node{
				node("Conv", []string{"x", "w"}, []string{"c"}),
				node("Reshape", []string{"c", "sh"}, []string{"r"}),
				node("Transpose", []string{"r"}, []string{"t"}, ints("perm", 0, 2, 1)),
				node("Sigmoid", []string{"t"}, []string{"y"})}},
		// declines: the node stays on cpu
		{name: "decline_resize_nearest_tf_half_pixel", inputs: map[string][]int{"x": {1, 2, 3, 4}}, consts: map[string]*graph.Tensor{"sc": graph.MustFromSlice([]int{4}, []float32{1, 1, 2, 2})},
			nodes: []*graph.Node{node("Resize", []string{"x", "", "sc"}, []string{"y"}, sattr("coordinate_transformation_mode", "tf_half_pixel_for_nn"))}, claimed: 0},
		{name: "decline_resize_fractional_scale", inputs: map[string][]int{"x": {1, 2, 5, 4}}, consts: map[string]*graph.Tensor{"sc": graph.MustFromSlice([]int{4}, []float32{1, 1, 1.5, 2})},
			nodes: []*graph.Node{node("Resize", []string{"x", "", "sc"}, []string{"y"}, sattr("mode", "linear"))}, claimed: 0},
		{name: "decline_conv_transpose_output_shape", inputs: map[string][]int{"x": {1, 2, 3, 3}}, consts: map[string]*graph.Tensor{"w": w(2, 2, 3, 3)},
			nodes: []*graph.Node{node("ConvTranspose", []string{"x", "w"}, []string{"y"}, ints("strides", 2, 2), ints("output_shape", 6, 6))}, claimed: 0},
		{name: "decline_dynamic_weights", inputs: map[string][]int{"x": {1, 2, 5, 5}, "w": {2, 2, 1, 1}}, nodes: []*graph.Node{node("Conv", []string{"x", "w"}, []string{"y"})}, claimed: 0},
		{name: "decline_crd", inputs: map[string][]int{"x": {1, 8, 3, 4}}, nodes: []*graph.Node{node("DepthToSpace", []string{"x"}, []string{"y"}, iattr("blocksize", 2), sattr("mode", "CRD"))}, claimed: 0},
	}
	for _, c := range cases {
		if c.outputs == nil {
			c.outputs = []string{"y"}
		}
		if c.claimed == 0 && len(c.name) < 8 || c.claimed == 0 && c.name[:8] != "decline_" {
			c.claimed = -1
		}
		t.Run(c.name, func(t *testing.T) { c.run(t, dev, rng) })
	}
}

// Declines carry the exact reason.
func TestDeclineReasons(t *testing.T) {
	b := xnnpack.OpenForTest(t, xnnpack.Options{})
	g := &graph.Graph{Inputs: []graph.ValueInfo{
		{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(1, 2, 4, 4)}},
		{Name: "i", Type: graph.ValueType{Kind: "tensor", DType: graph.Int32, Shape: graph.StaticShape(4)}},
		{Name: "w", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(2, 2, 1, 1)}}},
		Nodes: []*graph.Node{
			node("Conv", []string{"x", "w"}, []string{"a"}),
			node("Relu", []string{"i"}, []string{"b"}),
			node("AveragePool", []string{"x"}, []string{"c"}, ints("kernel_shape", 2, 2), ints("pads", 1, 1, 1, 1), iattr("count_include_pad", 1)),
			node("Pad", []string{"x"}, []string{"d"}, sattr("mode", "reflect")),
		}}
	vs, err := b.Supports(context.Background(), &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`input 1 ("w") must be a constant`, "input \"i\" is int32; only float32", "count_include_pad=1", `mode="reflect"`}
	for i, v := range vs {
		if v.Supported || !contains(v.Reason, want[i]) {
			t.Errorf("node %d: verdict %+v, want a decline mentioning %q", i, v, want[i])
		}
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && (s[:len(sub)] == sub || contains(s[1:], sub)))
}

// A missing library is Unavailable naming every library that is missing,
// each with its Debian package, not a crash. Checked precisely on any
// machine: the bogus XNNPACK is named, and each default vendor library is
// named exactly when the loader cannot open it (on a fresh machine the
// thread pool is missing first, and the old loader named only it).
func TestUnavailable(t *testing.T) {
	const bogus = "libXNNPACK-does-not-exist.so.0"
	_, err := xnnpack.New(context.Background(), xnnpack.Options{Library: bogus})
	if err == nil {
		t.Fatal("opening a nonexistent library succeeded")
	}
	if !errors.Is(err, hal.ErrUnavailable) || !contains(err.Error(), "cannot open "+bogus+" (Debian: apt-get install libxnnpack0)") {
		t.Fatalf("got %v, want Unavailable naming %s and its package", err, bogus)
	}
	for _, l := range xnnpack.VendorLibraries() {
		if l.Package == "libxnnpack0" {
			continue // replaced by the bogus name
		}
		named := contains(err.Error(), "cannot open "+l.Name+" (Debian: apt-get install "+l.Package+")")
		if present := xnnpack.Loadable(l.Name); named == present {
			t.Errorf("%s loadable=%v but named in the error=%v: %v", l.Name, present, named, err)
		}
	}
	reg := hal.NewRegistry()
	if err := reg.Register(xnnpack.Factory(xnnpack.Options{Library: bogus})); err != nil {
		t.Fatal(err)
	}
	_, err = reg.Open(context.Background(), xnnpack.Name)
	if !errors.Is(err, hal.ErrUnavailable) || !contains(err.Error(), bogus) {
		t.Fatalf("registry open: %v, want Unavailable naming %s", err, bogus)
	}
}

// Dynamic input shapes: lowered per shape at run time.
func TestDynamicShapes(t *testing.T) {
	dev := device(t, xnnpack.Options{Threads: 1})
	rng := rand.New(rand.NewPCG(5, 6))
	g := &graph.Graph{Name: "dyn", Initializers: map[string]*graph.Tensor{"w": randT(rng, 4, 3, 3, 3)},
		Inputs:  []graph.ValueInfo{{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.Shape{{Param: "N"}, {Value: 3}, {Param: "H"}, {Param: "W"}}}}},
		Outputs: []graph.ValueInfo{{Name: "y"}},
		Nodes:   []*graph.Node{node("Conv", []string{"x", "w"}, []string{"c"}, ints("pads", 1, 1, 1, 1)), node("Relu", []string{"c"}, []string{"y"})}}
	mk := func() *graph.Model { return &graph.Model{IRVersion: 8, Opsets: []graph.Opset{{Version: 17}}, Graph: g} }
	ctx := context.Background()
	ref, err := runtime.Prepare(ctx, mk(), nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := runtime.Prepare(ctx, mk(), &runtime.Options{Backends: []*hal.Device{dev}, Policy: partitioner.Policy{IgnoreCosts: true}}) // the kernels under test, not placement
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, s := range [][]int{{1, 3, 8, 8}, {2, 3, 5, 7}, {1, 3, 8, 8}, {3, 3, 4, 9}, {1, 3, 2, 2}, {2, 3, 5, 7}} {
		in := map[string]*graph.Tensor{"x": randT(rng, s...)}
		want, err := ref.Run(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.Run(ctx, in)
		if err != nil {
			t.Fatalf("shape %v: %v", s, err)
		}
		if err := onnxtest.Compare(got["y"], want["y"], 1e-4, 1e-5); err != nil {
			t.Fatalf("shape %v: %v", s, err)
		}
	}
}

// Input shapes that change on every call (a decoder's growing past): after
// churn detection every call is declined and runs on cpu, visibly, with
// the same results; a repeated shape before that is not churn.
func TestShapeChurnDeclines(t *testing.T) {
	dev := device(t, xnnpack.Options{Threads: 1})
	rng := rand.New(rand.NewPCG(7, 8))
	g := &graph.Graph{Name: "churn", Initializers: map[string]*graph.Tensor{"w": randT(rng, 4, 3, 3, 3)},
		Inputs:  []graph.ValueInfo{{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.Shape{{Value: 1}, {Value: 3}, {Value: 6}, {Param: "W"}}}}},
		Outputs: []graph.ValueInfo{{Name: "y"}},
		Nodes:   []*graph.Node{node("Conv", []string{"x", "w"}, []string{"c"}, ints("pads", 1, 1, 1, 1)), node("Relu", []string{"c"}, []string{"y"})}}
	mk := func() *graph.Model { return &graph.Model{IRVersion: 8, Opsets: []graph.Opset{{Version: 17}}, Graph: g} }
	ctx := context.Background()
	ref, err := runtime.Prepare(ctx, mk(), nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := runtime.Prepare(ctx, mk(), &runtime.Options{Backends: []*hal.Device{dev}, Policy: partitioner.Policy{IgnoreCosts: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	run := func(w int) int {
		in := map[string]*graph.Tensor{"x": randT(rng, 1, 3, 6, w)}
		want, err := ref.Run(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		got, st, err := m.RunWithStats(ctx, in, runtime.RunOptions{})
		if err != nil {
			t.Fatalf("width %d: %v", w, err)
		}
		if err := onnxtest.Compare(got["y"], want["y"], 1e-4, 1e-5); err != nil {
			t.Fatalf("width %d: %v", w, err)
		}
		return st.Declined
	}
	// a few shapes, each repeated: lowered once per shape, never declined
	for i := 0; i < 12; i++ {
		if d := run(4 + i%3); d != 0 {
			t.Fatalf("call %d with 3 repeating shapes declined", i)
		}
	}
	// a new width on every call: declined from the 8th new shape on (3 seen)
	declined := 0
	for w := 10; w < 30; w++ {
		declined += run(w)
	}
	if declined == 0 || declined > 20-4 {
		t.Fatalf("%d of 20 growing-shape calls declined, want most but not the first ones", declined)
	}
	if d := run(4); d != 1 {
		t.Fatalf("after churn a known shape was not declined (%d)", d)
	}
}

// Resize, ConvTranspose and Split declines carry the exact reason.
func TestDeclineReasonsResizeDeconv(t *testing.T) {
	b := xnnpack.OpenForTest(t, xnnpack.Options{})
	f32 := func(v ...float32) *graph.Tensor { return graph.MustFromSlice([]int{len(v)}, v) }
	g := &graph.Graph{
		Inputs: []graph.ValueInfo{{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(1, 2, 5, 4)}}},
		Initializers: map[string]*graph.Tensor{
			"s2": f32(1, 1, 2, 2), "s15": f32(1, 1, 1.5, 2), "sc": f32(1, 2, 2, 2), "roi": f32(0, 0, 0, 0, 1, 1, 1, 1),
			"w": graph.MustFromSlice([]int{2, 2, 3, 3}, make([]float32, 36)), "z1": i64(1, 2, 1, 4),
		},
		Nodes: []*graph.Node{
			node("Resize", []string{"x", "", "s2"}, []string{"a"}, sattr("coordinate_transformation_mode", "tf_half_pixel_for_nn")),
			node("Resize", []string{"x", "", "s15"}, []string{"b"}, sattr("mode", "linear")),
			node("Resize", []string{"x", "roi", "s2"}, []string{"c"}, sattr("mode", "linear"), sattr("coordinate_transformation_mode", "tf_crop_and_resize")),
			node("Resize", []string{"x", "", "sc"}, []string{"d"}, sattr("mode", "linear")),
			node("Resize", []string{"x", "", "", "z1"}, []string{"e"}, sattr("mode", "linear"), sattr("coordinate_transformation_mode", "pytorch_half_pixel")),
			node("Resize", []string{"x", "", "s2"}, []string{"f"}, sattr("mode", "linear"), iattr("antialias", 1)),
			node("ConvTranspose", []string{"x", "w"}, []string{"g"}, ints("strides", 2, 2), ints("output_shape", 10, 8)),
			node("ConvTranspose", []string{"x", "w"}, []string{"h"}, ints("strides", 2, 2), ints("output_padding", 2, 0)),
			node("ConvTranspose", []string{"x", "w"}, []string{"i"}, sattr("auto_pad", "SAME_UPPER")),
		}}
	vs, err := b.Supports(context.Background(), &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 18}}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`nearest Resize coordinate_transformation_mode="tf_half_pixel_for_nn" is not mapped`,
		"scale 1.5 on axis 2 of length 5 gives 7, not 7.5",
		`coordinate_transformation_mode="tf_crop_and_resize"`,
		"N and C scales must be 1",
		"pytorch_half_pixel to a length-1 axis",
		"antialias=1",
		"output_shape=[10 8] is not mapped",
		"0 <= output_padding < stride",
		`auto_pad="SAME_UPPER" is not mapped`,
	}
	if len(vs) != len(want) {
		t.Fatalf("%d verdicts for %d nodes", len(vs), len(want))
	}
	for i, v := range vs {
		if v.Supported || !contains(v.Reason, want[i]) {
			t.Errorf("node %d: verdict %+v, want a decline mentioning %q", i, v, want[i])
		}
	}
}

// Go steps large enough to split over the executable's threads (a Concat
// of NHWC values, the space-to-depth gather at the boundary) compute what
// the reference kernels do.
func TestGoStepsOverThreads(t *testing.T) {
	dev := device(t, xnnpack.Options{Threads: 3})
	rng := rand.New(rand.NewPCG(5, 6))
	w := func(s ...int) *graph.Tensor { return randT(rng, s...) }
	for _, c := range []opCase{
		{name: "concat_nhwc", inputs: map[string][]int{"x": {1, 8, 67, 65}}, consts: map[string]*graph.Tensor{"w1": w(8, 8, 1, 1), "w2": w(5, 8, 3, 3), "w3": w(4, 13, 1, 1)},
			nodes: []*graph.Node{
				node("Conv", []string{"x", "w1"}, []string{"a"}),
				node("Conv", []string{"x", "w2"}, []string{"b"}, ints("pads", 1, 1, 1, 1)),
				node("Concat", []string{"a", "b"}, []string{"c"}, iattr("axis", 1)),
				node("Conv", []string{"c", "w3"}, []string{"y"})}},
		{name: "focus_boundary", inputs: map[string][]int{"x": {1, 3, 134, 130}}, consts: map[string]*graph.Tensor{"w": w(4, 12, 3, 3),
			"s0": i64(0, 0), "s1": i64(1, 0), "s2": i64(0, 1), "s3": i64(1, 1), "e": i64(1<<40, 1<<40), "ax": i64(2, 3), "st": i64(2, 2)},
			nodes: []*graph.Node{
				node("Slice", []string{"x", "s0", "e", "ax", "st"}, []string{"q0"}),
				node("Slice", []string{"x", "s1", "e", "ax", "st"}, []string{"q1"}),
				node("Slice", []string{"x", "s2", "e", "ax", "st"}, []string{"q2"}),
				node("Slice", []string{"x", "s3", "e", "ax", "st"}, []string{"q3"}),
				node("Concat", []string{"q0", "q1", "q2", "q3"}, []string{"f"}, iattr("axis", 1)),
				node("Conv", []string{"f", "w"}, []string{"y"}, ints("pads", 1, 1, 1, 1))}},
	} {
		c.outputs, c.claimed = []string{"y"}, -1
		t.Run(c.name, func(t *testing.T) { c.run(t, dev, rng) })
	}
}
