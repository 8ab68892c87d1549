package binary

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func node(op string, attrs ...*graph.Attribute) *graph.Node {
	n := &graph.Node{OpType: op, Outputs: []string{"y"}, Attrs: map[string]*graph.Attribute{}}
	for _, a := range attrs {
		n.Attrs[a.Name] = a
	}
	return n
}

func iattr(name string, v int64) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrInt, I: v}
}

func run(t *testing.T, n *graph.Node, opset int64, in ...*graph.Tensor) (*graph.Tensor, error) {
	t.Helper()
	s, ok := kernels.Lookup("", n.OpType)
	if !ok {
		t.Fatalf("%s not registered", n.OpType)
	}
	outs, err := s.Kernel(&kernels.Context{Opset: opset}, n, in)
	if err != nil {
		return nil, err
	}
	if len(outs) != 1 || outs[0] == nil {
		t.Fatalf("%s: expected one output, got %v", n.OpType, outs)
	}
	for _, x := range in {
		if x != nil && reflect.ValueOf(x.Data).Pointer() == reflect.ValueOf(outs[0].Data).Pointer() && x.Len() > 0 {
			t.Fatalf("%s: output shares an input's data", n.OpType)
		}
	}
	return outs[0], nil
}

func mustRun(t *testing.T, n *graph.Node, opset int64, in ...*graph.Tensor) *graph.Tensor {
	t.Helper()
	out, err := run(t, n, opset, in...)
	if err != nil {
		t.Fatalf("%s: %v", n.OpType, err)
	}
	return out
}

func expect(t *testing.T, name string, got *graph.Tensor, shape []int, want any) {
	t.Helper()
	if !graph.SameShape(got.Shape, shape) {
		t.Errorf("%s: shape %v, want %v", name, got.Shape, shape)
	}
	if !reflect.DeepEqual(got.Data, want) {
		t.Errorf("%s: got %v, want %v", name, got.Data, want)
	}
}

func f32(shape []int, v ...float32) *graph.Tensor { return graph.MustFromSlice(shape, v) }

func TestArithBroadcast(t *testing.T) {
	a := f32([]int{2, 3}, 1, 2, 3, 4, 5, 6)
	row := f32([]int{3}, 10, 20, 30)
	col := f32([]int{2, 1}, 100, 200)
	sc := f32(nil, 2)
	cases := []struct {
		op    string
		a, b  *graph.Tensor
		shape []int
		want  []float32
	}{
		{"Add", a, a, []int{2, 3}, []float32{2, 4, 6, 8, 10, 12}},
		{"Add", a, row, []int{2, 3}, []float32{11, 22, 33, 14, 25, 36}},
		{"Sub", row, a, []int{2, 3}, []float32{9, 18, 27, 6, 15, 24}},
		{"Mul", a, col, []int{2, 3}, []float32{100, 200, 300, 800, 1000, 1200}},
		{"Div", sc, a, []int{2, 3}, []float32{2, 1, 2.0 / 3, 0.5, 0.4, 1.0 / 3}},
		{"Div", a, sc, []int{2, 3}, []float32{0.5, 1, 1.5, 2, 2.5, 3}},
		{"Add", col, row, []int{2, 3}, []float32{110, 120, 130, 210, 220, 230}},
		{"Sub", sc, sc, []int{}, []float32{0}},
		{"Add", f32([]int{0, 3}), row, []int{0, 3}, []float32{}},
	}
	for _, c := range cases {
		got := mustRun(t, node(c.op), 14, c.a, c.b)
		expect(t, c.op, got, c.shape, c.want)
	}
	if _, err := run(t, node("Add"), 14, a, f32([]int{2}, 1, 2)); !errors.Is(err, kernels.ErrInvalid) {
		t.Errorf("incompatible shapes: err %v", err)
	}
}

func TestArithLargeBroadcast(t *testing.T) {
	// [2,3,4] + [3,1] + checks against a naive computation for several ops.
	a := make([]float32, 24)
	for i := range a {
		a[i] = float32(i) - 7
	}
	b := []float32{3, -2, 5}
	for _, op := range []string{"Add", "Sub", "Mul", "Div"} {
		got := mustRun(t, node(op), 14, f32([]int{2, 3, 4}, a...), f32([]int{3, 1}, b...)).Data.([]float32)
		for i := range a {
			x, y := a[i], b[(i/4)%3]
			var w float32
			switch op {
			case "Add":
				w = x + y
			case "Sub":
				w = x - y
			case "Mul":
				w = x * y
			case "Div":
				w = x / y
			}
			if got[i] != w {
				t.Fatalf("%s[%d] = %v, want %v", op, i, got[i], w)
			}
		}
	}
}

