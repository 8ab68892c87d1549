package native

import (
	"context"
	"github.com/switchyard-hal/switchyard/core/opcost"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/runtime"

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

// The estimate prices the graph the executable runs: a BatchNormalization
// folded into its Conv and a hard-swish chain fused into its output cost
// (almost) nothing, a 1×1 convolution less per FLOP than a 3×3 one, and
// GlobalAveragePool at its own kernel's rate, not a reduction's.
func TestEstimateFusedAndPointwise(t *testing.T) {
	defer opcost.TablesOnly()() // the built-in tables, not the measured profiles
	rng := rand.New(rand.NewPCG(9, 9))
	sh := []int{1, 32, 24, 40}
	mk := func(bn, hswish bool, k int) *hal.Subgraph {
		g := &graph.Graph{Initializers: map[string]*graph.Tensor{"w": calRand(rng, 32, 32, k, k),
			"s": calRand(rng, 32), "b": calRand(rng, 32), "m": calRand(rng, 32), "v": graph.MustFromSlice([]int{32}, make([]float32, 32)),
			"three": graph.Scalar(float32(3)), "zero": graph.Scalar(float32(0)), "six": graph.Scalar(float32(6))},
			Inputs: []graph.ValueInfo{{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(sh...)}}}}
		p := int64(k / 2)
		g.Nodes = []*graph.Node{{Name: "conv", OpType: "Conv", Inputs: []string{"x", "w"}, Outputs: []string{"y"},
			Attrs: map[string]*graph.Attribute{"pads": {Name: "pads", Type: graph.AttrInts, Ints: []int64{p, p, p, p}}}}}
		last := "y"
		if bn {
			for i := range g.Initializers["v"].Data.([]float32) {
				g.Initializers["v"].Data.([]float32)[i] = 1
			}
			g.Nodes = append(g.Nodes, &graph.Node{Name: "bn", OpType: "BatchNormalization", Inputs: []string{last, "s", "b", "m", "v"}, Outputs: []string{"z"}})
			last = "z"
		}
		if hswish {
			g.Nodes = append(g.Nodes,
				&graph.Node{Name: "a", OpType: "Add", Inputs: []string{last, "three"}, Outputs: []string{"a"}},
				&graph.Node{Name: "c", OpType: "Clip", Inputs: []string{"a", "zero", "six"}, Outputs: []string{"c"}},
				&graph.Node{Name: "mu", OpType: "Mul", Inputs: []string{last, "c"}, Outputs: []string{"mu"}},
				&graph.Node{Name: "d", OpType: "Div", Inputs: []string{"mu", "six"}, Outputs: []string{"d"}})
			last = "d"
		}
		g.Outputs = []graph.ValueInfo{{Name: last}}
		return runtime.TypedSubgraph(&hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}})
	}
	conv := estimate(mk(false, false, 1), 1)
	all := estimate(mk(true, true, 1), 1)
	if extra := all.Compute - conv.Compute; extra < 0 || float64(extra) > 0.3*float64(conv.Compute) {
		t.Errorf("Conv+BN+hard-swish %v vs Conv %v: the fused nodes should add under 30%%", all.Compute, conv.Compute)
	}
	c1, c3 := estimate(mk(false, false, 1), 1), estimate(mk(false, false, 3), 1)
	perFLOP1 := float64(c1.Compute) / (2 * 32 * 32 * 24 * 40)
	perFLOP3 := float64(c3.Compute) / (2 * 32 * 32 * 9 * 24 * 40)
	if perFLOP1 >= perFLOP3 {
		t.Errorf("1×1 conv %.4f ns/FLOP should be cheaper than 3×3 %.4f", perFLOP1, perFLOP3)
	}
	gap := estimate(calCase{op: "GlobalAveragePool", shape: []int{1, 64, 24, 48}}.graphOf(1), 1)
	if gap.Compute > 50*time.Microsecond {
		t.Errorf("GlobalAveragePool of 74k elements: %v (measured about 11 µs)", gap.Compute)
	}
}

