package loss

import (
	"errors"
	"math"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

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
		}
	}
	return n
}

func run(opset int64, n *graph.Node, in ...*graph.Tensor) ([]*graph.Tensor, error) {
	s, ok := kernels.Lookup("", n.OpType)
	if !ok {
		return nil, errors.New(n.OpType + " not registered")
	}
	return s.Kernel(&kernels.Context{Opset: opset}, n, in)
}

func f32(shape []int, v ...float32) *graph.Tensor { return graph.MustFromSlice(shape, v) }
func i64(shape []int, v ...int64) *graph.Tensor   { return graph.MustFromSlice(shape, v) }

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

var (
	nan  = math.NaN()
	ln2  = math.Log(2)
	ln3  = math.Log(3)
	ln4  = math.Log(4)
	none = map[string]any{"reduction": "none"}
	sum  = map[string]any{"reduction": "sum"}
)

func TestNLL(t *testing.T) {
	// log-probabilities [[-1,-2,-3],[-4,-5,-6]]
	x := f32([]int{2, 3}, -1, -2, -3, -4, -5, -6)
	w := f32([]int{3}, 0.5, 1, 2)
	tg := i64([]int{2}, 2, 0)
	cases := []struct {
		name  string
		attrs map[string]any
		in    []*graph.Tensor
		shape []int
		want  []float64
	}{
		{"none", none, []*graph.Tensor{x, tg}, []int{2}, []float64{3, 4}},
		{"sum", sum, []*graph.Tensor{x, tg}, []int{}, []float64{7}},
		{"mean default", nil, []*graph.Tensor{x, tg}, []int{}, []float64{3.5}},
		{"weight none", none, []*graph.Tensor{x, tg, w}, []int{2}, []float64{6, 2}},
		{"weight sum", sum, []*graph.Tensor{x, tg, w}, []int{}, []float64{8}},
		{"weight mean", nil, []*graph.Tensor{x, tg, w}, []int{}, []float64{8 / 2.5}},
		{"ii none", map[string]any{"reduction": "none", "ignore_index": 0}, []*graph.Tensor{x, tg}, []int{2}, []float64{3, 0}},
		{"ii mean", map[string]any{"ignore_index": 0}, []*graph.Tensor{x, tg}, []int{}, []float64{3}},
		{"ii weight mean", map[string]any{"ignore_index": 0}, []*graph.Tensor{x, tg, w}, []int{}, []float64{3}},
		{"negative ii out of range", map[string]any{"reduction": "none", "ignore_index": -1},
			[]*graph.Tensor{x, i64([]int{2}, 2, -1)}, []int{2}, []float64{3, 0}},
		{"ii above C with weight", map[string]any{"ignore_index": 7},
			[]*graph.Tensor{x, i64([]int{2}, 7, 1), w}, []int{}, []float64{5}},
		{"all ignored mean is NaN", map[string]any{"ignore_index": 1},
			[]*graph.Tensor{x, i64([]int{2}, 1, 1)}, []int{}, []float64{nan}},
		{"int32 target", none, []*graph.Tensor{x, graph.MustFromSlice([]int{2}, []int32{1, 1})}, []int{2}, []float64{2, 5}},
		// [1, C=2, d=2]: class 0 -> [-1,-2], class 1 -> [-3,-4]
		{"NCd none", none, []*graph.Tensor{f32([]int{1, 2, 2}, -1, -2, -3, -4), i64([]int{1, 2}, 1, 0)}, []int{1, 2}, []float64{3, 2}},
		{"NCd weight mean", nil, []*graph.Tensor{f32([]int{1, 2, 2}, -1, -2, -3, -4), i64([]int{1, 2}, 1, 0), f32([]int{2}, 1, 3)},
			[]int{}, []float64{(3*3 + 2*1) / 4.0}},
		{"NaN propagates", none, []*graph.Tensor{f32([]int{1, 2}, float32(nan), 1), i64([]int{1}, 0)}, []int{1}, []float64{nan}},
		{"NaN at ignored position is 0", map[string]any{"reduction": "sum", "ignore_index": 0},
			[]*graph.Tensor{f32([]int{2, 2}, float32(nan), 1, 2, 3), i64([]int{2}, 0, 1)}, []int{}, []float64{-3}},
		{"empty N sum", sum, []*graph.Tensor{f32([]int{0, 3}), i64([]int{0})}, []int{}, []float64{0}},
		{"empty N none", none, []*graph.Tensor{f32([]int{0, 3}), i64([]int{0})}, []int{0}, []float64{}},
	}
	for _, c := range cases {
		for _, opset := range []int64{12, 13, 22} {
			n := node("NegativeLogLikelihoodLoss", len(c.in), 1, c.attrs)
			out, err := run(opset, n, c.in...)
			if err != nil {
				t.Fatalf("%s (opset %d): %v", c.name, opset, err)
			}
			expect(t, c.name, out[0], graph.Float32, c.shape, c.want)
		}
	}
}

