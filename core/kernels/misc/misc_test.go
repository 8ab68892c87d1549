package misc

import (
	"errors"
	"math"
	"math/cmplx"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// node builds a node with the given attributes (int, string, []int64).
func node(op string, nin, nout int, attrs map[string]any) *graph.Node {
	n := &graph.Node{OpType: op, Attrs: map[string]*graph.Attribute{}}
	for i := 0; i < nin; i++ {
		n.Inputs = append(n.Inputs, "in")
	}
	for i := 0; i < nout; i++ {
		n.Outputs = append(n.Outputs, "out")
	}
	for k, v := range attrs {
		switch v := v.(type) {
		case int:
			n.Attrs[k] = &graph.Attribute{Name: k, Type: graph.AttrInt, I: int64(v)}
		case string:
			n.Attrs[k] = &graph.Attribute{Name: k, Type: graph.AttrString, S: v}
		case []int64:
			n.Attrs[k] = &graph.Attribute{Name: k, Type: graph.AttrInts, Ints: v}
		}
	}
	return n
}

func run(t *testing.T, opset int64, n *graph.Node, in ...*graph.Tensor) ([]*graph.Tensor, error) {
	t.Helper()
	s, ok := kernels.Lookup("", n.OpType)
	if !ok {
		t.Fatalf("%s not registered", n.OpType)
	}
	return s.Kernel(&kernels.Context{Opset: opset}, n, in)
}

func f32(shape []int, v ...float32) *graph.Tensor { return graph.MustFromSlice(shape, v) }
func f64(shape []int, v ...float64) *graph.Tensor { return graph.MustFromSlice(shape, v) }
func i64(shape []int, v ...int64) *graph.Tensor   { return graph.MustFromSlice(shape, v) }
func i32(shape []int, v ...int32) *graph.Tensor   { return graph.MustFromSlice(shape, v) }

func near(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Abs(a-b) <= 1e-5+1e-5*math.Abs(b)
}

func expect(t *testing.T, name string, got *graph.Tensor, dt graph.DType, shape []int, want []float64) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: nil output", name)
	}
	if got.DType != dt || !graph.SameShape(got.Shape, shape) {
		t.Fatalf("%s: got %v%v, want %v%v", name, got.DType, got.Shape, dt, shape)
	}
	if got.Len() != len(want) {
		t.Fatalf("%s: %d elements, want %d", name, got.Len(), len(want))
	}
	for i, w := range want {
		if g := got.Float64At(i); !near(g, w) {
			t.Fatalf("%s: element %d = %v, want %v (got %v)", name, i, g, w, got)
		}
	}
}

type tcase struct {
	name  string
	op    string
	opset int64
	attrs map[string]any
	nout  int
	in    []*graph.Tensor
	dt    graph.DType
	shape []int
	want  []float64
	err   error // expected error class, when set
}

func runCases(t *testing.T, cases []tcase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			nout := c.nout
			if nout == 0 {
				nout = 1
			}
			out, err := run(t, c.opset, node(c.op, len(c.in), nout, c.attrs), c.in...)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("error %v, want %v", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			expect(t, c.name, out[0], c.dt, c.shape, c.want)
		})
	}
}

