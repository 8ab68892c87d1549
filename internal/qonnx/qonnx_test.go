package qonnx_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/onnx"
	"github.com/switchyard-hal/switchyard/formats/tflite"
	"github.com/switchyard-hal/switchyard/internal/qonnx"
	"github.com/switchyard-hal/switchyard/internal/shared"
	_ "github.com/switchyard-hal/switchyard/plugins/cpu" // the reference backend runs both models
	"github.com/switchyard-hal/switchyard/runtime"
)

// roundTrip exports m, serialises and re-reads the ONNX model and
// prepares both for running.
func roundTrip(t *testing.T, m *graph.Model) (src, dst *runtime.Model, encoded []byte) {
	t.Helper()
	x, err := qonnx.Export(m)
	if err != nil {
		t.Fatal(err)
	}
	encoded = onnx.Encode(x)
	ctx := context.Background()
	if src, err = runtime.Prepare(ctx, m, nil); err != nil {
		t.Fatal(err)
	}
	if dst, err = runtime.LoadBytes(ctx, encoded, nil); err != nil {
		t.Fatal(err)
	}
	return src, dst, encoded
}

func run(t *testing.T, m *runtime.Model, in map[string]*graph.Tensor) []int8 {
	t.Helper()
	out, err := m.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return out[m.Outputs()[0].Name].Data.([]int8)
}

func attr(name string, v ...int64) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrInts, Ints: v}
}

func sattr(name, v string) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrString, S: v}
}

func node(op string, in, out []string, attrs ...*graph.Attribute) *graph.Node {
	n := &graph.Node{Name: out[0], OpType: op, Domain: "switchyard.quant", Inputs: in, Outputs: out, Attrs: map[string]*graph.Attribute{}}
	for _, a := range attrs {
		n.Attrs[a.Name] = a
	}
	return n
}

// smallNet is an NCHW int8 input transposed to NHWC, a 3×3 Conv2D
// (RELU6, per-channel weights, padding, stride 2), a depthwise conv, a
// residual Add, the spatial Mean, a FullyConnected and a Logistic: the
// op set of MobileNetV2 plus one.
func smallNet(rng *rand.Rand) *graph.Model {
	init := map[string]*graph.Tensor{}
	c := func(name string, t *graph.Tensor) string { init[name] = t; return name }
	i8 := func(shape []int, lo, hi int) *graph.Tensor {
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]int8, n)
		for i := range v {
			v[i] = int8(lo + rng.IntN(hi-lo+1))
		}
		return graph.MustFromSlice(shape, v)
	}
	f := func(v ...float32) *graph.Tensor {
		if len(v) == 1 {
			return graph.Scalar(v[0])
		}
		return graph.MustFromSlice([]int{len(v)}, v)
	}
	z := func(v int8) *graph.Tensor { return graph.Scalar(v) }
	zs := func(n int) *graph.Tensor { return graph.MustFromSlice([]int{n}, make([]int8, n)) }
	bias := func(n int) *graph.Tensor {
		v := make([]int32, n)
		for i := range v {
			v[i] = int32(rng.IntN(400) - 200)
		}
		return graph.MustFromSlice([]int{n}, v)
	}
	const C = 4
	nodes := []*graph.Node{
		{Name: "t", OpType: "Transpose", Inputs: []string{"x"}, Outputs: []string{"xh"}, Attrs: map[string]*graph.Attribute{"perm": attr("perm", 0, 2, 3, 1)}},
		node("Conv2D", []string{"xh", c("xs", f(0.02)), c("xz", z(-5)), c("w1", i8([]int{C, 3, 3, 3}, -127, 127)), c("w1s", f(0.004, 0.006, 0.003, 0.005)), c("w1z", zs(C)), c("y1s", f(0.025)), c("y1z", z(-128)), c("b1", bias(C))},
			[]string{"y1"}, attr("strides", 2, 2), attr("pads", 1, 1, 1, 1), sattr("activation", "RELU6")),
		node("DepthwiseConv2D", []string{"y1", "y1s", "y1z", c("w2", i8([]int{1, 3, 3, C}, -127, 127)), c("w2s", f(0.01, 0.02, 0.015, 0.012)), c("w2z", zs(C)), c("y2s", f(0.03)), c("y2z", z(3)), c("b2", bias(C))},
			[]string{"y2"}, attr("pads", 1, 1, 1, 1)),
		node("Add", []string{"y2", "y2s", "y2z", "y1", "y1s", "y1z", c("y3s", f(0.04)), c("y3z", z(-2))}, []string{"y3"}),
		node("Mean", []string{"y3", "y3s", "y3z", c("y4s", f(0.035)), c("y4z", z(1))}, []string{"y4"}, attr("axes", 1, 2)),
		node("FullyConnected", []string{"y4", "y4s", "y4z", c("w5", i8([]int{6, C}, -127, 127)), c("w5s", f(0.01)), c("w5z", z(0)), c("y5s", f(0.02)), c("y5z", z(0)), c("b5", bias(6))}, []string{"y5"}),
		node("Logistic", []string{"y5", "y5s", "y5z", c("y6s", f(1.0/256)), c("y6z", z(-128))}, []string{"y6"}),
	}
	nodes[4].Attrs["keepdims"] = &graph.Attribute{Name: "keepdims", Type: graph.AttrInt, I: 0}
	return &graph.Model{IRVersion: 8, Opsets: []graph.Opset{{Domain: "", Version: 17}, {Domain: "switchyard.quant", Version: 1}},
		Graph: &graph.Graph{Name: "small",
			Inputs:       []graph.ValueInfo{{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Int8, Shape: graph.StaticShape(1, 3, 9, 9)}}},
			Outputs:      []graph.ValueInfo{{Name: "y6", Type: graph.ValueType{Kind: "tensor", DType: graph.Int8, Shape: graph.StaticShape(1, 6)}}},
			Initializers: init, Nodes: nodes}}
}

