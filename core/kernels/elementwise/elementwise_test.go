package elementwise

import (
	"errors"
	"math"
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

func fattr(name string, v float32) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrFloat, F: v}
}

func iattr(name string, v int64) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrInt, I: v}
}

func run(t *testing.T, opset int64, n *graph.Node, in ...*graph.Tensor) (*graph.Tensor, error) {
	t.Helper()
	s, ok := kernels.Lookup("", n.OpType)
	if !ok {
		t.Fatalf("%s not registered", n.OpType)
	}
	if opset < s.MinOpset || opset > s.MaxOpset {
		t.Fatalf("%s: opset %d outside %d..%d", n.OpType, opset, s.MinOpset, s.MaxOpset)
	}
	outs, err := s.Kernel(&kernels.Context{Opset: opset}, n, in)
	if err != nil {
		return nil, err
	}
	if len(outs) != 1 || outs[0] == nil {
		t.Fatalf("%s: got %d outputs", n.OpType, len(outs))
	}
	if err := outs[0].Check(); err != nil {
		t.Fatalf("%s: bad output: %v", n.OpType, err)
	}
	return outs[0], nil
}

func sameFloat(got, want, tol float64) bool {
	if math.IsNaN(want) {
		return math.IsNaN(got)
	}
	if math.IsInf(want, 0) || tol == 0 {
		return got == want
	}
	return math.Abs(got-want) <= tol*math.Max(1, math.Abs(want))
}

func TestFloatOps(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	cases := []struct {
		name  string
		opset int64
		n     *graph.Node
		in    []float32
		want  []float64
		tol   float64 // 0: exact
	}{
		{"abs", 13, node("Abs"), []float32{-0.5, 2, float32(nan), float32(-inf)}, []float64{0.5, 2, nan, inf}, 0},
		{"neg", 13, node("Neg"), []float32{-0.5, 2, 0}, []float64{0.5, -2, 0}, 0},
		{"sign", 13, node("Sign"), []float32{-2, 0, 3, float32(nan)}, []float64{-1, 0, 1, nan}, 0},
		{"round half even", 11, node("Round"), []float32{0.5, 1.5, 2.5, -0.5, -1.5, 2.4, 2.6, -2.6}, []float64{0, 2, 2, 0, -2, 2, 3, -3}, 0},
		{"floor", 13, node("Floor"), []float32{-1.5, 1.5, -2, float32(nan)}, []float64{-2, 1, -2, nan}, 0},
		{"ceil", 13, node("Ceil"), []float32{-1.5, 1.5, 2}, []float64{-1, 2, 2}, 0},
		{"reciprocal", 13, node("Reciprocal"), []float32{4, -0.5, 0}, []float64{0.25, -2, inf}, 0},
		{"sqrt", 13, node("Sqrt"), []float32{4, 2, -1}, []float64{2, 1.4142135623730951, nan}, 1e-7},
		{"exp", 13, node("Exp"), []float32{0, 1, -inf32()}, []float64{1, math.E, 0}, 1e-7},
		{"log", 13, node("Log"), []float32{1, 0, -1}, []float64{0, -inf, nan}, 0},
		{"relu", 14, node("Relu"), []float32{-3, 0, 4, float32(nan)}, []float64{0, 0, 4, nan}, 0},
		{"leakyrelu", 16, node("LeakyRelu", fattr("alpha", 0.1)), []float32{-1, 2}, []float64{-float64(float32(0.1)), 2}, 0},
		{"leakyrelu default", 16, node("LeakyRelu"), []float32{-1}, []float64{-float64(float32(0.01))}, 0},
		{"elu", 6, node("Elu"), []float32{-1, 2}, []float64{-0.6321205588285577, 2}, 1e-7},
		{"selu", 6, node("Selu"), []float32{-1, 2}, []float64{-1.1113307378125628, 2.101401974710961}, 1e-6},
		{"celu alpha 2", 12, node("Celu", fattr("alpha", 2)), []float32{-2, 3}, []float64{-1.2642411176571153, 3}, 1e-7},
		{"hardsigmoid", 6, node("HardSigmoid"), []float32{-10, 0, 10, float32(nan)}, []float64{0, 0.5, 1, nan}, 0},
		{"hardswish", 14, node("HardSwish"), []float32{-4, 0, 1, 4, -inf32()}, []float64{0, 0, 2.0 / 3, 4, 0}, 1e-7},
		{"thresholdedrelu", 10, node("ThresholdedRelu", fattr("alpha", 2)), []float32{1, 2, 3}, []float64{0, 0, 3}, 0},
		{"softplus", 1, node("Softplus"), []float32{0, 1000, -1000}, []float64{math.Ln2, 1000, 0}, 1e-7},
		{"softsign", 1, node("Softsign"), []float32{1, -3, float32(inf)}, []float64{0.5, -0.75, 1}, 0},
		{"sigmoid", 13, node("Sigmoid"), []float32{0, 1000, -1000}, []float64{0.5, 1, 0}, 0},
		{"tanh", 13, node("Tanh"), []float32{0, 1}, []float64{0, 0.7615941559557649}, 1e-7},
		{"gelu none", 20, node("Gelu"), []float32{0, 1, -1, -inf32()}, []float64{0, 0.8413447460685429, -0.15865525393145707, 0}, 1e-7},
		{"gelu tanh", 20, node("Gelu", &graph.Attribute{Name: "approximate", Type: graph.AttrString, S: "tanh"}), []float32{1}, []float64{0.8411919906082768}, 1e-6},
		{"mish", 18, node("Mish"), []float32{0, 1, -inf32()}, []float64{0, 0.8650983882673103, 0}, 1e-7},
		{"erf", 13, node("Erf"), []float32{0, 1}, []float64{0, 0.8427007929497149}, 1e-7},
		{"sin", 7, node("Sin"), []float32{0}, []float64{0}, 0},
		{"acosh", 9, node("Acosh"), []float32{1, 0.5}, []float64{0, nan}, 0},
		{"atanh", 9, node("Atanh"), []float32{0, 1}, []float64{0, inf}, 0},
		{"empty", 13, node("Exp"), []float32{}, []float64{}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := graph.MustFromSlice([]int{len(c.in)}, c.in)
			y, err := run(t, c.opset, c.n, x)
			if err != nil {
				t.Fatal(err)
			}
			got := y.Data.([]float32)
			if len(got) != len(c.want) {
				t.Fatalf("len %d want %d", len(got), len(c.want))
			}
			for i := range got {
				if !sameFloat(float64(got[i]), c.want[i], c.tol) {
					t.Errorf("[%d] = %v, want %v", i, got[i], c.want[i])
				}
			}
		})
	}
}

