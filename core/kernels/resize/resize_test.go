package resize

import (
	"errors"
	"math"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func node(op string, inputs []string, attrs ...*graph.Attribute) *graph.Node {
	n := &graph.Node{OpType: op, Inputs: inputs, Outputs: []string{"y"}, Attrs: map[string]*graph.Attribute{}}
	for _, a := range attrs {
		n.Attrs[a.Name] = a
	}
	return n
}

func sAttr(name, v string) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrString, S: v}
}
func iAttr(name string, v int64) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrInt, I: v}
}
func fAttr(name string, v float32) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrFloat, F: v}
}
func fsAttr(name string, v ...float32) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrFloats, Floats: v}
}
func isAttr(name string, v ...int64) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrInts, Ints: v}
}

func runOp(t *testing.T, opset int64, n *graph.Node, in ...*graph.Tensor) (*graph.Tensor, error) {
	t.Helper()
	s, ok := kernels.Lookup("", n.OpType)
	if !ok {
		t.Fatalf("%s not registered", n.OpType)
	}
	if err := kernels.CheckNode(n, opset); err != nil {
		return nil, err
	}
	out, err := s.Kernel(&kernels.Context{Opset: opset}, n, in)
	if err != nil {
		return nil, err
	}
	if len(out) != 1 || out[0].Check() != nil {
		t.Fatalf("bad outputs %v", out)
	}
	return out[0], nil
}

func f32(shape []int, v ...float32) *graph.Tensor { return graph.MustFromSlice(shape, v) }
func i64(v ...int64) *graph.Tensor                { return graph.MustFromSlice([]int{len(v)}, v) }