func TestBitwise(t *testing.T) {
	u8 := func(shape []int, v ...uint8) *graph.Tensor { return graph.MustFromSlice(shape, v) }
	i8 := func(shape []int, v ...int8) *graph.Tensor { return graph.MustFromSlice(shape, v) }
	u64 := func(shape []int, v ...uint64) *graph.Tensor { return graph.MustFromSlice(shape, v) }
	runCases(t, []tcase{
		{name: "shl", op: "BitShift", opset: 11, attrs: map[string]any{"direction": "LEFT"}, in: []*graph.Tensor{u8([]int{3}, 16, 4, 1), u8([]int{3}, 1, 2, 8)}, dt: graph.Uint8, shape: []int{3}, want: []float64{32, 16, 0}},
		{name: "shr_bcast", op: "BitShift", opset: 11, attrs: map[string]any{"direction": "RIGHT"}, in: []*graph.Tensor{u64([]int{2, 2}, 16, 4, 1, 255), u64([]int{}, 2)}, dt: graph.Uint64, shape: []int{2, 2}, want: []float64{4, 1, 0, 63}},
		{name: "shift_bad_dir", op: "BitShift", opset: 11, attrs: map[string]any{"direction": "UP"}, in: []*graph.Tensor{u8([]int{1}, 1), u8([]int{1}, 1)}, err: kernels.ErrInvalid},
		{name: "and", op: "BitwiseAnd", opset: 18, in: []*graph.Tensor{i8([]int{2}, -1, 12), i8([]int{2}, 5, 10)}, dt: graph.Int8, shape: []int{2}, want: []float64{5, 8}},
		{name: "or_bcast", op: "BitwiseOr", opset: 18, in: []*graph.Tensor{u8([]int{2, 1}, 1, 2), u8([]int{2}, 4, 8)}, dt: graph.Uint8, shape: []int{2, 2}, want: []float64{5, 9, 6, 10}},
		{name: "xor", op: "BitwiseXor", opset: 18, in: []*graph.Tensor{i32([]int{2}, 6, -1), i32([]int{2}, 3, 5)}, dt: graph.Int32, shape: []int{2}, want: []float64{5, -6}},
		{name: "xor_shape_mismatch", op: "BitwiseXor", opset: 18, in: []*graph.Tensor{i32([]int{2}, 6, -1), i32([]int{3}, 3, 5, 1)}, err: kernels.ErrInvalid},
		{name: "not", op: "BitwiseNot", opset: 18, in: []*graph.Tensor{i8([]int{3}, 0, 5, -128)}, dt: graph.Int8, shape: []int{3}, want: []float64{-1, -6, 127}},
		{name: "not_u8", op: "BitwiseNot", opset: 18, in: []*graph.Tensor{u8([]int{2}, 0, 0xF0)}, dt: graph.Uint8, shape: []int{2}, want: []float64{255, 15}},
	})
}

