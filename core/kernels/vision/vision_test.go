package vision

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// ---- helpers ----

type attrs map[string]any

func node(op string, nin int, a attrs) *graph.Node {
	n := &graph.Node{OpType: op, Attrs: map[string]*graph.Attribute{}, Outputs: []string{"y"}}
	for i := 0; i < nin; i++ {
		n.Inputs = append(n.Inputs, fmt.Sprintf("in%d", i))
	}
	for k, v := range a {
		at := &graph.Attribute{Name: k}
		switch v := v.(type) {
		case int:
			at.Type, at.I = graph.AttrInt, int64(v)
		case float64:
			at.Type, at.F = graph.AttrFloat, float32(v)
		case string:
			at.Type, at.S = graph.AttrString, v
		case []int64:
			at.Type, at.Ints = graph.AttrInts, v
		default:
			panic("bad attr")
		}
		n.Attrs[k] = at
	}
	return n
}

func runK(opset int64, n *graph.Node, in ...*graph.Tensor) (out []*graph.Tensor, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	s, ok := kernels.Lookup("", n.OpType)
	if !ok {
		return nil, fmt.Errorf("%s not registered", n.OpType)
	}
	return s.Kernel(&kernels.Context{Opset: opset}, n, in)
}

func f32(shape []int, v ...float32) *graph.Tensor { return graph.MustFromSlice(shape, v) }
func i64(shape []int, v ...int64) *graph.Tensor   { return graph.MustFromSlice(shape, v) }
func sh(d ...int) []int                           { return d }

func near(t *testing.T, what string, got *graph.Tensor, shape []int, want []float64) {
	t.Helper()
	if !graph.SameShape(got.Shape, shape) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape, shape)
	}
	g := got.Float64s()
	if len(g) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(g), len(want))
	}
	for i := range want {
		if math.IsNaN(want[i]) != math.IsNaN(g[i]) || math.Abs(g[i]-want[i]) > 1e-5*(1+math.Abs(want[i])) {
			t.Fatalf("%s: [%d] = %v, want %v (all: %v)", what, i, g[i], want[i], g)
		}
	}
}

type kcase struct {
	name  string
	opset int64
	n     *graph.Node
	in    []*graph.Tensor
	shape []int
	want  []float64
}

func runCases(t *testing.T, cases []kcase) {
	t.Helper()
	for _, c := range cases {
		out, err := runK(c.opset, c.n, c.in...)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		near(t, c.name, out[0], c.shape, c.want)
		if out[0].DType != c.in[0].DType && c.n.OpType != "NonMaxSuppression" {
			t.Fatalf("%s: dtype %v, want %v", c.name, out[0].DType, c.in[0].DType)
		}
	}
}

// ---- NonMaxSuppression ----

