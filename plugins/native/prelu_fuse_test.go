package native

import (
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

// A PRelu with a constant slope after a Conv (directly, or after the
// residual Add of MediaPipe's blocks) joins the Conv's chain; one whose
// slope does not broadcast to the Conv's output, or is computed at run
// time, stays a node of its own. (TestOpsAgainstReference's conv-prelu
// cases check what the fused chains compute.)
func TestPReluJoinsChain(t *testing.T) {
	f32 := func(dims ...int) graph.ValueType {
		return graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(dims...)}
	}
	ones := func(dims ...int) *graph.Tensor {
		n := 1
		for _, d := range dims {
			n *= d
		}
		return graph.MustFromSlice(dims, make([]float32, n))
	}
	for _, c := range []struct {
		name   string
		slope  *graph.Tensor // nil: a graph input
		fused  bool
		nsteps int
	}{
		{"per-channel", ones(4, 1, 1), true, 3},
		{"nchw-4d", ones(1, 4, 1, 1), true, 3},
		{"per-column", ones(6), true, 3},
		{"not-broadcasting", ones(3, 1, 1), false, 0},
		{"run-time-slope", nil, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := &graph.Graph{
				Inputs:  []graph.ValueInfo{{Name: "x", Type: f32(1, 2, 5, 6)}, {Name: "r", Type: f32(1, 4, 5, 6)}},
				Outputs: []graph.ValueInfo{{Name: "y", Type: f32(1, 4, 5, 6)}},
				Nodes: []*graph.Node{
					{Name: "conv", OpType: "Conv", Inputs: []string{"x", "w"}, Outputs: []string{"c"}},
					{Name: "p1", OpType: "PRelu", Inputs: []string{"c", "s"}, Outputs: []string{"p"}},
					{Name: "add", OpType: "Add", Inputs: []string{"p", "r"}, Outputs: []string{"a"}},
					{Name: "p2", OpType: "PRelu", Inputs: []string{"a", "s"}, Outputs: []string{"y"}},
				},
				Initializers: map[string]*graph.Tensor{"w": ones(4, 2, 1, 1)},
				ValueInfo:    []graph.ValueInfo{{Name: "c", Type: f32(1, 4, 5, 6)}, {Name: "p", Type: f32(1, 4, 5, 6)}, {Name: "a", Type: f32(1, 4, 5, 6)}},
			}
			if c.slope != nil {
				g.Initializers["s"] = c.slope
			} else {
				g.Inputs = append(g.Inputs, graph.ValueInfo{Name: "s", Type: f32(4, 1, 1)})
			}
			fg, fused := fuse(&hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}})
			var f *fusion
			for _, n := range fg.Nodes {
				if n.OpType == "Conv" {
					f = fused[n]
				}
			}
			if !c.fused {
				if f != nil {
					for _, s := range f.chain {
						if s.kind == stepPRelu {
							t.Fatalf("PRelu fused: %+v", f.chain)
						}
					}
				}
				return
			}
			if f == nil || len(f.chain) != c.nsteps || len(fg.Nodes) != 1 || f.chain[0].kind != stepPRelu || f.chain[2].kind != stepPRelu || f.chain[2].extra != 1 {
				t.Fatalf("nodes %d, fusion %+v: want one Conv with PRelu, Add, PRelu in its chain", len(fg.Nodes), f)
			}
		})
	}
}