func TestResizeValues(t *testing.T) {
	x2x2 := f32([]int{1, 1, 2, 2}, 1, 2, 3, 4)
	x4 := f32([]int{4}, 1, 2, 4, 8)
	tests := []struct {
		name  string
		opset int64
		n     *graph.Node
		in    []*graph.Tensor
		shape []int
		want  []float64
	}{
		{
			// Upsample-7: nearest with integer scales repeats elements.
			name: "upsample7_nearest", opset: 7,
			n:     node("Upsample", []string{"x"}, fsAttr("scales", 1, 1, 2, 3)),
			in:    []*graph.Tensor{x2x2},
			shape: []int{1, 1, 4, 6},
			want:  []float64{1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4},
		},
		{
			// Upsample-9 linear, asymmetric: x_ori = x/2, clamped at the edge.
			name: "upsample9_linear", opset: 9,
			n:     node("Upsample", []string{"x", "s"}, sAttr("mode", "linear")),
			in:    []*graph.Tensor{f32([]int{2}, 1, 3), f32([]int{1}, 2)},
			shape: []int{4},
			want:  []float64{1, 2, 3, 3},
		},
		{
			// Resize-10 nearest downsample: asymmetric coordinates, floor.
			// width: x=0 -> 0, x=1 -> 1/0.6 = 1.67 -> 1.
			name: "resize10_nearest_down", opset: 10,
			n:     node("Resize", []string{"x", "s"}),
			in:    []*graph.Tensor{f32([]int{1, 1, 2, 4}, 1, 2, 3, 4, 5, 6, 7, 8), f32([]int{4}, 1, 1, 0.6, 0.6)},
			shape: []int{1, 1, 1, 2},
			want:  []float64{1, 2},
		},
		{
			// half_pixel linear: x_ori = -0.25, 0.25, 0.75, 1.25 (edges clamp).
			name: "linear_half_pixel", opset: 13,
			n:     node("Resize", []string{"x", "", "s"}, sAttr("mode", "linear")),
			in:    []*graph.Tensor{f32([]int{2}, 1, 2), nil, f32([]int{1}, 2)},
			shape: []int{4},
			want:  []float64{1, 1.25, 1.75, 2},
		},
		{
			// cubic, asymmetric, x=3 -> x_ori 1.5: coefficients at ratio 0.5
			// with A=-0.75 are -0.09375, 0.59375, 0.59375, -0.09375.
			name: "cubic_asymmetric", opset: 13,
			n:     node("Resize", []string{"x", "", "s"}, sAttr("mode", "cubic"), sAttr("coordinate_transformation_mode", "asymmetric")),
			in:    []*graph.Tensor{x4, nil, f32([]int{1}, 2)},
			shape: []int{8},
			// x=1: x_ori .5 taps -1..2 -> clamp(-1)=0: -0.09375*1+0.59375*1+0.59375*2-0.09375*4
			// x=5: x_ori 2.5 taps 1..4 (4 clamps to 3): -.09375*2+.59375*4+.59375*8-.09375*8
			want: []float64{1, 1.3125, 2, 2.71875, 4, 6.1875, 8, 8.375},
		},
		{
			// sizes with not_larger: scales 7/2 and 8/2 -> 3.5; out = round(3.5*2) = 7.
			name: "sizes_not_larger", opset: 18,
			n:     node("Resize", []string{"x", "", "", "sz"}, isAttr("axes", -2, -1), sAttr("keep_aspect_ratio_policy", "not_larger")),
			in:    []*graph.Tensor{f32([]int{2, 1}, 1, 2), nil, nil, i64(7, 8)},
			shape: []int{7, 4},
			// rows: x_ori = (x+.5)/3.5-.5 -> 0 for x<=3 (x=3: 0.5 rounds down), 1 after
			want: []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2},
		},
		{
			// tf_crop_and_resize with extrapolation: roi [0.5, 1.5] over 3
			// samples: x_ori = 1, 2, 3 (3 > in-1 = 2 extrapolates).
			name: "tf_crop_extrapolate", opset: 13,
			n: node("Resize", []string{"x", "roi", "", "sz"}, sAttr("mode", "linear"),
				sAttr("coordinate_transformation_mode", "tf_crop_and_resize"), fAttr("extrapolation_value", -7)),
			in:    []*graph.Tensor{f32([]int{3}, 10, 20, 30), f32([]int{2}, 0.5, 1.5), nil, i64(3)},
			shape: []int{3},
			want:  []float64{20, 30, -7},
		},
		{
			// align_corners linear 2 -> 3: x_ori = 0, 0.5, 1.
			name: "align_corners", opset: 11,
			n:     node("Resize", []string{"x", "roi", "s", "sz"}, sAttr("mode", "linear"), sAttr("coordinate_transformation_mode", "align_corners")),
			in:    []*graph.Tensor{f32([]int{2}, 2, 4), f32([]int{0}), f32([]int{0}), i64(3)},
			shape: []int{3},
			want:  []float64{2, 3, 4},
		},
		{
			// NaN on an axis that is not resized stays in its row.
			name: "nan_stays_in_row", opset: 13,
			n:     node("Resize", []string{"x", "", "s"}, sAttr("mode", "linear")),
			in:    []*graph.Tensor{f32([]int{2, 2}, float32(math.NaN()), 1, 2, 4), nil, f32([]int{2}, 1, 2)},
			shape: []int{2, 4},
			want:  []float64{math.NaN(), math.NaN(), math.NaN(), 1, 2, 2.5, 3.5, 4},
		},
		{
			// empty axis resizes to an empty output
			name: "empty", opset: 13,
			n:     node("Resize", []string{"x", "", "s"}),
			in:    []*graph.Tensor{f32([]int{0, 2}), nil, f32([]int{2}, 1, 2)},
			shape: []int{0, 4},
			want:  []float64{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := runOp(t, tc.opset, tc.n, tc.in...)
			if err != nil {
				t.Fatal(err)
			}
			if !graph.SameShape(got.Shape, tc.shape) {
				t.Fatalf("shape %v, want %v", got.Shape, tc.shape)
			}
			for i, w := range tc.want {
				g := got.Float64At(i)
				if math.IsNaN(w) != math.IsNaN(g) || (!math.IsNaN(w) && math.Abs(g-w) > 1e-6) {
					t.Fatalf("element %d = %g, want %g (all %v)", i, g, w, got)
				}
			}
		})
	}
}

func TestTrilinear(t *testing.T) {
	// f(i,j,k) = 4i+2j+k on a 2x2x2 cube, upsampled by 2 with asymmetric
	// coordinates: each axis samples c(x) = min(x/2, 1), and trilinear
	// interpolation reproduces the linear function.
	v := make([]float32, 8)
	for i := range v {
		v[i] = float32(i)
	}
	n := node("Resize", []string{"x", "", "s"}, sAttr("mode", "linear"), sAttr("coordinate_transformation_mode", "asymmetric"))
	got, err := runOp(t, 19, n, f32([]int{2, 2, 2}, v...), nil, f32([]int{3}, 2, 2, 2))
	if err != nil {
		t.Fatal(err)
	}
	c := func(x int) float64 { return math.Min(float64(x)/2, 1) }
	for x := 0; x < 4; x++ {
		for y := 0; y < 4; y++ {
			for z := 0; z < 4; z++ {
				want := 4*c(x) + 2*c(y) + c(z)
				if g := got.Float64At(x*16 + y*4 + z); g != want {
					t.Fatalf("(%d,%d,%d) = %g, want %g", x, y, z, g, want)
				}
			}
		}
	}
}

