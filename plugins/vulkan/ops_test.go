package vulkan_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/onnxtest"
	"github.com/switchyard-hal/switchyard/partitioner"
	_ "github.com/switchyard-hal/switchyard/plugins/cpu" // the reference
	"github.com/switchyard-hal/switchyard/plugins/vulkan"
	"github.com/switchyard-hal/switchyard/runtime"
)

type opCase struct {
	name    string
	opset   int64
	inputs  map[string][]int
	fixed   map[string]*graph.Tensor // inputs of given values (and dtypes)
	consts  map[string]*graph.Tensor
	nodes   []*graph.Node
	outputs []string
	claimed int // nodes expected on vulkan (0: all)
}

// run checks a case on vulkan against the reference kernels.
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
	for name, v := range c.fixed {
		g.Inputs = append(g.Inputs, graph.ValueInfo{Name: name, Type: graph.ValueType{Kind: "tensor", DType: v.DType, Shape: graph.StaticShape(v.Shape...)}})
		feeds[name] = v
	}
	slices.SortFunc(g.Inputs, func(a, b graph.ValueInfo) int { return strings.Compare(a.Name, b.Name) })
	for name, v := range c.consts {
		g.Initializers[name] = v
	}
	outs := c.outputs
	if outs == nil {
		outs = []string{"y"}
	}
	for _, o := range outs {
		g.Outputs = append(g.Outputs, graph.ValueInfo{Name: o})
	}
	model := func() *graph.Model {
		return &graph.Model{IRVersion: 8, Opsets: []graph.Opset{{Version: opset}, {Domain: "com.microsoft", Version: 1}}, Graph: g}
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
	m, err := runtime.Prepare(ctx, model(), &runtime.Options{Backends: []*hal.Device{dev}, Policy: partitioner.Policy{IgnoreCosts: true}})
	if err != nil {
		t.Fatalf("vulkan prepare: %v", err)
	}
	defer m.Close()
	claimed := m.Plan().Summary()[vulkan.Name]
	exp := c.claimed
	if exp == 0 {
		exp = len(c.nodes)
	}
	if claimed != exp {
		t.Fatalf("%d of %d nodes on vulkan, want %d:\n%s", claimed, len(c.nodes), exp, m.Plan().Text())
	}
	for rep := 0; rep < 2; rep++ { // twice: the recording is replayed
		got, err := m.Run(ctx, feeds)
		if err != nil {
			t.Fatalf("vulkan run: %v", err)
		}
		for _, o := range outs {
			if err := onnxtest.Compare(got[o], want[o], 1e-4, 1e-5); err != nil {
				t.Fatalf("output %s: %v", o, err)
			}
		}
	}
}

func TestOpsAgainstCPU(t *testing.T) {
	for _, staging := range []bool{false, true} {
		name := "mapped"
		if staging {
			name = "staging"
		}
		t.Run(name, func(t *testing.T) {
			dev, _ := device(t, vulkan.Options{ForceStaging: staging})
			rng := rand.New(rand.NewPCG(1, 2))
			for _, c := range opCases(rng) {
				t.Run(c.name, func(t *testing.T) { c.run(t, dev, rng) })
				if staging && c.name == "binary" {
					break // the staging path: one case is enough
				}
			}
		})
	}
}