func TestNonMaxSuppression(t *testing.T) {
	// (y1, x1, y2, x2); b1 overlaps b0 with IoU 0.9/1.1, b2 is disjoint,
	// b3 duplicates b0 with a low score.
	boxes := f32(sh(1, 4, 4), 0, 0, 1, 1, 0, 0.1, 1, 1.1, 0, 2, 1, 3, 1, 1, 0, 0)
	scores := f32(sh(1, 1, 4), 0.9, 0.8, 0.7, 0.1)
	centers := f32(sh(1, 4, 4), 0.5, 0.5, 1, 1, 0.6, 0.5, 1, 1, 2.5, 0.5, 1, 1, 0.5, 0.5, 1, 1)
	two := f32(sh(1, 2, 4), 0.9, 0.8, 0.7, 0.1, 0.1, 0.7, 0.8, 0.9)
	nms := func(a attrs) *graph.Node { return node("NonMaxSuppression", 5, a) }
	cases := []kcase{
		{"basic", 11, nms(nil), []*graph.Tensor{boxes, scores, i64(sh(1), 3), f32(sh(1), 0.5), f32(sh(1), 0.2)}, sh(2, 3), []float64{0, 0, 0, 0, 0, 2}},
		{"limit", 11, nms(nil), []*graph.Tensor{boxes, scores, i64(sh(1), 1), f32(sh(1), 0.5), f32(sh(1), 0.2)}, sh(1, 3), []float64{0, 0, 0}},
		{"high iou keeps b1; no score threshold", 10, nms(nil), []*graph.Tensor{boxes, scores, i64(sh(), 10), f32(sh(), 0.9)}, sh(3, 3), []float64{0, 0, 0, 0, 0, 1, 0, 0, 2}},
		{"score threshold is strict", 11, nms(nil), []*graph.Tensor{boxes, scores, i64(sh(1), 10), f32(sh(1), 0.9), f32(sh(1), 0.7)}, sh(2, 3), []float64{0, 0, 0, 0, 0, 1}},
		{"no max_output gives nothing", 11, nms(nil), []*graph.Tensor{boxes, scores}, sh(0, 3), nil},
		{"center_point_box", 11, nms(attrs{"center_point_box": 1}), []*graph.Tensor{centers, scores, i64(sh(1), 3), f32(sh(1), 0.5), f32(sh(1), 0.2)}, sh(2, 3), []float64{0, 0, 0, 0, 0, 2}},
		{"two classes", 11, nms(nil), []*graph.Tensor{boxes, two, i64(sh(1), 3), f32(sh(1), 0.5), f32(sh(1), 0.2)}, sh(4, 3), []float64{0, 0, 0, 0, 0, 2, 0, 1, 3, 0, 1, 2}},
	}
	runCases(t, cases)
	out, _ := runK(11, nms(nil), boxes, scores, i64(sh(1), 3))
	if out[0].DType != graph.Int64 {
		t.Fatalf("dtype %v", out[0].DType)
	}
}

// ---- GridSample ----

func TestGridSample(t *testing.T) {
	x := f32(sh(1, 1, 2, 2), 1, 2, 3, 4)
	grid := func(v ...float32) *graph.Tensor { return f32(sh(1, 1, len(v)/2, 2), v...) }
	gs := func(a attrs) *graph.Node { return node("GridSample", 2, a) }
	cases := []kcase{
		{"bilinear centre and corner", 16, gs(nil), []*graph.Tensor{x, grid(0, 0, -1, -1)}, sh(1, 1, 1, 2), []float64{2.5, 0.25}},
		{"border", 16, gs(attrs{"padding_mode": "border"}), []*graph.Tensor{x, grid(-1, -1, 5, 5)}, sh(1, 1, 1, 2), []float64{1, 4}},
		{"reflection", 16, gs(attrs{"padding_mode": "reflection"}), []*graph.Tensor{x, grid(-1, -1, 3, 0)}, sh(1, 1, 1, 2), []float64{1, 2}},
		{"align_corners", 20, gs(attrs{"align_corners": 1, "mode": "linear"}), []*graph.Tensor{x, grid(1, 1, 0, 0, 1, -1)}, sh(1, 1, 1, 3), []float64{4, 2.5, 2}},
		{"nearest rounds half to even", 16, gs(attrs{"mode": "nearest"}), []*graph.Tensor{x, grid(0, 0, 0.5, 0, 2, 0)}, sh(1, 1, 1, 3), []float64{1, 2, 0}},
		{"bicubic at a pixel", 16, gs(attrs{"mode": "bicubic", "align_corners": 1}), []*graph.Tensor{x, grid(-1, -1, 1, -1)}, sh(1, 1, 1, 2), []float64{1, 2}},
		{"1-D linear (opset 20)", 20, gs(nil), []*graph.Tensor{f32(sh(1, 1, 3), 0, 10, 20), f32(sh(1, 2, 1), 0, 1.0/3)}, sh(1, 1, 2), []float64{10, 15}},
	}
	runCases(t, cases)
	// integer input: nearest copies exactly; linear truncates
	xi := graph.MustFromSlice(sh(1, 1, 2, 2), []int64{1<<60 + 1, 2, 3, 4})
	out, err := runK(16, gs(attrs{"mode": "nearest"}), xi, grid(-0.5, -0.5))
	if err != nil || graph.Data[int64](out[0])[0] != 1<<60+1 {
		t.Fatalf("int64 nearest: %v %v", out, err)
	}
	xi = graph.MustFromSlice(sh(1, 1, 2, 2), []int32{1, 2, 3, 4})
	out, err = runK(16, gs(nil), xi, grid(0, 0))
	if err != nil || graph.Data[int32](out[0])[0] != 2 {
		t.Fatalf("int32 bilinear: %v %v", out, err)
	}
	if _, err := runK(16, gs(nil), f32(sh(1, 1, 2, 2, 2), make([]float32, 8)...), f32(sh(1, 1, 1, 1, 3), 0, 0, 0)); !errors.Is(err, kernels.ErrInvalid) {
		t.Fatalf("5-D input at opset 16: %v", err)
	}
}