func TestLegacyBroadcast(t *testing.T) {
	a := f32([]int{2, 3}, 1, 2, 3, 4, 5, 6)
	col := f32([]int{2}, 10, 20)
	got := mustRun(t, node("Add", iattr("broadcast", 1), iattr("axis", 0)), 6, a, col)
	expect(t, "axis0", got, []int{2, 3}, []float32{11, 12, 13, 24, 25, 26})
	got = mustRun(t, node("Mul", iattr("broadcast", 1)), 6, a, f32([]int{3}, 1, 0, -1))
	expect(t, "suffix", got, []int{2, 3}, []float32{1, 0, -3, 4, 0, -6})
	if _, err := run(t, node("Add"), 6, a, f32([]int{3}, 1, 2, 3)); !errors.Is(err, kernels.ErrInvalid) {
		t.Errorf("broadcast=0 with different shapes: err %v", err)
	}
	// same op at opset 7 uses numpy broadcasting and ignores the attributes
	got = mustRun(t, node("Add"), 7, a, f32([]int{3}, 1, 2, 3))
	expect(t, "opset7", got, []int{2, 3}, []float32{2, 4, 6, 5, 7, 9})
}

func TestIntDivMod(t *testing.T) {
	a := graph.MustFromSlice([]int{6}, []int32{7, -7, 7, -7, 5, math.MinInt32})
	b := graph.MustFromSlice([]int{6}, []int32{2, 2, -2, -2, 0, -1})
	expect(t, "Div", mustRun(t, node("Div"), 14, a, b), []int{6}, []int32{3, -3, -3, 3, 0, math.MinInt32})
	expect(t, "Mod", mustRun(t, node("Mod"), 13, a, b), []int{6}, []int32{1, 1, -1, -1, 0, 0})
	expect(t, "fmod", mustRun(t, node("Mod", iattr("fmod", 1)), 13, a, b), []int{6}, []int32{1, -1, 1, -1, 0, 0})
	u := graph.MustFromSlice([]int{3}, []uint8{200, 7, 9})
	v := graph.MustFromSlice([]int{3}, []uint8{3, 0, 4})
	expect(t, "uDiv", mustRun(t, node("Div"), 14, u, v), []int{3}, []uint8{66, 0, 2})
	expect(t, "uMod", mustRun(t, node("Mod"), 13, u, v), []int{3}, []uint8{2, 0, 1})
	expect(t, "uAdd wraps", mustRun(t, node("Add"), 14, u, u), []int{3}, []uint8{144, 14, 18})
	x := f32([]int{2}, -4.5, 7)
	y := f32([]int{2}, 2, -3)
	expect(t, "float fmod", mustRun(t, node("Mod", iattr("fmod", 1)), 13, x, y), []int{2}, []float32{-0.5, 1})
	if _, err := run(t, node("Mod"), 13, x, y); !errors.Is(err, kernels.ErrInvalid) {
		t.Errorf("float Mod with fmod=0: err %v", err)
	}
}

func TestPow(t *testing.T) {
	fb := f32([]int{3}, 2, 4, -2)
	expect(t, "f32^i64", mustRun(t, node("Pow"), 15, fb, graph.MustFromSlice([]int{3}, []int64{3, -1, 2})), []int{3}, []float32{8, 0.25, 4})
	ib := graph.MustFromSlice([]int{4}, []int64{3, 2, -1, 5})
	expect(t, "i64^i64", mustRun(t, node("Pow"), 15, ib, graph.MustFromSlice([]int{4}, []int64{39, 3, 3, -1})), []int{4}, []int64{4052555153018976267, 8, -1, 0})
	expect(t, "i64^f32", mustRun(t, node("Pow"), 15, ib, f32(nil, 0.5)), []int{4}, []int64{1, 1, 0, 2})
	h := graph.MustFromSlice([]int{1}, []graph.F16{graph.F16FromFloat32(3)})
	got := mustRun(t, node("Pow"), 15, h, f32(nil, 2))
	if got.DType != graph.Float16 || got.Data.([]graph.F16)[0].Float32() != 9 {
		t.Errorf("f16 pow: %v", got)
	}
}

