package runtime

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/formats/onnx"
)

const testDomain = "test.switchyard"

// Test-only ops in their own domain keep these tests independent of the
// reference kernels: Twice (x*2), Slow (sleeps, then copies), Boom (panics),
// Alias (returns its input: a contract violation the runtime must absorb).
func init() {
	twice := func(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		out, err := ctx.New(in[0].DType, in[0].Shape)
		if err != nil {
			return nil, err
		}
		src, dst := graph.Data[float32](in[0]), graph.Data[float32](out)
		for i, v := range src {
			dst[i] = 2 * v
		}
		return []*graph.Tensor{out}, nil
	}
	kernels.Register(kernels.Schema{Domain: testDomain, OpType: "Twice", MinInputs: 1, MaxInputs: 1, Kernel: twice, Infer: kernels.SameAsInput})
	kernels.Register(kernels.Schema{Domain: testDomain, OpType: "Slow", MinInputs: 1, MaxInputs: 1, Kernel: func(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		time.Sleep(20 * time.Millisecond)
		return twice(ctx, n, in)
	}})
	kernels.Register(kernels.Schema{Domain: testDomain, OpType: "Boom", MinInputs: 1, MaxInputs: 1, Kernel: func(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		var p *int
		return nil, errors.New(string(rune(*p)))
	}})
	kernels.Register(kernels.Schema{Domain: testDomain, OpType: "Alias", MinInputs: 1, MaxInputs: 1, Kernel: func(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		return []*graph.Tensor{in[0]}, nil
	}})
}

func f32(name string, dims ...graph.Dim) graph.ValueInfo {
	return graph.ValueInfo{Name: name, Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: dims}}
}

// chain builds x → op → op → … → y with n nodes.
func chain(op string, n int) *graph.Model {
	g := &graph.Graph{
		Name:    "chain",
		Inputs:  []graph.ValueInfo{f32("x", graph.Dim{Param: "n"})},
		Outputs: []graph.ValueInfo{f32("y")},
	}
	prev := "x"
	for i := 0; i < n; i++ {
		out := "v" + string(rune('a'+i))
		if i == n-1 {
			out = "y"
		}
		g.Nodes = append(g.Nodes, &graph.Node{OpType: op, Domain: testDomain, Inputs: []string{prev}, Outputs: []string{out}})
		prev = out
	}
	return &graph.Model{IRVersion: 8, Opsets: []graph.Opset{{Version: 17}, {Domain: testDomain, Version: 1}}, Graph: g}
}

func load(t *testing.T, m *graph.Model) *Model {
	t.Helper()
	mod, err := LoadBytes(context.Background(), onnx.Encode(m), nil)
	if err != nil {
		t.Fatal(err)
	}
	return mod
}

func vec(v ...float32) *graph.Tensor { return graph.MustFromSlice([]int{len(v)}, v) }