func TestGSReflect(t *testing.T) {
	for _, c := range []struct{ x, lo, hi, want float64 }{
		{-1, -0.5, 1.5, 0}, {3.5, -0.5, 1.5, -0.5}, {2, -0.5, 1.5, 1}, {-3, 0, 2, 1}, {0.3, 0, 2, 0.3}, {5, 0, 0, 0},
	} {
		if got := gsReflect(c.x, c.lo, c.hi); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("gsReflect(%v, %v, %v) = %v, want %v", c.x, c.lo, c.hi, got, c.want)
		}
	}
}

// ---- AffineGrid ----

func TestAffineGrid(t *testing.T) {
	id := f32(sh(1, 2, 3), 1, 0, 0, 0, 1, 0)
	sc := f32(sh(1, 2, 3), 2, 0, 1, 0, 1, 0)
	size := i64(sh(4), 1, 1, 2, 3)
	ag := func(a attrs) *graph.Node { return node("AffineGrid", 2, a) }
	t3 := float64(float32(2.0 / 3))
	cases := []kcase{
		{"identity", 20, ag(nil), []*graph.Tensor{id, size}, sh(1, 2, 3, 2), []float64{-t3, -0.5, 0, -0.5, t3, -0.5, -t3, 0.5, 0, 0.5, t3, 0.5}},
		{"align_corners", 20, ag(attrs{"align_corners": 1}), []*graph.Tensor{id, size}, sh(1, 2, 3, 2), []float64{-1, -1, 0, -1, 1, -1, -1, 1, 0, 1, 1, 1}},
		{"scale and shift", 20, ag(attrs{"align_corners": 1}), []*graph.Tensor{sc, size}, sh(1, 2, 3, 2), []float64{-1, -1, 1, -1, 3, -1, -1, 1, 1, 1, 3, 1}},
		{"3-D", 20, ag(attrs{"align_corners": 1}), []*graph.Tensor{f32(sh(1, 3, 4), 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0), i64(sh(5), 1, 1, 2, 1, 1)}, sh(1, 2, 1, 1, 3), []float64{-1, -1, -1, -1, -1, 1}},
	}
	runCases(t, cases)
}

// ---- Col2Im ----