func TestVariadic(t *testing.T) {
	nan := float32(math.NaN())
	a := f32([]int{3}, 1, nan, 5)
	b := f32([]int{2, 1}, 3, -1)
	mx := mustRun(t, node("Max"), 13, a, b).Data.([]float32)
	want := []float32{3, nan, 5, 1, nan, 5}
	for i := range want {
		if !(mx[i] == want[i] || (mx[i] != mx[i] && want[i] != want[i])) {
			t.Fatalf("Max = %v, want %v", mx, want)
		}
	}
	mn := mustRun(t, node("Min"), 13, b, a).Data.([]float32)
	if mn[0] != 1 || mn[1] == mn[1] || mn[2] != 3 || mn[3] != -1 {
		t.Errorf("Min = %v", mn)
	}
	s := mustRun(t, node("Sum"), 13, f32([]int{2}, 1, 2), f32(nil, 10), f32([]int{2}, 100, 200))
	expect(t, "Sum", s, []int{2}, []float32{111, 212})
	m := mustRun(t, node("Mean"), 13, f32([]int{2}, 1, 2), f32([]int{2}, 3, 7))
	expect(t, "Mean", m, []int{2}, []float32{2, 4.5})
	one := mustRun(t, node("Max"), 13, graph.MustFromSlice([]int{2}, []int8{-3, 4}))
	expect(t, "Max one", one, []int{2}, []int8{-3, 4})
	i := mustRun(t, node("Min"), 13, graph.MustFromSlice([]int{2}, []uint32{7, 1}), graph.MustFromSlice([]int{1}, []uint32{3}))
	expect(t, "Min u32", i, []int{2}, []uint32{3, 1})
}

func TestCompareLogicWhere(t *testing.T) {
	nan := float32(math.NaN())
	a := f32([]int{3}, 1, nan, 3)
	b := f32(nil, 1)
	expect(t, "Equal", mustRun(t, node("Equal"), 13, a, b), []int{3}, []bool{true, false, false})
	expect(t, "Less", mustRun(t, node("Less"), 13, a, b), []int{3}, []bool{false, false, false})
	expect(t, "GE", mustRun(t, node("GreaterOrEqual"), 16, a, b), []int{3}, []bool{true, false, true})
	s := graph.MustFromSlice([]int{2}, []string{"a", "b"})
	expect(t, "Equal str", mustRun(t, node("Equal"), 19, s, graph.MustFromSlice(nil, []string{"b"})), []int{2}, []bool{false, true})
	p := graph.MustFromSlice([]int{2, 1}, []bool{true, false})
	q := graph.MustFromSlice([]int{2}, []bool{true, false})
	expect(t, "And", mustRun(t, node("And"), 7, p, q), []int{2, 2}, []bool{true, false, false, false})
	expect(t, "Or", mustRun(t, node("Or"), 7, p, q), []int{2, 2}, []bool{true, true, true, false})
	expect(t, "Xor", mustRun(t, node("Xor"), 7, p, q), []int{2, 2}, []bool{false, true, true, false})
	w := mustRun(t, node("Where"), 16, p, graph.MustFromSlice([]int{2}, []string{"x0", "x1"}), graph.MustFromSlice(nil, []string{"y"}))
	expect(t, "Where", w, []int{2, 2}, []string{"x0", "x1", "y", "y"})
	w = mustRun(t, node("Where"), 16, q, graph.MustFromSlice([]int{2, 1}, []int64{1, 2}), graph.MustFromSlice([]int{1, 2}, []int64{8, 9}))
	expect(t, "Where 3-way", w, []int{2, 2}, []int64{1, 9, 2, 9})
}

