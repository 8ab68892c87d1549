package halkit_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/ops"
	_ "github.com/switchyard-hal/switchyard/core/ops/all"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/hal/halkit"
)

func f32(shape ...int) graph.ValueType {
	return graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(shape...)}
}

func TestVerdictsFromSchemasAlone(t *testing.T) {
	if n := len(ops.All()); n < 160 {
		t.Fatalf("core/ops/all registers %d schemas", n)
	}
	body := &graph.Graph{Name: "then", Nodes: []*graph.Node{{OpType: "NoSuchOp", Inputs: []string{"x"}, Outputs: []string{"z"}}}}
	g := &graph.Graph{
		Inputs: []graph.ValueInfo{{Name: "x", Type: f32(2)}, {Name: "c", Type: graph.ValueType{Kind: "tensor", DType: graph.Bool}}},
		Nodes: []*graph.Node{
			{OpType: "Relu", Inputs: []string{"x"}, Outputs: []string{"y"}},
			{OpType: "NoSuchOp", Inputs: []string{"x"}, Outputs: []string{"u"}},
			{OpType: "Relu", Inputs: []string{"x", "x"}, Outputs: []string{"v"}},
			{OpType: "If", Inputs: []string{"c"}, Outputs: []string{"w"}, Attrs: map[string]*graph.Attribute{"then_branch": {Name: "then_branch", Type: graph.AttrGraph, G: body}}},
			{OpType: "Gelu", Inputs: []string{"x"}, Outputs: []string{"g"}},
		},
	}
	sg := &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}}
	vs := halkit.Verdicts(sg, nil)
	if len(vs) != 5 || !vs[0].Supported {
		t.Fatalf("verdicts %+v", vs)
	}
	for i, want := range map[int]string{1: "NoSuchOp", 2: "2 inputs", 3: "nested graph", 4: "supported opsets 20"} {
		if vs[i].Supported || !strings.Contains(vs[i].Reason, want) {
			t.Errorf("node %d: %+v, want a decline naming %q", i, vs[i], want)
		}
	}
	vs = halkit.Verdicts(sg, func(n *graph.Node) (bool, string) { return n.OpType != "Relu", "no Relu here" })
	if vs[0].Supported || vs[0].Reason != "no Relu here" {
		t.Fatalf("allow ignored: %+v", vs[0])
	}
	calls := 0
	halkit.VerdictsWith(sg, func(n *graph.Node, opset int64) error { calls++; return errors.New("never") }, nil)
	if calls != 5 {
		t.Fatalf("check called %d times, want once per top-level node", calls)
	}
}

func TestInferWithoutKernels(t *testing.T) {
	n := &graph.Node{OpType: "Add", Inputs: []string{"a", "b"}, Outputs: []string{"c"}}
	types, ok, err := ops.Infer(n, 17, []ops.InferInput{{Type: f32(2, 1)}, {Type: f32(3)}})
	if err != nil || !ok || len(types) != 1 || !graph.SameShape(mustInts(t, types[0].Shape), []int{2, 3}) {
		t.Fatalf("Add infer: %v %v %v", types, ok, err)
	}
	if _, ok, err := ops.Infer(&graph.Node{OpType: "NoSuchOp"}, 17, nil); ok || err != nil {
		t.Fatalf("unknown op: ok=%v err=%v", ok, err)
	}
	if _, _, err := ops.Infer(n, 17, []ops.InferInput{{Type: f32(2)}, {Type: f32(3)}}); err == nil || !strings.Contains(err.Error(), "broadcast") {
		t.Fatalf("incompatible shapes: %v", err)
	}
}

func mustInts(t *testing.T, s graph.Shape) []int {
	t.Helper()
	d, ok := s.Ints()
	if !ok {
		t.Fatalf("shape %v not static", s)
	}
	return d
}

func TestFillOutputs(t *testing.T) {
	g := &graph.Graph{Outputs: []graph.ValueInfo{{Name: "y"}}}
	got := &graph.Tensor{DType: graph.Float32, Shape: []int{2}, Data: []float32{1, 2}}
	dst := &graph.Tensor{DType: graph.Float32, Shape: []int{2}, Data: make([]float32, 2)}
	if err := halkit.FillOutputs(g, map[string]*graph.Tensor{"y": got}, []*graph.Tensor{dst}); err != nil || dst.Data.([]float32)[1] != 2 {
		t.Fatalf("copy in place: %v %v", dst.Data, err)
	}
	empty := &graph.Tensor{}
	if err := halkit.FillOutputs(g, map[string]*graph.Tensor{"y": got}, []*graph.Tensor{empty}); err != nil || empty.Len() != 2 {
		t.Fatalf("hand over: %v %v", empty, err)
	}
	wrong := &graph.Tensor{DType: graph.Float32, Shape: []int{3}, Data: make([]float32, 3)}
	if err := halkit.FillOutputs(g, map[string]*graph.Tensor{"y": got}, []*graph.Tensor{wrong}); !errors.Is(err, hal.ErrInvalidArgument) {
		t.Fatalf("shape mismatch: %v", err)
	}
	if err := halkit.FillOutputs(g, nil, []*graph.Tensor{empty}); err == nil {
		t.Fatal("missing output accepted")
	}
}