func TestCol2Im(t *testing.T) {
	c2 := func(a attrs) *graph.Node { return node("Col2Im", 3, a) }
	cases := []kcase{
		{"overlap sums", 18, c2(nil), []*graph.Tensor{f32(sh(1, 2, 2), 1, 2, 3, 4), i64(sh(2), 1, 3), i64(sh(2), 1, 2)}, sh(1, 1, 1, 3), []float64{1, 5, 4}},
		{"strides and pads", 18, c2(attrs{"strides": []int64{1, 2}, "pads": []int64{0, 1, 0, 1}}), []*graph.Tensor{f32(sh(1, 2, 2), 1, 2, 3, 4), i64(sh(2), 1, 2), i64(sh(2), 1, 2)}, sh(1, 1, 1, 2), []float64{3, 2}},
		{"dilations, 2 channels", 18, c2(attrs{"dilations": []int64{1, 2}}), []*graph.Tensor{f32(sh(1, 4, 1), 1, 2, 3, 4), i64(sh(2), 1, 3), i64(sh(2), 1, 2)}, sh(1, 2, 1, 3), []float64{1, 0, 2, 3, 0, 4}},
	}
	runCases(t, cases)
	out, err := runK(18, c2(nil), graph.MustFromSlice(sh(1, 2, 2), []int64{1 << 60, 2, 3, 4}), i64(sh(2), 1, 3), i64(sh(2), 1, 2))
	if err != nil || graph.Data[int64](out[0])[1] != 5 || graph.Data[int64](out[0])[0] != 1<<60 {
		t.Fatalf("int64 col2im: %v %v", out, err)
	}
	if _, err := runK(18, c2(nil), f32(sh(1, 2, 3), 1, 2, 3, 4, 5, 6), i64(sh(2), 1, 3), i64(sh(2), 1, 2)); !errors.Is(err, kernels.ErrInvalid) {
		t.Fatalf("wrong L: %v", err)
	}
}

// ---- RoiAlign / MaxRoiPool ----

func TestRoiAlign(t *testing.T) {
	ramp := make([]float32, 16) // value = column index
	for i := range ramp {
		ramp[i] = float32(i % 4)
	}
	x := f32(sh(1, 1, 4, 4), ramp...)
	ra := func(a attrs) *graph.Node {
		b := attrs{"sampling_ratio": 2}
		for k, v := range a {
			b[k] = v
		}
		return node("RoiAlign", 3, b)
	}
	bi := i64(sh(1), 0)
	cases := []kcase{
		{"avg, output_half_pixel (opset 10)", 10, ra(nil), []*graph.Tensor{x, f32(sh(1, 4), 0, 0, 3, 3), bi}, sh(1, 1, 1, 1), []float64{1.5}},
		{"avg, half_pixel", 16, ra(nil), []*graph.Tensor{x, f32(sh(1, 4), 0.5, 0.5, 3.5, 3.5), bi}, sh(1, 1, 1, 1), []float64{1.5}},
		{"max of weighted corners", 16, ra(attrs{"mode": "max", "coordinate_transformation_mode": "output_half_pixel"}), []*graph.Tensor{x, f32(sh(1, 4), 0, 0, 3, 3), bi}, sh(1, 1, 1, 1), []float64{1.125}},
		{"2 bins, spatial_scale", 16, ra(attrs{"output_width": 2, "spatial_scale": 0.5}), []*graph.Tensor{x, f32(sh(1, 4), 1, 1, 7, 7), bi}, sh(1, 1, 1, 2), []float64{0.75, 2.25}},
	}
	runCases(t, cases)
	if _, err := runK(16, ra(nil), x, f32(sh(1, 4), 0, 0, 3, 3), i64(sh(1), 1)); !errors.Is(err, kernels.ErrInvalid) {
		t.Fatalf("bad batch index: %v", err)
	}
}

func TestMaxRoiPool(t *testing.T) {
	v := make([]float32, 16)
	for i := range v {
		v[i] = float32(i)
	}
	x := f32(sh(1, 1, 4, 4), v...)
	cases := []kcase{
		{"whole image 2x2", 1, node("MaxRoiPool", 2, attrs{"pooled_shape": []int64{2, 2}}), []*graph.Tensor{x, f32(sh(1, 5), 0, 0, 0, 3, 3)}, sh(1, 1, 2, 2), []float64{5, 7, 13, 15}},
		{"inner roi", 1, node("MaxRoiPool", 2, attrs{"pooled_shape": []int64{1, 1}}), []*graph.Tensor{x, f32(sh(1, 5), 0, 1, 1, 2, 2)}, sh(1, 1, 1, 1), []float64{10}},
		{"spatial_scale", 1, node("MaxRoiPool", 2, attrs{"pooled_shape": []int64{1, 1}, "spatial_scale": 0.5}), []*graph.Tensor{x, f32(sh(1, 5), 0, 0, 0, 2, 2)}, sh(1, 1, 1, 1), []float64{5}},
	}
	runCases(t, cases)
}