func TestNLLTypes(t *testing.T) {
	x64 := graph.MustFromSlice([]int{1, 2}, []float64{-0.25, -0.5})
	out, err := run(13, node("NegativeLogLikelihoodLoss", 2, 1, nil), x64, i64([]int{1}, 1))
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "float64", out[0], graph.Float64, []int{}, []float64{0.5})
	h := graph.MustFromSlice([]int{1, 2}, []graph.F16{graph.F16FromFloat32(-1.5), graph.F16FromFloat32(-3)})
	out, err = run(13, node("NegativeLogLikelihoodLoss", 2, 1, nil), h, i64([]int{1}, 0))
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "float16", out[0], graph.Float16, []int{}, []float64{1.5})
	b := graph.MustFromSlice([]int{1, 2}, []graph.BF16{graph.BF16FromFloat32(-1.5), graph.BF16FromFloat32(-3)})
	out, err = run(22, node("NegativeLogLikelihoodLoss", 2, 1, none), b, i64([]int{1}, 1))
	if err != nil {
		t.Fatal(err)
	}
	expect(t, "bfloat16", out[0], graph.BFloat16, []int{1}, []float64{3})
}

func TestSCE(t *testing.T) {
	// one row [0, ln3]: softmax [1/4, 3/4], log_prob [-ln4, ln3-ln4]
	x := f32([]int{1, 2}, 0, float32(ln3))
	cases := []struct {
		name   string
		attrs  map[string]any
		in     []*graph.Tensor
		shape  []int
		want   []float64
		logp   []float64
		nanOut bool
	}{
		{"uniform", nil, []*graph.Tensor{f32([]int{1, 2}, 0, 0), i64([]int{1}, 0)}, []int{}, []float64{ln2}, []float64{-ln2, -ln2}, false},
		{"mean", nil, []*graph.Tensor{x, i64([]int{1}, 1)}, []int{}, []float64{ln4 - ln3}, []float64{-ln4, ln3 - ln4}, false},
		{"none", none, []*graph.Tensor{x, i64([]int{1}, 0)}, []int{1}, []float64{ln4}, []float64{-ln4, ln3 - ln4}, false},
		{"weight sum", sum, []*graph.Tensor{x, i64([]int{1}, 0), f32([]int{2}, 2, 5)}, []int{}, []float64{2 * ln4}, nil, false},
		{"shift invariant", none, []*graph.Tensor{f32([]int{1, 2}, 1000, 1000+float32(ln3)), i64([]int{1}, 0)}, []int{1}, []float64{ln4}, nil, false},
		// [1, C=2, d=2]: position 0 scores [0, ln3], position 1 scores [ln3, 0]
		{"NCd none", none, []*graph.Tensor{f32([]int{1, 2, 2}, 0, float32(ln3), float32(ln3), 0), i64([]int{1, 2}, 1, 1)},
			[]int{1, 2}, []float64{ln4 - ln3, ln4}, []float64{-ln4, ln3 - ln4, ln3 - ln4, -ln4}, false},
		{"NCd mean", nil, []*graph.Tensor{f32([]int{1, 2, 2}, 0, float32(ln3), float32(ln3), 0), i64([]int{1, 2}, 1, 1)},
			[]int{}, []float64{(ln4 - ln3 + ln4) / 2}, nil, false},
		{"NCd ii mean", map[string]any{"ignore_index": -5}, []*graph.Tensor{f32([]int{1, 2, 2}, 0, float32(ln3), float32(ln3), 0), i64([]int{1, 2}, 1, -5)},
			[]int{}, []float64{ln4 - ln3}, nil, false},
		{"NaN row", none, []*graph.Tensor{f32([]int{2, 2}, float32(nan), 0, 0, 0), i64([]int{2}, 1, 1)},
			[]int{2}, []float64{nan, ln2}, []float64{nan, nan, -ln2, -ln2}, false},
	}
	for _, c := range cases {
		for _, opset := range []int64{12, 13} {
			n := node("SoftmaxCrossEntropyLoss", len(c.in), 2, c.attrs)
			out, err := run(opset, n, c.in...)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			expect(t, c.name, out[0], graph.Float32, c.shape, c.want)
			if c.logp != nil {
				expect(t, c.name+" log_prob", out[1], graph.Float32, c.in[0].Shape, c.logp)
			}
			// single-output form
			n1 := node("SoftmaxCrossEntropyLoss", len(c.in), 1, c.attrs)
			out1, err := run(opset, n1, c.in...)
			if err != nil || len(out1) != 1 {
				t.Fatalf("%s single output: %v %d", c.name, err, len(out1))
			}
			expect(t, c.name+" single", out1[0], graph.Float32, c.shape, c.want)
		}
	}
}