func TestDTypes(t *testing.T) {
	// uint8 linear rounds half away from zero: 63.75 -> 64, 191.25 -> 191.
	n := node("Resize", []string{"x", "", "s"}, sAttr("mode", "linear"))
	got, err := runOp(t, 13, n, graph.MustFromSlice([]int{2}, []uint8{0, 255}), nil, f32([]int{1}, 2))
	if err != nil {
		t.Fatal(err)
	}
	if d := got.Data.([]uint8); d[0] != 0 || d[1] != 64 || d[2] != 191 || d[3] != 255 {
		t.Fatalf("uint8 linear = %v", d)
	}
	// cubic overshoot saturates int8
	n = node("Resize", []string{"x", "", "s"}, sAttr("mode", "cubic"))
	got, err = runOp(t, 13, n, graph.MustFromSlice([]int{4}, []int8{-128, -128, 127, 127}), nil, f32([]int{1}, 2))
	if err != nil {
		t.Fatal(err)
	}
	// saturation, not wrap-around: the overshoot next to the step stays at the ends
	if d := got.Data.([]int8); d[0] != -128 || d[1] != -128 || d[6] != 127 || d[7] != 127 {
		t.Fatalf("int8 cubic = %v", d)
	}
	// float16 and bfloat16 round the float64 result once
	h := graph.MustFromSlice([]int{2}, []graph.F16{graph.F16FromFloat32(1), graph.F16FromFloat32(2)})
	got, err = runOp(t, 13, node("Resize", []string{"x", "", "s"}, sAttr("mode", "linear")), h, nil, f32([]int{1}, 2))
	if err != nil {
		t.Fatal(err)
	}
	if d := got.Data.([]graph.F16); d[1].Float32() != 1.25 || d[2].Float32() != 1.75 {
		t.Fatalf("f16 linear = %v", got)
	}
	// nearest works on bool and string, with tf_crop_and_resize
	// extrapolating to false / "".
	b := graph.MustFromSlice([]int{2}, []bool{true, false})
	n = node("Resize", []string{"x", "roi", "", "sz"}, sAttr("coordinate_transformation_mode", "tf_crop_and_resize"))
	got, err = runOp(t, 13, n, b, f32([]int{2}, 0, 2), nil, i64(3))
	if err != nil {
		t.Fatal(err)
	}
	// x_ori = 0, 1, 2 -> true, false, extrapolated (false)
	if d := got.Data.([]bool); d[0] != true || d[1] != false || d[2] != false {
		t.Fatalf("bool nearest = %v", d)
	}
	s := graph.MustFromSlice([]int{2}, []string{"a", "b"})
	got, err = runOp(t, 13, node("Resize", []string{"x", "", "s"}), s, nil, f32([]int{1}, 2))
	if err != nil {
		t.Fatal(err)
	}
	// half_pixel nearest: x_ori -0.25, 0.25, 0.75, 1.25 -> 0, 0, 1, 1
	if d := got.Data.([]string); d[0] != "a" || d[1] != "a" || d[2] != "b" || d[3] != "b" {
		t.Fatalf("string nearest = %v", d)
	}
	// linear on strings is unsupported, not a panic
	_, err = runOp(t, 13, node("Resize", []string{"x", "", "s"}, sAttr("mode", "linear")), s, nil, f32([]int{1}, 2))
	if !errors.Is(err, kernels.ErrUnsupported) {
		t.Fatalf("linear string: err %v", err)
	}
}

func TestNearestModes(t *testing.T) {
	// asymmetric, scale 2: x_ori = 0, .5, 1, 1.5, 2, 2.5 ...
	x := f32([]int{3}, 10, 20, 30)
	want := map[string][]float64{
		"round_prefer_floor": {10, 10, 20, 20, 30, 30},
		"round_prefer_ceil":  {10, 20, 20, 30, 30, 30},
		"floor":              {10, 10, 20, 20, 30, 30},
		"ceil":               {10, 20, 20, 30, 30, 30},
	}
	for mode, w := range want {
		n := node("Resize", []string{"x", "", "s"}, sAttr("nearest_mode", mode), sAttr("coordinate_transformation_mode", "asymmetric"))
		got, err := runOp(t, 13, n, x, nil, f32([]int{1}, 2))
		if err != nil {
			t.Fatal(err)
		}
		for i := range w {
			if got.Float64At(i) != w[i] {
				t.Fatalf("%s: got %v want %v", mode, got, w)
			}
		}
	}
}