func TestPRelu(t *testing.T) {
	x := f32([]int{1, 2, 2}, -1, 2, -3, 4)
	expect(t, "bcast", mustRun(t, node("PRelu"), 16, x, f32([]int{2, 1}, 0.5, 2)), []int{1, 2, 2}, []float32{-0.5, 2, -6, 4})
	expect(t, "legacy channel", mustRun(t, node("PRelu"), 6, x, f32([]int{2}, 0.5, 2)), []int{1, 2, 2}, []float32{-0.5, 2, -6, 4})
	if _, err := run(t, node("PRelu"), 16, x, f32([]int{3}, 1, 2, 3)); !errors.Is(err, kernels.ErrInvalid) {
		t.Errorf("bad slope: err %v", err)
	}
}

func TestCast(t *testing.T) {
	to := func(dt graph.DType) *graph.Node { return node("Cast", iattr("to", int64(dt))) }
	x := f32([]int{5}, 1.9, -1.9, 300, float32(math.NaN()), 0)
	expect(t, "f32->i32", mustRun(t, to(graph.Int32), 13, x), []int{5}, []int32{1, -1, 300, 0, 0})
	expect(t, "f32->u8", mustRun(t, to(graph.Uint8), 13, x), []int{5}, []uint8{1, 255, 44, 0, 0})
	expect(t, "f32->bool", mustRun(t, to(graph.Bool), 13, x), []int{5}, []bool{true, true, true, true, false})
	i := graph.MustFromSlice([]int{2}, []int64{-1, 300})
	expect(t, "i64->u8", mustRun(t, to(graph.Uint8), 13, i), []int{2}, []uint8{255, 44})
	expect(t, "i64->str", mustRun(t, to(graph.String), 13, i), []int{2}, []string{"-1", "300"})
	s := graph.MustFromSlice([]int{3}, []string{"1.5", "-INF", "1e-5"})
	got := mustRun(t, to(graph.Float32), 13, s).Data.([]float32)
	if got[0] != 1.5 || !math.IsInf(float64(got[1]), -1) || got[2] != 1e-5 {
		t.Errorf("str->f32: %v", got)
	}
	expect(t, "f32->str", mustRun(t, to(graph.String), 13, f32([]int{3}, 1, 0.25, 1e-5)), []int{3}, []string{"1.0", "0.25", "1e-05"})
	// float64 -> float16 rounds once: 1 + 2^-11 + 2^-40 is just above the
	// tie between 1 and 1+2^-10, so it rounds up (double rounding through
	// float32 would give 1).
	d := graph.MustFromSlice([]int{1}, []float64{1 + math.Ldexp(1, -11) + math.Ldexp(1, -40)})
	h := mustRun(t, to(graph.Float16), 13, d).Data.([]graph.F16)[0]
	if h.Float32() != 1+1.0/1024 {
		t.Errorf("f64->f16: %v", h.Float32())
	}
	legacy := node("Cast", &graph.Attribute{Name: "to", Type: graph.AttrString, S: "INT64"})
	expect(t, "legacy to", mustRun(t, legacy, 1, x), []int{5}, []int64{1, -1, 300, 0, 0})
	if _, err := run(t, to(17), 19, x); !errors.Is(err, kernels.ErrUnsupported) {
		t.Errorf("float8: err %v", err)
	}
	cl := mustRun(t, node("CastLike"), 15, x, graph.MustFromSlice([]int{0}, []int16{}))
	expect(t, "CastLike", cl, []int{5}, []int16{1, -1, 300, 0, 0})
}

