package native

import (
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/runtime"
)

// A SiLU fused into a Conv's chain is priced at the vector kernel's time
// per element (it was priced as a 0.025 ns arithmetic step while running
// a float64 exp), and a standalone SiLU as one pass, not a Sigmoid and a
// Mul.
func TestSiLUPricedAtItsKernel(t *testing.T) {
	const c, h, w = 16, 52, 52
	elems := float64(c * h * w)
	mk := func(conv bool) *hal.Subgraph {
		g := &graph.Graph{Name: "silu", Initializers: map[string]*graph.Tensor{
			"w": graph.MustFromSlice([]int{c, c, 1, 1}, make([]float32, c*c)),
		}}
		g.Inputs = []graph.ValueInfo{{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(1, c, h, w)}}}
		v := "x"
		if conv {
			g.Nodes = append(g.Nodes, &graph.Node{Name: "conv", OpType: "Conv", Inputs: []string{"x", "w"}, Outputs: []string{"v"}})
			v = "v"
		}
		g.Nodes = append(g.Nodes,
			&graph.Node{Name: "sig", OpType: "Sigmoid", Inputs: []string{v}, Outputs: []string{"s"}},
			&graph.Node{Name: "mul", OpType: "Mul", Inputs: []string{v, "s"}, Outputs: []string{"y"}})
		g.Outputs = []graph.ValueInfo{{Name: "y"}}
		return runtime.TypedSubgraph(&hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}})
	}
	sg := mk(true)
	fg, fused := fuse(sg)
	if len(fg.Nodes) != 1 || fused[fg.Nodes[0]] == nil || len(fused[fg.Nodes[0]].chain) != 1 || fused[fg.Nodes[0]].chain[0].unary != "SiLU" {
		t.Fatalf("Conv → Sigmoid, Mul did not fuse into one SiLU step: %d nodes", len(fg.Nodes))
	}
	withSiLU := float64(estimate(sg, 1).Compute)
	conv := headCost(sg, sg.Graph.Nodes[0], 1) // the 1×1 Conv alone
	if got, want := withSiLU-conv, elems*vmNsPerElem("SiLU"); got < 0.9*want || got > 1.1*want {
		t.Errorf("the fused SiLU adds %.0f ns, want its vector time %.0f ns", got, want)
	}
	alone := mk(false)
	fg, fused = fuse(alone)
	if len(fg.Nodes) != 1 || fused[fg.Nodes[0]] == nil || !fused[fg.Nodes[0]].silu {
		t.Fatalf("Sigmoid, Mul did not fuse into one SiLU node: %d nodes", len(fg.Nodes))
	}
	got := float64(estimate(alone, 1).Compute)
	if want := elems * (vmMemPerElem + vmNsPerElem("SiLU")); got < want || got > want+5000 {
		t.Errorf("a standalone SiLU: %.0f ns, want %.0f plus the node's fixed cost", got, want)
	}
}