func TestInvalid(t *testing.T) {
	x := f32([]int{2}, 1, 2)
	cases := []struct {
		name  string
		opset int64
		n     *graph.Node
		in    []*graph.Tensor
	}{
		{"both scales and sizes", 13, node("Resize", []string{"x", "", "s", "z"}), []*graph.Tensor{x, nil, f32([]int{1}, 2), i64(4)}},
		{"neither", 13, node("Resize", []string{"x"}), []*graph.Tensor{x}},
		{"negative scale", 13, node("Resize", []string{"x", "", "s"}), []*graph.Tensor{x, nil, f32([]int{1}, -2)}},
		{"zero scale", 13, node("Resize", []string{"x", "", "s"}), []*graph.Tensor{x, nil, f32([]int{1}, 0)}},
		{"scales length", 13, node("Resize", []string{"x", "", "s"}), []*graph.Tensor{x, nil, f32([]int{2}, 2, 2)}},
		{"negative size", 13, node("Resize", []string{"x", "", "", "z"}), []*graph.Tensor{x, nil, nil, i64(-1)}},
		{"bad mode", 13, node("Resize", []string{"x", "", "s"}, sAttr("mode", "area")), []*graph.Tensor{x, nil, f32([]int{1}, 2)}},
		{"cubic in opset 10", 10, node("Resize", []string{"x", "s"}, sAttr("mode", "cubic")), []*graph.Tensor{x, f32([]int{1}, 2)}},
		{"bad ctm", 13, node("Resize", []string{"x", "", "s"}, sAttr("coordinate_transformation_mode", "x")), []*graph.Tensor{x, nil, f32([]int{1}, 2)}},
		{"tf_crop without roi", 13, node("Resize", []string{"x", "", "s"}, sAttr("coordinate_transformation_mode", "tf_crop_and_resize")), []*graph.Tensor{x, nil, f32([]int{1}, 2)}},
		{"duplicate axes", 18, node("Resize", []string{"x", "", "s"}, isAttr("axes", 0, -2)), []*graph.Tensor{f32([]int{1, 2}, 1, 2), nil, f32([]int{2}, 2, 2)}},
		{"axis out of range", 18, node("Resize", []string{"x", "", "s"}, isAttr("axes", 1)), []*graph.Tensor{x, nil, f32([]int{1}, 2)}},
		{"empty to non-empty", 13, node("Resize", []string{"x", "", "", "z"}), []*graph.Tensor{f32([]int{0}), nil, nil, i64(3)}},
		{"upsample9 no scales", 9, node("Upsample", []string{"x"}), []*graph.Tensor{x}},
	}
	for _, tc := range cases {
		_, err := runOp(t, tc.opset, tc.n, tc.in...)
		if !errors.Is(err, kernels.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", tc.name, err)
		}
	}
	// a NaN roi extrapolates instead of indexing with NaN
	n := node("Resize", []string{"x", "roi", "", "z"}, sAttr("mode", "linear"), sAttr("coordinate_transformation_mode", "tf_crop_and_resize"), fAttr("extrapolation_value", 5))
	got, err := runOp(t, 13, n, x, f32([]int{2}, float32(math.NaN()), 1), nil, i64(3))
	if err != nil || got.Float64At(0) != 5 {
		t.Fatalf("NaN roi: %v %v", got, err)
	}
	// hostile sizes are refused before allocating
	_, err = runOp(t, 13, node("Resize", []string{"x", "", "", "z"}), f32([]int{1, 1}, 1), nil, nil, i64(1<<30, 1<<30))
	if err == nil {
		t.Fatal("huge sizes accepted")
	}
}