func TestCumProdEyeCompressCropDet(t *testing.T) {
	x := f32([]int{4}, 1, 2, 3, 4)
	ax0 := i64([]int{}, 0)
	m := f64([]int{2, 3}, 1, 2, 3, 4, 5, 6)
	runCases(t, []tcase{
		{name: "cumprod", op: "CumProd", opset: 26, in: []*graph.Tensor{x, ax0}, dt: graph.Float32, shape: []int{4}, want: []float64{1, 2, 6, 24}},
		{name: "cumprod_excl", op: "CumProd", opset: 26, attrs: map[string]any{"exclusive": 1}, in: []*graph.Tensor{x, ax0}, dt: graph.Float32, shape: []int{4}, want: []float64{1, 1, 2, 6}},
		{name: "cumprod_rev", op: "CumProd", opset: 26, attrs: map[string]any{"reverse": 1}, in: []*graph.Tensor{x, ax0}, dt: graph.Float32, shape: []int{4}, want: []float64{24, 24, 12, 4}},
		{name: "cumprod_rev_excl", op: "CumProd", opset: 26, attrs: map[string]any{"reverse": 1, "exclusive": 1}, in: []*graph.Tensor{x, ax0}, dt: graph.Float32, shape: []int{4}, want: []float64{24, 12, 4, 1}},
		{name: "cumprod_axis-1_int", op: "CumProd", opset: 26, in: []*graph.Tensor{i64([]int{2, 3}, 1, 2, 3, 4, 5, 6), i32([]int{1}, -1)}, dt: graph.Int64, shape: []int{2, 3}, want: []float64{1, 2, 6, 4, 20, 120}},
		{name: "cumprod_axis0", op: "CumProd", opset: 26, in: []*graph.Tensor{m, ax0}, dt: graph.Float64, shape: []int{2, 3}, want: []float64{1, 2, 3, 4, 10, 18}},
		{name: "cumprod_bad_axis", op: "CumProd", opset: 26, in: []*graph.Tensor{m, i64([]int{}, 2)}, err: kernels.ErrInvalid},

		{name: "eyelike", op: "EyeLike", opset: 9, in: []*graph.Tensor{m}, dt: graph.Float64, shape: []int{2, 3}, want: []float64{1, 0, 0, 0, 1, 0}},
		{name: "eyelike_k2_int", op: "EyeLike", opset: 9, attrs: map[string]any{"k": 2, "dtype": int(graph.Int32)}, in: []*graph.Tensor{m}, dt: graph.Int32, shape: []int{2, 3}, want: []float64{0, 0, 1, 0, 0, 0}},
		{name: "eyelike_kneg", op: "EyeLike", opset: 22, attrs: map[string]any{"k": -1, "dtype": int(graph.Bool)}, in: []*graph.Tensor{f32([]int{3, 2}, 0, 0, 0, 0, 0, 0)}, dt: graph.Bool, shape: []int{3, 2}, want: []float64{0, 0, 1, 0, 0, 1}},
		{name: "eyelike_rank3", op: "EyeLike", opset: 9, in: []*graph.Tensor{f32([]int{1, 1, 1}, 0)}, err: kernels.ErrInvalid},

		{name: "compress_axis1", op: "Compress", opset: 11, attrs: map[string]any{"axis": 1}, in: []*graph.Tensor{m, graph.MustFromSlice([]int{3}, []bool{true, false, true})}, dt: graph.Float64, shape: []int{2, 2}, want: []float64{1, 3, 4, 6}},
		{name: "compress_flat_short", op: "Compress", opset: 11, in: []*graph.Tensor{m, graph.MustFromSlice([]int{4}, []bool{false, true, false, true})}, dt: graph.Float64, shape: []int{2}, want: []float64{2, 4}},
		{name: "compress_neg_axis_none", op: "Compress", opset: 11, attrs: map[string]any{"axis": -2}, in: []*graph.Tensor{m, graph.MustFromSlice([]int{2}, []bool{false, false})}, dt: graph.Float64, shape: []int{0, 3}, want: nil},
		{name: "compress_too_long", op: "Compress", opset: 11, attrs: map[string]any{"axis": 0}, in: []*graph.Tensor{m, graph.MustFromSlice([]int{3}, []bool{false, false, true})}, err: kernels.ErrInvalid},

		// crop 5 -> 2 starts at (5-2)/2 = 1; pad 2 -> 5 puts the data at 1
		{name: "crop", op: "CenterCropPad", opset: 18, in: []*graph.Tensor{f32([]int{5}, 1, 2, 3, 4, 5), i64([]int{1}, 2)}, dt: graph.Float32, shape: []int{2}, want: []float64{2, 3}},
		{name: "pad", op: "CenterCropPad", opset: 18, in: []*graph.Tensor{f32([]int{2}, 7, 8), i64([]int{1}, 5)}, dt: graph.Float32, shape: []int{5}, want: []float64{0, 7, 8, 0, 0}},
		{name: "crop_pad_axes", op: "CenterCropPad", opset: 18, attrs: map[string]any{"axes": []int64{-1, 0}}, in: []*graph.Tensor{m, i64([]int{2}, 1, 4)}, dt: graph.Float64, shape: []int{4, 1}, want: []float64{0, 2, 5, 0}},
		{name: "crop_bad_len", op: "CenterCropPad", opset: 18, in: []*graph.Tensor{m, i64([]int{1}, 1)}, err: kernels.ErrInvalid},

		{name: "det2", op: "Det", opset: 11, in: []*graph.Tensor{f32([]int{2, 2}, 1, 2, 3, 4)}, dt: graph.Float32, shape: []int{}, want: []float64{-2}},
		{name: "det_batch", op: "Det", opset: 22, in: []*graph.Tensor{f64([]int{3, 2, 2}, 0, 1, 1, 0, 1, 2, 2, 4, 2, 0, 0, 3)}, dt: graph.Float64, shape: []int{3}, want: []float64{-1, 0, 6}},
		{name: "det3", op: "Det", opset: 11, in: []*graph.Tensor{f64([]int{3, 3}, 2, -3, 1, 2, 0, -1, 1, 4, 5)}, dt: graph.Float64, shape: []int{}, want: []float64{49}},
		{name: "det_empty", op: "Det", opset: 11, in: []*graph.Tensor{f32([]int{0, 0})}, dt: graph.Float32, shape: []int{}, want: []float64{1}},
		{name: "det_nan", op: "Det", opset: 11, in: []*graph.Tensor{f32([]int{2, 2}, float32(math.NaN()), 1, 0, 1)}, dt: graph.Float32, shape: []int{}, want: []float64{math.NaN()}},
		{name: "det_nonsquare", op: "Det", opset: 11, in: []*graph.Tensor{m}, err: kernels.ErrInvalid},
	})
}

