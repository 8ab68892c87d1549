package tflite_test

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// TestNewOpsMatchTFLite runs synthetic models of the ops this importer
// gained on TFLite 2.9 itself (internal/tflitepeer) and on Switchyard:
// sparse float16 weights behind DENSIFY and DEQUANTIZE and DEPTH_TO_SPACE
// must agree to float rounding; hybrid int8-weight FULLY_CONNECTED and
// CONV_2D within what TFLite's run-time int8 quantization of the input
// costs (per output, Σ|w|·max|x|/127, the bound of a half step per input).
func TestNewOpsMatchTFLite(t *testing.T) {
	lib := peer(t)
	rng := rand.New(rand.NewPCG(11, 12))
	q8 := func(n int) []int8 {
		v := make([]int8, n)
		for i := range v {
			v[i] = int8(rng.IntN(255) - 127)
		}
		return v
	}
	const r, c = 8, 16
	w := sparseMatrix(rng, r, c, 4)
	sp, vals := encodeCSR(w, r, c, 4)
	h := make([]uint16, len(vals))
	for i, v := range vals {
		h[i] = uint16(graph.F16FromFloat32(v))
	}
	// one scale for the FULLY_CONNECTED weights: TFLite 2.9's hybrid
	// kernel reads the per-tensor scale only (zero when per channel, so
	// it outputs zeros); the converters of its time wrote one
	fw, fsc := q8(r*c), make([]float32, r)
	for i := range fsc {
		fsc[i] = 0.004
	}
	cw, csc := q8(4*3*3*3), []float32{0.01, 0.02, 0.03, 0.015}
	type tcase struct {
		name  string
		model []byte
		shape []int
		tol   func(x []float32, k int) float64
	}
	exact := func([]float32, int) float64 { return 0 }
	fcTol := func(x []float32, k int) float64 {
		mx := 0.0
		for _, v := range x {
			mx = max(mx, math.Abs(float64(v)))
		}
		s := 0.0
		for j := range c {
			s += math.Abs(float64(fsc[k] * float32(fw[k*c+j])))
		}
		return s * mx / 127
	}
	convTol := func(x []float32, k int) float64 {
		mx := 0.0
		for _, v := range x {
			mx = max(mx, math.Abs(float64(v)))
		}
		o := k % 4
		s := 0.0
		for j := range 27 {
			s += math.Abs(float64(csc[o] * float32(cw[o*27+j])))
		}
		return s * mx / 127
	}
	cases := []tcase{
		{"densify float16", buildTFLite([]synTensor{{shape: []int32{1, c}}, {shape: []int32{r, c}, f16: h, sparsity: sp},
			{shape: []int32{r, c}, typ: 1}, {shape: []int32{r, c}}, {shape: []int32{1, r}}},
			[]synOp{{code: 124, in: []int32{1}, out: []int32{2}}, {code: 6, in: []int32{2}, out: []int32{3}},
				{code: 9, in: []int32{0, 3}, out: []int32{4}}}, []int32{0}, []int32{4}), []int{1, c}, exact},
		{"depth to space", buildTFLite([]synTensor{{shape: []int32{1, 3, 2, 12}}, {shape: []int32{1, 6, 4, 3}}},
			[]synOp{{code: 5, in: []int32{0}, out: []int32{1}, ints: map[int]int32{0: 2}, optType: 94}}, []int32{0}, []int32{1}), []int{1, 3, 2, 12}, exact},
		{"space to depth", buildTFLite([]synTensor{{shape: []int32{1, 6, 4, 3}}, {shape: []int32{1, 3, 2, 12}}},
			[]synOp{{code: 26, in: []int32{0}, out: []int32{1}, ints: map[int]int32{0: 2}, optType: 19}}, []int32{0}, []int32{1}), []int{1, 6, 4, 3}, exact},
		{"hybrid fully connected", buildTFLite([]synTensor{{shape: []int32{1, c}}, {shape: []int32{r, c}, i8: fw, quant: &synQuant{scale: fsc[:1], zp: []int64{0}}}, {shape: []int32{1, r}}},
			[]synOp{{code: 9, in: []int32{0, 1}, out: []int32{2}}}, []int32{0}, []int32{2}), []int{1, c}, fcTol},
		{"hybrid conv", buildTFLite([]synTensor{{shape: []int32{1, 5, 5, 3}}, {shape: []int32{4, 3, 3, 3}, i8: cw, quant: &synQuant{scale: csc, zp: make([]int64, 4)}}, {shape: []int32{4}, data: make([]float32, 4)}, {shape: []int32{1, 5, 5, 4}}},
			[]synOp{{code: 3, in: []int32{0, 1, 2}, out: []int32{3}, ints: map[int]int32{1: 1, 2: 1}}}, []int32{0}, []int32{3}), []int{1, 5, 5, 3}, convTol},
	}
	for _, tc := range cases {
		n := 1
		for _, d := range tc.shape {
			n *= d
		}
		x := randF(rng, n)
		ip, err := lib.NewInterpreter(tc.model, 1)
		if err != nil {
			t.Errorf("%s: TFLite refuses the model: %v", tc.name, err)
			continue
		}
		outs, err := ip.Run([][]byte{float32Bytes(x)})
		ip.Close()
		if err != nil {
			t.Errorf("%s: TFLite: %v", tc.name, err)
			continue
		}
		got := runSynth(t, tc.model, x, tc.shape)
		worst := 0.0
		for k := range got {
			want := math.Float32frombits(binary.LittleEndian.Uint32(outs[0][4*k:]))
			d := math.Abs(float64(got[k] - want))
			worst = max(worst, d)
			if d > tc.tol(x, k)+1e-5*(1+math.Abs(float64(want))) {
				t.Errorf("%s: output %d = %g, TFLite %g (|Δ| %g over the bound %g)", tc.name, k, got[k], want, d, tc.tol(x, k))
			}
		}
		t.Logf("%s: max |Δ| vs TFLite %.3g", tc.name, worst)
	}
}
