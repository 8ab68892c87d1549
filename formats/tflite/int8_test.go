package tflite_test

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"sort"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/tflite"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/runtime"
)

// TestMobileNetV2Int8Dog: the fully int8 MobileNetV2 on its shipped dog
// image picks a dog class (ImageNet 151–268).
func TestMobileNetV2Int8Dog(t *testing.T) {
	m := loadShared(t, "testdata/tflite/mobilenet_v2_quantized_1x3x224x224.tflite")
	raw, err := os.ReadFile(shared.Path(t, "testdata/tflite/dog_1x3x224x224.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != 3*224*224 {
		t.Fatalf("dog input has %d bytes", len(raw))
	}
	x := make([]int8, len(raw))
	for i, b := range raw {
		x[i] = int8(b)
	}
	in := graph.MustFromSlice([]int{1, 3, 224, 224}, x)
	out := run1(t, m, map[string]*graph.Tensor{m.Inputs()[0].Name: in})
	y := out[m.Outputs()[0].Name].Data.([]int8)
	idx := make([]int, len(y))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return y[idx[a]] > y[idx[b]] })
	const scale, zp = 0.11373532, -24 // the output's quantization
	for k := 0; k < 5; k++ {
		t.Logf("top %d: class %d, int8 %d (logit %.3f)", k+1, idx[k], y[idx[k]], scale*float64(int(y[idx[k]])-zp))
	}
	if idx[0] < 151 || idx[0] > 268 {
		t.Errorf("top-1 class %d is not a dog class (151–268)", idx[0])
	}
}