// The int8 prices follow the kernel family in use (#17c): the AVX2 GEMM
// tiles cost about 4× the VNNI ones, the portable Go kernels far more;
// the AVX2 depthwise kernel about what the AVX-512 one does; and the
// ONNX QLinearConv is priced on the same scale.
func TestQuantCostPerFamily(t *testing.T) {
	sg := runtime.TypedSubgraph(quantCostGraph())
	conv, dw, ql := sg.Graph.Nodes[0], sg.Graph.Nodes[1], sg.Graph.Nodes[2]
	cost := map[string][3]float64{}
	for _, f := range archQFamilies() {
		t.Setenv(qkernelEnv, f)
		var c [3]float64
		for i, n := range []*graph.Node{conv, dw, ql} {
			v, ok := quantNodeCost(sg, n, 1)
			if !ok {
				t.Fatalf("%s: %s not priced", f, n.Label())
			}
			c[i] = v
		}
		cost[f] = c
		t.Logf("%s: Conv2D %.0f ns, DepthwiseConv2D %.0f ns, QLinearConv %.0f ns", f, c[0], c[1], c[2])
	}
	g := cost["generic"]
	for _, f := range []string{"vnni", "avx2"} {
		c, ok := cost[f]
		if !ok {
			continue
		}
		if g[0] < 20*c[0] || g[1] < 10*c[1] || g[2] < 10*c[2] {
			t.Errorf("generic %v should cost far more than %s %v", g, f, c)
		}
	}
	if v, a := cost["vnni"], cost["avx2"]; v[0] > 0 && a[0] > 0 {
		if r := a[0] / v[0]; r < 3 || r > 5 {
			t.Errorf("Conv2D avx2/vnni %.2f: want about 4 (546 vs 131 µs measured)", r)
		}
		if r := a[1] / v[1]; r < 1 || r > 1.5 {
			t.Errorf("DepthwiseConv2D avx2/vnni %.2f: want about 1.1", r)
		}
		if r := a[2] / v[2]; r < 2 {
			t.Errorf("QLinearConv avx2/vnni %.2f: want the GEMM's slowdown", r)
		}
	}
}

// quantCostGraph: an int8 1×1 Conv2D 56²×24→144, a 3×3 depthwise on its
// output, and an ONNX QLinearConv of the same GEMM shape (NCHW).
func quantCostGraph() *hal.Subgraph {
	i8 := func(shape ...int) *graph.Tensor {
		n := 1
		for _, d := range shape {
			n *= d
		}
		return graph.MustFromSlice(shape, make([]int8, n))
	}
	f := func(v float32) *graph.Tensor { return graph.Scalar(v) }
	z := func() *graph.Tensor { return graph.Scalar(int8(0)) }
	g := &graph.Graph{Initializers: map[string]*graph.Tensor{
		"w": i8(144, 1, 1, 24), "dw": i8(1, 3, 3, 144), "qw": i8(144, 24, 1, 1),
		"s": f(0.05), "z": z(), "ws": f(0.01), "wz": z(), "ys": f(0.1), "yz": z(),
	}}
	g.Inputs = []graph.ValueInfo{
		{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Int8, Shape: graph.StaticShape(1, 56, 56, 24)}},
		{Name: "xq", Type: graph.ValueType{Kind: "tensor", DType: graph.Int8, Shape: graph.StaticShape(1, 24, 56, 56)}},
	}
	pads := map[string]*graph.Attribute{"pads": {Name: "pads", Type: graph.AttrInts, Ints: []int64{1, 1, 1, 1}}}
	g.Nodes = []*graph.Node{
		{Name: "conv", OpType: "Conv2D", Domain: "switchyard.quant", Inputs: []string{"x", "s", "z", "w", "ws", "wz", "ys", "yz"}, Outputs: []string{"c"}},
		{Name: "dw", OpType: "DepthwiseConv2D", Domain: "switchyard.quant", Inputs: []string{"c", "ys", "yz", "dw", "ws", "wz", "ys", "yz"}, Outputs: []string{"d"}, Attrs: pads},
		{Name: "ql", OpType: "QLinearConv", Inputs: []string{"xq", "s", "z", "qw", "ws", "wz", "ys", "yz"}, Outputs: []string{"q"}},
	}
	g.Outputs = []graph.ValueInfo{{Name: "d"}, {Name: "q"}}
	return &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}, {Domain: "switchyard.quant", Version: 1}}}
}