func TestQuantize(t *testing.T) {
	x := f32([]int{6}, 0, 2, 3, 1000, -254, 2.5)
	y := mustRun(t, node("QuantizeLinear"), 13, x, f32(nil, 2), graph.MustFromSlice(nil, []uint8{128}))
	// 2/2=1, 3/2=1.5 -> 2 (even), 2.5/2=1.25 -> 1
	expect(t, "u8", y, []int{6}, []uint8{128, 129, 130, 255, 1, 129})
	y = mustRun(t, node("QuantizeLinear"), 13, x, f32(nil, 2), graph.MustFromSlice(nil, []int8{-1}))
	expect(t, "i8", y, []int{6}, []int8{-1, 0, 1, 127, -128, 0})
	y = mustRun(t, node("QuantizeLinear"), 13, x, f32(nil, 1))
	expect(t, "default u8", y, []int{6}, []uint8{0, 2, 3, 255, 0, 2})
	// per-axis on axis 1 of [2,3]
	xa := f32([]int{2, 3}, 1, 2, 3, 4, 5, 6)
	y = mustRun(t, node("QuantizeLinear", iattr("axis", -1)), 13, xa, f32([]int{3}, 1, 2, 4), graph.MustFromSlice([]int{3}, []int16{0, 10, 100}))
	expect(t, "axis", y, []int{2, 3}, []int16{1, 11, 101, 4, 12, 102})
	// blocked along axis 1 with block 2: scale [2,2]
	y = mustRun(t, node("QuantizeLinear", iattr("axis", 1), iattr("block_size", 2)), 21, xa, f32([]int{2, 2}, 1, 3, 2, 6))
	expect(t, "blocked", y, []int{2, 3}, []uint8{1, 2, 1, 2, 2, 1})
	if _, err := run(t, node("QuantizeLinear", iattr("axis", 1), iattr("block_size", 2)), 21, xa, f32([]int{2, 3}, 1, 1, 1, 1, 1, 1)); !errors.Is(err, kernels.ErrInvalid) {
		t.Errorf("bad blocked scale: err %v", err)
	}
	d := mustRun(t, node("DequantizeLinear"), 13, graph.MustFromSlice([]int{2, 2}, []int8{-128, 0, 5, 127}), f32([]int{2}, 0.5, 2), graph.MustFromSlice([]int{2}, []int8{0, 1}))
	expect(t, "dequant axis", d, []int{2, 2}, []float32{-64, -2, 2.5, 252})
	d = mustRun(t, node("DequantizeLinear"), 21, graph.MustFromSlice([]int{2}, []uint16{65535, 1}), graph.MustFromSlice(nil, []graph.F16{graph.F16FromFloat32(0.5)}))
	expect(t, "dequant f16", d, []int{2}, []graph.F16{graph.F16FromFloat32(32767.5), graph.F16FromFloat32(0.5)})
}

func TestInfer(t *testing.T) {
	in := func(dt graph.DType, dims ...int) kernels.InferInput {
		return kernels.InferInput{Type: graph.ValueType{Kind: "tensor", DType: dt, Shape: graph.StaticShape(dims...)}}
	}
	infer := func(n *graph.Node, opset int64, ins ...kernels.InferInput) graph.ValueType {
		s, _ := kernels.Lookup("", n.OpType)
		n.Inputs = make([]string, len(ins))
		for i := range ins {
			n.Inputs[i] = "x"
		}
		out, err := s.Infer(n, opset, ins)
		if err != nil || len(out) != 1 {
			t.Fatalf("%s infer: %v %v", n.OpType, out, err)
		}
		return out[0]
	}
	if got := infer(node("Add"), 14, in(graph.Float32, 2, 1), in(graph.Float32, 3)); got.String() != "float32[2,3]" {
		t.Errorf("Add: %v", got)
	}
	if got := infer(node("Add", iattr("broadcast", 1)), 6, in(graph.Float32, 2, 3), in(graph.Float32, 3)); got.String() != "float32[2,3]" {
		t.Errorf("legacy Add: %v", got)
	}
	if got := infer(node("Less"), 13, in(graph.Int32, 4), in(graph.Int32)); got.String() != "bool[4]" {
		t.Errorf("Less: %v", got)
	}
	if got := infer(node("Where"), 16, in(graph.Bool, 2, 1), in(graph.Int64, 3), in(graph.Int64)); got.String() != "int64[2,3]" {
		t.Errorf("Where: %v", got)
	}
	if got := infer(node("Cast", iattr("to", int64(graph.Float16))), 13, in(graph.Float32, 5)); got.String() != "float16[5]" {
		t.Errorf("Cast: %v", got)
	}
	if got := infer(node("QuantizeLinear"), 13, in(graph.Float32, 5), in(graph.Float32)); got.String() != "uint8[5]" {
		t.Errorf("QuantizeLinear: %v", got)
	}
	if got := infer(node("QuantizeLinear"), 13, in(graph.Float32, 5), in(graph.Float32), in(graph.Int8)); got.String() != "int8[5]" {
		t.Errorf("QuantizeLinear zp: %v", got)
	}
	if got := infer(node("DequantizeLinear"), 21, in(graph.Int8, 5), in(graph.Float16)); got.String() != "float16[5]" {
		t.Errorf("DequantizeLinear: %v", got)
	}
	if got := infer(node("Sum"), 13, in(graph.Float32, 5), in(graph.Float32, 1), in(graph.Float32, 2, 1)); got.String() != "float32[2,5]" {
		t.Errorf("Sum: %v", got)
	}
}