func TestRunChainReusesBuffers(t *testing.T) {
	m := load(t, chain("Twice", 6))
	out, st, err := m.RunWithStats(context.Background(), map[string]*graph.Tensor{"x": vec(1, 2, 3)}, RunOptions{Profile: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := graph.Data[float32](out["y"]); got[0] != 64 || got[2] != 192 {
		t.Fatalf("y = %v", got)
	}
	// six nodes, at most two live buffers: the rest must be recycled
	if st.Reuses < 3 || st.Allocations > 3 {
		t.Errorf("allocations %d reuses %d: lifetimes not used", st.Allocations, st.Reuses)
	}
	if len(st.Nodes) != 6 {
		t.Errorf("profile has %d nodes", len(st.Nodes))
	}
	// a second run must not see the first run's output recycled
	out2, err := m.Run(context.Background(), map[string]*graph.Tensor{"x": vec(1, 1, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if graph.Data[float32](out["y"])[0] != 64 || graph.Data[float32](out2["y"])[0] != 64 {
		t.Fatalf("outputs clobbered: %v %v", out["y"], out2["y"])
	}
}

func TestConcurrentRuns(t *testing.T) {
	m := load(t, chain("Twice", 4))
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				x := float32(g*100 + i)
				out, err := m.Run(context.Background(), map[string]*graph.Tensor{"x": vec(x, x+1)})
				if err != nil {
					errs <- err
					return
				}
				if y := graph.Data[float32](out["y"]); y[0] != 16*x || y[1] != 16*(x+1) {
					errs <- errors.New("wrong result under concurrency")
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestCancellation(t *testing.T) {
	m := load(t, chain("Slow", 10))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := m.Run(ctx, map[string]*graph.Tensor{"x": vec(1)})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want DeadlineExceeded", err)
	}
	if time.Since(start) > 150*time.Millisecond {
		t.Errorf("cancellation took %v: not checked between nodes", time.Since(start))
	}
}

func TestBadInputs(t *testing.T) {
	m := load(t, chain("Twice", 1))
	ctx := context.Background()
	cases := map[string]map[string]*graph.Tensor{
		"missing":   {},
		"unknown":   {"x": vec(1), "zz": vec(1)},
		"dtype":     {"x": graph.MustFromSlice([]int{1}, []int64{1})},
		"rank":      {"x": graph.MustFromSlice([]int{1, 1}, []float32{1})},
		"corrupted": {"x": {DType: graph.Float32, Shape: []int{5}, Data: []float32{1}}},
	}
	for name, in := range cases {
		_, err := m.Run(ctx, in)
		if !errors.Is(err, kernels.ErrInvalid) {
			t.Errorf("%s: got %v, want ErrInvalid", name, err)
		}
	}
}

func TestKernelPanicBecomesError(t *testing.T) {
	m := load(t, chain("Boom", 1))
	_, err := m.Run(context.Background(), map[string]*graph.Tensor{"x": vec(1)})
	if err == nil || !strings.Contains(err.Error(), "internal error in Boom") {
		t.Fatalf("got %v", err)
	}
}

func TestAliasingKernelIsCopied(t *testing.T) {
	m := load(t, chain("Alias", 2))
	x := vec(5)
	out, err := m.Run(context.Background(), map[string]*graph.Tensor{"x": x})
	if err != nil {
		t.Fatal(err)
	}
	graph.Data[float32](out["y"])[0] = 9
	if graph.Data[float32](x)[0] != 5 {
		t.Fatal("output aliases the caller's input")
	}
}

func TestUnsupportedListsEveryOp(t *testing.T) {
	m := chain("Twice", 1)
	m.Graph.Nodes = append(m.Graph.Nodes,
		&graph.Node{OpType: "NoSuchOpA", Inputs: []string{"y"}, Outputs: []string{"a"}},
		&graph.Node{OpType: "NoSuchOpB", Domain: "com.vendor", Inputs: []string{"a"}, Outputs: []string{"b"}})
	m.Graph.Outputs = append(m.Graph.Outputs, f32("b")) // live, so not dropped as dead code
	_, err := LoadBytes(context.Background(), onnx.Encode(m), nil)
	var ue *UnsupportedError
	if !errors.As(err, &ue) || !errors.Is(err, kernels.ErrUnsupported) {
		t.Fatalf("got %v", err)
	}
	msg := err.Error()
	for _, want := range []string{"ai.onnx:NoSuchOpA(opset 17)", "com.vendor:NoSuchOpB(opset 0)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q does not name %s", msg, want)
		}
	}
}

func TestDeadCodeIsDropped(t *testing.T) {
	m := chain("Twice", 2)
	// an unsupported op nobody reads does not stop the model from loading
	m.Graph.Nodes = append(m.Graph.Nodes, &graph.Node{OpType: "NoSuchOp", Inputs: []string{"y"}, Outputs: []string{"dead"}})
	mod := load(t, m)
	if n := len(mod.IR().Graph.Nodes); n != 2 {
		t.Fatalf("%d nodes after simplification, want 2", n)
	}
}

func TestInvalidGraphs(t *testing.T) {
	m := chain("Twice", 2)
	m.Graph.Nodes[0].Inputs = []string{"nowhere"}
	if _, err := LoadBytes(context.Background(), onnx.Encode(m), nil); err == nil || !strings.Contains(err.Error(), `"nowhere" is not defined`) {
		t.Errorf("dangling input: %v", err)
	}
	m = chain("Twice", 2)
	m.Graph.Nodes[0].Inputs = []string{"y"} // y depends on va, va on y
	if _, err := LoadBytes(context.Background(), onnx.Encode(m), nil); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("cycle: %v", err)
	}
	m = chain("Twice", 1)
	m.Graph.Inputs[0].Type.Shape = graph.StaticShape(1000000, 1000000)
	if _, err := LoadBytes(context.Background(), onnx.Encode(m), nil); !errors.Is(err, graph.ErrTooLarge) {
		t.Errorf("10^12-element input: %v", err)
	}
}