func TestUnique(t *testing.T) {
	x := f32([]int{6}, 2, 1, 1, 3, 4, 3)
	cases := []struct {
		name  string
		attrs map[string]any
		x     *graph.Tensor
		want  [4][]float64
		yshp  []int
	}{
		{"sorted", nil, x, [4][]float64{{1, 2, 3, 4}, {1, 0, 3, 4}, {1, 0, 0, 2, 3, 2}, {2, 1, 2, 1}}, []int{4}},
		{"unsorted", map[string]any{"sorted": 0}, x, [4][]float64{{2, 1, 3, 4}, {0, 1, 3, 4}, {0, 1, 1, 2, 3, 2}, {1, 2, 2, 1}}, []int{4}},
		{"nan_last", nil, f32([]int{4}, float32(math.NaN()), 1, float32(math.NaN()), 0), [4][]float64{{0, 1, math.NaN()}, {3, 1, 0}, {2, 1, 2, 0}, {1, 1, 2}}, []int{3}},
		// rows [1,0],[0,1],[1,0] along axis 0
		{"axis0", map[string]any{"axis": 0}, i64([]int{3, 2}, 1, 0, 0, 1, 1, 0), [4][]float64{{0, 1, 1, 0}, {1, 0}, {1, 0, 1}, {1, 2}}, []int{2, 2}},
		// columns [2,1],[1,0],[2,1] along axis -1, unsorted
		{"axis-1_unsorted", map[string]any{"axis": -1, "sorted": 0}, i64([]int{2, 3}, 2, 1, 2, 1, 0, 1), [4][]float64{{2, 1, 1, 0}, {0, 1}, {0, 1, 0}, {2, 1}}, []int{2, 2}},
	}
	for _, c := range cases {
		out, err := run(t, 11, node("Unique", 1, 4, c.attrs), c.x)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		expect(t, c.name+"/Y", out[0], c.x.DType, c.yshp, c.want[0])
		expect(t, c.name+"/indices", out[1], graph.Int64, []int{len(c.want[1])}, c.want[1])
		expect(t, c.name+"/inverse", out[2], graph.Int64, []int{len(c.want[2])}, c.want[2])
		expect(t, c.name+"/counts", out[3], graph.Int64, []int{len(c.want[3])}, c.want[3])
	}
	// strings and a single output
	out, err := run(t, 11, node("Unique", 1, 1, nil), graph.MustFromSlice([]int{3}, []string{"b", "a", "b"}))
	if err != nil || len(out) != 1 {
		t.Fatalf("strings: %v %v", out, err)
	}
	if s := out[0].Data.([]string); len(s) != 2 || s[0] != "a" || s[1] != "b" {
		t.Fatalf("strings: got %v", s)
	}
}

func TestWindows(t *testing.T) {
	a := 25.0 / 46.0
	runCases(t, []tcase{
		{name: "hann_periodic", op: "HannWindow", opset: 17, in: []*graph.Tensor{i64([]int{}, 4)}, dt: graph.Float32, shape: []int{4}, want: []float64{0, 0.5, 1, 0.5}},
		{name: "hann_symmetric", op: "HannWindow", opset: 17, attrs: map[string]any{"periodic": 0}, in: []*graph.Tensor{i32([]int{}, 3)}, dt: graph.Float32, shape: []int{3}, want: []float64{0, 1, 0}},
		{name: "hamming_f64", op: "HammingWindow", opset: 17, attrs: map[string]any{"output_datatype": int(graph.Float64)}, in: []*graph.Tensor{i64([]int{}, 2)}, dt: graph.Float64, shape: []int{2}, want: []float64{a - (1 - a), 1}},
		{name: "blackman", op: "BlackmanWindow", opset: 17, in: []*graph.Tensor{i64([]int{}, 4)}, dt: graph.Float32, shape: []int{4}, want: []float64{0, 0.34, 1, 0.34}},
		{name: "blackman_sym1", op: "BlackmanWindow", opset: 17, attrs: map[string]any{"periodic": 0}, in: []*graph.Tensor{i64([]int{}, 1)}, dt: graph.Float32, shape: []int{1}, want: []float64{1}},
		{name: "hann_int", op: "HannWindow", opset: 17, attrs: map[string]any{"output_datatype": int(graph.Int32)}, in: []*graph.Tensor{i64([]int{}, 4)}, dt: graph.Int32, shape: []int{4}, want: []float64{0, 0, 1, 0}},
		{name: "hann_negative", op: "HannWindow", opset: 17, in: []*graph.Tensor{i64([]int{}, -1)}, err: kernels.ErrInvalid},
		{name: "hann_string", op: "HannWindow", opset: 17, attrs: map[string]any{"output_datatype": int(graph.String)}, in: []*graph.Tensor{i64([]int{}, 2)}, err: kernels.ErrInvalid},
	})
}

