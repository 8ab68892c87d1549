package tflite_test

import (
	"context"
	"math"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/tflite"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/runtime"
)

// loadDequantized converts a .tflite file with ConvertOptions.Dequantize
// and checks the result holds no int8 op and no quantized value.
func loadDequantized(t testing.TB, b []byte) (*graph.Model, *runtime.Model) {
	t.Helper()
	ir, err := tflite.Load(b, tflite.ConvertOptions{Dequantize: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ir.Graph.Nodes {
		if n.Domain == tflite.QuantDomain {
			t.Fatalf("node %s is %s:%s after Dequantize", n.Name, n.Domain, n.OpType)
		}
	}
	for _, v := range append(append([]graph.ValueInfo{}, ir.Graph.Inputs...), ir.Graph.Outputs...) {
		if v.Type.DType != graph.Float32 {
			t.Fatalf("graph value %s is %v after Dequantize", v.Name, v.Type.DType)
		}
	}
	for name, k := range ir.Graph.Initializers {
		if k.DType == graph.Int8 || k.DType == graph.Uint8 {
			t.Fatalf("initializer %s is %v after Dequantize", name, k.DType)
		}
	}
	m, err := runtime.Prepare(context.Background(), ir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ir, m
}

// TestDequantizeSyntheticPerChannel: QUANTIZE → CONV_2D (int8, per-channel
// filter, int32 bias without parameters of its own, fused RELU) →
// DEQUANTIZE, imported with Dequantize, against the float network
// computed by hand from the stored integers: w = s_o·q_w (zero point 0),
// b = s_x·s_o·q_b, y = relu(b + Σ w·x), the QUANTIZE and DEQUANTIZE
// identities. The int8 import of the same file agrees within half an
// output step (its inputs lie on the int8 grid, so only the output is
// rounded): the bias scale is the one the int8 kernel uses.
func TestDequantizeSyntheticPerChannel(t *testing.T) {
	const H, W, C, O, K = 3, 3, 2, 3, 2
	const sx, zx = 0.5, -3 // input quantization
	const sy, zy = 0.05, 2 // conv output quantization
	ws := []float32{0.1, 0.02, 0.25}
	wq := make([]int8, O*K*K*C)
	for i := range wq {
		wq[i] = int8((i*37)%23 - 11)
	}
	bq := []int32{10, -70, 3}
	x := make([]float32, H*W*C)
	for i := range x {
		x[i] = sx * float32((i*7)%9-4) // on the int8 grid: q = 2·x − 3
	}
	model := buildTFLite([]synTensor{
		{shape: []int32{1, H, W, C}},
		{shape: []int32{1, H, W, C}, typ: 9, quant: &synQuant{scale: []float32{sx}, zp: []int64{zx}}},
		{shape: []int32{O, K, K, C}, i8: wq, quant: &synQuant{scale: ws, zp: []int64{0, 0, 0}, dim: 0}},
		{shape: []int32{O}, ints: bq},
		{shape: []int32{1, H - K + 1, W - K + 1, O}, typ: 9, quant: &synQuant{scale: []float32{sy}, zp: []int64{zy}}},
		{shape: []int32{1, H - K + 1, W - K + 1, O}},
	}, []synOp{
		{code: 114, in: []int32{0}, out: []int32{1}},
		{code: 3, in: []int32{1, 2, 3}, out: []int32{4}, ints: map[int]int32{1: 1, 2: 1}, bytes: map[int]uint8{0: 1, 3: 1}},
		{code: 6, in: []int32{4}, out: []int32{5}},
	}, []int32{0}, []int32{5})
	ir, m := loadDequantized(t, model)
	if got := ir.Metadata["tflite.dequantized_tensors"]; got != "4" {
		t.Errorf("%s tensors dequantised, want 4 (b, c, d, e)", got)
	}
	in := map[string]*graph.Tensor{m.Inputs()[0].Name: graph.MustFromSlice([]int{1, H, W, C}, x)}
	y := run1(t, m, in)[m.Outputs()[0].Name].Data.([]float32)
	qm, err := runtime.LoadBytes(context.Background(), model, nil)
	if err != nil {
		t.Fatal(err)
	}
	yq := run1(t, qm, in)[qm.Outputs()[0].Name].Data.([]float32)
	const OH, OW = H - K + 1, W - K + 1
	worstQ := 0.0
	for oy := 0; oy < OH; oy++ {
		for ox := 0; ox < OW; ox++ {
			for o := 0; o < O; o++ {
				acc := sx * float64(ws[o]) * float64(bq[o])
				for ky := 0; ky < K; ky++ {
					for kx := 0; kx < K; kx++ {
						for c := 0; c < C; c++ {
							acc += float64(ws[o]) * float64(wq[((o*K+ky)*K+kx)*C+c]) * float64(x[((oy+ky)*W+ox+kx)*C+c])
						}
					}
				}
				want := math.Max(acc, 0)
				k := (oy*OW+ox)*O + o
				if math.Abs(float64(y[k])-want) > 1e-5*(1+math.Abs(want)) {
					t.Errorf("(%d,%d,%d): %g, want %g", oy, ox, o, y[k], want)
				}
				worstQ = max(worstQ, math.Abs(float64(y[k]-yq[k])))
			}
		}
	}
	t.Logf("output %v; int8 import %v; max |float − int8| %.4f", y, yq, worstQ)
	if worstQ > sy/2+1e-6 {
		t.Errorf("float and int8 imports differ by %.4f, over half an output step %.3f", worstQ, sy/2)
	}
}

// TestDequantizeFloatModelUnchanged: Dequantize on a float model converts
// it as without the option.
func TestDequantizeFloatModelUnchanged(t *testing.T) {
	b, err := os.ReadFile(shared.Path(t, "testdata/tflite/mediapipe/face_detection_short_range.tflite"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := tflite.Load(b, tflite.ConvertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := tflite.Load(b, tflite.ConvertOptions{Dequantize: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Graph.Nodes) != len(d.Graph.Nodes) || len(a.Graph.Initializers) != len(d.Graph.Initializers) {
		t.Fatalf("float model: %d nodes, %d initializers; with Dequantize %d, %d", len(a.Graph.Nodes), len(a.Graph.Initializers), len(d.Graph.Nodes), len(d.Graph.Initializers))
	}
	for i, n := range a.Graph.Nodes {
		if dn := d.Graph.Nodes[i]; dn.OpType != n.OpType || strings.Join(dn.Inputs, ",") != strings.Join(n.Inputs, ",") {
			t.Fatalf("node %d: %s%v, with Dequantize %s%v", i, n.OpType, n.Inputs, dn.OpType, dn.Inputs)
		}
	}
	if got := d.Metadata["tflite.dequantized_tensors"]; got != "0" {
		t.Errorf("%s tensors dequantised in a float model", got)
	}
}

// topK returns the indices of the k largest values, largest first.
func topK(y []float64, k int) []int {
	idx := make([]int, len(y))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return y[idx[a]] > y[idx[b]] })
	return idx[:k]
}

// TestMobileNetV2Dequantized: the int8 MobileNetV2 imported as float32
// on its dequantised weights, fed the dequantised dog image
// (0.018631116·(q + 14)), picks the int8 import's dog class, 258; its
// logits are held to the int8 import's dequantised ones (scale
// 0.11373532, zero point −24) within 2.5 (measured 1.42, 12.5 output
// steps, mean 0.38: each of the network's 64 int8 operators rounds its
// output to the int8 grid in the int8 run only) and its top-5 shares at least 3
// classes with the int8 one (measured: 3, the first three in order).
func TestMobileNetV2Dequantized(t *testing.T) {
	b, err := os.ReadFile(shared.Path(t, "testdata/tflite/mobilenet_v2_quantized_1x3x224x224.tflite"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(shared.Path(t, "testdata/tflite/dog_1x3x224x224.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != 3*224*224 {
		t.Fatalf("dog input has %d bytes", len(raw))
	}
	const xs, xz = 0.018631116, -14
	const ys, yz = 0.11373532, -24
	xq := make([]int8, len(raw))
	xf := make([]float32, len(raw))
	for i, v := range raw {
		xq[i] = int8(v)
		xf[i] = float32(xs * float64(int(int8(v))-xz))
	}
	ir, fm := loadDequantized(t, b)
	if got := ir.Metadata["dequantized:input.5"]; got != "int8 scale=0.018631116 zero_point=-14" {
		t.Errorf("input metadata %q", got)
	}
	yf := run1(t, fm, map[string]*graph.Tensor{fm.Inputs()[0].Name: graph.MustFromSlice([]int{1, 3, 224, 224}, xf)})[fm.Outputs()[0].Name].Data.([]float32)
	qm, err := runtime.LoadBytes(context.Background(), b, nil)
	if err != nil {
		t.Fatal(err)
	}
	yq := run1(t, qm, map[string]*graph.Tensor{qm.Inputs()[0].Name: graph.MustFromSlice([]int{1, 3, 224, 224}, xq)})[qm.Outputs()[0].Name].Data.([]int8)
	lf, lq := make([]float64, len(yf)), make([]float64, len(yq))
	worst, worstAt, sum := 0.0, 0, 0.0
	for i := range yf {
		lf[i], lq[i] = float64(yf[i]), ys*float64(int(yq[i])-yz)
		sum += math.Abs(lf[i] - lq[i])
		if d := math.Abs(lf[i] - lq[i]); d > worst {
			worst, worstAt = d, i
		}
	}
	tf, tq := topK(lf, 5), topK(lq, 5)
	common := 0
	for k := 0; k < 5; k++ {
		t.Logf("top %d: float class %d (logit %.3f) | int8 class %d (logit %.3f)", k+1, tf[k], lf[tf[k]], tq[k], lq[tq[k]])
		for _, c := range tq {
			if c == tf[k] {
				common++
			}
		}
	}
	t.Logf("max |float logit − int8 logit| %.4f at class %d (%.1f int8 output steps), mean %.4f; %d of the top-5 in common", worst, worstAt, worst/ys, sum/float64(len(lf)), common)
	if tf[0] != 258 || tq[0] != 258 {
		t.Errorf("top-1 float %d, int8 %d; want the dog class 258 from both", tf[0], tq[0])
	}
	if worst > 2.5 || common < 3 {
		t.Errorf("float logits %.4f from the int8 ones (> 2.5?), %d common top-5 classes (< 3?)", worst, common)
	}
}

// TestHelloWorldDequantized: the int8 sine regressor imported as float32
// computes the float network on its dequantised weights (helloFloat, in
// float64) to float32 rounding, and is off sin x over [0, 2π] by the
// network's own error (measured 0.104 near 3π/2, where the int8 import
// is 0.116 off).
func TestHelloWorldDequantized(t *testing.T) {
	b, err := os.ReadFile(shared.Path(t, "testdata/tflite/hello_world_int8.tflite"))
	if err != nil {
		t.Fatal(err)
	}
	_, m := loadDequantized(t, b)
	worst, worstX, worstRef := 0.0, 0.0, 0.0
	for i := 0; i <= 100; i++ {
		x := 2 * math.Pi * float64(i) / 100
		out := run1(t, m, map[string]*graph.Tensor{m.Inputs()[0].Name: graph.MustFromSlice([]int{1, 1}, []float32{float32(x)})})
		y := float64(out[m.Outputs()[0].Name].Data.([]float32)[0])
		if e := math.Abs(y - math.Sin(x)); e > worst {
			worst, worstX = e, x
		}
		worstRef = max(worstRef, math.Abs(y-helloFloat(t, float64(float32(x)))))
	}
	t.Logf("101 points of [0, 2π]: max |y − sin x| %.4f at x=%.3f, max |y − float64 network| %.2g", worst, worstX, worstRef)
	if worst > 0.11 || worstRef > 1e-5 {
		t.Errorf("max error vs sin %.4f (> 0.11?), vs the float64 network %.2g (> 1e-5?)", worst, worstRef)
	}
}

// TestDequantizedAgreesWithInt8: the keyword spotter and the LSTM noise
// suppressor, imported with Dequantize and fed the dequantised int8
// input, give the int8 import's dequantised outputs within a few output
// steps (measured: micro_speech 1.39 steps of 1/256, DTLN's mask 2.40 steps
// of 1/256): the float path computes the network the int8 one rounds.
func TestDequantizedAgreesWithInt8(t *testing.T) {
	for _, tc := range []struct {
		file  string
		shape []int
		steps float64
	}{
		{"micro_speech_quantized.tflite", []int{1, 1960}, 4},
		{"dtln_noise_suppression.tflite", []int{1, 1, 257}, 8},
	} {
		b, err := os.ReadFile(shared.Path(t, "testdata/tflite/"+tc.file))
		if err != nil {
			t.Fatal(err)
		}
		tm, err := tflite.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		sg := tm.Subgraphs[0]
		xq, yq := sg.Tensors[sg.Inputs[0]].Quant, sg.Tensors[sg.Outputs[0]].Quant
		n := 1
		for _, d := range tc.shape {
			n *= d
		}
		q := make([]int8, n)
		f := make([]float32, n)
		for i := range q {
			q[i] = int8((i*37)%256 - 128)
			f[i] = float32(float64(xq.Scale[0]) * float64(int64(q[i])-xq.ZeroPoint[0]))
		}
		_, fm := loadDequantized(t, b)
		qm, err := runtime.LoadBytes(context.Background(), b, nil)
		if err != nil {
			t.Fatal(err)
		}
		yf := run1(t, fm, map[string]*graph.Tensor{fm.Inputs()[0].Name: graph.MustFromSlice(tc.shape, f)})[fm.Outputs()[0].Name].Data.([]float32)
		yi := run1(t, qm, map[string]*graph.Tensor{qm.Inputs()[0].Name: graph.MustFromSlice(tc.shape, q)})[qm.Outputs()[0].Name].Data.([]int8)
		worst := 0.0
		for i := range yf {
			want := float64(yq.Scale[0]) * float64(int64(yi[i])-yq.ZeroPoint[0])
			worst = max(worst, math.Abs(float64(yf[i])-want))
		}
		steps := worst / float64(yq.Scale[0])
		t.Logf("%s: max |float − int8| %.5f (%.2f output steps of %g)", tc.file, worst, steps, yq.Scale[0])
		if steps > tc.steps {
			t.Errorf("%s: float and int8 imports %.2f output steps apart (> %g?)", tc.file, steps, tc.steps)
		}
	}
}
