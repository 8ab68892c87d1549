package native

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"

	"github.com/switchyard-hal/switchyard/hal"
)

func TestEstimateCost(t *testing.T) {
	b := New(Options{Threads: 1})
	defer b.Close()
	ctx := context.Background()
	small, err := b.EstimateCost(ctx, calCase{op: "MatMul", shape: []int{1, 8}, consts: []*graph.Tensor{calRand(rand.New(rand.NewPCG(3, 3)), 8, 8)}}.graphOf(1))
	if err != nil {
		t.Fatal(err)
	}
	big, err := b.EstimateCost(ctx, calCase{op: "MatMul", shape: []int{160, 480}, consts: []*graph.Tensor{calRand(rand.New(rand.NewPCG(3, 3)), 480, 480)}}.graphOf(1))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []hal.Cost{small, big} {
		if c.Latency != c.Compute+c.Overhead || c.Overhead <= 0 || c.Compute <= 0 || c.Boundary != 0 {
			t.Errorf("breakdown %+v: want Latency = Compute + Overhead, both positive, no boundary", c)
		}
	}
	if big.Compute < 100*small.Compute {
		t.Errorf("MatMul 160×480·480² (%v) should cost far more than 1×8·8² (%v)", big.Compute, small.Compute)
	}
	nine, _ := b.EstimateCost(ctx, calCase{op: "Relu", shape: []int{1, 8}}.graphOf(9))
	one, _ := b.EstimateCost(ctx, calCase{op: "Relu", shape: []int{1, 8}}.graphOf(1))
	if nine.Overhead != one.Overhead || nine.Compute < 9*one.Compute || nine.Compute > 9*one.Compute+9 {
		t.Errorf("per-call overhead must not grow with nodes: 1 node %+v, 9 nodes %+v", one, nine)
	}
	if _, err := b.EstimateCost(ctx, nil); hal.CodeOf(err) != hal.CodeInvalidArgument {
		t.Errorf("nil subgraph: %v, want InvalidArgument", err)
	}
	branch := &graph.Graph{Name: "then", Outputs: []graph.ValueInfo{{Name: "x"}}}
	cf := calCase{op: "Relu", shape: []int{1, 8}}.graphOf(1)
	cf.Graph.Nodes = append(cf.Graph.Nodes, &graph.Node{Name: "if", OpType: "If", Inputs: []string{"c"}, Outputs: []string{"z"},
		Attrs: map[string]*graph.Attribute{"then_branch": {Name: "then_branch", Type: graph.AttrGraph, G: branch}, "else_branch": {Name: "else_branch", Type: graph.AttrGraph, G: branch}}})
	if _, err := b.EstimateCost(ctx, cf); hal.CodeOf(err) != hal.CodeUnsupported {
		t.Errorf("control flow: %v, want Unsupported", err)
	}
	var _ hal.CostEstimator = b
}