func BenchmarkAddF32SameShape(b *testing.B) {
	x := f32([]int{64, 1024}, make([]float32, 64*1024)...)
	n := node("Add")
	s, _ := kernels.Lookup("", "Add")
	ctx := &kernels.Context{Opset: 14}
	for b.Loop() {
		if _, err := s.Kernel(ctx, n, []*graph.Tensor{x, x}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMulF32RowBroadcast(b *testing.B) {
	x := f32([]int{64, 1024}, make([]float32, 64*1024)...)
	r := f32([]int{1024}, make([]float32, 1024)...)
	n := node("Mul")
	s, _ := kernels.Lookup("", "Mul")
	ctx := &kernels.Context{Opset: 14}
	for b.Loop() {
		if _, err := s.Kernel(ctx, n, []*graph.Tensor{x, r}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestPlanRandom checks the merged-dims broadcast iteration against the
// naive per-element index map for many random shape pairs and triples.
func TestPlanRandom(t *testing.T) {
	seed := uint32(12345)
	rnd := func(k int) int {
		seed = seed*1664525 + 1013904223
		return int(seed>>16) % k
	}
	randShape := func(out []int) []int {
		r := rnd(len(out) + 1)
		s := make([]int, r)
		for i := range s {
			if rnd(2) == 0 {
				s[i] = 1
			} else {
				s[i] = out[len(out)-r+i]
			}
		}
		return s
	}
	fill := func(shape []int, base float32) *graph.Tensor {
		v := make([]float32, kernels.Prod(shape))
		for i := range v {
			v[i] = base + float32(i)
		}
		return f32(shape, v...)
	}
	for iter := 0; iter < 500; iter++ {
		out := make([]int, rnd(5))
		for i := range out {
			out[i] = 1 + rnd(3)
		}
		sa, sb := randShape(out), randShape(out)
		full, err := kernels.BroadcastShapes(sa, sb)
		if err != nil {
			t.Fatal(err)
		}
		a, b := fill(sa, 1), fill(sb, 1000)
		ia, ib := kernels.BroadcastIndex(full, sa), kernels.BroadcastIndex(full, sb)
		got := mustRun(t, node("Sub"), 14, a, b)
		got64 := mustRun(t, node("Sub"), 14, castF64(a), castF64(b))
		if !graph.SameShape(got.Shape, full) {
			t.Fatalf("%v - %v: shape %v, want %v", sa, sb, got.Shape, full)
		}
		for i := range ia {
			w := a.Data.([]float32)[ia[i]] - b.Data.([]float32)[ib[i]]
			if got.Data.([]float32)[i] != w || got64.Data.([]float64)[i] != float64(w) {
				t.Fatalf("%v - %v: element %d = %v/%v, want %v", sa, sb, i, got.Data.([]float32)[i], got64.Data.([]float64)[i], w)
			}
		}
		sc := randShape(out)
		cv := make([]bool, kernels.Prod(sc))
		for i := range cv {
			cv[i] = rnd(2) == 0
		}
		c := graph.MustFromSlice(sc, cv)
		w := mustRun(t, node("Where"), 16, c, a, b)
		full3, _ := kernels.BroadcastShapes(sc, sa, sb)
		ic, ia3, ib3 := kernels.BroadcastIndex(full3, sc), kernels.BroadcastIndex(full3, sa), kernels.BroadcastIndex(full3, sb)
		for i := range ic {
			want := b.Data.([]float32)[ib3[i]]
			if cv[ic[i]] {
				want = a.Data.([]float32)[ia3[i]]
			}
			if w.Data.([]float32)[i] != want {
				t.Fatalf("Where %v %v %v: element %d = %v, want %v", sc, sa, sb, i, w.Data.([]float32)[i], want)
			}
		}
	}
}

func castF64(x *graph.Tensor) *graph.Tensor {
	v := x.Float64s()
	return graph.MustFromSlice(x.Shape, v)
}
