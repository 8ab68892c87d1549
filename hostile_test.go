package switchyard_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/onnx"
	"github.com/switchyard-hal/switchyard/internal/backendtest"
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

// signOnCPU keeps Sign on the cpu fallback, so a chain cycling through
// Relu, Sigmoid and Sign alternates backends on any machine (native alone
// would take all three, running Sign on its reference kernel).
func signOnCPU() *switchyard.OpenOptions {
	return &switchyard.OpenOptions{Policy: switchyard.Policy{Allow: map[string][]string{"Sign": {"cpu"}}}}
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
	eng, err := switchyard.NewEngine(context.Background(), signOnCPU())
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

// deepLlama2c is a llama2.c export of tiny width (dim 4) and the given
// number of layers: a small file that builds a graph of ~15 nodes per
// layer (issue #32: 4096 layers hung generate).
func deepLlama2c(layers int) []byte {
	const D, H, heads, kv, V, S = 4, 8, 2, 1, 6, 4
	kvd := kv * D / heads
	n := V*D + layers*D + layers*D*D + 2*layers*kvd*D + layers*D*D + layers*D + 3*layers*H*D + D + S*D/heads
	b := make([]byte, 0, 28+4*n)
	for _, v := range []int{D, H, layers, heads, kv, V, S} {
		b = binary.LittleEndian.AppendUint32(b, uint32(v))
	}
	for i := range n {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(math.Sin(float64(i)))))
	}
	return b
}

// BenchmarkExplainDeepLlama2c loads and places a 4096-layer llama2.c file
// of dim 4 (61,000 nodes), as `switchyard explain` does.
func BenchmarkExplainDeepLlama2c(b *testing.B) {
	path := filepath.Join(b.TempDir(), "deep.bin")
	if err := os.WriteFile(path, deepLlama2c(4096), 0o644); err != nil {
		b.Fatal(err)
	}
	eng, err := switchyard.NewEngine(context.Background(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	b.ReportAllocs()
	for b.Loop() {
		m, err := eng.Open(context.Background(), path, nil)
		if err != nil {
			b.Fatal(err)
		}
		_ = m.Plan().Text()
		m.Close()
	}
}

// TestPartitionMemoryInBudget: a backend's own memory for its partitions
// counts against the model's budget. A 600-node chain of [1, 65536]
// values split into ~200 XNNPACK partitions asks XNNPACK for ~100 MB of
// buffers; under a 32 MB budget the load is refused, naming the
// partition, instead of holding the memory outside the budget.
func TestPartitionMemoryInBudget(t *testing.T) {
	data := chainModel(600, 1<<16, "Relu", "Sigmoid", "Sign")
	eng, err := switchyard.NewEngine(context.Background(), &switchyard.OpenOptions{Backends: []string{"xnnpack", "cpu"}, MemoryBudget: 32 << 20})
	if err != nil {
		backendtest.SkipUnlessRequired(t, "xnnpack", err.Error())
	}
	defer eng.Close()
	m, err := eng.OpenBytes(context.Background(), data, &switchyard.OpenOptions{Name: "chain"})
	if err == nil {
		m.Close()
		t.Fatal("a model whose XNNPACK partitions need ~100 MB loaded under a 32 MB budget")
	}
	t.Log(err)
	if !errors.Is(err, switchyard.ErrResourceExhausted) || !strings.Contains(err.Error(), "xnnpack") {
		t.Fatalf("got %v, want a resource-exhausted error naming the xnnpack partition", err)
	}
}