func TestMelWeightMatrix(t *testing.T) {
	// 1 mel bin over [0, 4000] Hz at 8000 Hz with dft_length 8: m = mel(4000)
	// = 2595*log10(1+4000/700) ~ 2146.0; edges at mel 0, m/3, 2m/3, i.e. 0,
	// ~620.8, ~1791.4 Hz, which map to bins floor(9*hz/8000) = 0, 0, 2. Equal
	// lower and centre bins put 1 at bin 0; the falling edge gives (2-j)/2.
	out, err := run(t, 17, node("MelWeightMatrix", 5, 1, nil), i32([]int{}, 1), i32([]int{}, 8), i32([]int{}, 8000), f32([]int{}, 0), f32([]int{}, 4000))
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "mel", out[0], graph.Float32, []int{5, 1}, []float64{1, 0.5, 0, 0, 0})
}

// naiveDFT evaluates the DFT definition directly.
func naiveDFT(x []complex128, inverse bool) []complex128 {
	n := len(x)
	y := make([]complex128, n)
	sign := -1.0
	if inverse {
		sign = 1
	}
	for k := range y {
		for t, v := range x {
			y[k] += v * cmplx.Exp(complex(0, sign*2*math.Pi*float64(k*t)/float64(n)))
		}
		if inverse {
			y[k] /= complex(float64(n), 0)
		}
	}
	return y
}

func TestFFTLengths(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5, 8, 31, 37, 64, 100, 128} {
		x := make([]complex128, n)
		for i := range x {
			x[i] = complex(math.Sin(float64(i)*1.3)+float64(i%3), math.Cos(float64(i)*0.7))
		}
		for _, inv := range []bool{false, true} {
			want := naiveDFT(x, inv)
			got := append([]complex128{}, x...)
			if inv {
				ifft(got)
			} else {
				fft(got)
			}
			for k := range want {
				if cmplx.Abs(got[k]-want[k]) > 1e-9*float64(n) {
					t.Fatalf("n=%d inverse=%v: bin %d = %v, want %v", n, inv, k, got[k], want[k])
				}
			}
		}
	}
}

