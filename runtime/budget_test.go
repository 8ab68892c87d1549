package runtime_test

import (
	"context"
	"errors"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/exec"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/formats/onnx"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/partitioner"
	"github.com/switchyard-hal/switchyard/plugins/sim"
	"github.com/switchyard-hal/switchyard/runtime"
)

func tensorVI(name string, dt graph.DType, dims ...int64) graph.ValueInfo {
	var s graph.Shape
	if dims != nil {
		s = graph.Shape{}
		for _, d := range dims {
			s = append(s, graph.Dim{Value: d})
		}
	}
	return graph.ValueInfo{Name: name, Type: graph.ValueType{Kind: "tensor", DType: dt, Shape: s}}
}

func model(g *graph.Graph) *graph.Model {
	return &graph.Model{IRVersion: 8, Opsets: []graph.Opset{{Version: 17}}, Graph: g}
}

// threeExpands: x (a float32 scalar) expanded three times to n elements,
// all three outputs live at once.
func threeExpands(n int64) *graph.Model {
	g := &graph.Graph{
		Name:         "expands",
		Inputs:       []graph.ValueInfo{tensorVI("x", graph.Float32, 1)},
		Initializers: map[string]*graph.Tensor{"shape": graph.MustFromSlice([]int{1}, []int64{n})},
	}
	for _, o := range []string{"e1", "e2", "e3"} {
		g.Nodes = append(g.Nodes, &graph.Node{Name: o, OpType: "Expand", Inputs: []string{"x", "shape"}, Outputs: []string{o}})
		g.Outputs = append(g.Outputs, tensorVI(o, graph.Float32))
	}
	return model(g)
}

