package native

import (
	"slices"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

// A zero Pad of the spatial axes read only by a Conv disappears into the
// Conv's pads; a non-zero value, a channel pad, a Pad read twice and a
// Conv with auto_pad stay as they are. (TestOpsAgainstReference's
// pad-conv cases check what the folded Convs compute.)
func TestPadFoldsIntoConv(t *testing.T) {
	f32 := func(dims ...int) graph.ValueType {
		return graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(dims...)}
	}
	i64 := func(v ...int64) *graph.Tensor { return graph.MustFromSlice([]int{len(v)}, v) }
	for _, c := range []struct {
		name     string
		pads     *graph.Tensor
		value    float32
		autoPad  string
		twice    bool
		wantPads []int64 // nil: not folded
	}{
		{"spatial", i64(0, 0, 0, 1, 0, 0, 1, 2), 0, "", false, []int64{1, 2, 2, 3}},
		{"value", i64(0, 0, 0, 1, 0, 0, 1, 2), 0.5, "", false, nil},
		{"channels", i64(0, 1, 0, 0, 0, 0, 0, 0), 0, "", false, nil},
		{"read-twice", i64(0, 0, 0, 1, 0, 0, 1, 2), 0, "", true, nil},
		{"auto-pad", i64(0, 0, 0, 1, 0, 0, 1, 2), 0, "SAME_UPPER", false, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			conv := &graph.Node{Name: "conv", OpType: "Conv", Inputs: []string{"xp", "w"}, Outputs: []string{"y"},
				Attrs: map[string]*graph.Attribute{"pads": {Name: "pads", Type: graph.AttrInts, Ints: []int64{1, 1, 1, 1}}}}
			if c.autoPad != "" {
				conv.Attrs = map[string]*graph.Attribute{"auto_pad": {Name: "auto_pad", Type: graph.AttrString, S: c.autoPad}}
			}
			g := &graph.Graph{
				Inputs:  []graph.ValueInfo{{Name: "x", Type: f32(1, 2, 5, 6)}},
				Outputs: []graph.ValueInfo{{Name: "y"}},
				Nodes: []*graph.Node{
					{Name: "pad", OpType: "Pad", Inputs: []string{"x", "p", "v"}, Outputs: []string{"xp"}},
					conv,
				},
				Initializers: map[string]*graph.Tensor{"w": graph.MustFromSlice([]int{2, 2, 3, 3}, make([]float32, 36)), "p": c.pads, "v": graph.Scalar(c.value)},
			}
			if c.twice {
				g.Nodes = append(g.Nodes, &graph.Node{Name: "relu", OpType: "Relu", Inputs: []string{"xp"}, Outputs: []string{"r"}})
				g.Outputs = append(g.Outputs, graph.ValueInfo{Name: "r"})
			}
			fg, _ := fuse(&hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}})
			var pads []int64
			folded := true
			for _, n := range fg.Nodes {
				switch n.OpType {
				case "Pad":
					folded = false
				case "Conv":
					pads = n.AttrInts("pads", nil)
					if folded && n.Inputs[0] != "x" {
						t.Fatalf("folded Conv reads %q, want x", n.Inputs[0])
					}
				}
			}
			if c.wantPads == nil {
				if folded {
					t.Fatalf("Pad folded: Conv pads %v", pads)
				}
				return
			}
			if !folded || !slices.Equal(pads, c.wantPads) {
				t.Fatalf("folded %v, Conv pads %v; want folded, pads %v", folded, pads, c.wantPads)
			}
		})
	}
}