func TestDFT(t *testing.T) {
	real4 := f32([]int{4, 1}, 1, 2, 3, 4)
	runCases(t, []tcase{
		// [1,2,3,4] -> [10, -2+2i, -2, -2-2i]
		{name: "forward", op: "DFT", opset: 17, attrs: map[string]any{"axis": 0}, in: []*graph.Tensor{real4}, dt: graph.Float32, shape: []int{4, 2}, want: []float64{10, 0, -2, 2, -2, 0, -2, -2}},
		{name: "onesided_opset20_default_axis", op: "DFT", opset: 20, attrs: map[string]any{"onesided": 1}, in: []*graph.Tensor{real4}, dt: graph.Float32, shape: []int{3, 2}, want: []float64{10, 0, -2, 2, -2, 0}},
		{name: "padded", op: "DFT", opset: 20, in: []*graph.Tensor{f64([]int{1, 2, 1}, 1, 2), i64([]int{}, 4), i64([]int{}, 1)}, dt: graph.Float64, shape: []int{1, 4, 2}, want: []float64{3, 0, 1, -2, -1, 0, 1, 2}},
		{name: "truncated", op: "DFT", opset: 17, attrs: map[string]any{"axis": -2}, in: []*graph.Tensor{real4, i32([]int{}, 2)}, dt: graph.Float32, shape: []int{2, 2}, want: []float64{3, 0, -1, 0}},
		{name: "inverse", op: "DFT", opset: 17, attrs: map[string]any{"axis": 0, "inverse": 1}, in: []*graph.Tensor{f32([]int{4, 2}, 10, 0, -2, 2, -2, 0, -2, -2)}, dt: graph.Float32, shape: []int{4, 2}, want: []float64{1, 0, 2, 0, 3, 0, 4, 0}},
		{name: "irfft", op: "DFT", opset: 20, attrs: map[string]any{"inverse": 1, "onesided": 1}, in: []*graph.Tensor{f32([]int{3, 2}, 10, 0, -2, 2, -2, 0)}, dt: graph.Float32, shape: []int{4, 1}, want: []float64{1, 2, 3, 4}},
		// odd length 3 from 2 bins: X = [6, -1.5+0.866i] of [1,2,3]
		{name: "irfft_odd", op: "DFT", opset: 20, attrs: map[string]any{"inverse": 1, "onesided": 1}, in: []*graph.Tensor{f64([]int{2, 2}, 6, 0, -1.5, math.Sqrt(3)/2), i64([]int{}, 3)}, dt: graph.Float64, shape: []int{3, 1}, want: []float64{1, 2, 3}},
		// axis 1 of [2, 2, 1]: rows [1,2] and [3,4] -> [3,-1] and [7,-1]
		{name: "batched_axis", op: "DFT", opset: 20, in: []*graph.Tensor{f32([]int{2, 2, 1}, 1, 2, 3, 4), nil, i64([]int{}, -2)}, dt: graph.Float32, shape: []int{2, 2, 2}, want: []float64{3, 0, -1, 0, 7, 0, -1, 0}},
		{name: "axis0_of_3d", op: "DFT", opset: 20, in: []*graph.Tensor{f32([]int{2, 2, 1}, 1, 2, 3, 4), nil, i64([]int{}, 0)}, dt: graph.Float32, shape: []int{2, 2, 2}, want: []float64{4, 0, 6, 0, -2, 0, -2, 0}},
		{name: "bad_axis", op: "DFT", opset: 20, in: []*graph.Tensor{real4, nil, i64([]int{}, 1)}, err: kernels.ErrInvalid},
		{name: "bad_last_dim", op: "DFT", opset: 17, in: []*graph.Tensor{f32([]int{1, 3}, 1, 2, 3)}, err: kernels.ErrInvalid},
	})
}

func TestSTFT(t *testing.T) {
	sig := f32([]int{1, 6, 1}, 1, 2, 3, 4, 5, 6)
	runCases(t, []tcase{
		// frames [1,2,3,4] and [3,4,5,6]
		{name: "frames", op: "STFT", opset: 17, in: []*graph.Tensor{sig, i64([]int{}, 2), nil, i64([]int{}, 4)}, dt: graph.Float32, shape: []int{1, 2, 3, 2}, want: []float64{10, 0, -2, 2, -2, 0, 18, 0, -2, 2, -2, 0}},
		// window [1,0,1,0]: frames [1,0,3,0], [3,0,5,0] -> X[k] = a + b(-1)^k
		{name: "window_twosided", op: "STFT", opset: 17, attrs: map[string]any{"onesided": 0}, in: []*graph.Tensor{sig, i64([]int{}, 2), f32([]int{4}, 1, 0, 1, 0)}, dt: graph.Float32, shape: []int{1, 2, 4, 2}, want: []float64{4, 0, -2, 0, 4, 0, -2, 0, 8, 0, -2, 0, 8, 0, -2, 0}},
		{name: "mismatch", op: "STFT", opset: 17, in: []*graph.Tensor{sig, i64([]int{}, 2), f32([]int{4}, 1, 0, 1, 0), i64([]int{}, 3)}, err: kernels.ErrInvalid},
		{name: "too_long", op: "STFT", opset: 17, in: []*graph.Tensor{sig, i64([]int{}, 2), nil, i64([]int{}, 7)}, err: kernels.ErrInvalid},
	})
}

