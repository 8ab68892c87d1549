package switchyard_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/onnx"
)

// chainModel is an ONNX chain of n unary nodes over a [1, width] input,
// cycling through ops. With ops that the native backend runs next to
// one it does not (Sign), every third node starts a new partition: the
// shape of graph that made placement quadratic (issue #32).
func chainModel(n, width int, ops ...string) []byte {
	g := &graph.Graph{Name: "chain", Initializers: map[string]*graph.Tensor{}}
	vt := graph.ValueType{DType: graph.Float32, Shape: graph.StaticShape(1, width)}
	g.Inputs = []graph.ValueInfo{{Name: "x", Type: vt}}
	prev := "x"
	for i := range n {
		out := fmt.Sprintf("v%d", i)
		g.Nodes = append(g.Nodes, &graph.Node{OpType: ops[i%len(ops)], Inputs: []string{prev}, Outputs: []string{out}})
		prev = out
	}
	g.Outputs = []graph.ValueInfo{{Name: prev, Type: vt}}
	return onnx.Encode(&graph.Model{IRVersion: 8, Opsets: []graph.Opset{{Version: 17}}, Graph: g})
}

// explainBytes loads data and renders its placement report, as
// `switchyard explain` does.
func explainBytes(tb testing.TB, eng *switchyard.Engine, data []byte) *switchyard.Plan {
	tb.Helper()
	m, err := eng.OpenBytes(context.Background(), data, &switchyard.OpenOptions{Name: "chain"})
	if err != nil {
		tb.Fatal(err)
	}
	defer m.Close()
	p := m.Plan()
	_ = p.Text()
	return p
}

// TestPlaceLongChain: loading and placing a long chain that alternates
// backends stays within a linear allocation bound (it allocated
// quadratically: ~2 GB for 10,000 nodes).
func TestPlaceLongChain(t *testing.T) {
	if testing.Short() {
		t.Skip("long chain")
	}
	const n = 8000
	data := chainModel(n, 1<<16, "Relu", "Sigmoid", "Sign")
	eng, err := switchyard.NewEngine(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	p := explainBytes(t, eng, data)
	runtime.ReadMemStats(&after)
	if len(p.Partitions) < n/2 {
		t.Fatalf("%d partitions for %d alternating nodes; the chain no longer exercises many partitions", len(p.Partitions), n)
	}
	const perNode = 40 << 10 // bytes: generous, linear
	t.Logf("%d nodes, %d partitions: %d MB allocated", n, len(p.Partitions), (after.TotalAlloc-before.TotalAlloc)>>20)
	if got := after.TotalAlloc - before.TotalAlloc; got > n*perNode {
		t.Fatalf("placing a %d-node chain (%d partitions) allocated %d MB, over the linear bound of %d MB", n, len(p.Partitions), got>>20, n*perNode>>20)
	}
}

// BenchmarkExplainChain20k loads and places 20,000-node ONNX chains
// (issue #32's target: under 1 s and 200 MB): "single" is one backend
// throughout, "mixed" alternates native and cpu every few nodes.
func BenchmarkExplainChain20k(b *testing.B) {
	for _, c := range []struct {
		name  string
		width int
		ops   []string
	}{
		{"single", 16, []string{"Relu", "Neg", "Abs", "Sigmoid"}},
		{"mixed", 1 << 16, []string{"Relu", "Sigmoid", "Sign"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			data := chainModel(20000, c.width, c.ops...)
			eng, err := switchyard.NewEngine(context.Background(), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer eng.Close()
			b.ReportAllocs()
			for b.Loop() {
				explainBytes(b, eng, data)
			}
		})
	}
}