// TestExportSmallNet: the exported ONNX model of a small int8 network
// uses only ONNX integer ops and no Transpose (the NCHW input's
// Transpose becomes an alias and every 4-D value stays NCHW). Each of its
// ops alone, exported, gives the source op's outputs within one
// quantization step on random inputs (the rounding rules differ: float
// ties-to-even against TFLite's fixed point); a mistake in the layout or
// the weight transposition would be off by many. The whole chain drifts
// by a few steps.
func TestExportSmallNet(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	m := smallNet(rng)
	x, err := qonnx.Export(m)
	if err != nil {
		t.Fatal(err)
	}
	hist := map[string]int{}
	for _, n := range x.Graph.Nodes {
		hist[n.Domain+":"+n.OpType]++
		if n.Domain == "switchyard.quant" {
			t.Errorf("node %s still in switchyard.quant", n.OpType)
		}
	}
	t.Logf("ops: %v", hist)
	if hist[":Transpose"] != 0 || hist[":QLinearConv"] != 3 || hist["com.microsoft:QLinearAdd"] != 1 || hist[":Clip"] != 1 || hist["com.microsoft:QLinearGlobalAveragePool"] != 1 {
		t.Errorf("unexpected op histogram %v", hist)
	}
	types, _ := runtime.InferTypes(m)
	for k, n := range m.Graph.Nodes[1:] {
		// n alone, its computed inputs as graph inputs
		g := &graph.Graph{Name: n.OpType, Initializers: m.Graph.Initializers, Nodes: []*graph.Node{n}}
		feeds := map[string]*graph.Tensor{}
		for _, in := range n.Inputs {
			if _, ok := m.Graph.Initializers[in]; ok || in == "" || feeds[in] != nil {
				continue
			}
			vt := types[in]
			shape := make([]int, len(vt.Shape))
			for i, d := range vt.Shape {
				shape[i] = max(int(d.Value), 1) // the batch of a FullyConnected output is not inferred
			}
			vt.Shape = graph.StaticShape(shape...)
			g.Inputs = append(g.Inputs, graph.ValueInfo{Name: in, Type: vt})
			feeds[in] = randInt8(rng, shape)
		}
		g.Outputs = []graph.ValueInfo{{Name: n.Outputs[0], Type: types[n.Outputs[0]]}}
		one := &graph.Model{IRVersion: 8, Opsets: m.Opsets, Graph: g}
		src, dst, _ := roundTrip(t, one)
		steps, total := 0, 0
		for trial := 0; trial < 10; trial++ {
			a, b := run(t, src, feeds), run(t, dst, feeds)
			for i := range a {
				d := int(a[i]) - int(b[i])
				if d < -1 || d > 1 {
					t.Fatalf("node %d %s output %d: source %d, ONNX %d", k+1, n.OpType, i, a[i], b[i])
				}
				if d != 0 {
					steps++
				}
			}
			total += len(a)
			for in, f := range feeds {
				feeds[in] = randInt8(rng, f.Shape)
			}
		}
		t.Logf("%s alone: %d of %d outputs differ by one step", n.OpType, steps, total)
	}
	src, dst, _ := roundTrip(t, m)
	maxd := 0
	for trial := 0; trial < 20; trial++ {
		in := map[string]*graph.Tensor{"x": randInt8(rng, []int{1, 3, 9, 9})}
		a, b := run(t, src, in), run(t, dst, in)
		for i := range a {
			maxd = max(maxd, int(a[i])-int(b[i]), int(b[i])-int(a[i]))
		}
	}
	t.Logf("whole network: outputs differ by up to %d steps", maxd)
	if maxd > 6 {
		t.Errorf("whole network: outputs differ by up to %d steps", maxd)
	}
}