// ---- LpPool / MaxUnpool ----

func TestLpPool(t *testing.T) {
	x := f32(sh(1, 1, 4), 1, -2, 3, -4)
	lp := func(a attrs) *graph.Node { return node("LpPool", 1, a) }
	cases := []kcase{
		{"p=2", 11, lp(attrs{"kernel_shape": []int64{2}, "strides": []int64{2}}), []*graph.Tensor{x}, sh(1, 1, 2), []float64{math.Sqrt(5), 5}},
		{"p=1 float attr (opset 1)", 1, lp(attrs{"kernel_shape": []int64{2}, "strides": []int64{2}, "p": 1.0}), []*graph.Tensor{x}, sh(1, 1, 2), []float64{3, 7}},
		{"pads", 11, lp(attrs{"kernel_shape": []int64{2}, "strides": []int64{2}, "p": 1, "pads": []int64{1, 1}}), []*graph.Tensor{x}, sh(1, 1, 3), []float64{1, 5, 4}},
		{"p=3", 11, lp(attrs{"kernel_shape": []int64{2}, "strides": []int64{2}, "p": 3}), []*graph.Tensor{x}, sh(1, 1, 2), []float64{math.Cbrt(9), math.Cbrt(91)}},
		{"ceil_mode", 18, lp(attrs{"kernel_shape": []int64{2}, "strides": []int64{2}, "p": 1, "ceil_mode": 1}), []*graph.Tensor{f32(sh(1, 1, 5), 1, 1, 1, 1, 1)}, sh(1, 1, 3), []float64{2, 2, 1}},
		{"dilations", 18, lp(attrs{"kernel_shape": []int64{2}, "p": 1, "dilations": []int64{2}}), []*graph.Tensor{x}, sh(1, 1, 2), []float64{4, 6}},
		{"same_upper 2-D", 18, lp(attrs{"kernel_shape": []int64{2, 2}, "p": 1, "auto_pad": "SAME_UPPER"}), []*graph.Tensor{f32(sh(1, 1, 2, 2), 1, 2, 3, 4)}, sh(1, 1, 2, 2), []float64{10, 6, 7, 4}},
		{"same_lower 2-D", 18, lp(attrs{"kernel_shape": []int64{2, 2}, "p": 1, "auto_pad": "SAME_LOWER"}), []*graph.Tensor{f32(sh(1, 1, 2, 2), 1, 2, 3, 4)}, sh(1, 1, 2, 2), []float64{1, 3, 4, 10}},
	}
	runCases(t, cases)
}

func TestMaxUnpool(t *testing.T) {
	x := f32(sh(1, 1, 2, 2), 5, 6, 7, 8)
	idx := i64(sh(1, 1, 2, 2), 5, 7, 13, 15)
	mu := node("MaxUnpool", 3, attrs{"kernel_shape": []int64{2, 2}, "strides": []int64{2, 2}})
	want4 := make([]float64, 16)
	want4[5], want4[7], want4[13], want4[15] = 5, 6, 7, 8
	want5 := make([]float64, 25)
	want5[6], want5[8], want5[16], want5[18] = 5, 6, 7, 8
	cases := []kcase{
		{"inferred shape", 11, mu, []*graph.Tensor{x, idx}, sh(1, 1, 4, 4), want4},
		{"output_shape", 11, mu, []*graph.Tensor{x, idx, i64(sh(4), 1, 1, 5, 5)}, sh(1, 1, 5, 5), want5},
		{"pads shrink", 9, node("MaxUnpool", 2, attrs{"kernel_shape": []int64{2, 2}, "strides": []int64{2, 2}, "pads": []int64{1, 1, 1, 1}}), []*graph.Tensor{x, i64(sh(1, 1, 2, 2), 0, 1, 2, 3)}, sh(1, 1, 2, 2), []float64{5, 6, 7, 8}},
	}
	runCases(t, cases)
	if _, err := runK(11, mu, x, i64(sh(1, 1, 2, 2), 5, 7, 13, 16)); !errors.Is(err, kernels.ErrInvalid) {
		t.Fatalf("index out of range: %v", err)
	}
	if _, err := runK(11, mu, x, idx, i64(sh(4), 1, 1, 3, 3)); !errors.Is(err, kernels.ErrInvalid) {
		t.Fatalf("output_shape too small: %v", err)
	}
}