// helloFloat runs the sine model in float64 with its weights dequantised:
// the accuracy the network itself has, before int8 activations.
func helloFloat(t *testing.T, x float64) float64 {
	b, err := os.ReadFile(shared.Path(t, "testdata/tflite/hello_world_int8.tflite"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := tflite.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	sg := m.Subgraphs[0]
	deq := func(i int32) []float64 {
		tt := sg.Tensors[i]
		raw := m.Buffers[tt.Buffer]
		var out []float64
		if tt.Type == 9 { // int8
			for _, v := range raw {
				out = append(out, float64(tt.Quant.Scale[0])*(float64(int8(v))-float64(tt.Quant.ZeroPoint[0])))
			}
			return out
		}
		for k := 0; k+4 <= len(raw); k += 4 { // int32 bias
			v := int32(binary.LittleEndian.Uint32(raw[k:]))
			out = append(out, float64(tt.Quant.Scale[0])*float64(v))
		}
		return out
	}
	h := []float64{x}
	for oi, op := range sg.Operators {
		w, bb := deq(op.Inputs[1]), deq(op.Inputs[2])
		nh := make([]float64, len(bb))
		for u := range nh {
			s := bb[u]
			for k := range h {
				s += w[u*len(h)+k] * h[k]
			}
			if oi < len(sg.Operators)-1 {
				s = math.Max(s, 0) // the hidden layers' fused RELU
			}
			nh[u] = s
		}
		h = nh
	}
	return h[0]
}

// TestHelloWorldSine: the int8 sine regressor over [0, 2π]. The network
// itself (float64 with dequantised weights) is off sin x by up to 0.104
// near 3π/2, so the test holds the int8 run to that reference within 0.05
// (int8 activations: measured 0.034, about 4 output steps), to sin x
// within 0.12 everywhere (measured 0.116), and to TFLite Micro's
// own golden points (0, 1, 3, 5 within 0.05). TFLite 2.9 itself gives
// the same outputs bit for bit (TestInt8MatchesTFLite: all 256 inputs),
// 0.116 off sin x at 2π included: the bound of 0.1 is the network's.
func TestHelloWorldSine(t *testing.T) {
	m := loadShared(t, "testdata/tflite/hello_world_int8.tflite")
	const xs, xz = 0.024480116, -128
	const ys, yz = 0.008290957, 5
	run := func(x float64) float64 {
		q := int8(max(min(math.Round(x/xs)+xz, 127), -128))
		out := run1(t, m, map[string]*graph.Tensor{m.Inputs()[0].Name: graph.MustFromSlice([]int{1, 1}, []int8{q})})
		return ys * float64(int(out[m.Outputs()[0].Name].Data.([]int8)[0])-yz)
	}
	worst, worstRef, over := 0.0, 0.0, 0
	for i := 0; i <= 100; i++ {
		x := 2 * math.Pi * float64(i) / 100
		y := run(x)
		e := math.Abs(y - math.Sin(x))
		worst = max(worst, e)
		if e > 0.1 {
			over++
		}
		worstRef = max(worstRef, math.Abs(y-helloFloat(t, x)))
	}
	t.Logf("101 points of [0, 2π]: max |y − sin x| %.4f (%d points over 0.1), max |y − float network| %.4f", worst, over, worstRef)
	if worst > 0.12 || worstRef > 0.05 {
		t.Errorf("max error vs sin %.4f (> 0.12?), vs the float network %.4f (> 0.05?)", worst, worstRef)
	}
	for _, x := range []float64{0, 1, 3, 5} {
		if y := run(x); math.Abs(y-math.Sin(x)) > 0.05 {
			t.Errorf("x=%g: y=%.4f, sin x=%.4f", x, y, math.Sin(x))
		}
	}
}

// TestMicroSpeechRuns: the keyword spotter runs on silence and on a ramp;
// its int8 softmax sums to one within a few output steps.
func TestMicroSpeechRuns(t *testing.T) {
	m := loadShared(t, "testdata/tflite/micro_speech_quantized.tflite")
	for _, tc := range []struct {
		name string
		f    func(i int) int8
	}{
		{"silence", func(int) int8 { return -128 }},
		{"ramp", func(i int) int8 { return int8(i%256 - 128) }},
	} {
		x := make([]int8, 1960)
		for i := range x {
			x[i] = tc.f(i)
		}
		out := run1(t, m, map[string]*graph.Tensor{m.Inputs()[0].Name: graph.MustFromSlice([]int{1, 1960}, x)})
		y := out[m.Outputs()[0].Name].Data.([]int8)
		sum := 0
		for _, v := range y {
			sum += int(v) + 128
		}
		t.Logf("%s: scores (silence, unknown, yes, no) %v, Σ %d/256", tc.name, y, sum)
		if sum < 250 || sum > 262 {
			t.Errorf("%s: softmax sums to %d/256", tc.name, sum)
		}
	}
}

// BenchmarkMobileNetV2Int8 times one inference of the int8 MobileNetV2 on
// the reference kernels (about 0.30 G multiply-adds: 0.6 GOP per run).
func BenchmarkMobileNetV2Int8(b *testing.B) {
	m, err := runtime.Load(context.Background(), shared.Path(b, "testdata/tflite/mobilenet_v2_quantized_1x3x224x224.tflite"), nil)
	if err != nil {
		b.Fatal(err)
	}
	in := map[string]*graph.Tensor{m.Inputs()[0].Name: graph.MustFromSlice([]int{1, 3, 224, 224}, make([]int8, 3*224*224))}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := m.Run(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMobileNetV2Dequantized is BenchmarkMobileNetV2Int8 on the
// model imported with ConvertOptions.Dequantize (float32, the same 0.6
// GOP), on the reference kernels.
func BenchmarkMobileNetV2Dequantized(b *testing.B) {
	data, err := os.ReadFile(shared.Path(b, "testdata/tflite/mobilenet_v2_quantized_1x3x224x224.tflite"))
	if err != nil {
		b.Fatal(err)
	}
	_, m := loadDequantized(b, data)
	in := map[string]*graph.Tensor{m.Inputs()[0].Name: graph.MustFromSlice([]int{1, 3, 224, 224}, make([]float32, 3*224*224))}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := m.Run(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDTLNRuns: the int8 LSTM noise suppressor (TFLite's integer LSTMs)
// runs on a loud and a quiet magnitude frame; its
// mask (sigmoid, scale 1/256) is in [0, 1], varies across the 257 bins,
// and is the same on a second run (the LSTM state starts at zero each run).
func TestDTLNRuns(t *testing.T) {
	m := loadShared(t, "testdata/tflite/dtln_noise_suppression.tflite")
	for _, tc := range []struct {
		name string
		v    func(i int) int8
	}{{"quiet", func(int) int8 { return -120 }}, {"loud low bins", func(i int) int8 { return int8(max(127-i, -128)) }}} {
		x := make([]int8, 257)
		for i := range x {
			x[i] = tc.v(i)
		}
		in := map[string]*graph.Tensor{m.Inputs()[0].Name: graph.MustFromSlice([]int{1, 1, 257}, x)}
		y := run1(t, m, in)[m.Outputs()[0].Name].Data.([]int8)
		y2 := run1(t, m, in)[m.Outputs()[0].Name].Data.([]int8)
		lo, hi, sum := 127, -128, 0.0
		for i, v := range y {
			lo, hi = min(lo, int(v)), max(hi, int(v))
			sum += (float64(v) + 128) / 256
			if v != y2[i] {
				t.Fatalf("%s: second run differs at %d", tc.name, i)
			}
		}
		t.Logf("%s: mask mean %.3f, int8 range [%d, %d], first %v", tc.name, sum/257, lo, hi, y[:6])
		if lo == hi {
			t.Errorf("%s: constant mask", tc.name)
		}
	}
}

// TestDTLNFirstLSTMAgainstSpec computes the first LSTM step of the noise
// suppressor from the TFLite LSTM equations in float64 (zero state: i =
// σ(Wi·x+bi), g = tanh(Wc·x+bc), o = σ(Wo·x+bo), c = i·g, h = o·tanh c)
// and holds the converted model's int8 hidden output to it within one
// quantisation step: the gate order and weight mapping are right.
func TestDTLNFirstLSTMAgainstSpec(t *testing.T) {
	path := shared.Path(t, "testdata/tflite/dtln_noise_suppression.tflite")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tm, err := tflite.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	sg := tm.Subgraphs[0]
	op := sg.Operators[0]
	hT := sg.Tensors[op.Outputs[0]]
	ir, err := tflite.Load(b, tflite.ConvertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ir.Graph.Outputs = append(ir.Graph.Outputs, graph.ValueInfo{Name: hT.Name})
	m, err := runtime.Prepare(context.Background(), ir, nil)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]int8, 257)
	for i := range x {
		x[i] = int8((i*37)%256 - 128)
	}
	got := run1(t, m, map[string]*graph.Tensor{m.Inputs()[0].Name: graph.MustFromSlice([]int{1, 1, 257}, x)})[hT.Name].Data.([]int8)
	deq := func(ti int32) []float64 {
		tt := sg.Tensors[ti]
		raw := tm.Buffers[tt.Buffer]
		var out []float64
		if tt.Type == 9 {
			for _, v := range raw {
				out = append(out, float64(tt.Quant.Scale[0])*(float64(int8(v))-float64(tt.Quant.ZeroPoint[0])))
			}
			return out
		}
		for k := 0; k+4 <= len(raw); k += 4 {
			out = append(out, float64(tt.Quant.Scale[0])*float64(int32(binary.LittleEndian.Uint32(raw[k:]))))
		}
		return out
	}
	xq := sg.Tensors[op.Inputs[0]].Quant
	xf := make([]float64, 257)
	for i, v := range x {
		xf[i] = float64(xq.Scale[0]) * (float64(v) - float64(xq.ZeroPoint[0]))
	}
	gate := func(w, bias int32, j int) float64 {
		W, B := deq(w), deq(bias)
		s := B[j]
		for k := range xf {
			s += W[j*257+k] * xf[k]
		}
		return s
	}
	sig := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	worst := 0.0
	for j := 0; j < 128; j++ {
		i, g, o := sig(gate(op.Inputs[1], op.Inputs[12], j)), math.Tanh(gate(op.Inputs[3], op.Inputs[14], j)), sig(gate(op.Inputs[4], op.Inputs[15], j))
		h := o * math.Tanh(i*g)
		want := h/float64(hT.Quant.Scale[0]) + float64(hT.Quant.ZeroPoint[0])
		worst = max(worst, math.Abs(float64(got[j])-want))
	}
	t.Logf("first LSTM step: max |int8 h − spec| %.3f steps", worst)
	if worst > 1 {
		t.Errorf("converted LSTM is %.3f steps off the spec", worst)
	}
}