func inf32() float32 { return float32(math.Inf(1)) }

func TestIntegerOps(t *testing.T) {
	y, err := run(t, 13, node("Abs"), graph.MustFromSlice([]int{4}, []int8{-128, -3, 0, 5}))
	if err != nil {
		t.Fatal(err)
	}
	if got := y.Data.([]int8); got[0] != -128 || got[1] != 3 || got[2] != 0 || got[3] != 5 {
		t.Errorf("abs int8 = %v", got)
	}
	y, err = run(t, 13, node("Neg"), graph.MustFromSlice([]int{2}, []int32{1, -2}))
	if err != nil {
		t.Fatal(err)
	}
	if got := y.Data.([]int32); got[0] != -1 || got[1] != 2 {
		t.Errorf("neg int32 = %v", got)
	}
	y, err = run(t, 13, node("Sign"), graph.MustFromSlice([]int{3}, []uint8{0, 7, 255}))
	if err != nil {
		t.Fatal(err)
	}
	if got := y.Data.([]uint8); got[0] != 0 || got[1] != 1 || got[2] != 1 {
		t.Errorf("sign uint8 = %v", got)
	}
	y, err = run(t, 14, node("Relu"), graph.MustFromSlice([]int{2}, []int64{-3, 4}))
	if err != nil {
		t.Fatal(err)
	}
	if got := y.Data.([]int64); got[0] != 0 || got[1] != 4 {
		t.Errorf("relu int64 = %v", got)
	}
	y, err = run(t, 13, node("Erf"), graph.MustFromSlice([]int{4}, []int32{0, 1, 10, -10}))
	if err != nil {
		t.Fatal(err)
	}
	if got := y.Data.([]int32); got[0] != 0 || got[1] != 0 || got[2] != 1 || got[3] != -1 {
		t.Errorf("erf int32 = %v", got)
	}
	y, err = run(t, 1, node("Not"), graph.MustFromSlice([]int{2}, []bool{true, false}))
	if err != nil {
		t.Fatal(err)
	}
	if got := y.Data.([]bool); got[0] || !got[1] {
		t.Errorf("not = %v", got)
	}
}

