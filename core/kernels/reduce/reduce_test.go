package reduce

import (
	"errors"
	"math"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// node builds a node with the given attributes (int64, float32, []int64).
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
		case float32:
			n.Attrs[k] = &graph.Attribute{Name: k, Type: graph.AttrFloat, F: v}
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
func i64(shape []int, v ...int64) *graph.Tensor   { return graph.MustFromSlice(shape, v) }

func near(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return a == b
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
	for i, w := range want {
		if g := got.Float64At(i); !near(g, w) {
			t.Fatalf("%s: element %d = %v, want %v (got %v)", name, i, g, w, got)
		}
	}
}

var nan = math.NaN()
var inf = math.Inf(1)

func TestReduce(t *testing.T) {
	x := f32([]int{2, 3}, 1, -2, 3, 4, 5, -6)
	cases := []struct {
		name  string
		op    string
		opset int64
		attrs map[string]any
		in    []*graph.Tensor
		dt    graph.DType
		shape []int
		want  []float64
	}{
		{"sum attr axes old opset", "ReduceSum", 11, map[string]any{"axes": []int64{1}}, []*graph.Tensor{x}, graph.Float32, []int{2, 1}, []float64{2, 3}},
		{"sum input axes", "ReduceSum", 13, map[string]any{"keepdims": 0}, []*graph.Tensor{x, i64([]int{1}, 0)}, graph.Float32, []int{3}, []float64{5, 3, -3}},
		{"sum all no axes", "ReduceSum", 13, map[string]any{"keepdims": 0}, []*graph.Tensor{x}, graph.Float32, []int{}, []float64{5}},
		{"sum noop", "ReduceSum", 13, map[string]any{"noop_with_empty_axes": 1}, []*graph.Tensor{x, i64([]int{0})}, graph.Float32, []int{2, 3}, []float64{1, -2, 3, 4, 5, -6}},
		{"noop attr ignored before its opset", "ReduceMean", 13, map[string]any{"noop_with_empty_axes": 1, "keepdims": 0}, []*graph.Tensor{x}, graph.Float32, []int{}, []float64{5.0 / 6}},
		{"mean neg axis", "ReduceMean", 18, nil, []*graph.Tensor{x, i64([]int{1}, -1)}, graph.Float32, []int{2, 1}, []float64{2.0 / 3, 1}},
		{"max", "ReduceMax", 13, map[string]any{"axes": []int64{0}}, []*graph.Tensor{x}, graph.Float32, []int{1, 3}, []float64{4, 5, 3}},
		{"min", "ReduceMin", 18, nil, []*graph.Tensor{x, i64([]int{1}, 1)}, graph.Float32, []int{2, 1}, []float64{-2, -6}},
		{"prod", "ReduceProd", 18, nil, []*graph.Tensor{x, i64([]int{1}, 1)}, graph.Float32, []int{2, 1}, []float64{-6, -120}},
		{"l1", "ReduceL1", 18, nil, []*graph.Tensor{x, i64([]int{1}, 1)}, graph.Float32, []int{2, 1}, []float64{6, 15}},
		{"l2", "ReduceL2", 1, map[string]any{"axes": []int64{1}}, []*graph.Tensor{f32([]int{2, 2}, 3, 4, 6, 8)}, graph.Float32, []int{2, 1}, []float64{5, 10}},
		{"sumsquare", "ReduceSumSquare", 18, nil, []*graph.Tensor{x, i64([]int{1}, 1)}, graph.Float32, []int{2, 1}, []float64{14, 77}},
		{"logsum", "ReduceLogSum", 18, nil, []*graph.Tensor{f32([]int{2}, 1, 2)}, graph.Float32, []int{1}, []float64{math.Log(3)}},
		{"logsumexp large", "ReduceLogSumExp", 18, nil, []*graph.Tensor{f32([]int{2}, 1000, 1000)}, graph.Float32, []int{1}, []float64{1000 + math.Log(2)}},
		{"max NaN", "ReduceMax", 18, nil, []*graph.Tensor{f32([]int{3}, 1, float32(nan), 2)}, graph.Float32, []int{1}, []float64{nan}},
		{"min NaN first", "ReduceMin", 18, nil, []*graph.Tensor{f32([]int{3}, float32(nan), 1, 2)}, graph.Float32, []int{1}, []float64{nan}},
		{"empty sum", "ReduceSum", 13, nil, []*graph.Tensor{f32([]int{2, 0}), i64([]int{1}, 1)}, graph.Float32, []int{2, 1}, []float64{0, 0}},
		{"empty prod", "ReduceProd", 18, nil, []*graph.Tensor{f32([]int{2, 0}), i64([]int{1}, 1)}, graph.Float32, []int{2, 1}, []float64{1, 1}},
		{"empty max", "ReduceMax", 18, nil, []*graph.Tensor{f32([]int{2, 0}), i64([]int{1}, 1)}, graph.Float32, []int{2, 1}, []float64{-inf, -inf}},
		{"empty min", "ReduceMin", 18, nil, []*graph.Tensor{f32([]int{2, 0}), i64([]int{1}, 1)}, graph.Float32, []int{2, 1}, []float64{inf, inf}},
		{"empty logsum", "ReduceLogSum", 18, nil, []*graph.Tensor{f32([]int{2, 0}), i64([]int{1}, 1)}, graph.Float32, []int{2, 1}, []float64{-inf, -inf}},
		{"empty logsumexp", "ReduceLogSumExp", 18, nil, []*graph.Tensor{f32([]int{2, 0}), i64([]int{1}, 1)}, graph.Float32, []int{2, 1}, []float64{-inf, -inf}},
		{"empty non-reduced", "ReduceSum", 13, nil, []*graph.Tensor{f32([]int{2, 0, 3}), i64([]int{1}, 2)}, graph.Float32, []int{2, 0, 1}, nil},
		{"int32 sum", "ReduceSum", 13, nil, []*graph.Tensor{graph.MustFromSlice([]int{3}, []int32{1, 2, 4})}, graph.Int32, []int{1}, []float64{7}},
		{"int64 sum exact", "ReduceSum", 13, nil, []*graph.Tensor{i64([]int{2}, 1<<60, 1)}, graph.Int64, []int{1}, []float64{float64(1<<60 + 1)}},
		{"int mean truncates", "ReduceMean", 18, nil, []*graph.Tensor{graph.MustFromSlice([]int{2}, []int32{1, 2})}, graph.Int32, []int{1}, []float64{1}},
		{"int8 empty max", "ReduceMax", 20, nil, []*graph.Tensor{graph.MustFromSlice([]int{0}, []int8{})}, graph.Int8, []int{1}, []float64{-128}},
		{"uint8 empty min", "ReduceMin", 20, nil, []*graph.Tensor{graph.MustFromSlice([]int{0}, []uint8{})}, graph.Uint8, []int{1}, []float64{255}},
		{"bool max", "ReduceMax", 20, nil, []*graph.Tensor{graph.MustFromSlice([]int{2, 2}, []bool{false, true, false, false}), i64([]int{1}, 1)}, graph.Bool, []int{2, 1}, []float64{1, 0}},
		{"bool min", "ReduceMin", 20, nil, []*graph.Tensor{graph.MustFromSlice([]int{2, 2}, []bool{true, true, false, true}), i64([]int{1}, 1)}, graph.Bool, []int{2, 1}, []float64{1, 0}},
		{"f16 sum", "ReduceSum", 13, nil, []*graph.Tensor{graph.MustFromSlice([]int{2}, []graph.F16{graph.F16FromFloat32(1.5), graph.F16FromFloat32(2)})}, graph.Float16, []int{1}, []float64{3.5}},
		{"middle axes", "ReduceSum", 13, map[string]any{"keepdims": 0}, []*graph.Tensor{f32([]int{2, 2, 2}, 1, 2, 3, 4, 5, 6, 7, 8), i64([]int{2}, 0, 2)}, graph.Float32, []int{2}, []float64{1 + 2 + 5 + 6, 3 + 4 + 7 + 8}},
	}
	for _, c := range cases {
		out, err := run(t, c.opset, node(c.op, len(c.in), 1, c.attrs), c.in...)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		expect(t, c.name, out[0], c.dt, c.shape, c.want)
		if out[0] == c.in[0] {
			t.Fatalf("%s: output aliases input", c.name)
		}
	}
}

func TestReduceInvalid(t *testing.T) {
	x := f32([]int{2, 3}, 1, 2, 3, 4, 5, 6)
	for _, c := range []struct {
		name string
		in   []*graph.Tensor
	}{
		{"axis out of range", []*graph.Tensor{x, i64([]int{1}, 2)}},
		{"repeated axis", []*graph.Tensor{x, i64([]int{2}, 1, -1)}},
		{"float axes", []*graph.Tensor{x, f32([]int{1}, 1)}},
	} {
		if _, err := run(t, 18, node("ReduceMean", len(c.in), 1, nil), c.in...); !errors.Is(err, kernels.ErrInvalid) {
			t.Errorf("%s: err = %v, want invalid", c.name, err)
		}
	}
}

func TestReduceInfer(t *testing.T) {
	s, _ := kernels.Lookup("", "ReduceSum")
	x := kernels.InferInput{Type: tensorType(graph.Float32, graph.Shape{{Param: "N"}, {Value: 3}, {Value: 4}})}
	n := node("ReduceSum", 2, 1, map[string]any{"keepdims": 0})
	outs, err := s.Infer(n, 13, []kernels.InferInput{x, {Type: tensorType(graph.Int64, graph.StaticShape(1)), Const: i64([]int{1}, -1)}})
	if err != nil || outs[0].Shape.String() != "[N,3]" || outs[0].DType != graph.Float32 {
		t.Fatalf("infer = %v, %v", outs, err)
	}
	// unknown axes with keepdims: rank known, dims unknown
	outs, _ = s.Infer(node("ReduceSum", 2, 1, nil), 13, []kernels.InferInput{x, {Type: tensorType(graph.Int64, graph.StaticShape(1))}})
	if outs[0].Shape.String() != "[?,?,?]" {
		t.Fatalf("infer unknown axes = %v", outs[0].Shape)
	}
	// opset 11 attribute axes
	outs, _ = s.Infer(node("ReduceSum", 1, 1, map[string]any{"axes": []int64{0, 2}}), 11, []kernels.InferInput{x})
	if outs[0].Shape.String() != "[1,3,1]" {
		t.Fatalf("infer attr axes = %v", outs[0].Shape)
	}
	if _, err := s.Infer(node("ReduceSum", 1, 1, map[string]any{"axes": []int64{3}}), 11, []kernels.InferInput{x}); err == nil {
		t.Fatal("infer accepted out-of-range axis")
	}
}

func TestArg(t *testing.T) {
	x := f32([]int{2, 3}, 1, 5, 5, 7, 0, 7)
	cases := []struct {
		name  string
		op    string
		opset int64
		attrs map[string]any
		x     *graph.Tensor
		shape []int
		want  []float64
	}{
		{"argmax axis1", "ArgMax", 13, map[string]any{"axis": 1}, x, []int{2, 1}, []float64{1, 0}},
		{"argmax last", "ArgMax", 13, map[string]any{"axis": 1, "select_last_index": 1}, x, []int{2, 1}, []float64{2, 2}},
		{"select_last ignored before 12", "ArgMax", 11, map[string]any{"axis": 1, "select_last_index": 1}, x, []int{2, 1}, []float64{1, 0}},
		{"argmin axis0 nokeep", "ArgMin", 13, map[string]any{"keepdims": 0}, x, []int{3}, []float64{0, 1, 0}},
		{"argmin neg axis", "ArgMin", 13, map[string]any{"axis": -1}, x, []int{2, 1}, []float64{0, 1}},
		{"argmax NaN", "ArgMax", 13, nil, f32([]int{4}, 1, float32(nan), 3, float32(nan)), []int{1}, []float64{1}},
		{"argmin NaN last", "ArgMin", 13, map[string]any{"select_last_index": 1}, f32([]int{4}, 1, float32(nan), 3, float32(nan)), []int{1}, []float64{3}},
		{"uint8", "ArgMax", 13, nil, graph.MustFromSlice([]int{3}, []uint8{3, 200, 7}), []int{1}, []float64{1}},
		{"int64 large", "ArgMax", 13, nil, i64([]int{2}, 1<<60+1, 1<<60), []int{1}, []float64{0}},
	}
	for _, c := range cases {
		out, err := run(t, c.opset, node(c.op, 1, 1, c.attrs), c.x)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		expect(t, c.name, out[0], graph.Int64, c.shape, c.want)
	}
	if _, err := run(t, 13, node("ArgMax", 1, 1, map[string]any{"axis": 2}), x); !errors.Is(err, kernels.ErrInvalid) {
		t.Errorf("bad axis: %v", err)
	}
	if _, err := run(t, 13, node("ArgMax", 1, 1, map[string]any{"axis": 1}), f32([]int{2, 0})); !errors.Is(err, kernels.ErrInvalid) {
		t.Errorf("empty axis: %v", err)
	}
}

func TestSoftmax(t *testing.T) {
	e1, e2 := math.Exp(1), math.Exp(2)
	x := f32([]int{2, 2}, 0, 1, 0, 2)
	s01 := 1 / (1 + e1)
	// coerced 2-D over all 4 elements (opset 11, axis 0)
	tot := 1 + e1 + 1 + e2
	cases := []struct {
		name  string
		op    string
		opset int64
		attrs map[string]any
		want  []float64
	}{
		{"softmax13 default last axis", "Softmax", 13, nil, []float64{s01, e1 * s01, 1 / (1 + e2), e2 / (1 + e2)}},
		{"softmax13 axis0", "Softmax", 13, map[string]any{"axis": 0}, []float64{0.5, e1 / (e1 + e2), 0.5, e2 / (e1 + e2)}},
		{"softmax11 default axis1", "Softmax", 11, nil, []float64{s01, e1 * s01, 1 / (1 + e2), e2 / (1 + e2)}},
		{"softmax11 axis0 flattens", "Softmax", 11, map[string]any{"axis": 0}, []float64{1 / tot, e1 / tot, 1 / tot, e2 / tot}},
		{"logsoftmax13", "LogSoftmax", 13, nil, []float64{math.Log(s01), 1 + math.Log(s01), -math.Log(1 + e2), 2 - math.Log(1+e2)}},
		{"hardmax13 axis0", "Hardmax", 13, map[string]any{"axis": 0}, []float64{1, 0, 0, 1}},
		{"hardmax11 axis0 flattens", "Hardmax", 11, map[string]any{"axis": 0}, []float64{0, 0, 0, 1}},
	}
	for _, c := range cases {
		out, err := run(t, c.opset, node(c.op, 1, 1, c.attrs), x)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		expect(t, c.name, out[0], graph.Float32, []int{2, 2}, c.want)
	}
	// ties: Hardmax picks the first maximum
	out, _ := run(t, 13, node("Hardmax", 1, 1, nil), f32([]int{3}, 2, 2, 1))
	expect(t, "hardmax tie", out[0], graph.Float32, []int{3}, []float64{1, 0, 0})
	// large values stay finite
	out, _ = run(t, 13, node("Softmax", 1, 1, nil), f32([]int{2}, 10000, 10000))
	expect(t, "softmax large", out[0], graph.Float32, []int{2}, []float64{0.5, 0.5})
	if _, err := run(t, 13, node("Softmax", 1, 1, nil), i64([]int{1}, 1)); !errors.Is(err, kernels.ErrUnsupported) {
		t.Errorf("int softmax: %v", err)
	}
}

func TestCumSum(t *testing.T) {
	x := f32([]int{2, 3}, 1, 2, 3, 4, 5, 6)
	cases := []struct {
		name  string
		attrs map[string]any
		x     *graph.Tensor
		axis  *graph.Tensor
		want  []float64
	}{
		{"axis1", nil, x, i64([]int{}, 1), []float64{1, 3, 6, 4, 9, 15}},
		{"axis0 1-D axis", nil, x, i64([]int{1}, 0), []float64{1, 2, 3, 5, 7, 9}},
		{"exclusive", map[string]any{"exclusive": 1}, x, graph.Scalar(int32(-1)), []float64{0, 1, 3, 0, 4, 9}},
		{"reverse", map[string]any{"reverse": 1}, x, i64([]int{}, 1), []float64{6, 5, 3, 15, 11, 6}},
		{"reverse exclusive", map[string]any{"reverse": 1, "exclusive": 1}, x, i64([]int{}, 1), []float64{5, 3, 0, 11, 6, 0}},
		{"uint32", nil, graph.MustFromSlice([]int{3}, []uint32{1, 2, 3}), i64([]int{}, 0), []float64{1, 3, 6}},
	}
	for _, c := range cases {
		out, err := run(t, 14, node("CumSum", 2, 1, c.attrs), c.x, c.axis)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		expect(t, c.name, out[0], c.x.DType, c.x.Shape, c.want)
	}
	if _, err := run(t, 14, node("CumSum", 2, 1, nil), x, i64([]int{}, 2)); !errors.Is(err, kernels.ErrInvalid) {
		t.Errorf("bad axis: %v", err)
	}
	if _, err := run(t, 14, node("CumSum", 2, 1, nil), x, i64([]int{2}, 0, 1)); !errors.Is(err, kernels.ErrInvalid) {
		t.Errorf("two-element axis: %v", err)
	}
}

func TestTopK(t *testing.T) {
	x := f32([]int{2, 4}, 3, 1, 3, 2, float32(nan), 5, -1, 5)
	cases := []struct {
		name    string
		opset   int64
		attrs   map[string]any
		in      []*graph.Tensor
		shape   []int
		vals    []float64
		indices []float64
	}{
		{"largest ties lower index first", 11, nil, []*graph.Tensor{x, i64([]int{1}, 3)}, []int{2, 3}, []float64{3, 3, 2, nan, 5, 5}, []float64{0, 2, 3, 0, 1, 3}},
		{"smallest NaN last", 11, map[string]any{"largest": 0}, []*graph.Tensor{x, i64([]int{1}, 3)}, []int{2, 3}, []float64{1, 2, 3, -1, 5, 5}, []float64{1, 3, 0, 2, 1, 3}},
		{"opset1 attribute k", 1, map[string]any{"k": 1}, []*graph.Tensor{x}, []int{2, 1}, []float64{3, nan}, []float64{0, 0}},
		{"axis0", 11, map[string]any{"axis": 0}, []*graph.Tensor{f32([]int{2, 2}, 1, 4, 2, 3), i64([]int{1}, 1)}, []int{1, 2}, []float64{2, 4}, []float64{1, 0}},
		{"k=0", 11, nil, []*graph.Tensor{x, i64([]int{1}, 0)}, []int{2, 0}, nil, nil},
		{"uint64", 11, nil, []*graph.Tensor{graph.MustFromSlice([]int{3}, []uint64{1 << 63, 5, 1<<63 + 1}), i64([]int{1}, 2)}, []int{2}, []float64{float64(uint64(1<<63 + 1)), float64(uint64(1 << 63))}, []float64{2, 0}},
	}
	for _, c := range cases {
		out, err := run(t, c.opset, node("TopK", len(c.in), 2, c.attrs), c.in...)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		expect(t, c.name+" values", out[0], c.in[0].DType, c.shape, c.vals)
		expect(t, c.name+" indices", out[1], graph.Int64, c.shape, c.indices)
	}
	if _, err := run(t, 11, node("TopK", 2, 2, nil), x, i64([]int{1}, 5)); !errors.Is(err, kernels.ErrInvalid) {
		t.Errorf("k too large: %v", err)
	}
	if _, err := run(t, 11, node("TopK", 2, 2, nil), x, i64([]int{1}, -1)); !errors.Is(err, kernels.ErrInvalid) {
		t.Errorf("negative k: %v", err)
	}
	s, _ := kernels.Lookup("", "TopK")
	outs, err := s.Infer(node("TopK", 2, 2, map[string]any{"axis": 0}), 11, []kernels.InferInput{{Type: tensorType(graph.Float32, graph.StaticShape(5, 2))}, {Const: i64([]int{1}, 3)}})
	if err != nil || outs[0].Shape.String() != "[3,2]" || outs[1].DType != graph.Int64 {
		t.Fatalf("infer: %v %v", outs, err)
	}
}

func TestBatchNorm(t *testing.T) {
	// N=2, C=2, spatial=2
	x := f32([]int{2, 2, 2}, 1, 3, 10, 20, 5, 7, 30, 40)
	scale, bias := f32([]int{2}, 2, 1), f32([]int{2}, 0.5, -1)
	mean, vr := f32([]int{2}, 1, 10), f32([]int{2}, 4, 100)
	out, err := run(t, 15, node("BatchNormalization", 5, 1, map[string]any{"epsilon": float32(0)}), x, scale, bias, mean, vr)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "inference", out[0], graph.Float32, []int{2, 2, 2}, []float64{0.5, 2.5, -1, 0, 4.5, 6.5, 1, 2})

	// training: channel 0 values 1,3,5,7 (mean 4, var 5); channel 1 10,20,30,40 (mean 25, var 125)
	n := node("BatchNormalization", 5, 3, map[string]any{"epsilon": float32(0), "training_mode": 1, "momentum": float32(0.5)})
	out, err = run(t, 15, n, x, scale, bias, mean, vr)
	if err != nil {
		t.Fatal(err)
	}
	r5, r125 := math.Sqrt(5), math.Sqrt(125)
	expect(t, "training y", out[0], graph.Float32, []int{2, 2, 2}, []float64{
		-3/r5*2 + 0.5, -1/r5*2 + 0.5, -15/r125 - 1, -5/r125 - 1,
		1/r5*2 + 0.5, 3/r5*2 + 0.5, 5/r125 - 1, 15/r125 - 1})
	expect(t, "running mean", out[1], graph.Float32, []int{2}, []float64{2.5, 17.5})
	expect(t, "running var", out[2], graph.Float32, []int{2}, []float64{4.5, 112.5})

	// opset 7 spatial=0: statistics per (C, D) position
	p := func(v ...float32) *graph.Tensor { return f32([]int{2, 2}, v...) }
	out, err = run(t, 7, node("BatchNormalization", 5, 1, map[string]any{"epsilon": float32(0), "spatial": 0}),
		x, p(1, 1, 1, 1), p(0, 0, 0, 0), p(1, 3, 10, 20), p(1, 1, 1, 1))
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "spatial=0", out[0], graph.Float32, []int{2, 2, 2}, []float64{0, 0, 0, 0, 4, 4, 20, 20})

	if _, err := run(t, 15, node("BatchNormalization", 5, 1, nil), x, f32([]int{3}, 1, 1, 1), bias, mean, vr); !errors.Is(err, kernels.ErrInvalid) {
		t.Errorf("bad scale: %v", err)
	}
}