func TestInfer(t *testing.T) {
	s, _ := kernels.Lookup("", "Resize")
	xt := graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.Shape{{Param: "N"}, {Value: 3}, {Value: 4}, {Value: 6}}}
	x := kernels.InferInput{Type: xt}
	// constant sizes
	out, err := s.Infer(node("Resize", []string{"x", "", "", "z"}), 13, []kernels.InferInput{x, {}, {}, {Const: i64(1, 3, 8, 12)}})
	if err != nil || out[0].Shape.String() != "[1,3,8,12]" || out[0].DType != graph.Float32 {
		t.Fatalf("sizes: %v %v", out, err)
	}
	// constant scales keep the symbolic batch dim (scale 1)
	out, err = s.Infer(node("Resize", []string{"x", "", "s"}), 13, []kernels.InferInput{x, {}, {Const: f32([]int{4}, 1, 1, 0.5, 1.5)}})
	if err != nil || out[0].Shape.String() != "[N,3,2,9]" {
		t.Fatalf("scales: %v %v", out, err)
	}
	// axes + keep_aspect_ratio_policy
	out, err = s.Infer(node("Resize", []string{"x", "", "", "z"}, isAttr("axes", 2, 3), sAttr("keep_aspect_ratio_policy", "not_smaller")),
		18, []kernels.InferInput{{Type: graph.ValueType{Kind: "tensor", DType: graph.Uint8, Shape: graph.StaticShape(1, 1, 2, 2)}}, {}, {}, {Const: i64(7, 8)}})
	if err != nil || out[0].Shape.String() != "[1,1,8,8]" || out[0].DType != graph.Uint8 {
		t.Fatalf("policy: %v %v", out, err)
	}
	// runtime scales: rank known, resized dims unknown
	out, err = s.Infer(node("Resize", []string{"x", "", "s"}), 13, []kernels.InferInput{x, {}, {Type: graph.ValueType{Kind: "tensor", DType: graph.Float32}}})
	if err != nil || out[0].Shape.String() != "[?,?,?,?]" {
		t.Fatalf("runtime: %v %v", out, err)
	}
	// Resize-11 with an empty scales constant and constant sizes
	out, err = s.Infer(node("Resize", []string{"x", "r", "s", "z"}), 11, []kernels.InferInput{x, {Const: f32([]int{0})}, {Const: f32([]int{0})}, {Const: i64(2, 3, 4, 5)}})
	if err != nil || out[0].Shape.String() != "[2,3,4,5]" {
		t.Fatalf("resize11: %v %v", out, err)
	}
	// Upsample-7 scales attribute
	u, _ := kernels.Lookup("", "Upsample")
	out, err = u.Infer(node("Upsample", []string{"x"}, fsAttr("scales", 1, 1, 2, 2)), 7, []kernels.InferInput{x})
	if err != nil || out[0].Shape.String() != "[N,3,8,12]" {
		t.Fatalf("upsample: %v %v", out, err)
	}
	// certainly invalid: bad scales length
	if _, err = s.Infer(node("Resize", []string{"x", "", "s"}), 13, []kernels.InferInput{x, {}, {Const: f32([]int{2}, 1, 1)}}); err == nil {
		t.Fatal("bad scales length accepted")
	}
}

func TestRandomNoPanic(t *testing.T) {
	modes := []string{"nearest", "linear", "cubic"}
	ctms := []string{"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn", "tf_crop_and_resize"}
	scales := []float32{0.1, 0.3, 0.5, 0.6, 1, 1.7, 2, 3.3}
	seed := uint32(1)
	rnd := func(n int) int { seed = seed*1664525 + 1013904223; return int(seed>>8) % n }
	for iter := 0; iter < 400; iter++ {
		shape := []int{1 + rnd(4), rnd(6), 1 + rnd(7)}
		cnt := shape[0] * shape[1] * shape[2]
		v := make([]float32, cnt)
		for i := range v {
			v[i] = float32(rnd(100)) - 50
		}
		x := f32(shape, v...)
		sc := f32([]int{3}, scales[rnd(len(scales))], scales[rnd(len(scales))], scales[rnd(len(scales))])
		roi := f32([]int{6}, 0, 0.2, -0.3, 1, 0.8, 1.4)
		ctm, mode := ctms[rnd(len(ctms))], modes[rnd(len(modes))]
		n := node("Resize", []string{"x", "roi", "s"}, sAttr("mode", mode), sAttr("coordinate_transformation_mode", ctm),
			iAttr("antialias", int64(rnd(2))), iAttr("exclude_outside", int64(rnd(2))))
		got, err := runOp(t, 19, n, x, roi, sc)
		if err != nil {
			t.Fatalf("%s %s %v %v: %v", mode, ctm, shape, sc, err)
		}
		for i, d := range shape {
			if want := int(math.Floor(float64(d) * float64(sc.Data.([]float32)[i]))); got.Shape[i] != want {
				t.Fatalf("shape %v, want dim %d = %d", got.Shape, i, want)
			}
		}
	}
}
