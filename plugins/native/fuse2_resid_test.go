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

// TestResidSameBits: a lone product taking over its residual Add (the
// Add's operands either way round; a residual of the product's shape and
// a broadcast one, the reference Add) gives the nodes' bits apart, at
// both precisions, one activation row and three, one thread and two.
func TestResidSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 5))
	ctx := context.Background()
	const k, n = 256, 320
	for _, typ := range []ggml.Type{ggml.Q4_0, ggml.Q6_K} {
		for _, swapped := range []bool{false, true} {
			for _, row := range []bool{false, true} {
				for _, m := range []int{1, 3} {
					name := fmt.Sprintf("%v swapped %v row %v m %d", typ, swapped, row, m)
					g := &graph.Graph{Name: "resid", Initializers: map[string]*graph.Tensor{}}
					rShape := []int{1, m, n}
					if row {
						rShape = []int{n}
					}
					g.Inputs = []graph.ValueInfo{
						{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(1, m, k)}},
						{Name: "r", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(rShape...)}},
					}
					raw := randomGGML(rng, typ, n, k)
					g.Initializers["w"] = graph.MustFromSlice([]int{n, len(raw) / n}, raw)
					g.Nodes = append(g.Nodes, &graph.Node{Name: "o", OpType: blockquant.OpType, Domain: blockquant.Domain, Inputs: []string{"x", "w"}, Outputs: []string{"y"},
						Attrs: map[string]*graph.Attribute{
							"N":    {Name: "N", Type: graph.AttrInt, I: n},
							"K":    {Name: "K", Type: graph.AttrInt, I: k},
							"type": {Name: "type", Type: graph.AttrString, S: typ.String()},
						}})
					ins := []string{"r", "y"}
					if swapped {
						ins[0], ins[1] = ins[1], ins[0]
					}
					g.Nodes = append(g.Nodes, &graph.Node{Name: "res", OpType: "Add", Inputs: ins, Outputs: []string{"sum"}})
					g.Outputs = []graph.ValueInfo{{Name: "sum"}}
					sg := runtime.TypedSubgraph(&hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}, {Domain: blockquant.Domain, Version: 1}}})
					var in []*graph.Tensor
					for _, shape := range [][]int{{1, m, k}, rShape} {
						v := make([]float32, shape[len(shape)-1]*len(v0(shape)))
						for i := range v {
							v[i] = float32(rng.NormFloat64())
						}
						in = append(in, graph.MustFromSlice(shape, v))
					}
					fg, fused := fuse(sg)
					fg = fuseBQGroups(sg, fg, fused)
					if err := checkRewrite(sg.Graph, fg); err != nil {
						t.Fatal(err)
					}
					if len(fg.Nodes) != 1 || fg.Nodes[0].OpType != residOp {
						t.Fatalf("%s: %d nodes after fusion, want one %s", name, len(fg.Nodes), residOp)
					}
					for _, prec := range []hal.Precision{hal.PrecisionFloat32, hal.PrecisionInt8} {
						for _, threads := range []int{1, 2} {
							var res [2]*graph.Tensor
							for i, noFuse := range []bool{true, false} {
								b := New(Options{})
								b.noFuse = noFuse
								exe, err := b.Compile(ctx, sg, hal.CompileOptions{Threads: threads, Precision: prec})
								if err != nil {
									t.Fatal(err)
								}
								res[i] = &graph.Tensor{}
								if err := exe.Execute(ctx, in, []*graph.Tensor{res[i]}); err != nil {
									t.Fatal(err)
								}
								b.Close()
							}
							want, got := graph.Data[float32](res[0]), graph.Data[float32](res[1])
							if !graph.SameShape(res[0].Shape, res[1].Shape) {
								t.Fatalf("%s %s threads %d: shape %v, apart %v", name, prec, threads, res[1].Shape, res[0].Shape)
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
	}
}