func TestEinsum(t *testing.T) {
	a := f32([]int{2, 3}, 1, 2, 3, 4, 5, 6)
	b := f32([]int{3, 2}, 1, 0, 0, 1, 1, 1)
	sq := f64([]int{2, 2}, 1, 2, 3, 4)
	eq := func(s string) map[string]any { return map[string]any{"equation": s} }
	runCases(t, []tcase{
		{name: "matmul_implicit", op: "Einsum", opset: 12, attrs: eq("ij,jk"), in: []*graph.Tensor{a, b}, dt: graph.Float32, shape: []int{2, 2}, want: []float64{4, 5, 10, 11}},
		{name: "transpose_implicit", op: "Einsum", opset: 12, attrs: eq("ba"), in: []*graph.Tensor{a}, dt: graph.Float32, shape: []int{3, 2}, want: []float64{1, 4, 2, 5, 3, 6}},
		{name: "trace_implicit", op: "Einsum", opset: 12, attrs: eq("ii"), in: []*graph.Tensor{sq}, dt: graph.Float64, shape: []int{}, want: []float64{5}},
		{name: "diag", op: "Einsum", opset: 12, attrs: eq("ii->i"), in: []*graph.Tensor{sq}, dt: graph.Float64, shape: []int{2}, want: []float64{1, 4}},
		{name: "outer", op: "Einsum", opset: 12, attrs: eq("i,j->ij"), in: []*graph.Tensor{f32([]int{2}, 1, 2), f32([]int{3}, 1, 10, 100)}, dt: graph.Float32, shape: []int{2, 3}, want: []float64{1, 10, 100, 2, 20, 200}},
		{name: "frobenius", op: "Einsum", opset: 12, attrs: eq("ij, ij ->"), in: []*graph.Tensor{sq, sq}, dt: graph.Float64, shape: []int{}, want: []float64{30}},
		{name: "chain3", op: "Einsum", opset: 12, attrs: eq("ij,jk,kl->il"), in: []*graph.Tensor{sq, sq, sq}, dt: graph.Float64, shape: []int{2, 2}, want: []float64{37, 54, 81, 118}},
		{name: "ellipsis_bcast", op: "Einsum", opset: 12, attrs: eq("...i,...i->..."), in: []*graph.Tensor{a, f32([]int{3}, 1, 1, 2)}, dt: graph.Float32, shape: []int{2}, want: []float64{9, 21}},
		{name: "ellipsis_implicit_first", op: "Einsum", opset: 12, attrs: eq("i..."), in: []*graph.Tensor{a}, dt: graph.Float32, shape: []int{3, 2}, want: []float64{1, 4, 2, 5, 3, 6}},
		{name: "ellipsis_middle", op: "Einsum", opset: 12, attrs: eq("i...j->j...i"), in: []*graph.Tensor{f32([]int{2, 1, 2}, 1, 2, 3, 4)}, dt: graph.Float32, shape: []int{2, 1, 2}, want: []float64{1, 3, 2, 4}},
		{name: "upper_before_lower", op: "Einsum", opset: 12, attrs: eq("bA"), in: []*graph.Tensor{a}, dt: graph.Float32, shape: []int{3, 2}, want: []float64{1, 4, 2, 5, 3, 6}},
		{name: "int_matmul", op: "Einsum", opset: 12, attrs: eq("ij,jk->ik"), in: []*graph.Tensor{i32([]int{2, 2}, 1, 2, 3, 4), i32([]int{2, 2}, 5, 6, 7, 8)}, dt: graph.Int32, shape: []int{2, 2}, want: []float64{19, 22, 43, 50}},
		{name: "zero_size_sum", op: "Einsum", opset: 12, attrs: eq("ij->i"), in: []*graph.Tensor{f32([]int{2, 0})}, dt: graph.Float32, shape: []int{2}, want: []float64{0, 0}},
		{name: "f16", op: "Einsum", opset: 12, attrs: eq("i->"), in: []*graph.Tensor{graph.MustFromSlice([]int{2}, []graph.F16{graph.F16FromFloat32(1.5), graph.F16FromFloat32(2)})}, dt: graph.Float16, shape: []int{}, want: []float64{3.5}},
		{name: "bad_rank", op: "Einsum", opset: 12, attrs: eq("ijk->i"), in: []*graph.Tensor{a}, err: kernels.ErrInvalid},
		{name: "bad_dims", op: "Einsum", opset: 12, attrs: eq("ij,ij->i"), in: []*graph.Tensor{a, b}, err: kernels.ErrInvalid},
		{name: "bad_output", op: "Einsum", opset: 12, attrs: eq("ij->k"), in: []*graph.Tensor{a}, err: kernels.ErrInvalid},
		{name: "bad_char", op: "Einsum", opset: 12, attrs: eq("i1->i"), in: []*graph.Tensor{a}, err: kernels.ErrInvalid},
		{name: "operand_count", op: "Einsum", opset: 12, attrs: eq("ij,jk->ik"), in: []*graph.Tensor{a}, err: kernels.ErrInvalid},
	})
}