func opCases(rng *rand.Rand) []opCase {
	w := func(s ...int) *graph.Tensor { return randT(rng, s...) }
	x4 := map[string][]int{"x": {2, 6, 9, 11}}
	return []opCase{
		{name: "binary", inputs: map[string][]int{"x": {2, 6, 9, 11}, "q": {6, 1, 1}, "z": {11}}, consts: map[string]*graph.Tensor{"k": w(1, 6, 1, 1), "s": graph.Scalar(float32(3))},
			nodes: []*graph.Node{
				node("Add", []string{"x", "q"}, []string{"a"}),
				node("Mul", []string{"a", "k"}, []string{"b"}),
				node("Sub", []string{"b", "z"}, []string{"c"}),
				node("Div", []string{"c", "s"}, []string{"d"}),
				node("Max", []string{"d", "x"}, []string{"e"}),
				node("Min", []string{"e", "z"}, []string{"f"}),
				node("Pow", []string{"f", "s"}, []string{"y"})}},
		{name: "conv", inputs: x4, consts: map[string]*graph.Tensor{"w": w(8, 6, 3, 3), "b": w(8)},
			nodes: []*graph.Node{node("Conv", []string{"x", "w", "b"}, []string{"y"}, ints("pads", 1, 0, 2, 1), ints("strides", 2, 1))}},
		{name: "conv_dilated_nobias", inputs: x4, consts: map[string]*graph.Tensor{"w": w(4, 6, 3, 2)},
			nodes: []*graph.Node{node("Conv", []string{"x", "w"}, []string{"y"}, ints("dilations", 2, 3))}},
		{name: "conv_groups_same", inputs: x4, consts: map[string]*graph.Tensor{"w": w(4, 3, 3, 3), "b": w(4)},
			nodes: []*graph.Node{node("Conv", []string{"x", "w", "b"}, []string{"y"}, iattr("group", 2), sattr("auto_pad", "SAME_UPPER"))}},
		{name: "conv1d", inputs: map[string][]int{"x": {1, 4, 30}}, consts: map[string]*graph.Tensor{"w": w(5, 4, 3)},
			nodes: []*graph.Node{node("Conv", []string{"x", "w"}, []string{"y"}, ints("strides", 2), ints("pads", 1, 1))}},
		{name: "convtranspose", inputs: map[string][]int{"x": {2, 4, 5, 6}}, consts: map[string]*graph.Tensor{"w": w(4, 3, 3, 3), "b": w(3)},
			nodes: []*graph.Node{node("ConvTranspose", []string{"x", "w", "b"}, []string{"y"}, ints("strides", 2, 2), ints("pads", 1, 0, 1, 1), ints("output_padding", 1, 0))}},
		{name: "convtranspose_groups_dilated", inputs: map[string][]int{"x": {1, 4, 5, 6}}, consts: map[string]*graph.Tensor{"w": w(4, 2, 2, 3)},
			nodes: []*graph.Node{node("ConvTranspose", []string{"x", "w"}, []string{"y"}, iattr("group", 2), ints("dilations", 2, 1), ints("strides", 1, 3))}},
		{name: "convtranspose1d", inputs: map[string][]int{"x": {1, 3, 7}}, consts: map[string]*graph.Tensor{"w": w(3, 2, 4)},
			nodes: []*graph.Node{node("ConvTranspose", []string{"x", "w"}, []string{"y"}, ints("strides", 2))}},
		{name: "resize", opset: 13, inputs: map[string][]int{"x": {1, 3, 5, 7}}, consts: map[string]*graph.Tensor{"sc": graph.MustFromSlice([]int{4}, []float32{1, 1, 2, 1.5}), "sz": i64(1, 3, 9, 4)},
			nodes: []*graph.Node{
				node("Resize", []string{"x", "", "sc"}, []string{"a"}),
				node("Resize", []string{"x", "", "sc"}, []string{"b"}, sattr("mode", "linear")),
				node("Resize", []string{"x", "", "", "sz"}, []string{"c"}, sattr("mode", "linear"), sattr("coordinate_transformation_mode", "align_corners")),
				node("Resize", []string{"x", "", "", "sz"}, []string{"d"}, sattr("coordinate_transformation_mode", "asymmetric"), sattr("nearest_mode", "floor")),
				node("Resize", []string{"x", "", "sc"}, []string{"e"}, sattr("mode", "linear"), sattr("coordinate_transformation_mode", "pytorch_half_pixel"))},
			outputs: []string{"a", "b", "c", "d", "e"}},
		{name: "depthwise_bn_clip", inputs: x4, consts: map[string]*graph.Tensor{"w": w(6, 1, 3, 3), "s": w(6), "bb": w(6), "mu": w(6), "var": graph.MustFromSlice([]int{6}, []float32{1, 2, 3, 0.5, 0.25, 4}), "lo": graph.Scalar(float32(0)), "hi": graph.Scalar(float32(6))},
			nodes: []*graph.Node{
				node("Conv", []string{"x", "w"}, []string{"c"}, iattr("group", 6), ints("pads", 1, 1, 1, 1)),
				node("BatchNormalization", []string{"c", "s", "bb", "mu", "var"}, []string{"n"}),
				node("Clip", []string{"n", "lo", "hi"}, []string{"y"})}},
		{name: "pools", inputs: x4, nodes: []*graph.Node{
			node("MaxPool", []string{"x"}, []string{"a"}, ints("kernel_shape", 3, 3), ints("strides", 2, 2), ints("pads", 1, 1, 1, 1)),
			node("AveragePool", []string{"x"}, []string{"b"}, ints("kernel_shape", 2, 3), ints("strides", 1, 2)),
			node("AveragePool", []string{"x"}, []string{"c"}, ints("kernel_shape", 3, 3), ints("pads", 1, 1, 1, 1), iattr("count_include_pad", 1)),
			node("MaxPool", []string{"x"}, []string{"d"}, ints("kernel_shape", 2, 2), ints("strides", 2, 2), iattr("ceil_mode", 1)),
			node("GlobalAveragePool", []string{"x"}, []string{"e"}),
			node("GlobalMaxPool", []string{"x"}, []string{"f"})}, outputs: []string{"a", "b", "c", "d", "e", "f"}},
		{name: "activations", inputs: x4, nodes: []*graph.Node{
			node("Relu", []string{"x"}, []string{"a"}),
			node("HardSigmoid", []string{"x"}, []string{"b"}, fattr("alpha", 0.3)),
			node("HardSwish", []string{"x"}, []string{"c"}),
			node("Sigmoid", []string{"x"}, []string{"d"}),
			node("LeakyRelu", []string{"x"}, []string{"e"}, fattr("alpha", 0.1)),
			node("Elu", []string{"x"}, []string{"f"}),
			node("Tanh", []string{"x"}, []string{"g"}),
			node("Gelu", []string{"x"}, []string{"h"}),
			node("Erf", []string{"x"}, []string{"i"}),
			node("Exp", []string{"x"}, []string{"j"}),
			node("Abs", []string{"x"}, []string{"k"}),
			node("Sqrt", []string{"k"}, []string{"l"}),
			node("Neg", []string{"l"}, []string{"m"}),
			node("Softplus", []string{"x"}, []string{"n"}),
			node("Clip", []string{"x"}, []string{"o"})}, outputs: []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "m", "n", "o"}, opset: 20},
		{name: "matmul_batched_broadcast", inputs: map[string][]int{"a": {3, 2, 17, 33}, "b": {2, 33, 20}},
			nodes: []*graph.Node{node("MatMul", []string{"a", "b"}, []string{"y"})}},
		{name: "matmul_const_vec", inputs: map[string][]int{"a": {5, 40}}, consts: map[string]*graph.Tensor{"b": w(40)},
			nodes: []*graph.Node{node("MatMul", []string{"a", "b"}, []string{"y"})}},
		{name: "gemm_trans_bias", inputs: map[string][]int{"a": {19, 7}}, consts: map[string]*graph.Tensor{"b": w(23, 19), "c": w(23)},
			nodes: []*graph.Node{node("Gemm", []string{"a", "b", "c"}, []string{"y"}, iattr("transA", 1), iattr("transB", 1), fattr("alpha", 0.5), fattr("beta", 2))}},
		{name: "softmax_layernorm", inputs: map[string][]int{"x": {3, 5, 24}}, consts: map[string]*graph.Tensor{"g": w(24), "bt": w(24)},
			nodes: []*graph.Node{
				node("Softmax", []string{"x"}, []string{"a"}, iattr("axis", 1)),
				node("LogSoftmax", []string{"x"}, []string{"b"}),
				node("LayerNormalization", []string{"x", "g", "bt"}, []string{"c"})}, outputs: []string{"a", "b", "c"}},
		{name: "softmax_opset11", opset: 11, inputs: map[string][]int{"x": {3, 5, 4}},
			nodes: []*graph.Node{node("Softmax", []string{"x"}, []string{"y"}, iattr("axis", 1))}},
		{name: "reduce", opset: 13, inputs: x4, consts: map[string]*graph.Tensor{"ax": i64(2, 3)}, nodes: []*graph.Node{
			node("ReduceMean", []string{"x"}, []string{"a"}, ints("axes", -1)),
			node("ReduceSum", []string{"x", "ax"}, []string{"b"}, iattr("keepdims", 0)),
			node("ReduceMax", []string{"x"}, []string{"c"}, ints("axes", 1, 2)),
			node("ReduceMean", []string{"x"}, []string{"d"})}, outputs: []string{"a", "b", "c", "d"}},
		{name: "shapes_and_copies", inputs: map[string][]int{"x": {2, 6, 4, 5}, "z": {2, 3, 4, 5}},
			consts: map[string]*graph.Tensor{"shape": i64(2, 6, 20), "st": i64(1, 0), "en": i64(5, 100), "ax": i64(1, 3), "sp": i64(2, 4), "pads": i64(0, 1, 0, 2, 0, 0, 1, 1), "one": i64(1)},
			nodes: []*graph.Node{
				node("Transpose", []string{"x"}, []string{"t"}, ints("perm", 0, 2, 3, 1)),
				node("Reshape", []string{"x", "shape"}, []string{"r"}),
				node("Flatten", []string{"x"}, []string{"f"}, iattr("axis", 2)),
				node("Concat", []string{"x", "z"}, []string{"c"}, iattr("axis", 1)),
				node("Slice", []string{"x", "st", "en", "ax"}, []string{"s"}),
				node("Split", []string{"x", "sp"}, []string{"s1", "s2"}, iattr("axis", 1)),
				node("Pad", []string{"z", "pads"}, []string{"p"}),
				node("Unsqueeze", []string{"z", "one"}, []string{"u"}),
				node("Relu", []string{"u"}, []string{"ur"})},
			outputs: []string{"t", "r", "f", "c", "s", "s1", "s2", "p", "ur"}},
	}
}