func randInt8(rng *rand.Rand, shape []int) *graph.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := make([]int8, n)
	for i := range v {
		v[i] = int8(rng.IntN(256) - 128)
	}
	return graph.MustFromSlice(shape, v)
}

// TestExportRefusesUnknownOps: an op with no rewrite is named in the
// error, with its count.
func TestExportRefusesUnknownOps(t *testing.T) {
	m := smallNet(rand.New(rand.NewPCG(1, 1)))
	m.Graph.Nodes[3].OpType = "Sub"
	_, err := qonnx.Export(m)
	if err == nil || !strings.Contains(err.Error(), "switchyard.quant:Sub") || !strings.Contains(err.Error(), "×1") {
		t.Fatalf("got %v", err)
	}
	if _, err := qonnx.Export(&graph.Model{}); err == nil {
		t.Fatal("no error for a model without a graph")
	}
}

// TestExportMobileNetV2: the int8 TFLite MobileNetV2 exported to ONNX
// QLinear ops picks the same top-1 dog class on the shipped image, with
// the int8 logits within a few steps of the TFLite-exact path. With
// SWITCHYARD_QONNX_OUT=DIR it writes DIR/model.onnx and
// DIR/test_data_set_0/{input_0,output_0}.pb (the ONNX path's output) for
// ONNX Runtime's verify.js and bench.js.
func TestExportMobileNetV2(t *testing.T) {
	ir, err := tflite.LoadFile(shared.Path(t, "testdata/tflite/mobilenet_v2_quantized_1x3x224x224.tflite"), tflite.ConvertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(shared.Path(t, "testdata/tflite/dog_1x3x224x224.bin"))
	if err != nil {
		t.Fatal(err)
	}
	v := make([]int8, len(raw))
	for i, b := range raw {
		v[i] = int8(b)
	}
	inName := ir.Graph.Inputs[0].Name
	xt := graph.MustFromSlice([]int{1, 3, 224, 224}, v)
	in := map[string]*graph.Tensor{inName: xt}
	src, dst, enc := roundTrip(t, ir)
	a, b := run(t, src, in), run(t, dst, in)
	top := func(y []int8) []int {
		idx := make([]int, len(y))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(p, q int) bool { return y[idx[p]] > y[idx[q]] })
		return idx[:5]
	}
	ta, tb := top(a), top(b)
	hist := map[int]int{}
	maxd := 0
	for i := range a {
		d := int(a[i]) - int(b[i])
		hist[d]++
		maxd = max(maxd, d, -d)
	}
	t.Logf("top-5 TFLite path %v %v, ONNX path %v %v; output differences (steps: count) %v", ta, pickAll(a, ta), tb, pickAll(b, tb), hist)
	if ta[0] != tb[0] || tb[0] < 151 || tb[0] > 268 {
		t.Errorf("top-1 %d (ONNX path) vs %d (TFLite path); want the same dog class", tb[0], ta[0])
	}
	if maxd > 16 {
		t.Errorf("int8 logits differ by up to %d steps", maxd)
	}
	if dir := os.Getenv("SWITCHYARD_QONNX_OUT"); dir != "" {
		set := filepath.Join(dir, "test_data_set_0")
		if err := os.MkdirAll(set, 0o755); err != nil {
			t.Fatal(err)
		}
		out := graph.MustFromSlice([]int{1, 1000}, b)
		for name, data := range map[string][]byte{
			filepath.Join(dir, "model.onnx"):  enc,
			filepath.Join(set, "input_0.pb"):  onnx.EncodeTensor(inName, xt),
			filepath.Join(set, "output_0.pb"): onnx.EncodeTensor(dst.Outputs()[0].Name, out),
		} {
			if err := os.WriteFile(name, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("wrote %s (%d bytes)", dir, len(enc))
	}
}

func pickAll(y []int8, idx []int) []int8 {
	out := make([]int8, len(idx))
	for i, k := range idx {
		out[i] = y[k]
	}
	return out
}