func TestHalfTypes(t *testing.T) {
	h := []graph.F16{graph.F16FromFloat32(-1.5), graph.F16FromFloat32(2)}
	y, err := run(t, 13, node("Abs"), graph.MustFromSlice([]int{2}, h))
	if err != nil {
		t.Fatal(err)
	}
	if got := y.Data.([]graph.F16); got[0].Float32() != 1.5 || got[1].Float32() != 2 {
		t.Errorf("abs f16 = %v", y)
	}
	b := []graph.BF16{graph.BF16FromFloat32(1)}
	y, err = run(t, 13, node("Exp"), graph.MustFromSlice([]int{1}, b))
	if err != nil {
		t.Fatal(err)
	}
	// e = 2.718281828 → bfloat16 nearest is 2.71875 (0x402E)
	if got := y.Data.([]graph.BF16); got[0] != 0x402E {
		t.Errorf("exp bf16 = %#x, want 0x402e", uint16(got[0]))
	}
	// Double rounding through nearest-even float32 would give 1.0 here.
	if got := f16FromFloat64(1 + 0x1p-11 + 0x1p-40); got != 0x3C01 {
		t.Errorf("f16FromFloat64 = %#x, want 0x3c01", uint16(got))
	}
	if got := f16FromFloat64(1 + 0x1p-11); got != 0x3C00 {
		t.Errorf("f16FromFloat64 tie = %#x, want 0x3c00", uint16(got))
	}
	if got := bf16FromFloat64(1 + 0x1p-8 + 0x1p-40); got != 0x3F81 {
		t.Errorf("bf16FromFloat64 = %#x, want 0x3f81", uint16(got))
	}
	if got := f16FromFloat64(1e10); got.Float32() != float32(math.Inf(1)) {
		t.Errorf("f16 overflow = %v", got.Float32())
	}
}

func TestIsNaNIsInf(t *testing.T) {
	x := graph.MustFromSlice([]int{4}, []float32{1, float32(math.NaN()), inf32(), -inf32()})
	y, err := run(t, 20, node("IsNaN"), x)
	if err != nil {
		t.Fatal(err)
	}
	if y.DType != graph.Bool {
		t.Fatalf("dtype %v", y.DType)
	}
	if got := y.Data.([]bool); got[0] || !got[1] || got[2] || got[3] {
		t.Errorf("isnan = %v", got)
	}
	y, err = run(t, 20, node("IsInf", iattr("detect_negative", 0)), x)
	if err != nil {
		t.Fatal(err)
	}
	if got := y.Data.([]bool); got[0] || got[1] || !got[2] || got[3] {
		t.Errorf("isinf positive = %v", got)
	}
	y, err = run(t, 20, node("IsInf"), x)
	if err != nil {
		t.Fatal(err)
	}
	if got := y.Data.([]bool); got[0] || got[1] || !got[2] || !got[3] {
		t.Errorf("isinf = %v", got)
	}
}

func TestClip(t *testing.T) {
	x := graph.MustFromSlice([]int{5}, []float32{-3, 0, 3, float32(math.NaN()), inf32()})
	lo, hi := graph.Scalar[float32](-1), graph.Scalar[float32](1)
	y, err := run(t, 13, node("Clip"), x, lo, hi)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{-1, 0, 1, math.NaN(), 1}
	for i, g := range y.Data.([]float32) {
		if !sameFloat(float64(g), want[i], 0) {
			t.Errorf("clip[%d] = %v, want %v", i, g, want[i])
		}
	}
	// min > max: everything becomes max
	y, err = run(t, 13, node("Clip"), x, graph.Scalar[float32](2), graph.Scalar[float32](1))
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range y.Data.([]float32) {
		if i != 3 && g != 1 {
			t.Errorf("clip min>max [%d] = %v", i, g)
		}
	}
	// only max, omitted min arrives as nil
	y, err = run(t, 13, node("Clip"), graph.MustFromSlice([]int{3}, []int8{-128, 5, 127}), nil, graph.Scalar[int8](0))
	if err != nil {
		t.Fatal(err)
	}
	if got := y.Data.([]int8); got[0] != -128 || got[1] != 0 || got[2] != 0 {
		t.Errorf("clip int8 = %v", got)
	}
	y, err = run(t, 13, node("Clip"), graph.MustFromSlice([]int{3}, []uint64{1, 1 << 63, math.MaxUint64}), graph.Scalar[uint64](2), graph.Scalar[uint64](1<<63+5))
	if err != nil {
		t.Fatal(err)
	}
	if got := y.Data.([]uint64); got[0] != 2 || got[1] != 1<<63 || got[2] != 1<<63+5 {
		t.Errorf("clip uint64 = %v", got)
	}
	// opset 6: attributes, documented ±3.402823e+38 defaults
	y, err = run(t, 6, node("Clip", fattr("min", -1)), x)
	if err != nil {
		t.Fatal(err)
	}
	if got := y.Data.([]float32); got[0] != -1 || got[2] != 3 || got[4] != float32(3.402823e+38) {
		t.Errorf("clip-6 = %v", got)
	}
	// errors
	if _, err := run(t, 13, node("Clip"), x, graph.MustFromSlice([]int{2}, []float32{0, 1})); !errors.Is(err, kernels.ErrInvalid) {
		t.Errorf("non-scalar min: err = %v", err)
	}
	if _, err := run(t, 13, node("Clip"), x, graph.Scalar[float64](0)); !errors.Is(err, kernels.ErrInvalid) {
		t.Errorf("dtype mismatch: err = %v", err)
	}
	if _, err := run(t, 6, node("Clip"), x, lo); !errors.Is(err, kernels.ErrInvalid) {
		t.Errorf("clip-6 with input min: err = %v", err)
	}
}