func TestErrors(t *testing.T) {
	x := f32([]int{2, 3}, -1, -2, -3, -4, -5, -6)
	tg := i64([]int{2}, 0, 1)
	cases := []struct {
		name  string
		attrs map[string]any
		in    []*graph.Tensor
	}{
		{"target out of range", nil, []*graph.Tensor{x, i64([]int{2}, 0, 3)}},
		{"negative target", nil, []*graph.Tensor{x, i64([]int{2}, -1, 0)}},
		{"target matches other ignore_index only", map[string]any{"ignore_index": 5}, []*graph.Tensor{x, i64([]int{2}, 0, 6)}},
		{"bad reduction", map[string]any{"reduction": "max"}, []*graph.Tensor{x, tg}},
		{"rank 1 input", nil, []*graph.Tensor{f32([]int{3}, 1, 2, 3), i64([]int{}, 0)}},
		{"target N mismatch", nil, []*graph.Tensor{x, i64([]int{3}, 0, 0, 0)}},
		{"target rank mismatch", nil, []*graph.Tensor{x, i64([]int{2, 1}, 0, 0)}},
		{"target d mismatch", nil, []*graph.Tensor{f32([]int{1, 2, 2}, 1, 2, 3, 4), i64([]int{1, 3}, 0, 0, 0)}},
		{"float target", nil, []*graph.Tensor{x, f32([]int{2}, 0, 1)}},
		{"int input", nil, []*graph.Tensor{i64([]int{2, 3}, 1, 2, 3, 4, 5, 6), tg}},
		{"weight shape", nil, []*graph.Tensor{x, tg, f32([]int{2}, 1, 1)}},
		{"weight dtype", nil, []*graph.Tensor{x, tg, graph.MustFromSlice([]int{3}, []float64{1, 1, 1})}},
		{"missing target", nil, []*graph.Tensor{x, nil}},
	}
	for _, op := range []string{"NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"} {
		for _, c := range cases {
			_, err := run(13, node(op, len(c.in), 1, c.attrs), c.in...)
			if !errors.Is(err, kernels.ErrInvalid) {
				t.Errorf("%s %s: err = %v, want ErrInvalid", op, c.name, err)
			}
		}
	}
}

func TestInfer(t *testing.T) {
	dim := func(v int64) graph.Dim { return graph.Dim{Value: v} }
	unk := graph.Dim{Value: -1}
	tensor := func(dt graph.DType, s graph.Shape) kernels.InferInput {
		return kernels.InferInput{Type: graph.ValueType{Kind: "tensor", DType: dt, Shape: s}}
	}
	s, _ := kernels.Lookup("", "SoftmaxCrossEntropyLoss")
	x := tensor(graph.Float32, graph.Shape{dim(3), dim(5), {Param: "d"}})
	y := tensor(graph.Int64, graph.Shape{unk, unk})

	got, err := s.Infer(node("SoftmaxCrossEntropyLoss", 2, 2, none), 13, []kernels.InferInput{x, y})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].DType != graph.Float32 || got[0].Shape.String() != "[3,d]" || got[1].Shape.String() != "[3,5,d]" {
		t.Fatalf("none: got %v", got)
	}
	got, err = s.Infer(node("SoftmaxCrossEntropyLoss", 2, 1, nil), 13, []kernels.InferInput{x, y})
	if err != nil || len(got) != 1 || got[0].Shape == nil || len(got[0].Shape) != 0 {
		t.Fatalf("mean: got %v, %v", got, err)
	}
	nll, _ := kernels.Lookup("", "NegativeLogLikelihoodLoss")
	got, err = nll.Infer(node("NegativeLogLikelihoodLoss", 2, 1, none), 22,
		[]kernels.InferInput{tensor(graph.Float64, graph.Shape{dim(2), dim(4), dim(7)}), tensor(graph.Int32, nil)})
	if err != nil || got[0].DType != graph.Float64 || got[0].Shape.String() != "[2,7]" {
		t.Fatalf("nll none from input: got %v, %v", got, err)
	}
	if _, err := nll.Infer(node("NegativeLogLikelihoodLoss", 2, 1, none), 22,
		[]kernels.InferInput{tensor(graph.Float32, graph.Shape{dim(2), dim(4), dim(7)}), tensor(graph.Int64, graph.Shape{dim(2), dim(6)})}); err == nil {
		t.Fatal("mismatched target dims accepted")
	}
	if _, err := nll.Infer(node("NegativeLogLikelihoodLoss", 2, 1, map[string]any{"reduction": "avg"}), 22,
		[]kernels.InferInput{x, y}); err == nil {
		t.Fatal("bad reduction accepted")
	}
}