func TestInfer(t *testing.T) {
	st := func(dt graph.DType, d ...int64) kernels.InferInput {
		return kernels.InferInput{Type: graph.ValueType{Kind: "tensor", DType: dt, Shape: dims(d...)}}
	}
	cst := func(t *graph.Tensor) kernels.InferInput {
		in := st(t.DType)
		in.Type.Shape = nil
		in.Const = t
		return in
	}
	cases := []struct {
		name  string
		op    string
		opset int64
		attrs map[string]any
		in    []kernels.InferInput
		want  string
	}{
		{"einsum", "Einsum", 12, map[string]any{"equation": "bij,bjk->bik"}, []kernels.InferInput{st(graph.Float32, 5, 2, 3), st(graph.Float32, 5, 3, 4)}, "float32[5,2,4]"},
		{"einsum_unknown", "Einsum", 12, map[string]any{"equation": "...ii->...i"}, []kernels.InferInput{st(graph.Float64, -1, 4, 4)}, "float64[?,4]"},
		{"dft20", "DFT", 20, map[string]any{"onesided": 1}, []kernels.InferInput{st(graph.Float32, 1, 10, 1)}, "float32[1,6,2]"},
		{"irfft", "DFT", 17, map[string]any{"inverse": 1, "onesided": 1}, []kernels.InferInput{st(graph.Float32, 1, 6, 2)}, "float32[1,10,1]"},
		{"unique", "Unique", 11, nil, []kernels.InferInput{st(graph.Int64, 2, 3)}, "int64[?]"},
		{"crop", "CenterCropPad", 18, map[string]any{"axes": []int64{1}}, []kernels.InferInput{st(graph.Float32, 3, 7), cst(i64([]int{1}, 4))}, "float32[3,4]"},
		{"hann", "HannWindow", 17, map[string]any{"output_datatype": int(graph.Float64)}, []kernels.InferInput{cst(i64([]int{}, 8))}, "float64[8]"},
		{"mel", "MelWeightMatrix", 17, nil, []kernels.InferInput{cst(i32([]int{}, 8)), cst(i32([]int{}, 16)), st(graph.Int32), st(graph.Float32), st(graph.Float32)}, "float32[9,8]"},
		{"det", "Det", 11, nil, []kernels.InferInput{st(graph.Float32, 3, 2, 2)}, "float32[3]"},
		{"eyelike", "EyeLike", 9, map[string]any{"dtype": int(graph.Float64)}, []kernels.InferInput{st(graph.Int32, 3, 4)}, "float64[3,4]"},
		{"compress", "Compress", 11, map[string]any{"axis": 1}, []kernels.InferInput{st(graph.Float32, 3, 4), st(graph.Bool, 4)}, "float32[3,?]"},
		{"stft", "STFT", 17, nil, []kernels.InferInput{st(graph.Float32, 2, 128, 1), st(graph.Int64)}, "float32[2,?,?,2]"},
	}
	for _, c := range cases {
		s, _ := kernels.Lookup("", c.op)
		n := node(c.op, len(c.in), 1, c.attrs)
		got, err := s.Infer(n, c.opset, c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got[0].String() != c.want {
			t.Fatalf("%s: got %v, want %s", c.name, got[0], c.want)
		}
	}
	s, _ := kernels.Lookup("", "Einsum")
	if _, err := s.Infer(node("Einsum", 2, 1, map[string]any{"equation": "ij,jk"}), 12, []kernels.InferInput{st(graph.Float32, 2, 3), st(graph.Float32, 4, 2)}); !errors.Is(err, kernels.ErrInvalid) {
		t.Fatalf("einsum mismatch: %v", err)
	}
}

// dims spells a shape; a negative value is an unknown dim.
func dims(v ...int64) graph.Shape {
	s := make(graph.Shape, len(v))
	for i, x := range v {
		if x < 0 {
			s[i] = graph.Dim{Value: -1}
		} else {
			s[i] = graph.Dim{Value: x}
		}
	}
	return s
}