func TestErrors(t *testing.T) {
	x := graph.MustFromSlice([]int{1}, []float32{1})
	if _, err := run(t, 13, node("Exp"), nil); !errors.Is(err, kernels.ErrInvalid) {
		t.Errorf("nil input: err = %v", err)
	}
	if _, err := run(t, 13, node("Exp")); !errors.Is(err, kernels.ErrInvalid) {
		t.Errorf("no input: err = %v", err)
	}
	if _, err := run(t, 1, node("Not"), x); !errors.Is(err, kernels.ErrUnsupported) {
		t.Errorf("Not float: err = %v", err)
	}
	if _, err := run(t, 13, node("Exp"), graph.MustFromSlice([]int{1}, []int32{1})); !errors.Is(err, kernels.ErrUnsupported) {
		t.Errorf("Exp int: err = %v", err)
	}
	if _, err := run(t, 20, node("Gelu", &graph.Attribute{Name: "approximate", Type: graph.AttrString, S: "fast"}), x); !errors.Is(err, kernels.ErrInvalid) {
		t.Errorf("Gelu bad approximate: err = %v", err)
	}
	if _, err := run(t, 12, node("Celu", fattr("alpha", 0)), x); !errors.Is(err, kernels.ErrInvalid) {
		t.Errorf("Celu alpha 0: err = %v", err)
	}
	bad := &graph.Tensor{DType: graph.Float32, Shape: []int{3}, Data: []float32{1}}
	if _, err := run(t, 13, node("Exp"), bad); !errors.Is(err, kernels.ErrInvalid) {
		t.Errorf("inconsistent tensor: err = %v", err)
	}
}

func TestOutputIsFresh(t *testing.T) {
	x := graph.MustFromSlice([]int{2, 0, 3}, []float32{})
	y, err := run(t, 13, node("Relu"), x)
	if err != nil {
		t.Fatal(err)
	}
	if !graph.SameShape(y.Shape, []int{2, 0, 3}) {
		t.Errorf("shape %v", y.Shape)
	}
	x = graph.MustFromSlice([]int{2}, []float32{1, 2})
	y, err = run(t, 13, node("Abs"), x)
	if err != nil {
		t.Fatal(err)
	}
	y.Data.([]float32)[0] = 9
	if x.Data.([]float32)[0] != 1 {
		t.Error("output shares input data")
	}
}

func TestInfer(t *testing.T) {
	f := graph.ValueType{Kind: "tensor", DType: graph.Float16, Shape: graph.StaticShape(2, 3)}
	s, _ := kernels.Lookup("", "IsInf")
	out, err := s.Infer(node("IsInf"), 20, []kernels.InferInput{{Type: f}})
	if err != nil || len(out) != 1 || out[0].DType != graph.Bool || len(out[0].Shape) != 2 {
		t.Errorf("IsInf infer = %v, %v", out, err)
	}
	s, _ = kernels.Lookup("", "Sigmoid")
	out, err = s.Infer(node("Sigmoid"), 13, []kernels.InferInput{{Type: f}})
	if err != nil || len(out) != 1 || out[0].DType != graph.Float16 || out[0].Shape.String() != "[2,3]" {
		t.Errorf("Sigmoid infer = %v, %v", out, err)
	}
	s, _ = kernels.Lookup("", "Clip")
	scalar := graph.ValueType{Kind: "tensor", DType: graph.Float16, Shape: graph.Shape{}}
	out, err = s.Infer(node("Clip"), 13, []kernels.InferInput{{Type: f}, {}, {Type: scalar}})
	if err != nil || len(out) != 1 || out[0].DType != graph.Float16 {
		t.Errorf("Clip infer = %v, %v", out, err)
	}
	vec := graph.ValueType{Kind: "tensor", DType: graph.Float16, Shape: graph.StaticShape(2)}
	if _, err := s.Infer(node("Clip"), 13, []kernels.InferInput{{Type: f}, {Type: vec}}); err == nil {
		t.Error("Clip infer accepted a non-scalar min")
	}
}