// TestMemoryBudgetRefusesBigExpands: three 8 MiB Expand outputs, each far
// under the per-tensor limit, with a 20 MiB budget: the third is refused
// before it is allocated, with an error naming the node, the request and
// the budget (three 8 GiB ones killed the process with Go's fatal
// out-of-memory). A budget that fits runs it.
func TestMemoryBudgetRefusesBigExpands(t *testing.T) {
	ctx := context.Background()
	b := onnx.Encode(threeExpands(2 << 20)) // 2 Mi float32 = 8 MiB each
	m, err := runtime.LoadBytes(ctx, b, &runtime.Options{MemoryBudget: 20 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	in := map[string]*graph.Tensor{"x": graph.MustFromSlice([]int{1}, []float32{3})}
	_, err = m.Run(ctx, in)
	if err == nil {
		t.Fatal("24 MiB of outputs ran under a 20 MiB budget")
	}
	var be *exec.BudgetError
	if !errors.As(err, &be) || !errors.Is(err, kernels.ErrResourceExhausted) || hal.CodeOf(err) != hal.CodeResourceExhausted {
		t.Fatalf("got %v (code %v), want a ResourceExhausted budget error", err, hal.CodeOf(err))
	}
	for _, want := range []string{`"e3"`, "8.0 MiB", "20.0 MiB", "float32[2097152]"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %s", err, want)
		}
	}
	// the buffers of e1 and e2 are kept for the next run, within the budget
	if st := m.Memory(); st.Held > 20<<20 || st.Peak > 20<<20 {
		t.Errorf("after the refused run: %+v (over the budget)", st)
	}
	if _, err := m.Run(ctx, in); !errors.As(err, &be) {
		t.Fatalf("second run: %v", err)
	}
	m.Close()
	if st := m.Memory(); st.Held != 0 {
		t.Errorf("a closed model holds %d bytes", st.Held)
	}
	big, err := runtime.LoadBytes(ctx, b, &runtime.Options{MemoryBudget: 32 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	out, err := big.Run(ctx, in)
	if err != nil {
		t.Fatalf("within the budget: %v", err)
	}
	if v := graph.Data[float32](out["e3"]); len(v) != 2<<20 || v[len(v)-1] != 3 {
		t.Fatalf("e3 = %d values", len(v))
	}
	// a single value larger than the whole budget is refused at load
	if _, err := runtime.LoadBytes(ctx, b, &runtime.Options{MemoryBudget: 4 << 20}); !errors.Is(err, kernels.ErrResourceExhausted) || !strings.Contains(err.Error(), `"e1"`) {
		t.Fatalf("8 MiB values under a 4 MiB budget: got %v at load", err)
	}
}

// TestMemoryBudgetDefault: the default budget is a sensible share of the
// machine's memory, and GOMEMLIMIT lowers it.
func TestMemoryBudgetDefault(t *testing.T) {
	d := runtime.DefaultMemoryBudget()
	if d < 64<<20 {
		t.Fatalf("default budget %d bytes", d)
	}
	old := debug.SetMemoryLimit(1 << 30)
	defer debug.SetMemoryLimit(old)
	if d := runtime.DefaultMemoryBudget(); d > 1<<30 {
		t.Fatalf("with GOMEMLIMIT=1GiB the default budget is %d", d)
	}
	m, err := runtime.LoadBytes(context.Background(), onnx.Encode(threeExpands(4)), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if b := m.Memory().Budget; b <= 0 || b > 1<<30 {
		t.Fatalf("a model's default budget is %d", b)
	}
}

// loopModel: y = x + trips, by a Loop adding 1 per iteration to a carried
// tensor of n float32.
func loopModel(n, trips int64) *graph.Model {
	body := &graph.Graph{
		Name: "body",
		Inputs: []graph.ValueInfo{tensorVI("i", graph.Int64, []int64{}...), tensorVI("c", graph.Bool, []int64{}...),
			tensorVI("v", graph.Float32, n)},
		Outputs:      []graph.ValueInfo{tensorVI("c_out", graph.Bool), tensorVI("v_out", graph.Float32, n)},
		Initializers: map[string]*graph.Tensor{"one": graph.MustFromSlice([]int{1}, []float32{1})},
		Nodes: []*graph.Node{
			{OpType: "Identity", Inputs: []string{"c"}, Outputs: []string{"c_out"}},
			{OpType: "Add", Inputs: []string{"v", "one"}, Outputs: []string{"v_out"}},
		},
	}
	g := &graph.Graph{
		Name:         "loop",
		Inputs:       []graph.ValueInfo{tensorVI("x", graph.Float32, n)},
		Outputs:      []graph.ValueInfo{tensorVI("y", graph.Float32, n)},
		Initializers: map[string]*graph.Tensor{"trips": graph.Scalar(trips)},
		Nodes: []*graph.Node{{Name: "loop", OpType: "Loop", Inputs: []string{"trips", "", "x"}, Outputs: []string{"y"},
			Attrs: map[string]*graph.Attribute{"body": {Name: "body", Type: graph.AttrGraph, G: body}}}},
	}
	return model(g)
}

// TestLoopMemoryStaysBounded: a Loop carrying 1 MiB for 300 iterations
// holds about two iterations' values, not 300 (carried values were kept
// until the end of the run: 4 MiB × 1000 iterations reached 4.1 GB).
func TestLoopMemoryStaysBounded(t *testing.T) {
	const n, trips = 1 << 18, 300 // 1 MiB of float32
	m, err := runtime.LoadBytes(context.Background(), onnx.Encode(loopModel(n, trips)), &runtime.Options{MemoryBudget: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	x := graph.MustFromSlice([]int{n}, make([]float32, n))
	out, st, err := m.RunWithStats(context.Background(), map[string]*graph.Tensor{"x": x}, runtime.RunOptions{})
	if err != nil {
		t.Fatalf("a 1 MiB loop under a 16 MiB budget: %v", err)
	}
	if y := graph.Data[float32](out["y"]); y[0] != trips || y[n-1] != trips {
		t.Fatalf("y = %v…, want %d", y[0], trips)
	}
	if st.PeakBytes > 8<<20 {
		t.Errorf("peak of live buffers %d bytes for a 1 MiB loop of %d iterations (carried values not released)", st.PeakBytes, trips)
	}
	if p := m.Memory().Peak; p > 8<<20 {
		t.Errorf("budget peak %d bytes", p)
	}
	if st.Allocations > 16 {
		t.Errorf("%d buffers allocated for %d iterations (released ones are not reused)", st.Allocations, trips)
	}
}

// bigMatMul: y = a·b for two n×n float32 inputs.
func bigMatMul(n int64, dt graph.DType) *graph.Model {
	return model(&graph.Graph{
		Name:    "mm",
		Inputs:  []graph.ValueInfo{tensorVI("a", dt, n, n), tensorVI("b", dt, n, n)},
		Outputs: []graph.ValueInfo{tensorVI("y", dt, n, n)},
		Nodes:   []*graph.Node{{Name: "mm", OpType: "MatMul", Inputs: []string{"a", "b"}, Outputs: []string{"y"}}},
	})
}

// TestBigMatMulHonoursDeadline: one MatMul of minutes' work on a 100 ms
// deadline returns DeadlineExceeded within seconds (it ran to completion,
// 51 s on a 1 s deadline, because the context was only checked between
// nodes).
func TestBigMatMulHonoursDeadline(t *testing.T) {
	for _, c := range []struct {
		dt graph.DType
		n  int64
	}{{graph.Float32, 4096}, {graph.Int32, 2048}} {
		m, err := runtime.LoadBytes(context.Background(), onnx.Encode(bigMatMul(c.n, c.dt)), nil)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := graph.New(c.dt, []int{int(c.n), int(c.n)})
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		start := time.Now()
		_, err = m.Run(ctx, map[string]*graph.Tensor{"a": a, "b": a})
		took := time.Since(start)
		cancel()
		m.Close()
		if !errors.Is(err, context.DeadlineExceeded) || hal.CodeOf(err) != hal.CodeDeadlineExceeded {
			t.Fatalf("%v %d³ MatMul on a 100 ms deadline: got %v after %v", c.dt, c.n, err, took)
		}
		if !strings.Contains(err.Error(), `"mm"`) {
			t.Errorf("the error does not name the node: %v", err)
		}
		// generous for a loaded machine: the product itself takes minutes
		if took > 5*time.Second {
			t.Errorf("%v MatMul stopped %v after a 100 ms deadline", c.dt, took)
		}
	}
}

// TestRunAfterClose: after Close every Run fails with ErrClosed (a
// cpu-only model kept running after Close).
func TestRunAfterClose(t *testing.T) {
	m, err := runtime.LoadBytes(context.Background(), onnx.Encode(threeExpands(4)), nil)
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]*graph.Tensor{"x": graph.MustFromSlice([]int{1}, []float32{1})}
	if _, err := m.Run(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	_, err = m.Run(context.Background(), in)
	if !errors.Is(err, runtime.ErrClosed) || !errors.Is(err, hal.ErrFailedPrecondition) {
		t.Fatalf("Run after Close: got %v, want ErrClosed", err)
	}
	if _, _, err := m.RunWithStats(context.Background(), in, runtime.RunOptions{}); !errors.Is(err, runtime.ErrClosed) {
		t.Fatalf("RunWithStats after Close: got %v", err)
	}
	if st := m.Memory(); st.Held != 0 {
		t.Errorf("a closed model holds %d bytes", st.Held)
	}
}

// TestCloseRacesRuns: Runs racing Close either finish or fail with
// ErrClosed — no panic, no other error, nothing run after Close returned —
// and a long Run in flight is interrupted rather than waited for.
func TestCloseRacesRuns(t *testing.T) {
	m, err := runtime.LoadBytes(context.Background(), onnx.Encode(threeExpands(1024)), nil)
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]*graph.Tensor{"x": graph.MustFromSlice([]int{1}, []float32{1})}
	var closed atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				wasClosed := closed.Load()
				_, err := m.Run(context.Background(), in)
				switch {
				case err == nil && wasClosed:
					errs <- errors.New("a Run succeeded after Close returned")
					return
				case err != nil && !errors.Is(err, runtime.ErrClosed):
					errs <- err
					return
				}
			}
		}()
	}
	time.Sleep(5 * time.Millisecond)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	closed.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	long, err := runtime.LoadBytes(context.Background(), onnx.Encode(bigMatMul(4096, graph.Float32)), nil)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := graph.New(graph.Float32, []int{4096, 4096})
	done := make(chan error, 1)
	go func() {
		_, err := long.Run(context.Background(), map[string]*graph.Tensor{"a": a, "b": a})
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	if err := long.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, runtime.ErrClosed) {
		t.Fatalf("a Run interrupted by Close: got %v, want ErrClosed", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Close waited %v for a Run of minutes instead of interrupting it", took)
	}
}

// countingBackend wraps sim and counts live executables and compiles.
type countingBackend struct {
	hal.Backend
	live, compiles *atomic.Int64
	onCompile      func()
}

func (b countingBackend) Compile(ctx context.Context, sg *hal.Subgraph, o hal.CompileOptions) (hal.Executable, error) {
	b.compiles.Add(1)
	e, err := b.Backend.Compile(ctx, sg, o)
	if err != nil {
		return nil, err
	}
	b.live.Add(1)
	if b.onCompile != nil {
		b.onCompile()
	}
	return countingExe{e, b.live}, nil
}

type countingExe struct {
	hal.Executable
	live *atomic.Int64
}

func (e countingExe) Release() error {
	e.live.Add(-1)
	return e.Executable.Release()
}

func countingDevice(t *testing.T, onCompile func()) (*hal.Device, *atomic.Int64, *atomic.Int64) {
	t.Helper()
	live, compiles := &atomic.Int64{}, &atomic.Int64{}
	d, err := hal.NewDevice(countingBackend{sim.New(sim.Options{Name: "counting", Ops: []string{"Relu"}}), live, compiles, onCompile}, hal.LoadLinked)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d, live, compiles
}

func reluModel(dims ...int64) *graph.Model {
	return model(&graph.Graph{
		Name:    "relu",
		Inputs:  []graph.ValueInfo{tensorVI("x", graph.Float32, dims...)},
		Outputs: []graph.ValueInfo{tensorVI("y", graph.Float32)},
		Nodes:   []*graph.Node{{Name: "r", OpType: "Relu", Inputs: []string{"x"}, Outputs: []string{"y"}}},
	})
}

// TestSizeChecksBeforePlacement: a declared 10^12-element input is refused
// before any backend is asked to compile (xnnpack tried to malloc 4 TB at
// compile), and nothing compiled is left behind.
func TestSizeChecksBeforePlacement(t *testing.T) {
	d, live, compiles := countingDevice(t, nil)
	_, err := runtime.Prepare(context.Background(), reluModel(1000000, 1000000), &runtime.Options{Backends: []*hal.Device{d}})
	if !errors.Is(err, graph.ErrTooLarge) || !strings.Contains(err.Error(), `"x"`) {
		t.Fatalf("got %v, want ErrTooLarge naming x", err)
	}
	if compiles.Load() != 0 || live.Load() != 0 {
		t.Fatalf("%d compiles, %d live executables for a model refused for its sizes", compiles.Load(), live.Load())
	}
	// a per-model tensor limit applies to declared sizes too
	if _, err := runtime.Prepare(context.Background(), reluModel(1024), &runtime.Options{Backends: []*hal.Device{d}, MaxTensorBytes: 1024}); !errors.Is(err, graph.ErrTooLarge) {
		t.Fatalf("4 KiB input under a 1 KiB limit: %v", err)
	}
	m, err := runtime.Prepare(context.Background(), reluModel(1024), &runtime.Options{Backends: []*hal.Device{d}})
	if err != nil {
		t.Fatal(err)
	}
	if live.Load() != 1 {
		t.Fatalf("%d live executables, want 1", live.Load())
	}
	m.Close()
	if live.Load() != 0 {
		t.Fatalf("Close left %d executables", live.Load())
	}
}

// TestPrepareErrorReturnsNothing: an error after partitions were compiled
// (here the context is cancelled during the compile) releases them and
// returns no model (Prepare returned the model together with the error,
// and leaked its partitions).
func TestPrepareErrorReturnsNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	d, live, compiles := countingDevice(t, cancel)
	m, err := runtime.Prepare(ctx, reluModel(4), &runtime.Options{Backends: []*hal.Device{d}, Policy: partitioner.Policy{}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want Canceled", err)
	}
	if m != nil {
		t.Error("Prepare returned a model with its error")
	}
	if compiles.Load() != 1 || live.Load() != 0 {
		t.Fatalf("%d compiles, %d executables left alive", compiles.Load(), live.Load())
	}
}

// TestAbsurdOpsetRefused: opset 2^62 (or a negative one) is refused,
// naming the version and domain.
func TestAbsurdOpsetRefused(t *testing.T) {
	for _, v := range []int64{1 << 62, -3, 1000} {
		m := reluModel(4)
		m.Opsets = []graph.Opset{{Version: 17}, {Domain: "ai.onnx.ml", Version: v}}
		_, err := runtime.LoadBytes(context.Background(), onnx.Encode(m), nil)
		if !errors.Is(err, kernels.ErrInvalid) || !strings.Contains(err.Error(), "ai.onnx.ml") || !strings.Contains(err.Error(), itoa(v)) {
			t.Errorf("opset %d: got %v", v, err)
		}
	}
	m := reluModel(4)
	m.Opsets = []graph.Opset{{Version: 30}} // newer than known: unsupported, not absurd
	if _, err := runtime.LoadBytes(context.Background(), onnx.Encode(m), nil); errors.Is(err, kernels.ErrInvalid) {
		t.Errorf("opset 30: %v", err)
	}
}

func itoa(v int64) string {
	neg := v < 0
	if neg {
		v = -v
	}
	s := ""
	for {
		s = string(rune('0'+v%10)) + s
		v /= 10
		if v == 0 {
			break
		}
	}
	if neg {
		s = "-" + s
	}
	return s
}