func TestLayerNorm(t *testing.T) {
	x := f32([]int{2, 2}, 1, 3, 2, 2)
	n := node("LayerNormalization", 3, 3, map[string]any{"epsilon": float32(0)})
	out, err := run(t, 17, n, x, f32([]int{2}, 1, 2), f32([]int{2}, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	// row 0: mean 2, var 1 → (-1, 1); row 1: mean 2, var 0 → 0/0 = NaN
	expect(t, "y", out[0], graph.Float32, []int{2, 2}, []float64{-1, 3, nan, nan})
	expect(t, "mean", out[1], graph.Float32, []int{2, 1}, []float64{2, 2})
	expect(t, "invstd", out[2], graph.Float32, []int{2, 1}, []float64{1, inf})

	// axis 0 with default epsilon and no bias; f16 input keeps float32 stats
	h := graph.MustFromSlice([]int{2}, []graph.F16{graph.F16FromFloat32(0), graph.F16FromFloat32(2)})
	n = node("LayerNormalization", 2, 2, map[string]any{"axis": 0})
	out, err = run(t, 17, n, h, graph.MustFromSlice([]int{2}, []graph.F16{graph.F16FromFloat32(1), graph.F16FromFloat32(1)}))
	if err != nil {
		t.Fatal(err)
	}
	r := 1 / math.Sqrt(1+1e-5)
	expect(t, "f16 y", out[0], graph.Float16, []int{2}, []float64{float64(graph.F16FromFloat64(-r).Float32()), float64(graph.F16FromFloat64(r).Float32())})
	expect(t, "f16 mean", out[1], graph.Float32, []int{1}, []float64{1})
	if _, err := run(t, 17, node("LayerNormalization", 2, 1, nil), x, f32([]int{3}, 1, 1, 1)); !errors.Is(err, kernels.ErrInvalid) {
		t.Errorf("bad scale: %v", err)
	}
}

func TestInstanceGroupNorm(t *testing.T) {
	// N=1, C=2, spatial 2
	x := f32([]int{1, 2, 2}, 1, 3, 10, 30)
	out, err := run(t, 6, node("InstanceNormalization", 3, 1, map[string]any{"epsilon": float32(0)}), x, f32([]int{2}, 1, 2), f32([]int{2}, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "instance", out[0], graph.Float32, []int{1, 2, 2}, []float64{-1, 1, -1, 3})

	// one group over all 4 values: mean 11, var (100+64+1+361)/4 = 131.5
	sd := math.Sqrt(131.5)
	z := []float64{-10 / sd, -8 / sd, -1 / sd, 19 / sd}
	out, err = run(t, 21, node("GroupNormalization", 3, 1, map[string]any{"epsilon": float32(0), "num_groups": 1}), x, f32([]int{2}, 1, 2), f32([]int{2}, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "group21 per channel", out[0], graph.Float32, []int{1, 2, 2}, []float64{z[0], z[1], 2*z[2] + 1, 2*z[3] + 1})
	out, err = run(t, 18, node("GroupNormalization", 3, 1, map[string]any{"epsilon": float32(0), "num_groups": 1}), x, f32([]int{1}, 3), f32([]int{1}, 1))
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "group18 per group", out[0], graph.Float32, []int{1, 2, 2}, []float64{3*z[0] + 1, 3*z[1] + 1, 3*z[2] + 1, 3*z[3] + 1})
	if _, err := run(t, 21, node("GroupNormalization", 3, 1, map[string]any{"num_groups": 3}), x, f32([]int{2}, 1, 1), f32([]int{2}, 0, 0)); !errors.Is(err, kernels.ErrInvalid) {
		t.Errorf("bad groups: %v", err)
	}
	if _, err := run(t, 21, node("GroupNormalization", 3, 1, map[string]any{"num_groups": 1}), x, f32([]int{1}, 1), f32([]int{1}, 0)); !errors.Is(err, kernels.ErrInvalid) {
		t.Errorf("per-group scale at opset 21: %v", err)
	}
}

// TestNoPanic feeds every registered op of this package malformed inputs.
func TestNoPanic(t *testing.T) {
	ops := []string{"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin", "Softmax", "LogSoftmax", "Hardmax", "CumSum", "TopK", "BatchNormalization", "LayerNormalization", "InstanceNormalization", "GroupNormalization"}
	inputs := [][]*graph.Tensor{
		nil,
		{nil, nil, nil, nil, nil},
		{graph.Scalar(float32(1))},
		{f32([]int{0, 3})},
		{f32([]int{2, 3}, 1, 2, 3, 4, 5, 6), f32([]int{1}, 1), f32([]int{1}, 1), f32([]int{1}, 1), f32([]int{1}, 1)},
		{&graph.Tensor{DType: graph.Float32, Shape: []int{3}, Data: []float32{1}}},
		{graph.MustFromSlice([]int{2}, []string{"a", "b"}), i64([]int{1}, 0)},
	}
	for _, op := range ops {
		for _, opset := range []int64{1, 11, 13, 18, 21} {
			for _, in := range inputs {
				func() {
					defer func() {
						if p := recover(); p != nil {
							t.Errorf("%s opset %d inputs %v panicked: %v", op, opset, in, p)
						}
					}()
					for len(in) < 1 {
						in = append(in, nil)
					}
					s, _ := kernels.Lookup("", op)
					n := node(op, len(in), s.MinOutputs, map[string]any{"axis": 5, "num_groups": 0, "k": 7})
					_, _ = s.Kernel(&kernels.Context{Opset: opset}, n, in)
					_, _ = s.Infer(n, opset, make([]kernels.InferInput, len(in)))
				}()
			}
		}
	}
}

func tensorType(dt graph.DType, s graph.Shape) graph.ValueType {
	return graph.ValueType{Kind: "tensor", DType: dt, Shape: s}
}
