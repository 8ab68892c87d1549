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

// bqGroupGraph is three typed BlockQuantMatMuls of one input (K 512)
// with a bias Add after the first two (one with the bias first), and a
// fourth on another input (no group), and a random A [1, m, 512].
func bqGroupGraph(rng *rand.Rand, m int) (*hal.Subgraph, []*graph.Tensor) {
	const k = 512
	g := &graph.Graph{Name: "bqgroup", Initializers: map[string]*graph.Tensor{},
		Inputs: []graph.ValueInfo{
			{Name: "a", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(1, m, k)}},
			{Name: "a2", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(1, m, k)}},
		}}
	member := func(name, in string, t ggml.Type, n int) string {
		raw := randomGGML(rng, t, n, k)
		g.Initializers[name+".q"] = graph.MustFromSlice([]int{n, len(raw) / n}, raw)
		at := map[string]*graph.Attribute{
			"N":    {Name: "N", Type: graph.AttrInt, I: int64(n)},
			"K":    {Name: "K", Type: graph.AttrInt, I: k},
			"type": {Name: "type", Type: graph.AttrString, S: t.String()},
		}
		g.Nodes = append(g.Nodes, &graph.Node{Name: name, OpType: blockquant.OpType, Domain: blockquant.Domain,
			Inputs: []string{in, name + ".q"}, Outputs: []string{name + ".y"}, Attrs: at})
		return name + ".y"
	}
	bias := func(y string, n int, first bool) string {
		b := make([]float32, n)
		for i := range b {
			b[i] = float32(rng.NormFloat64())
		}
		g.Initializers[y+".b"] = graph.MustFromSlice([]int{n}, b)
		ins := []string{y, y + ".b"}
		if first {
			ins[0], ins[1] = ins[1], ins[0]
		}
		g.Nodes = append(g.Nodes, &graph.Node{Name: y + ".add", OpType: "Add", Inputs: ins, Outputs: []string{y + ".sum"}})
		return y + ".sum"
	}
	q := bias(member("q", "a", ggml.Q8_0, 300), 300, false)
	kk := member("k", "a", ggml.Q4_K, 75)
	v := bias(member("v", "a", ggml.Q5_0, 37), 37, true)
	o := member("o", "a2", ggml.Q6_K, 20)
	for _, y := range []string{q, kk, v, o} {
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

// TestBQGroupSameBits: the group of siblings (with the bias Adds taken
// in) gives each output the bits the nodes give apart, at both
// precisions, one activation row and three, one thread and two.
func TestBQGroupSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(40, 3))
	ctx := context.Background()
	for _, m := range []int{1, 3} {
		sg, in := bqGroupGraph(rng, m)
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
