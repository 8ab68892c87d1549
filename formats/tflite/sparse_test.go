package tflite_test

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/switchyard-hal/switchyard"
	_ "github.com/switchyard-hal/switchyard/backends/all"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/tensorio"
	"github.com/switchyard-hal/switchyard/formats/tflite"
	"github.com/switchyard-hal/switchyard/internal/shared"
)

// encodeCSR stores a dense [r, c] matrix as TFLite sparsity: rows DENSE,
// column blocks of bc SPARSE_CSR (a block is kept when any of its values
// is non-zero), and with bc > 1 a DENSE block dim mapped to dim 1. It
// returns the parameters and the stored values in traversal order.
func encodeCSR(dense []float32, r, c, bc int) (*tflite.Sparsity, []float32) {
	sp := &tflite.Sparsity{TraversalOrder: []int32{0, 1}}
	seg, idx := []int32{0}, []int32{}
	var vals []float32
	for i := 0; i < r; i++ {
		for j := 0; j < c/bc; j++ {
			blk := dense[i*c+j*bc : i*c+(j+1)*bc]
			keep := false
			for _, v := range blk {
				keep = keep || v != 0
			}
			if keep {
				idx = append(idx, int32(j))
				vals = append(vals, blk...)
			}
		}
		seg = append(seg, int32(len(idx)))
	}
	sp.Dims = []tflite.DimMeta{{DenseSize: int32(r)}, {Sparse: true, Segments: seg, Indices: idx}}
	if bc > 1 {
		sp.TraversalOrder = append(sp.TraversalOrder, 2)
		sp.BlockMap = []int32{1}
		sp.Dims = append(sp.Dims, tflite.DimMeta{DenseSize: int32(bc)})
	}
	return sp, vals
}

// sparseMatrix is a random [r, c] matrix of float16-exact values, about
// half its column blocks of bc zero.
func sparseMatrix(rng *rand.Rand, r, c, bc int) []float32 {
	m := make([]float32, r*c)
	for i := range r {
		for j := 0; j < c/bc; j++ {
			if rng.IntN(2) == 0 {
				continue
			}
			for k := range bc {
				m[i*c+j*bc+k] = float32(rng.IntN(33)-16) / 8
			}
		}
	}
	return m
}

func fcRef(x, w []float32, r, c int) []float32 {
	y := make([]float32, r)
	for i := range r {
		var s float64
		for j := range c {
			s += float64(x[j]) * float64(w[i*c+j])
		}
		y[i] = float32(s)
	}
	return y
}

// TestSynthDensifyFloat16 imports MediaPipe's pattern: a sparse float16
// constant → DENSIFY → DEQUANTIZE → FULLY_CONNECTED, with CSR rows
// (unblocked and with 1x4 blocks, the layout TFLite's converter writes),
// and a sparse float32 weight read by FULLY_CONNECTED directly; results
// are checked against the dense matrix the test encoded.
func TestSynthDensifyFloat16(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	const r, c = 6, 16
	for _, bc := range []int{1, 4} {
		w := sparseMatrix(rng, r, c, bc)
		sp, vals := encodeCSR(w, r, c, bc)
		h := make([]uint16, len(vals))
		for i, v := range vals {
			h[i] = uint16(graph.F16FromFloat32(v))
		}
		x := randF(rng, c)
		want := fcRef(x, w, r, c)
		model := buildTFLite([]synTensor{{shape: []int32{1, c}}, {shape: []int32{r, c}, f16: h, sparsity: sp},
			{shape: []int32{r, c}, typ: 1}, {shape: []int32{r, c}}, {shape: []int32{1, r}}},
			[]synOp{{code: 124, in: []int32{1}, out: []int32{2}}, {code: 6, in: []int32{2}, out: []int32{3}},
				{code: 9, in: []int32{0, 3}, out: []int32{4}}}, []int32{0}, []int32{4})
		got := runSynth(t, model, x, []int{1, c})
		for i := range want {
			if !near(got[i], want[i]) {
				t.Fatalf("float16 blocks of %d: y[%d] = %g, want %g", bc, i, got[i], want[i])
			}
		}
		// the same weights stored sparse in float32, read directly
		model = buildTFLite([]synTensor{{shape: []int32{1, c}}, {shape: []int32{r, c}, data: vals, sparsity: sp}, {shape: []int32{1, r}}},
			[]synOp{{code: 9, in: []int32{0, 1}, out: []int32{2}}}, []int32{0}, []int32{2})
		got = runSynth(t, model, x, []int{1, c})
		for i := range want {
			if !near(got[i], want[i]) {
				t.Fatalf("float32 blocks of %d: y[%d] = %g, want %g", bc, i, got[i], want[i])
			}
		}
	}
}

