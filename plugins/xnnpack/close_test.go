package xnnpack_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/plugins/xnnpack"
	"github.com/switchyard-hal/switchyard/runtime"
)

// Closing the device while a model is loaded and Runs are in flight: every
// Run returns (success, or FailedPrecondition "device closed") within a
// bound, and every later Run fails the same way without entering C. With
// two threads the executables share a pthreadpool, which Close used to
// destroy under them: in-flight and later Runs then hung in C forever.
func TestCloseDuringRuns(t *testing.T) {
	b := xnnpack.OpenForTest(t, xnnpack.Options{Threads: 2})
	dev, err := hal.NewDevice(b, hal.LoadLibrary)
	if err != nil {
		t.Fatal(err)
	}
	const n = 192
	rng := rand.New(rand.NewPCG(8, 8))
	g := &graph.Graph{Name: "close", Initializers: map[string]*graph.Tensor{"w": randT(rng, n, n), "w2": randT(rng, n, n)},
		Inputs:  []graph.ValueInfo{{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(n, n)}}},
		Outputs: []graph.ValueInfo{{Name: "y"}},
		Nodes: []*graph.Node{node("MatMul", []string{"x", "w"}, []string{"a"}), node("Relu", []string{"a"}, []string{"r"}),
			node("MatMul", []string{"r", "w2"}, []string{"y"})}}
	ctx := context.Background()
	m, err := runtime.Prepare(ctx, &graph.Model{IRVersion: 8, Opsets: []graph.Opset{{Version: 17}}, Graph: g}, &runtime.Options{Backends: []*hal.Device{dev}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got := m.Plan().Summary()[xnnpack.Name]; got != 3 {
		t.Fatalf("%d of 3 nodes on xnnpack:\n%s", got, m.Plan().Text())
	}
	feeds := map[string]*graph.Tensor{"x": randT(rng, n, n)}
	if _, err := m.Run(ctx, feeds); err != nil {
		t.Fatal(err)
	}
	closedErr := func(err error) bool {
		return errors.Is(err, hal.ErrFailedPrecondition) && strings.Contains(err.Error(), "xnnpack: device closed")
	}
	const workers = 4
	var (
		wg         sync.WaitGroup
		mu         sync.Mutex
		ok, failed int
		bad        []string
	)
	started := make(chan struct{}, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			started <- struct{}{}
			for {
				_, err := m.Run(ctx, feeds)
				mu.Lock()
				switch {
				case err == nil:
					ok++
				case closedErr(err):
					failed++
				default:
					bad = append(bad, err.Error())
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	for w := 0; w < workers; w++ {
		<-started
	}
	time.Sleep(30 * time.Millisecond)
	closeDone := make(chan error, 1)
	go func() { closeDone <- dev.Close() }()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	const bound = 20 * time.Second
	select {
	case <-done:
	case <-time.After(bound):
		t.Fatalf("Runs still in flight %v after Device.Close (hung in C)", bound)
	}
	select {
	case err := <-closeDone:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(bound):
		t.Fatalf("Device.Close did not return within %v", bound)
	}
	if len(bad) > 0 {
		t.Fatalf("Runs failed with something other than FailedPrecondition \"xnnpack: device closed\": %q", bad)
	}
	if failed != workers {
		t.Fatalf("%d workers ended with the closed error, want %d (%d runs succeeded)", failed, workers, ok)
	}
	// later Runs: refused at once, every time
	for i := 0; i < 3; i++ {
		res := make(chan error, 1)
		go func() { _, err := m.Run(ctx, feeds); res <- err }()
		select {
		case err := <-res:
			if !closedErr(err) {
				t.Fatalf("Run after Close: %v, want FailedPrecondition \"xnnpack: device closed\"", err)
			}
		case <-time.After(bound):
			t.Fatalf("Run after Close hung")
		}
	}
	// Compile after Close is refused too; Release and Close again are no-ops
	if _, err := b.Compile(ctx, &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}}, hal.CompileOptions{}); !closedErr(err) {
		t.Fatalf("Compile after Close: %v, want FailedPrecondition \"xnnpack: device closed\"", err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("model Close after device Close: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d runs succeeded before Close, %d workers refused", ok, failed)
}
