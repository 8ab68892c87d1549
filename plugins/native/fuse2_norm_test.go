package native

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/runtime"
)

// addNorm adds an RMSNorm of x (last axis k, a random scale) to g and
// returns its output.
func addNorm(rng *rand.Rand, g *graph.Graph, x string, k int) string {
	sc := make([]float32, k)
	for i := range sc {
		sc[i] = float32(1 + rng.NormFloat64()*0.2)
	}
	g.Initializers[x+".norm.w"] = graph.MustFromSlice([]int{k}, sc)
	g.Nodes = append(g.Nodes, &graph.Node{Name: x + ".norm", OpType: "SimplifiedLayerNormalization", Inputs: []string{x, x + ".norm.w"},
		Outputs: []string{x + ".n"}, Attrs: map[string]*graph.Attribute{
			"axis":    {Name: "axis", Type: graph.AttrInt, I: -1},
			"epsilon": {Name: "epsilon", Type: graph.AttrFloat, F: 1e-6},
		}})
	return x + ".n"
}

// TestNormGroupSameBits: a group of sibling products (bqfuse.go's test
// graph) taking over the RMSNorm before it gives the nodes' bits apart
// (one activation row and three, both precisions, one thread and two),
// and leaves alone a norm whose output is also a graph output.
func TestNormGroupSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(44, 5))
	ctx := context.Background()
	for _, m := range []int{1, 3} {
		for _, shared := range []bool{false, true} {
			sg, in := bqGroupGraph(rng, m, 512, bqGroupTestSpecs)
			g0 := sg.Graph
			// the group's input "a" becomes the norm of a new input "a0"
			for i := range g0.Inputs {
				if g0.Inputs[i].Name == "a" {
					g0.Inputs[i].Name = "a0"
				}
			}
			addNorm(rng, g0, "a0", 512)
			nn := g0.Nodes[len(g0.Nodes)-1]
			nn.Outputs[0] = "a"
			g0.Nodes = append([]*graph.Node{nn}, g0.Nodes[:len(g0.Nodes)-1]...)
			if shared {
				g0.Outputs = append(g0.Outputs, graph.ValueInfo{Name: "a"})
			}
			sg = runtime.TypedSubgraph(&hal.Subgraph{Graph: g0, Opsets: sg.Opsets})
			g, fused := fuse(sg)
			g = fuseBQGroups(sg, g, fused)
			if err := checkRewrite(sg.Graph, g); err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{false: 2, true: 3}[shared]; len(g.Nodes) != want {
				t.Fatalf("m %d shared %v: %d nodes after fusion, want %d", m, shared, len(g.Nodes), want)
			}
			for _, prec := range []hal.Precision{hal.PrecisionFloat32, hal.PrecisionInt8} {
				for _, threads := range []int{1, 2} {
					var res [2][]*graph.Tensor
					for i, noFuse := range []bool{true, false} {
						b := New(Options{})
						b.noFuse = noFuse
						exe, err := b.Compile(ctx, sg, hal.CompileOptions{Threads: threads, Precision: prec})
						if err != nil {
							t.Fatal(err)
						}
						for range sg.Graph.Outputs {
							res[i] = append(res[i], &graph.Tensor{})
						}
						for range 2 { // the second call on recycled buffers
							if err := exe.Execute(ctx, in, res[i]); err != nil {
								t.Fatal(err)
							}
						}
						b.Close()
					}
					for o := range res[0] {
						want, got := graph.Data[float32](res[0][o]), graph.Data[float32](res[1][o])
						if len(got) != len(want) {
							t.Fatalf("m %d %s threads %d output %d: %d values, want %d", m, prec, threads, o, len(got), len(want))
						}
						for i := range want {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
								t.Fatalf("m %d %s threads %d output %d [%d]: %v, apart %v", m, prec, threads, o, i, got[i], want[i])
							}
						}
					}
				}
			}
		}
	}
}