// TestSparsityRefused checks that metadata disagreeing with the shape or
// the stored values is a conversion error naming the tensor.
func TestSparsityRefused(t *testing.T) {
	w := []float32{1, 0, 0, 2, 0, 3}
	for name, mutate := range map[string]func(*tflite.Sparsity, *[]float32){
		"index out of range":  func(sp *tflite.Sparsity, _ *[]float32) { sp.Dims[1].Indices[0] = 3 },
		"segments decrease":   func(sp *tflite.Sparsity, _ *[]float32) { sp.Dims[1].Segments[1] = 4 },
		"too few values":      func(_ *tflite.Sparsity, v *[]float32) { *v = (*v)[:2] },
		"dense size mismatch": func(sp *tflite.Sparsity, _ *[]float32) { sp.Dims[0].DenseSize = 3 },
		"not a permutation":   func(sp *tflite.Sparsity, _ *[]float32) { sp.TraversalOrder[1] = 0 },
	} {
		sp, vals := encodeCSR(w, 2, 3, 1)
		mutate(sp, &vals)
		model := buildTFLite([]synTensor{{shape: []int32{1, 3}}, {shape: []int32{2, 3}, data: vals, sparsity: sp}, {shape: []int32{1, 2}}},
			[]synOp{{code: 9, in: []int32{0, 1}, out: []int32{2}}}, []int32{0}, []int32{2})
		m, err := tflite.Parse(model)
		if err == nil {
			_, err = tflite.Convert(m, tflite.ConvertOptions{})
		}
		if err == nil {
			t.Errorf("%s: converted", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

// TestSynthDepthSpace checks DEPTH_TO_SPACE and SPACE_TO_DEPTH against
// TensorFlow's NHWC definition: out[b, h·s+i, w·s+j, c] = in[b, h, w,
// (i·s+j)·C + c].
func TestSynthDepthSpace(t *testing.T) {
	const n, h, w, co, s = 1, 2, 3, 2, 2
	rng := rand.New(rand.NewPCG(3, 4))
	x := randF(rng, n*h*w*co*s*s)
	d2s := buildTFLite([]synTensor{{shape: []int32{n, h, w, co * s * s}}, {shape: []int32{n, h * s, w * s, co}}},
		[]synOp{{code: 5, in: []int32{0}, out: []int32{1}, ints: map[int]int32{0: s}}}, []int32{0}, []int32{1})
	got := runSynth(t, d2s, x, []int{n, h, w, co * s * s})
	want := make([]float32, len(x))
	for y := range h {
		for xx := range w {
			for i := range s {
				for j := range s {
					for c := range co {
						want[((y*s+i)*w*s+xx*s+j)*co+c] = x[((y*w+xx)*s*s+i*s+j)*co+c]
					}
				}
			}
		}
	}
	for k := range want {
		if got[k] != want[k] {
			t.Fatalf("DEPTH_TO_SPACE: element %d = %g, want %g", k, got[k], want[k])
		}
	}
	// SPACE_TO_DEPTH is its inverse: feed want, get x back
	s2d := buildTFLite([]synTensor{{shape: []int32{n, h * s, w * s, co}}, {shape: []int32{n, h, w, co * s * s}}},
		[]synOp{{code: 26, in: []int32{0}, out: []int32{1}, ints: map[int]int32{0: s}}}, []int32{0}, []int32{1})
	got = runSynth(t, s2d, want, []int{n, h * s, w * s, co})
	for k := range x {
		if got[k] != x[k] {
			t.Fatalf("SPACE_TO_DEPTH: element %d = %g, want %g", k, got[k], x[k])
		}
	}
}

// TestZooPoseDetection runs MediaPipe's BlazePose detector of
// ../shared/testdata/zoo (38 DENSIFY of sparse float16 weights, 144
// float16 DEQUANTIZE, 3 DEPTH_TO_SPACE) on its reference input with the
// cpu backend, native then cpu, and the default backends (1 and 2
// threads), and compares both outputs
// with TFLite 2.9's at the MANIFEST's tolerance (rtol 1e-3, atol 5e-3).
func TestZooPoseDetection(t *testing.T) {
	dir := shared.Path(t, "testdata/zoo/pose_detection")
	in, err := tensorio.ReadFile(filepath.Join(dir, "test_data_set_0/input_0.npy"))
	if err != nil {
		t.Fatal(err)
	}
	apiIn, err := switchyard.NewTensor(in.Shape, graph.Data[float32](in))
	if err != nil {
		t.Fatal(err)
	}
	var refs []*graph.Tensor
	for _, f := range []string{"output_0.npy", "output_1.npy"} {
		r, err := tensorio.ReadFile(filepath.Join(dir, "test_data_set_0", f))
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, r)
	}
	for _, run := range []struct {
		backends []string
		threads  int
	}{{[]string{"cpu"}, 1}, {[]string{"native", "cpu"}, 1}, {nil, 1}, {nil, 2}} {
		backends := run.backends
		ctx := context.Background()
		m, err := switchyard.Open(ctx, filepath.Join(dir, "model.tflite"), &switchyard.OpenOptions{Backends: backends, Threads: run.threads})
		if err != nil {
			t.Fatal(err)
		}
		out, err := m.Run(ctx, switchyard.Tensors{m.Inputs()[0].Name: apiIn})
		m.Close()
		if err != nil {
			t.Fatal(err)
		}
		for k, o := range m.Outputs() {
			got, _ := switchyard.Values[float32](out[o.Name])
			want := refs[k].Data.([]float32)
			if len(got) != len(want) {
				t.Fatalf("%v: output %s has %d values, want %d", backends, o.Name, len(got), len(want))
			}
			worst := 0.0
			for i := range want {
				d := math.Abs(float64(got[i] - want[i]))
				worst = max(worst, d)
				if d > 5e-3+1e-3*math.Abs(float64(want[i])) {
					t.Fatalf("%v: output %s[%d] = %g, want %g", backends, o.Name, i, got[i], want[i])
				}
			}
			t.Logf("backends %v, %d threads: output %s max |Δ| %.3g", backends, run.threads, o.Name, worst)
		}
	}
}

// TestSynthHybridWeights imports float32 CONV_2D, DEPTHWISE_CONV_2D and
// FULLY_CONNECTED with int8 weights quantized per channel (TFLite's
// dynamic-range quantization): the weights are dequantized at import, so
// the results equal the float operators on scale·q.
func TestSynthHybridWeights(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	q8 := func(n int) []int8 {
		v := make([]int8, n)
		for i := range v {
			v[i] = int8(rng.IntN(255) - 127)
		}
		return v
	}
	// FULLY_CONNECTED: x [1,5], w [3,5] per output channel, bias [3]
	w, sc := q8(15), []float32{0.01, 0.02, 0.005}
	x, bias := randF(rng, 5), randF(rng, 3)
	wf := make([]float32, 15)
	for i := range wf {
		wf[i] = sc[i/5] * float32(w[i])
	}
	want := fcRef(x, wf, 3, 5)
	for i := range want {
		want[i] += bias[i]
	}
	got := runSynth(t, buildTFLite([]synTensor{{shape: []int32{1, 5}}, {shape: []int32{3, 5}, i8: w, quant: &synQuant{scale: sc, zp: make([]int64, 3)}},
		{shape: []int32{3}, data: bias}, {shape: []int32{1, 3}}},
		[]synOp{{code: 9, in: []int32{0, 1, 2}, out: []int32{3}}}, []int32{0}, []int32{3}), x, []int{1, 5})
	for i := range want {
		if !near(got[i], want[i]) {
			t.Fatalf("hybrid FULLY_CONNECTED: y[%d] = %g, want %g", i, got[i], want[i])
		}
	}
	// CONV_2D 1x1 (filter [2,1,1,3], per dim 0) and DEPTHWISE_CONV_2D 1x1
	// (filter [1,1,1,3], per dim 3) on a [1,2,2,3] input
	x = randF(rng, 12)
	cw, csc := q8(6), []float32{0.03, 0.01}
	dw, dsc := q8(3), []float32{0.02, 0.04, 0.01}
	conv := runSynth(t, buildTFLite([]synTensor{{shape: []int32{1, 2, 2, 3}}, {shape: []int32{2, 1, 1, 3}, i8: cw, quant: &synQuant{scale: csc, zp: make([]int64, 2)}},
		{shape: []int32{1, 2, 2, 2}}}, []synOp{{code: 3, in: []int32{0, 1}, out: []int32{2}, ints: map[int]int32{1: 1, 2: 1}}}, []int32{0}, []int32{2}), x, []int{1, 2, 2, 3})
	dconv := runSynth(t, buildTFLite([]synTensor{{shape: []int32{1, 2, 2, 3}}, {shape: []int32{1, 1, 1, 3}, i8: dw, quant: &synQuant{scale: dsc, zp: make([]int64, 3), dim: 3}},
		{shape: []int32{1, 2, 2, 3}}}, []synOp{{code: 4, in: []int32{0, 1}, out: []int32{2}, ints: map[int]int32{1: 1, 2: 1, 3: 1}}}, []int32{0}, []int32{2}), x, []int{1, 2, 2, 3})
	for p := range 4 {
		for o := range 2 {
			var s float32
			for c := range 3 {
				s += x[p*3+c] * csc[o] * float32(cw[o*3+c])
			}
			if !near(conv[p*2+o], s) {
				t.Fatalf("hybrid CONV_2D: pixel %d channel %d = %g, want %g", p, o, conv[p*2+o], s)
			}
		}
		for c := range 3 {
			if s := x[p*3+c] * dsc[c] * float32(dw[c]); !near(dconv[p*3+c], s) {
				t.Fatalf("hybrid DEPTHWISE_CONV_2D: pixel %d channel %d = %g, want %g", p, c, dconv[p*3+c], s)
			}
		}
	}
}
