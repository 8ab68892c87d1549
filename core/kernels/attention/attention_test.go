package attention

import (
	"errors"
	"math"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// run executes op at opset with the given inputs (nil = omitted) and
// outputs (named o0, o1, …; "" = omitted).
func run(t *testing.T, op string, opset int64, attrs map[string]*graph.Attribute, outs []string, in ...*graph.Tensor) ([]*graph.Tensor, error) {
	t.Helper()
	s, ok := kernels.Lookup("", op)
	if !ok {
		t.Fatalf("%s not registered", op)
	}
	n := &graph.Node{OpType: op, Attrs: attrs, Outputs: outs}
	for i, x := range in {
		if x == nil {
			n.Inputs = append(n.Inputs, "")
		} else {
			n.Inputs = append(n.Inputs, "i"+string(rune('0'+i)))
		}
	}
	if n.Outputs == nil {
		n.Outputs = []string{"y"}
	}
	if err := kernels.CheckNode(n, opset); err != nil {
		return nil, err
	}
	return s.Kernel(&kernels.Context{Opset: opset}, n, in)
}

func ai(name string, v int64) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrInt, I: v}
}

func af(name string, v float32) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrFloat, F: v}
}

func attrs(as ...*graph.Attribute) map[string]*graph.Attribute {
	m := map[string]*graph.Attribute{}
	for _, a := range as {
		m[a.Name] = a
	}
	return m
}

func f32(shape []int, v ...float32) *graph.Tensor { return graph.MustFromSlice(shape, v) }

func near(t *testing.T, what string, got *graph.Tensor, shape []int, want ...float64) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: missing output", what)
	}
	if !graph.SameShape(got.Shape, shape) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape, shape)
	}
	if got.Len() != len(want) {
		t.Fatalf("%s: %d values, want %d", what, got.Len(), len(want))
	}
	for i, w := range want {
		g := got.Float64At(i)
		if math.IsNaN(w) != math.IsNaN(g) || (!math.IsNaN(w) && math.Abs(g-w) > 1e-5*(1+math.Abs(w))) {
			t.Fatalf("%s: element %d = %v, want %v (all %v)", what, i, g, w, got)
		}
	}
}

// e1 = e/(1+e) = sigmoid(1)
var e1 = 1 / (1 + math.Exp(-1))

func TestAttention(t *testing.T) {
	q1 := f32([]int{1, 1, 1, 1}, 1)
	k2 := f32([]int{1, 1, 2, 1}, 0, 1)
	v2 := f32([]int{1, 1, 2, 1}, 10, 20)
	mix := 10*(1-e1) + 20*e1 // softmax([0,1]) · [10,20]
	one := ai("scale", 1)
	tests := []struct {
		name  string
		opset int64
		attrs map[string]*graph.Attribute
		outs  []string
		in    []*graph.Tensor
		shape []int
		want  []float64
	}{
		{"basic", 23, attrs(one), nil, []*graph.Tensor{q1, k2, v2}, []int{1, 1, 1, 1}, []float64{mix}},
		// default scale 1/sqrt(4): q·k = 4 → 2 for key 1, 0 for key 0
		{"default scale", 23, nil, nil, []*graph.Tensor{f32([]int{1, 1, 1, 4}, 1, 1, 1, 1), f32([]int{1, 1, 2, 4}, 0, 0, 0, 0, 1, 1, 1, 1), v2}, []int{1, 1, 1, 1},
			[]float64{10/(1+math.Exp(2)) + 20*math.Exp(2)/(1+math.Exp(2))}},
		{"causal", 23, attrs(one, ai("is_causal", 1)), nil, []*graph.Tensor{f32([]int{1, 1, 2, 1}, 1, 1), k2, v2}, []int{1, 1, 2, 1}, []float64{10, mix}},
		{"bool mask", 23, attrs(one), nil, []*graph.Tensor{q1, k2, v2, graph.MustFromSlice([]int{1, 2}, []bool{false, true})}, []int{1, 1, 1, 1}, []float64{20}},
		{"fully masked row is zero", 23, attrs(one), nil, []*graph.Tensor{q1, k2, v2, graph.MustFromSlice([]int{1, 2}, []bool{false, false})}, []int{1, 1, 1, 1}, []float64{0}},
		{"float mask", 23, attrs(one), nil, []*graph.Tensor{q1, k2, v2, f32([]int{2}, 1, 0)}, []int{1, 1, 1, 1}, []float64{15}},
		// mask narrower than the kv length: the missing column is masked
		{"short mask", 23, attrs(one), nil, []*graph.Tensor{q1, k2, v2, f32([]int{1, 1}, 0)}, []int{1, 1, 1, 1}, []float64{10}},
		{"softcap", 23, attrs(one, af("softcap", 1)), nil, []*graph.Tensor{q1, k2, v2}, []int{1, 1, 1, 1},
			[]float64{10*(1-sig(math.Tanh(1))) + 20*sig(math.Tanh(1))}},
		// GQA: both query heads read kv head 0
		{"gqa", 23, attrs(one), nil, []*graph.Tensor{f32([]int{1, 2, 1, 1}, 1, 0), k2, v2}, []int{1, 2, 1, 1}, []float64{mix, 15}},
		// 3-D: (B, S, heads*D), 2 query heads of size 1, 1 kv head
		{"3d", 23, attrs(one, ai("q_num_heads", 2), ai("kv_num_heads", 1)), nil,
			[]*graph.Tensor{f32([]int{1, 1, 2}, 1, 0), f32([]int{1, 2, 1}, 0, 1), f32([]int{1, 2, 1}, 10, 20)}, []int{1, 1, 2}, []float64{mix, 15}},
		{"nonpad", 24, attrs(one), nil, []*graph.Tensor{q1, k2, v2, nil, nil, nil, graph.MustFromSlice([]int{1}, []int64{1})}, []int{1, 1, 1, 1}, []float64{10}},
		// causal with nonpad and no past: offset = nonpad - S = 1, so the
		// single query sees keys 0 and 1 but not the padded key 2
		{"causal nonpad", 24, attrs(one, ai("is_causal", 1)), nil,
			[]*graph.Tensor{q1, f32([]int{1, 1, 3, 1}, 0, 1, 5), f32([]int{1, 1, 3, 1}, 10, 20, 99), nil, nil, nil, graph.MustFromSlice([]int{1}, []int64{2})}, []int{1, 1, 1, 1}, []float64{mix}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(t, "Attention", tc.opset, tc.attrs, tc.outs, tc.in...)
			if err != nil {
				t.Fatal(err)
			}
			near(t, "Y", out[0], tc.shape, tc.want...)
		})
	}
}

