package tflite_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/tflite"
	"github.com/switchyard-hal/switchyard/internal/allocguard"
	"github.com/switchyard-hal/switchyard/internal/shared"
)

// FuzzParse feeds arbitrary bytes to the reader and the converter: they
// must return a model or an error, never panic or over-allocate, with
// and without ConvertOptions.Dequantize. Seeds are the small shared
// models (when present), synthetic ones (an int8 per-channel one among
// them) and testdata/fuzz (hostile-* are issue #32's classes, written by
// TestHostileSeeds). Parse must stay within parseBound of the input's size.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"hello_world_int8.tflite", "micro_speech_quantized.tflite"} {
		if root := shared.Root(); root != "" {
			if b, err := os.ReadFile(filepath.Join(root, "testdata/tflite", name)); err == nil {
				f.Add(b)
			}
		}
	}
	// small synthetic models reach the float converters (conv, pool,
	// slices, reductions, split/pack) that the shared seeds do not
	f.Add(buildTFLite([]synTensor{{shape: []int32{1, 6, 5, 2}}, {shape: []int32{3, 3, 3, 2}, data: make([]float32, 54)}, {shape: []int32{3}, data: make([]float32, 3)}, {shape: []int32{1, 3, 3, 3}}, {shape: []int32{1, 2, 2, 3}}},
		[]synOp{{code: 3, in: []int32{0, 1, 2}, out: []int32{3}, ints: map[int]int32{1: 2, 2: 2}, bytes: map[int]uint8{3: 3}},
			{code: 17, in: []int32{3}, out: []int32{4}, ints: map[int]int32{1: 2, 2: 2, 3: 2, 4: 2}, bytes: map[int]uint8{0: 0}}}, []int32{0}, []int32{4}))
	f.Add(buildTFLite([]synTensor{{shape: []int32{2, 4}}, {shape: []int32{2}, ints: []int32{0, 1}}, {shape: []int32{2}, ints: []int32{2, 3}}, {shape: []int32{2}, ints: []int32{1, 1}},
		{shape: []int32{2, 2}}, {shape: []int32{1}, ints: []int32{1}}, {shape: []int32{2}}, {shape: []int32{1}, ints: []int32{0}}, {shape: []int32{1, 2}}, {shape: []int32{1, 2}}},
		[]synOp{{code: 45, in: []int32{0, 1, 2, 3}, out: []int32{4}}, {code: 74, in: []int32{4, 5}, out: []int32{6}},
			{code: 49, in: []int32{7, 4}, out: []int32{8, 9}, ints: map[int]int32{0: 2}}}, []int32{0}, []int32{6, 8, 9}))
	// an int8 QUANTIZE → CONV_2D (per-channel filter) → DEQUANTIZE chain
	q := func(s ...float32) *synQuant { return &synQuant{scale: s, zp: make([]int64, len(s))} }
	f.Add(buildTFLite([]synTensor{{shape: []int32{1, 2, 2, 1}}, {shape: []int32{1, 2, 2, 1}, typ: 9, quant: q(0.5)},
		{shape: []int32{2, 1, 1, 1}, i8: []int8{3, -4}, quant: q(0.1, 0.2)}, {shape: []int32{2}, ints: []int32{5, -6}},
		{shape: []int32{1, 2, 2, 2}, typ: 9, quant: q(0.05)}, {shape: []int32{1, 2, 2, 2}}},
		[]synOp{{code: 114, in: []int32{0}, out: []int32{1}}, {code: 3, in: []int32{1, 2, 3}, out: []int32{4}, ints: map[int]int32{1: 1, 2: 1}},
			{code: 6, in: []int32{4}, out: []int32{5}}}, []int32{0}, []int32{5}))
	for _, m := range sparseSeeds() {
		f.Add(m)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m *tflite.Model
		var err error
		allocguard.Check(t, "tflite.Parse", parseBound(len(b)), func() { m, err = tflite.Parse(b) })
		if err != nil {
			return
		}
		_, _ = tflite.Convert(m, tflite.ConvertOptions{MaxTensorBytes: 1 << 24})
		_, _ = tflite.Convert(m, tflite.ConvertOptions{MaxTensorBytes: 1 << 24, Dequantize: true})
	})
}

// sparseSeeds are small models with sparse constants (CSR rows, 1x4
// blocks; float16 behind DENSIFY and DEQUANTIZE, float32 read directly)
// and DEPTH_TO_SPACE, so the fuzzer starts inside the sparsity reader
// and densify. testdata/fuzz/FuzzParse/sparse-* hold the same bytes.
func sparseSeeds() [][]byte {
	w := []float32{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0}
	var out [][]byte
	for _, bc := range []int{1, 4} {
		sp, vals := encodeCSR(w, 3, 8, bc)
		h := make([]uint16, len(vals))
		for i, v := range vals {
			h[i] = uint16(graph.F16FromFloat32(v))
		}
		out = append(out, buildTFLite([]synTensor{{shape: []int32{1, 8}}, {shape: []int32{3, 8}, f16: h, sparsity: sp},
			{shape: []int32{3, 8}, typ: 1}, {shape: []int32{3, 8}}, {shape: []int32{1, 3}}},
			[]synOp{{code: 124, in: []int32{1}, out: []int32{2}}, {code: 6, in: []int32{2}, out: []int32{3}},
				{code: 9, in: []int32{0, 3}, out: []int32{4}}}, []int32{0}, []int32{4}),
			buildTFLite([]synTensor{{shape: []int32{1, 8}}, {shape: []int32{3, 8}, data: vals, sparsity: sp}, {shape: []int32{1, 3}}},
				[]synOp{{code: 9, in: []int32{0, 1}, out: []int32{2}}}, []int32{0}, []int32{2}))
	}
	out = append(out, buildTFLite([]synTensor{{shape: []int32{1, 1, 2, 8}}, {shape: []int32{1, 2, 4, 2}}},
		[]synOp{{code: 5, in: []int32{0}, out: []int32{1}, ints: map[int]int32{0: 2}}}, []int32{0}, []int32{1}))
	return out
}
