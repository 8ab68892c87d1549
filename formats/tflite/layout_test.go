package tflite_test

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/runtime"

	"github.com/switchyard-hal/switchyard/formats/tflite"
)

// TestElementwiseStaysNCHW: after a CONV_2D (which runs in NCHW), PRELU with
// TFLite's [1,1,C] slope, ADD of a [C] constant, MUL of a full [1,H,W,C]
// constant and MAXIMUM with the convolution's output all run on the NCHW
// values, up to the DEPTHWISE_CONV_2D after them: the converted graph keeps only the Transposes at the input and
// the output, and computes what a direct NHWC loop does.
func TestElementwiseStaysNCHW(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	const H, W, C, O = 3, 4, 2, 5
	w, bias, x := randF(rng, O*C), randF(rng, O), randF(rng, H*W*C)
	slope, add, mul, w2 := randF(rng, O), randF(rng, O), randF(rng, H*W*O), randF(rng, O)
	act := []int32{1, H, W, O}
	model := buildTFLite([]synTensor{
		{shape: []int32{1, H, W, C}}, {shape: []int32{O, 1, 1, C}, data: w}, {shape: []int32{O}, data: bias}, // 0-2
		{shape: act}, {shape: []int32{1, 1, O}, data: slope}, {shape: act}, // 3 conv, 4 slope, 5 prelu
		{shape: []int32{O}, data: add}, {shape: act}, // 6, 7 add
		{shape: act, data: mul}, {shape: act}, // 8, 9 mul
		{shape: act},                                         // 10 maximum
		{shape: []int32{1, 1, 1, O}, data: w2}, {shape: act}, // 11, 12: a depthwise 1x1 after them
	}, []synOp{
		{code: 3, in: []int32{0, 1, 2}, out: []int32{3}, ints: map[int]int32{1: 1, 2: 1}, bytes: map[int]uint8{0: 1}},
		{code: 54, in: []int32{3, 4}, out: []int32{5}},
		{code: 0, in: []int32{5, 6}, out: []int32{7}},
		{code: 18, in: []int32{8, 7}, out: []int32{9}},
		{code: 55, in: []int32{9, 3}, out: []int32{10}},
		{code: 4, in: []int32{10, 11}, out: []int32{12}, ints: map[int]int32{1: 1, 2: 1, 3: 1}, bytes: map[int]uint8{0: 1}},
	}, []int32{0}, []int32{12})
	ir, err := tflite.Load(model, tflite.ConvertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	transposes := 0
	for _, n := range ir.Graph.Nodes {
		if n.OpType == "Transpose" {
			transposes++
		}
	}
	if transposes != 2 {
		for _, n := range ir.Graph.Nodes {
			t.Logf("%s %v -> %v", n.OpType, n.Inputs, n.Outputs)
		}
		t.Errorf("%d Transposes, want 2 (input and output)", transposes)
	}
	y := runSynth(t, model, x, []int{1, H, W, C})
	for p := 0; p < H*W; p++ {
		for o := 0; o < O; o++ {
			c := bias[o]
			for k := 0; k < C; k++ {
				c += w[o*C+k] * x[p*C+k]
			}
			v := c
			if v < 0 {
				v *= slope[o]
			}
			v = (v + add[o]) * mul[p*O+o]
			want := max(v, c) * w2[o]
			if got := y[p*O+o]; !near(got, want) {
				t.Errorf("(%d,%d): %g, want %g", p, o, got, want)
			}
		}
	}
}

// TestDepthwiseOneChannelIsConv: an int8 DEPTHWISE_CONV_2D of a
// one-channel input (micro_speech's first layer, multiplier 8) imports as
// an int8 Conv2D, which the fast kernels take, and computes exactly what
// the depthwise lowering does on the reference kernels.
func TestDepthwiseOneChannelIsConv(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	const H, W, K, M = 7, 6, 3, 4
	w := make([]int8, K*K*M)
	for i := range w {
		w[i] = int8(rng.IntN(255) - 127)
	}
	bias := []int32{100, -300, 7, 0}
	scales := []float32{0.01, 0.02, 0.005, 0.03}
	q := &synQuant{scale: []float32{0.1}, zp: []int64{-3}}
	model := buildTFLite([]synTensor{
		{shape: []int32{1, H, W, 1}, typ: 9, quant: q},
		{shape: []int32{1, K, K, M}, i8: w, quant: &synQuant{scale: scales, zp: make([]int64, M), dim: 3}},
		{shape: []int32{M}, ints: bias},
		{shape: []int32{1, H, W, M}, typ: 9, quant: &synQuant{scale: []float32{0.05}, zp: []int64{2}}},
	}, []synOp{{code: 4, in: []int32{0, 1, 2}, out: []int32{3}, ints: map[int]int32{1: 1, 2: 1, 3: M}, bytes: map[int]uint8{0: 0}}},
		[]int32{0}, []int32{3})
	ir, err := tflite.Load(model, tflite.ConvertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ops := opTypes(ir); ops != "Conv2D" {
		t.Fatalf("imported as %s, want Conv2D", ops)
	}
	x := make([]int8, H*W)
	for i := range x {
		x[i] = int8(rng.IntN(256) - 128)
	}
	got := runInt8(t, ir, x, []int{1, H, W, 1})
	// the same op left depthwise, with its own filter
	dw, err := tflite.Load(model, tflite.ConvertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range dw.Graph.Nodes {
		n.OpType = "DepthwiseConv2D"
		dw.Graph.Initializers[n.Inputs[3]] = graph.MustFromSlice([]int{1, K, K, M}, w)
	}
	want := runInt8(t, dw, x, []int{1, H, W, 1})
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("element %d: %d, depthwise %d", i, got[i], want[i])
		}
	}
}

func opTypes(m *graph.Model) string {
	var ops []string
	for _, n := range m.Graph.Nodes {
		ops = append(ops, n.OpType)
	}
	return strings.Join(ops, ",")
}

// runInt8 runs an int8 model of one input and one output on the reference
// kernels.
func runInt8(t *testing.T, ir *graph.Model, x []int8, shape []int) []int8 {
	t.Helper()
	m, err := runtime.Prepare(context.Background(), ir, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := run1(t, m, map[string]*graph.Tensor{m.Inputs()[0].Name: graph.MustFromSlice(shape, x)})
	return out[m.Outputs()[0].Name].Data.([]int8)
}

// TestTransposePairsVanish: a model converted from ONNX wraps its ops in
// TRANSPOSEs (NHWC -> NCHW before, back after); after a CONV_2D, whose
// result is NCHW already, the pair leaves nothing behind: only the
// Transposes at the input and the output remain, and the values are a
// direct NHWC loop's.
func TestTransposePairsVanish(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	const H, W, C, O = 3, 4, 2, 3
	w, bias, x, w2 := randF(rng, O*C), randF(rng, O), randF(rng, H*W*C), randF(rng, O)
	model := buildTFLite([]synTensor{
		{shape: []int32{1, H, W, C}}, {shape: []int32{O, 1, 1, C}, data: w}, {shape: []int32{O}, data: bias}, // 0-2
		{shape: []int32{1, H, W, O}}, {shape: []int32{4}, ints: []int32{0, 3, 1, 2}}, {shape: []int32{1, O, H, W}}, // 3 conv, 4 perm, 5 nchw
		{shape: []int32{1, O, H, W}}, {shape: []int32{4}, ints: []int32{0, 2, 3, 1}}, {shape: []int32{1, H, W, O}}, // 6 sigmoid, 7 perm, 8 nhwc
		{shape: []int32{1, 1, 1, O}, data: w2}, {shape: []int32{1, H, W, O}}, // 9, 10 depthwise
	}, []synOp{
		{code: 3, in: []int32{0, 1, 2}, out: []int32{3}, ints: map[int]int32{1: 1, 2: 1}, bytes: map[int]uint8{0: 1}},
		{code: 39, in: []int32{3, 4}, out: []int32{5}},
		{code: 14, in: []int32{5}, out: []int32{6}},
		{code: 39, in: []int32{6, 7}, out: []int32{8}},
		{code: 4, in: []int32{8, 9}, out: []int32{10}, ints: map[int]int32{1: 1, 2: 1, 3: 1}, bytes: map[int]uint8{0: 1}},
	}, []int32{0}, []int32{10})
	ir, err := tflite.Load(model, tflite.ConvertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ops := opTypes(ir); ops != "Transpose,Conv,Sigmoid,Conv,Transpose" {
		t.Errorf("ops %s, want Transpose,Conv,Sigmoid,Conv,Transpose", ops)
	}
	y := runSynth(t, model, x, []int{1, H, W, C})
	for p := 0; p < H*W; p++ {
		for o := 0; o < O; o++ {
			c := bias[o]
			for k := 0; k < C; k++ {
				c += w[o*C+k] * x[p*C+k]
			}
			want := float32(1/(1+math.Exp(-float64(c)))) * w2[o]
			if got := y[p*O+o]; !near(got, want) {
				t.Errorf("(%d,%d): %g, want %g", p, o, got, want)
			}
		}
	}
}