func sig(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

func TestAttentionPastAndQK(t *testing.T) {
	q := f32([]int{1, 1, 1, 1}, 1)
	k := f32([]int{1, 1, 1, 1}, 1)
	v := f32([]int{1, 1, 1, 1}, 20)
	pk := f32([]int{1, 1, 1, 1}, 0)
	pv := f32([]int{1, 1, 1, 1}, 10)
	mask := f32([]int{1, 2}, 0, -1)
	outs := []string{"y", "pk", "pv", "qk"}
	base := []*graph.Attribute{ai("scale", 1), af("softcap", 1)}
	capped1 := math.Tanh(1)
	for mode, want := range [][]float64{
		{0, 1},                                 // raw scaled QK
		{0, capped1},                           // after softcap
		{0, capped1 - 1},                       // softcap + mask
		{1 - sig(capped1-1), sig(capped1 - 1)}, // softmax
	} {
		a := attrs(append(base, ai("qk_matmul_output_mode", int64(mode)))...)
		out, err := run(t, "Attention", 23, a, outs, q, k, v, mask, pk, pv)
		if err != nil {
			t.Fatal(err)
		}
		near(t, "present_key", out[1], []int{1, 1, 2, 1}, 0, 1)
		near(t, "present_value", out[2], []int{1, 1, 2, 1}, 10, 20)
		near(t, "qk_matmul_output", out[3], []int{1, 1, 1, 2}, want...)
		p := sig(capped1 - 1)
		near(t, "Y", out[0], []int{1, 1, 1, 1}, 10*(1-p)+20*p)
	}
	// causal with a past of length 1: query 0 sees keys 0..1
	out, err := run(t, "Attention", 23, attrs(ai("scale", 1), ai("is_causal", 1)), []string{"y"}, q, k, v, nil, pk, pv)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "Y", out[0], []int{1, 1, 1, 1}, 10*(1-e1)+20*e1)
}

func TestAttentionFloat16(t *testing.T) {
	h := func(shape []int, v ...float32) *graph.Tensor {
		d := make([]graph.F16, len(v))
		for i, x := range v {
			d[i] = graph.F16FromFloat32(x)
		}
		return graph.MustFromSlice(shape, d)
	}
	out, err := run(t, "Attention", 23, attrs(ai("scale", 1)), nil, h([]int{1, 1, 1, 1}, 1), h([]int{1, 1, 2, 1}, 0, 1), h([]int{1, 1, 2, 1}, 10, 20))
	if err != nil {
		t.Fatal(err)
	}
	if out[0].DType != graph.Float16 {
		t.Fatalf("dtype %v", out[0].DType)
	}
	want := float64(graph.F16FromFloat64(10*(1-e1) + 20*e1).Float32())
	near(t, "Y", out[0], []int{1, 1, 1, 1}, want)
}