// ---- DeformConv ----

func TestDeformConv(t *testing.T) {
	v := make([]float32, 9)
	for i := range v {
		v[i] = float32(i)
	}
	x := f32(sh(1, 1, 3, 3), v...)
	w := f32(sh(1, 1, 2, 2), 1, 1, 1, 1)
	zero := f32(sh(1, 8, 2, 2), make([]float32, 32)...)
	half := make([]float32, 32) // dw = 0.5 at every tap
	for k := 0; k < 4; k++ {
		for o := 0; o < 4; o++ {
			half[(2*k+1)*4+o] = 0.5
		}
	}
	hx := f32(sh(1, 8, 2, 2), half...)
	dc := node("DeformConv", 5, nil)
	mask := f32(sh(1, 4, 2, 2), fill(16, 0.5)...)
	cases := []kcase{
		{"zero offsets = conv", 19, dc, []*graph.Tensor{x, w, zero}, sh(1, 1, 2, 2), []float64{8, 12, 20, 24}},
		{"half-pixel offsets", 19, dc, []*graph.Tensor{x, w, hx}, sh(1, 1, 2, 2), []float64{10, 9.5, 22, 18.5}},
		{"bias and mask", 22, dc, []*graph.Tensor{x, w, hx, f32(sh(1), 1), mask}, sh(1, 1, 2, 2), []float64{6, 5.75, 12, 10.25}},
	}
	runCases(t, cases)
	if _, err := runK(19, dc, x, w, f32(sh(1, 8, 3, 3), make([]float32, 72)...)); !errors.Is(err, kernels.ErrInvalid) {
		t.Fatalf("bad offset shape: %v", err)
	}
}

func fill(n int, v float32) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// ---- robustness and inference ----

func TestBadInputsDoNotPanic(t *testing.T) {
	f := f32(sh(2), 1, 2)
	for _, op := range []string{"NonMaxSuppression", "GridSample", "AffineGrid", "Col2Im", "RoiAlign", "MaxRoiPool", "LpPool", "MaxUnpool", "DeformConv"} {
		for nin := 0; nin <= 5; nin++ {
			in := make([]*graph.Tensor, nin)
			for i := range in {
				in[i] = f
			}
			_, err := runK(20, node(op, nin, attrs{"kernel_shape": []int64{1}}), in...)
			if err == nil {
				t.Errorf("%s with %d bad inputs: no error", op, nin)
			}
			if err != nil && !errors.Is(err, kernels.ErrInvalid) && !errors.Is(err, kernels.ErrUnsupported) {
				t.Errorf("%s with %d bad inputs: unclassified error %v", op, nin, err)
			}
		}
	}
}

