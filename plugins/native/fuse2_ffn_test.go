package native

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/ggml"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels/blockquant"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/runtime"
)

// ffnCase is a feed-forward test graph's shape: gate/up's and down's
// types, whether the SwiGLU reads (up, gate), how far the block goes
// (1 SwiGLU, 2 down, 3 the residual Add) and the residual's shape
// ("same": [1, m, k], "row": [k], broadcast).
type ffnCase struct {
	gu, dn  ggml.Type
	swapped bool
	upto    int
	resid   string
	norm    bool // an RMSNorm before gate and up (fuse2_norm.go)
}

// ffnGraph is a feed-forward block of K k and hidden n over input "x"
// [1, m, k] (and "r", the residual), with its random inputs.
func ffnGraph(rng *rand.Rand, c ffnCase, m, k, n int) (*hal.Subgraph, []*graph.Tensor) {
	g := &graph.Graph{Name: "ffn", Initializers: map[string]*graph.Tensor{}}
	rShape := []int{1, m, k}
	if c.resid == "row" {
		rShape = []int{k}
	}
	g.Inputs = append(g.Inputs,
		graph.ValueInfo{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(1, m, k)}},
		graph.ValueInfo{Name: "r", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(rShape...)}})
	mm := func(name, in string, typ ggml.Type, N, K int) string {
		raw := randomGGML(rng, typ, N, K)
		g.Initializers[name+".q"] = graph.MustFromSlice([]int{N, len(raw) / N}, raw)
		at := map[string]*graph.Attribute{
			"N":    {Name: "N", Type: graph.AttrInt, I: int64(N)},
			"K":    {Name: "K", Type: graph.AttrInt, I: int64(K)},
			"type": {Name: "type", Type: graph.AttrString, S: typ.String()},
		}
		g.Nodes = append(g.Nodes, &graph.Node{Name: name, OpType: blockquant.OpType, Domain: blockquant.Domain,
			Inputs: []string{in, name + ".q"}, Outputs: []string{name + ".y"}, Attrs: at})
		return name + ".y"
	}
	x := "x"
	if c.norm {
		x = addNorm(rng, g, "x", k)
	}
	gate, up := mm("gate", x, c.gu, n, k), mm("up", x, c.gu, n, k)
	ins := []string{gate, up}
	if c.swapped {
		ins[0], ins[1] = up, gate
	}
	g.Nodes = append(g.Nodes, &graph.Node{Name: "swiglu", OpType: blockquant.SwiGLUOpType, Domain: blockquant.Domain, Inputs: ins, Outputs: []string{"h"}})
	out := "h"
	if c.upto >= 2 {
		out = mm("down", "h", c.dn, k, n)
	}
	if c.upto >= 3 {
		g.Nodes = append(g.Nodes, &graph.Node{Name: "res", OpType: "Add", Inputs: []string{"r", out}, Outputs: []string{"sum"}})
		out = "sum"
	}
	g.Outputs = append(g.Outputs, graph.ValueInfo{Name: out})
	sg := runtime.TypedSubgraph(&hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}, {Domain: blockquant.Domain, Version: 1}}})
	var in []*graph.Tensor
	for _, shape := range [][]int{{1, m, k}, rShape} {
		v := make([]float32, shape[len(shape)-1]*len(v0(shape)))
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		in = append(in, graph.MustFromSlice(shape, v))
	}
	return sg, in
}

// v0 is a slice of the product of shape's leading sizes.
func v0(shape []int) []struct{} {
	n := 1
	for _, d := range shape[:len(shape)-1] {
		n *= d
	}
	return make([]struct{}, n)
}

// TestFFNSameBits: the fused feed-forward node (gate and up with the
// SwiGLU, down, the residual Add) gives the nodes' bits apart, at both
// precisions, one activation row and three, one thread and two, the
// SwiGLU's operands either way round, a block ending at each of its
// parts, and a broadcast residual (the reference Add).
func TestFFNSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 5))
	ctx := context.Background()
	const k = 256
	cases := []ffnCase{
		{ggml.Q4_0, ggml.Q8_0, false, 3, "same", false},
		{ggml.Q4_0, ggml.Q4_0, true, 3, "same", false},
		{ggml.Q4_K, ggml.Q6_K, false, 3, "same", false},
		{ggml.Q8_0, ggml.Q5_0, false, 3, "row", false},
		{ggml.Q4_0, ggml.Q8_0, true, 2, "", false},
		{ggml.Q4_0, ggml.Q8_0, false, 1, "", false},
		{ggml.Q4_0, ggml.Q4_0, false, 3, "same", true},
		{ggml.Q4_K, ggml.Q6_K, true, 2, "", true},
	}
	for _, c := range cases {
		for _, m := range []int{1, 3} {
			name := fmt.Sprintf("%v-%v-swapped%v-upto%d-%s-norm%v-m%d", c.gu, c.dn, c.swapped, c.upto, c.resid, c.norm, m)
			n := 1056 // tasks of the first loop split finer at 2 threads, a short last one
			if c.dn.BlockSize() != 32 {
				n = 1024 // down's K: whole super-blocks
			}
			sg, in := ffnGraph(rng, c, m, k, n)
			g, fused := fuse(sg)
			g = fuseBQGroups(sg, g, fused)
			if err := checkRewrite(sg.Graph, g); err != nil {
				t.Fatal(err)
			}
			if len(g.Nodes) != 1 || g.Nodes[0].OpType != ffnOp {
				var ops []string
				for _, n := range g.Nodes {
					ops = append(ops, n.OpType)
				}
				t.Fatalf("%s: fused graph's nodes %v, want one %s", name, ops, ffnOp)
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
						res[i] = []*graph.Tensor{{}}
						for range 2 { // a second call reuses the buffers
							if err := exe.Execute(ctx, in, res[i]); err != nil {
								t.Fatal(err)
							}
						}
						b.Close()
					}
					want, got := graph.Data[float32](res[0][0]), graph.Data[float32](res[1][0])
					if !graph.SameShape(res[0][0].Shape, res[1][0].Shape) || len(got) != len(want) {
						t.Fatalf("%s %s threads %d: shape %v, apart %v", name, prec, threads, res[1][0].Shape, res[0][0].Shape)
					}
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s %s threads %d [%d]: %v, apart %v", name, prec, threads, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
}

// TestFFNNotFused: a gate or up that something else reads too keeps
// the nodes apart.
func TestFFNNotFused(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 5))
	sg, _ := ffnGraph(rng, ffnCase{ggml.Q4_0, ggml.Q8_0, false, 3, "same", false}, 1, 256, 64)
	sg.Graph.Outputs = append(sg.Graph.Outputs, graph.ValueInfo{Name: "up.y"})
	g, fused := fuse(sg)
	g = fuseBQGroups(sg, g, fused)
	if err := checkRewrite(sg.Graph, g); err != nil {
		t.Fatal(err)
	}
	for _, n := range g.Nodes {
		if n.OpType == ffnOp {
			t.Fatal("fused a block whose up is a graph output")
		}
	}
}