func TestAttentionErrors(t *testing.T) {
	q := f32([]int{1, 1, 1, 1}, 1)
	k := f32([]int{1, 1, 2, 1}, 0, 1)
	v := f32([]int{1, 1, 2, 1}, 10, 20)
	np := graph.MustFromSlice([]int{1}, []int64{1})
	tests := []struct {
		name  string
		opset int64
		attrs map[string]*graph.Attribute
		in    []*graph.Tensor
	}{
		{"nonpad before opset 24", 23, nil, []*graph.Tensor{q, k, v, nil, nil, nil, np}},
		{"3d without heads", 23, nil, []*graph.Tensor{f32([]int{1, 1, 2}, 1, 0), f32([]int{1, 2, 1}, 0, 1), f32([]int{1, 2, 1}, 1, 2)}},
		{"rank mismatch", 23, nil, []*graph.Tensor{q, f32([]int{1, 2, 1}, 0, 1), v}},
		{"heads not multiple", 23, nil, []*graph.Tensor{f32([]int{1, 3, 1, 1}, 1, 1, 1), f32([]int{1, 2, 2, 1}, 0, 1, 0, 1), f32([]int{1, 2, 2, 1}, 0, 1, 0, 1)}},
		{"head size mismatch", 23, nil, []*graph.Tensor{f32([]int{1, 1, 1, 2}, 1, 1), k, v}},
		{"mask too wide", 23, nil, []*graph.Tensor{q, k, v, f32([]int{1, 3}, 0, 0, 0)}},
		{"mask bad broadcast", 23, nil, []*graph.Tensor{q, k, v, f32([]int{2, 2}, 0, 0, 0, 0)}},
		{"past without value", 23, nil, []*graph.Tensor{q, k, v, nil, f32([]int{1, 1, 1, 1}, 0)}},
		{"bad mode", 23, attrs(ai("qk_matmul_output_mode", 4)), []*graph.Tensor{q, k, v}},
		{"int mask", 23, nil, []*graph.Tensor{q, k, v, graph.MustFromSlice([]int{1, 2}, []int32{1, 1})}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := run(t, "Attention", tc.opset, tc.attrs, nil, tc.in...)
			if !errors.Is(err, kernels.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestAttentionInfer(t *testing.T) {
	s, _ := kernels.Lookup("", "Attention")
	st := func(dims ...int) kernels.InferInput {
		return kernels.InferInput{Type: tensorType(graph.Float32, graph.StaticShape(dims...))}
	}
	n := &graph.Node{OpType: "Attention", Inputs: []string{"q", "k", "v", "", "pk", "pv"}, Outputs: []string{"y", "pk2", "pv2", "qk"}}
	got, err := s.Infer(n, 23, []kernels.InferInput{st(2, 9, 4, 8), st(2, 3, 6, 8), st(2, 3, 6, 10), {}, st(2, 3, 12, 8), st(2, 3, 12, 10)})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"float32[2,9,4,10]", "float32[2,3,18,8]", "float32[2,3,18,10]", "float32[2,9,4,18]"}
	for i, w := range want {
		if got[i].String() != w {
			t.Errorf("output %d: %v, want %s", i, got[i], w)
		}
	}
	n3 := &graph.Node{OpType: "Attention", Inputs: []string{"q", "k", "v"}, Outputs: []string{"y"}, Attrs: attrs(ai("q_num_heads", 4), ai("kv_num_heads", 2))}
	got, err = s.Infer(n3, 23, []kernels.InferInput{st(2, 5, 32), st(2, 7, 16), st(2, 7, 12)})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].String() != "float32[2,5,24]" {
		t.Errorf("3-D output %v, want float32[2,5,24]", got[0])
	}
	n3.Attrs = nil
	if _, err := s.Infer(n3, 23, []kernels.InferInput{st(2, 5, 32), st(2, 7, 16), st(2, 7, 12)}); err == nil {
		t.Error("3-D inputs without head attributes: no error")
	}
}

func tensorType(dt graph.DType, s graph.Shape) graph.ValueType {
	return graph.ValueType{Kind: "tensor", DType: dt, Shape: s}
}