func TestFloat16(t *testing.T) {
	h := func(v ...float32) *graph.Tensor {
		d := make([]graph.F16, len(v))
		for i, x := range v {
			d[i] = graph.F16FromFloat32(x)
		}
		return graph.MustFromSlice(sh(1, 1, len(v)), d)
	}
	out, err := runK(18, node("LpPool", 1, attrs{"kernel_shape": []int64{2}, "strides": []int64{2}}), h(3, 4))
	if err != nil || out[0].DType != graph.Float16 || out[0].Float64At(0) != 5 {
		t.Fatalf("float16 LpPool: %v %v", out, err)
	}
	bx := graph.MustFromSlice(sh(1, 1, 2, 2), []graph.BF16{graph.BF16FromFloat32(1), graph.BF16FromFloat32(2), graph.BF16FromFloat32(3), graph.BF16FromFloat32(4)})
	out, err = runK(22, node("GridSample", 2, nil), bx, graph.MustFromSlice(sh(1, 1, 1, 2), []graph.BF16{0, 0}))
	if err != nil || out[0].DType != graph.BFloat16 || out[0].Float64At(0) != 2.5 {
		t.Fatalf("bfloat16 GridSample: %v %v", out, err)
	}
	b64 := graph.MustFromSlice(sh(1, 2, 4), []float64{0, 0, 1, 1, 0, 0, 1, 1})
	s64 := graph.MustFromSlice(sh(1, 1, 2), []float64{0.5, 0.6})
	out, err = runK(11, node("NonMaxSuppression", 3, nil), b64, s64, i64(sh(1), 5))
	if err != nil || !graph.SameShape(out[0].Shape, sh(1, 3)) || graph.Data[int64](out[0])[2] != 1 {
		t.Fatalf("float64 NonMaxSuppression: %v %v", out, err)
	}
}

func TestInfer(t *testing.T) {
	st := func(dt graph.DType, d ...int) kernels.InferInput {
		return kernels.InferInput{Type: graph.ValueType{Kind: "tensor", DType: dt, Shape: graph.StaticShape(d...)}}
	}
	cst := func(t *graph.Tensor) kernels.InferInput {
		return kernels.InferInput{Type: graph.ValueType{Kind: "tensor", DType: t.DType, Shape: graph.StaticShape(t.Shape...)}, Const: t}
	}
	cases := []struct {
		n    *graph.Node
		in   []kernels.InferInput
		want string
	}{
		{node("GridSample", 2, nil), []kernels.InferInput{st(graph.Float32, 2, 3, 4, 4), st(graph.Float32, 2, 5, 6, 2)}, "float32[2,3,5,6]"},
		{node("AffineGrid", 2, nil), []kernels.InferInput{st(graph.Float32, 2, 3, 4), cst(i64(sh(5), 2, 1, 4, 5, 6))}, "float32[2,4,5,6,3]"},
		{node("Col2Im", 3, nil), []kernels.InferInput{st(graph.Float32, 1, 10, 9), cst(i64(sh(2), 5, 5)), cst(i64(sh(2), 1, 5))}, "float32[1,2,5,5]"},
		{node("RoiAlign", 3, attrs{"output_height": 3}), []kernels.InferInput{st(graph.Float32, 1, 4, 9, 9), st(graph.Float32, 7, 4), st(graph.Int64, 7)}, "float32[7,4,3,1]"},
		{node("LpPool", 1, attrs{"kernel_shape": []int64{3, 3}, "pads": []int64{1, 1, 1, 1}}), []kernels.InferInput{st(graph.Float64, 1, 2, 5, 5)}, "float64[1,2,5,5]"},
		{node("MaxUnpool", 2, attrs{"kernel_shape": []int64{2, 2}, "strides": []int64{2, 2}}), []kernels.InferInput{st(graph.Float32, 1, 1, 2, 3), st(graph.Int64, 1, 1, 2, 3)}, "float32[1,1,4,6]"},
		{node("NonMaxSuppression", 2, nil), []kernels.InferInput{st(graph.Float32, 1, 6, 4), st(graph.Float32, 1, 1, 6)}, "int64[?,3]"},
		{node("DeformConv", 3, nil), []kernels.InferInput{st(graph.Float32, 1, 1, 3, 3), st(graph.Float32, 4, 1, 2, 2), st(graph.Float32, 1, 8, 2, 2)}, "float32[1,4,2,2]"},
	}
	for _, c := range cases {
		s, _ := kernels.Lookup("", c.n.OpType)
		got, err := s.Infer(c.n, 20, c.in)
		if err != nil || len(got) != 1 || got[0].String() != c.want {
			t.Errorf("%s: got %v, %v; want %s", c.n.OpType, got, err, c.want)
		}
	}
}
