package native

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/ggml"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels/blockquant"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/runtime"
)

// ffnChainGraph is layers feed-forward blocks of K k and hidden n (gate,
// up, SwiGLU, down, the residual Add), each reading the one before's sum,
// typ every weight's type: decode's FFN part of a model, its weights
// streaming from memory as a model's do.
func ffnChainGraph(rng *rand.Rand, typ ggml.Type, layers, k, n int) (*hal.Subgraph, []*graph.Tensor) {
	g := &graph.Graph{Name: "ffnchain", Initializers: map[string]*graph.Tensor{}}
	g.Inputs = append(g.Inputs, graph.ValueInfo{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(1, 1, k)}})
	mm := func(name, in string, N, K int) string {
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
	for l := range layers {
		p := fmt.Sprintf("l%d.", l)
		gate, up := mm(p+"gate", x, n, k), mm(p+"up", x, n, k)
		g.Nodes = append(g.Nodes, &graph.Node{Name: p + "swiglu", OpType: blockquant.SwiGLUOpType, Domain: blockquant.Domain, Inputs: []string{gate, up}, Outputs: []string{p + "h"}})
		down := mm(p+"down", p+"h", k, n)
		g.Nodes = append(g.Nodes, &graph.Node{Name: p + "res", OpType: "Add", Inputs: []string{x, down}, Outputs: []string{p + "sum"}})
		x = p + "sum"
	}
	g.Outputs = append(g.Outputs, graph.ValueInfo{Name: x})
	sg := runtime.TypedSubgraph(&hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}, {Domain: blockquant.Domain, Version: 1}}})
	v := make([]float32, k)
	for i := range v {
		v[i] = float32(rng.NormFloat64() * 0.1)
	}
	return sg, []*graph.Tensor{graph.MustFromSlice([]int{1, 1, k}, v)}
}

// BenchmarkFFNDecode: decode's feed-forward blocks of eight
// Qwen2.5-0.5B-shape layers (K 896, hidden 4864, Q4_0: 59 MB of weights,
// more than the caches hold), on the integer path at 1 and 2 threads:
// the nodes apart (gate+up group, SwiGLU, down, Add) and fused
// (fuse2_ffn.go), run alternately in one loop (a loaded machine's drift
// hits both), reported as the median µs of a layer of each (apart-µs,
// fused-µs).
func BenchmarkFFNDecode(b *testing.B) {
	const layers = 8
	sg, in := ffnChainGraph(rand.New(rand.NewPCG(43, 4)), ggml.Q4_0, layers, 896, 4864)
	ctx := context.Background()
	defer func(on bool) { ffnOn = on }(ffnOn)
	for _, threads := range []int{1, 2} {
		b.Run(map[int]string{1: "t1", 2: "t2"}[threads], func(b *testing.B) {
			var exes [2]hal.Executable
			var outs [2][]*graph.Tensor
			be := New(Options{}) // one pool: the other's workers do not spin meanwhile
			defer be.Close()
			for i, on := range []bool{false, true} {
				ffnOn = on
				exe, err := be.Compile(ctx, sg, hal.CompileOptions{Threads: threads, Precision: hal.PrecisionInt8})
				if err != nil {
					b.Fatal(err)
				}
				exes[i] = exe
				outs[i] = []*graph.Tensor{{}}
			}
			var ns [2][]float64
			for b.Loop() {
				for i, exe := range exes {
					t0 := time.Now()
					if err := exe.Execute(ctx, in, outs[i]); err != nil {
						b.Fatal(err)
					}
					ns[i] = append(ns[i], float64(time.Since(t0).Nanoseconds())/layers)
				}
			}
			for i, unit := range []string{"apart-µs", "fused-µs"} {
				slices.Sort(ns[i])
				b.ReportMetric(ns[i][len(ns[i])/2]/1e3, unit)
			}
		})
	}
}
