package exec_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/switchyard-hal/switchyard/core/exec"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	_ "github.com/switchyard-hal/switchyard/core/kernels/all"
)

// holdProgram compiles x → hold → y, where hold allocates n float32 for
// its output and, when gate is not nil, signals started and waits on gate
// before returning.
func holdProgram(t *testing.T, n int, b *exec.Budget, started chan<- struct{}, gate <-chan struct{}) *exec.Program {
	t.Helper()
	node := &graph.Node{Name: "hold", OpType: "Hold", Inputs: []string{"x"}, Outputs: []string{"y"}}
	g := &graph.Graph{
		Name:    "hold",
		Inputs:  []graph.ValueInfo{{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(1)}}},
		Outputs: []graph.ValueInfo{{Name: "y", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32}}},
		Nodes:   []*graph.Node{node},
	}
	hold := func(ctx *kernels.Context, n0 *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		out, err := ctx.New(graph.Float32, []int{n})
		if err != nil {
			return nil, err
		}
		if gate != nil {
			started <- struct{}{}
			<-gate
		}
		return []*graph.Tensor{out}, nil
	}
	p, err := exec.Compile(g, exec.Options{Opsets: []graph.Opset{{Version: 17}}, Kernels: map[*graph.Node]kernels.Func{node: hold}, Budget: b})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBudgetSharedAcrossConcurrentRuns: two Runs of one program, each
// needing 60% of the budget: while the first holds its buffer the second
// is refused (naming the node, the request and the budget); once the first
// is done the second runs.
func TestBudgetSharedAcrossConcurrentRuns(t *testing.T) {
	const n = 1 << 20 // 4 MiB
	b := exec.NewBudget(n * 4 * 10 / 6)
	started, gate := make(chan struct{}), make(chan struct{})
	p := holdProgram(t, n, b, started, gate)
	x := map[string]*graph.Tensor{"x": graph.MustFromSlice([]int{1}, []float32{1})}
	var wg sync.WaitGroup
	var firstErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, firstErr = p.Run(context.Background(), x)
	}()
	<-started
	if b.Held() != n*4 {
		t.Fatalf("held %d bytes while the first run holds 4 MiB", b.Held())
	}
	// the second run allocates before it reaches the gate: refused at once
	_, err := p.Run(context.Background(), x)
	var be *exec.BudgetError
	if !errors.As(err, &be) || !errors.Is(err, kernels.ErrResourceExhausted) {
		t.Fatalf("concurrent run: got %v, want a budget error", err)
	}
	if be.Node == "" || !strings.Contains(err.Error(), "hold") || be.Bytes != n*4 || be.Limit != b.Limit() || be.Held != n*4 {
		t.Errorf("budget error %+v: %v", be, err)
	}
	close(gate)
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	// the output went to the caller: its bytes left the budget
	if b.Held() != 0 {
		t.Fatalf("held %d bytes after both runs", b.Held())
	}
	started2 := make(chan struct{}, 1)
	gate2 := make(chan struct{})
	close(gate2)
	p2 := holdProgram(t, n, b, started2, gate2)
	if _, err := p2.Run(context.Background(), x); err != nil {
		t.Fatalf("a run alone within the budget: %v", err)
	}
	if b.Peak() > b.Limit() {
		t.Errorf("peak %d over the budget %d", b.Peak(), b.Limit())
	}
}

// TestBudgetTrimsIdleBuffers: buffers kept for later runs of one program
// give way (are dropped) when another program sharing the budget needs
// the room, instead of failing it.
func TestBudgetTrimsIdleBuffers(t *testing.T) {
	b := exec.NewBudget(3 << 20)
	// a chain of two Relus over 1 MiB keeps its intermediate's buffer
	g := &graph.Graph{
		Name:    "chain",
		Inputs:  []graph.ValueInfo{{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(1 << 18)}}},
		Outputs: []graph.ValueInfo{{Name: "z", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32}}},
		Nodes: []*graph.Node{
			{OpType: "Relu", Inputs: []string{"x"}, Outputs: []string{"y"}},
			{OpType: "Relu", Inputs: []string{"y"}, Outputs: []string{"z"}},
		},
	}
	p, err := exec.Compile(g, exec.Options{Opsets: []graph.Opset{{Version: 17}}, Budget: b})
	if err != nil {
		t.Fatal(err)
	}
	x, _ := graph.New(graph.Float32, []int{1 << 18})
	if _, err := p.Run(context.Background(), map[string]*graph.Tensor{"x": x}); err != nil {
		t.Fatal(err)
	}
	if b.Held() != 1<<20 {
		t.Fatalf("held %d bytes, want the idle 1 MiB intermediate", b.Held())
	}
	other := holdProgram(t, 1<<19+1<<18, b, nil, nil) // 3 MiB
	if _, err := other.Run(context.Background(), map[string]*graph.Tensor{"x": graph.MustFromSlice([]int{1}, []float32{1})}); err != nil {
		t.Fatalf("idle buffers were not given up: %v", err)
	}
	if b.Held() != 0 {
		t.Fatalf("held %d bytes at rest", b.Held())
	}
	p.Trim()
}
