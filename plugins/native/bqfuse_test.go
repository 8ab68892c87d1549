package native

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/ggml"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels/blockquant"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/runtime"
)

// bqSpec is one typed BlockQuantMatMul of a test graph: its name, input
// ("a" or "a2"), type and N, and its bias Add (0 none, 1 Add(y, b), 2
// Add(b, y)).
type bqSpec struct {
	name, in string
	typ      ggml.Type
	n, bias  int
}

// bqGroupGraph is a graph of the products specs (K k; each one's output,
// after its bias Add if any, a graph output) and random A [1, m, k] and
// A2 (inputs "a" and "a2").
func bqGroupGraph(rng *rand.Rand, m, k int, specs []bqSpec) (*hal.Subgraph, []*graph.Tensor) {
	g := &graph.Graph{Name: "bqgroup", Initializers: map[string]*graph.Tensor{}}
	for _, name := range []string{"a", "a2"} {
		g.Inputs = append(g.Inputs, graph.ValueInfo{Name: name, Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(1, m, k)}})
	}
	for _, s := range specs {
		raw := randomGGML(rng, s.typ, s.n, k)
		g.Initializers[s.name+".q"] = graph.MustFromSlice([]int{s.n, len(raw) / s.n}, raw)
		at := map[string]*graph.Attribute{
			"N":    {Name: "N", Type: graph.AttrInt, I: int64(s.n)},
			"K":    {Name: "K", Type: graph.AttrInt, I: int64(k)},
			"type": {Name: "type", Type: graph.AttrString, S: s.typ.String()},
		}
		y := s.name + ".y"
		g.Nodes = append(g.Nodes, &graph.Node{Name: s.name, OpType: blockquant.OpType, Domain: blockquant.Domain,
			Inputs: []string{s.in, s.name + ".q"}, Outputs: []string{y}, Attrs: at})
		if s.bias != 0 {
			b := make([]float32, s.n)
			for i := range b {
				b[i] = float32(rng.NormFloat64())
			}
			g.Initializers[y+".b"] = graph.MustFromSlice([]int{s.n}, b)
			ins := []string{y, y + ".b"}
			if s.bias == 2 {
				ins[0], ins[1] = ins[1], ins[0]
			}
			g.Nodes = append(g.Nodes, &graph.Node{Name: y + ".add", OpType: "Add", Inputs: ins, Outputs: []string{y + ".sum"}})
			y += ".sum"
		}
		g.Outputs = append(g.Outputs, graph.ValueInfo{Name: y})
	}
	sg := runtime.TypedSubgraph(&hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}, {Domain: blockquant.Domain, Version: 1}}})
	var in []*graph.Tensor
	for range 2 {
		av := make([]float32, m*k)
		for i := range av {
			av[i] = float32(rng.NormFloat64())
		}
		in = append(in, graph.MustFromSlice([]int{1, m, k}, av))
	}
	return sg, in
}

// bqGroupTestSpecs: three products of one input (K 512), a bias Add
// after the first (b + y) and the last (y + b), and a fourth on another
// input (no group); types of both activation forms, N not a multiple of
// 4 or 8, the last member large enough for its last tasks to be split
// finer at 2 threads.
var bqGroupTestSpecs = []bqSpec{
	{"v", "a", ggml.Q5_0, 37, 2}, {"k", "a", ggml.Q4_K, 75, 0}, {"q", "a", ggml.Q8_0, 300, 1}, {"o", "a2", ggml.Q6_K, 20, 0},
}

// TestBQGroupSameBits: the group of siblings (with the bias Adds taken
// in) gives each output the bits the nodes give apart, at both
// precisions, one activation row and three, one thread and two.
func TestBQGroupSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(40, 3))
	ctx := context.Background()
	for _, m := range []int{1, 3} {
		sg, in := bqGroupGraph(rng, m, 512, bqGroupTestSpecs)
		g, fused := fuse(sg)
		g = fuseBQGroups(sg, g, fused)
		if err := checkRewrite(sg.Graph, g); err != nil {
			t.Fatal(err)
		}
		var ops []string
		for _, n := range g.Nodes {
			ops = append(ops, n.OpType)
		}
		if len(g.Nodes) != 2 || g.Nodes[0].OpType != bqGroupOp || len(g.Nodes[0].Outputs) != 3 || g.Nodes[1].OpType != blockquant.OpType {
			t.Fatalf("fused graph's nodes %v, want the group of three and the lone product", ops)
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
					if got := exe.(*Executable).int8Nodes; prec == hal.PrecisionInt8 && got != 4 {
						t.Errorf("%d nodes on the integer path, want 4", got)
					}
					res[i] = []*graph.Tensor{{}, {}, {}, {}}
					if err := exe.Execute(ctx, in, res[i]); err != nil {
						t.Fatal(err)
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
