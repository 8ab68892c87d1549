package runtime_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/partitioner"
	"github.com/switchyard-hal/switchyard/plugins/sim"
	"github.com/switchyard-hal/switchyard/runtime"
)

// pricedSim is the sim backend with a cost model: a fixed price per call
// and per node, and the subgraphs it was asked to price.
type pricedSim struct {
	*sim.Backend
	perCall, perNode time.Duration
	transfer         int64

	mu   sync.Mutex
	seen []*hal.Subgraph
}

func (p *pricedSim) EstimateCost(ctx context.Context, sg *hal.Subgraph) (hal.Cost, error) {
	p.mu.Lock()
	p.seen = append(p.seen, sg)
	p.mu.Unlock()
	c := hal.Cost{Overhead: p.perCall, Compute: p.perNode * time.Duration(len(sg.Graph.Nodes)), TransferBytes: p.transfer}
	c.Latency = c.Overhead + c.Compute
	return c, nil
}

// noBufferSim adds device memory (device-local buffers) to pricedSim, so
// the partitioner prices its boundary transfers. Only what placement
// asks (the memory kinds) is real; buffers are never allocated here.
type noBufferSim struct{ *pricedSim }

func (d noBufferSim) Capabilities(ctx context.Context) (hal.Capabilities, error) {
	c, err := d.pricedSim.Capabilities(ctx)
	c.Devices = []hal.DeviceDesc{{Index: 0, Name: "simgpu", Kind: hal.DeviceSimulated, MemoryKinds: []hal.MemoryKind{hal.MemoryHost, hal.MemoryDeviceLocal}}}
	return c, err
}
func (d noBufferSim) Allocate(context.Context, hal.BufferRequest) (hal.Buffer, error) {
	return nil, hal.Errorf(hal.CodeUnsupported, "noBufferSim: no buffers")
}
func (d noBufferSim) Free(hal.Buffer) error { return nil }
func (d noBufferSim) Upload(context.Context, hal.Buffer, *graph.Tensor, []hal.Fence) (hal.Fence, error) {
	return nil, hal.Errorf(hal.CodeUnsupported, "noBufferSim: no buffers")
}
func (d noBufferSim) Download(context.Context, *graph.Tensor, hal.Buffer, []hal.Fence) (hal.Fence, error) {
	return nil, hal.Errorf(hal.CodeUnsupported, "noBufferSim: no buffers")
}

// reluChain: x[N, 64] (N symbolic) → Relu ×4 → y.
func reluChain() *graph.Model {
	g := &graph.Graph{Name: "relus", Inputs: []graph.ValueInfo{fvi("x", graph.Dim{Param: "N"}, graph.Dim{Value: 64})}}
	prev := "x"
	for i, out := range []string{"a", "b", "c", "y"} {
		g.Nodes = append(g.Nodes, &graph.Node{Name: "r" + string(rune('0'+i)), OpType: "Relu", Inputs: []string{prev}, Outputs: []string{out}})
		prev = out
	}
	g.Outputs = []graph.ValueInfo{fvi("y", graph.Dim{Param: "N"}, graph.Dim{Value: 64})}
	return &graph.Model{IRVersion: 8, Opsets: []graph.Opset{{Version: 17}}, Graph: g}
}

func pricedDevice(t *testing.T, b hal.Backend) *hal.Device {
	t.Helper()
	d, err := hal.NewDevice(b, hal.LoadLinked)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// A backend whose estimate is dearer than the reference kernels' gets
// nothing: the partition runs on cpu, the report says why with both
// estimates, and the outputs are the cpu-only run's.
func TestCostLeavesSlowPartitionOnCPU(t *testing.T) {
	ctx := context.Background()
	ps := &pricedSim{Backend: sim.New(sim.Options{Name: "sim", Ops: []string{"Relu"}}), perCall: time.Millisecond}
	m, err := runtime.Prepare(ctx, reluChain(), &runtime.Options{Backends: []*hal.Device{pricedDevice(t, ps)}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	p := m.Plan()
	if len(p.Partitions) != 1 || p.Partitions[0].Backend != runtime.CPU || len(p.Rejected) != 1 {
		t.Fatalf("want everything on cpu, rejected by cost:\n%s", p.Text())
	}
	d := p.Rejected[0]
	if d.Backend != "sim" || d.Chosen != runtime.CPU || d.Estimate.Latency != time.Millisecond || d.FallbackEstimate == nil || d.FallbackEstimate.Latency <= 0 {
		t.Fatalf("decision %+v", d)
	}
	if !strings.HasPrefix(d.Reason, "sim est 1 ms + 0 B boundary vs cpu est ") || !strings.HasSuffix(d.Reason, "→ cpu") {
		t.Errorf("reason %q", d.Reason)
	}
	for _, np := range p.Nodes {
		if len(np.Declined) != 1 || np.Declined[0].Reason != d.Reason {
			t.Errorf("node %d declined %+v", np.Index, np.Declined)
		}
	}
	x := graph.MustFromSlice([]int{2, 64}, make([]float32, 128))
	out, err := m.Run(ctx, map[string]*graph.Tensor{"x": x})
	if err != nil || out["y"] == nil {
		t.Fatalf("run: %v", err)
	}
	if ps.Calls() != 0 {
		t.Errorf("sim was called %d times", ps.Calls())
	}
	// the estimate saw concrete shapes: the symbolic N as NominalBatch
	sg := ps.seen[0]
	if tp, _ := sg.TypeOf(sg.Graph.Inputs[0].Name); tp.Shape.String() != "[1,64]" {
		t.Errorf("estimated input type %v, want [1,64]", tp)
	}
	// ignoring costs delegates again (the behaviour before estimates)
	m2, err := runtime.Prepare(ctx, reluChain(), &runtime.Options{Backends: []*hal.Device{pricedDevice(t, ps)}, Policy: partitioner.Policy{IgnoreCosts: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if q := m2.Plan(); q.Partitions[0].Backend != "sim" || len(q.Rejected) != 0 {
		t.Fatalf("IgnoreCosts: %s", q.Text())
	}
}

func TestCostKeepsFastPartition(t *testing.T) {
	ctx := context.Background()
	ps := &pricedSim{Backend: sim.New(sim.Options{Name: "sim", Ops: []string{"Relu"}}), perNode: time.Nanosecond, transfer: 512}
	m, err := runtime.Prepare(ctx, reluChain(), &runtime.Options{Backends: []*hal.Device{pricedDevice(t, ps)}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	p := m.Plan()
	if len(p.Partitions) != 1 || p.Partitions[0].Backend != "sim" || p.Partitions[0].Cost == nil {
		t.Fatalf("want one sim partition with its estimate:\n%s", p.Text())
	}
	if r := p.Partitions[0].Cost.Reason; !strings.HasPrefix(r, "sim est 0.004 µs + 512 B boundary vs cpu est ") || !strings.HasSuffix(r, "→ sim") {
		t.Errorf("reason %q", r)
	}
	if !strings.Contains(p.Text(), "cost: sim est") {
		t.Errorf("text report:\n%s", p.Text())
	}
}

// A device-memory backend pays for uploading its inputs and downloading
// its outputs: a free kernel still loses when the copies cost more than
// cpu's whole run, and the report names the transfer.
func TestCostPricesDeviceTransfers(t *testing.T) {
	ctx := context.Background()
	ps := &pricedSim{Backend: sim.New(sim.Options{Name: "simgpu", Ops: []string{"Relu"}})}
	dev := pricedDevice(t, noBufferSim{ps})
	if !dev.HasDeviceMemory() {
		t.Fatal("the test double has no device memory")
	}
	m, err := runtime.Prepare(ctx, reluChain(), &runtime.Options{Backends: []*hal.Device{dev}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	p := m.Plan()
	// 2 values × 10 µs latency + 512 B at 8 GB/s ≫ four Relus of 64 floats on cpu
	if len(p.Rejected) != 1 || p.Partitions[0].Backend != runtime.CPU {
		t.Fatalf("want the transfers to lose:\n%s", p.Text())
	}
	d := p.Rejected[0]
	if d.Memory != hal.MemoryDeviceLocal || d.BoundaryBytes != 2*64*4 || d.Transfer < 2*partitioner.DefaultTransferLatency || !strings.Contains(d.Reason, "device-local transfer") {
		t.Fatalf("decision %+v", d)
	}
}

// Shapes computed at run time (Shape → Gather → Concat → Reshape) are
// known to the estimators: the runtime infers the representative types
// with those computations evaluated.
func TestCostSeesComputedShapes(t *testing.T) {
	ctx := context.Background()
	i64 := func(v ...int64) *graph.Tensor { return graph.MustFromSlice([]int{len(v)}, v) }
	g := &graph.Graph{Name: "reshape",
		Inputs:       []graph.ValueInfo{fvi("x", graph.Dim{Param: "N"}, graph.Dim{Param: "T"}, graph.Dim{Value: 8})},
		Initializers: map[string]*graph.Tensor{"idx": i64(0, 1), "tail": i64(2, 4)},
		Nodes: []*graph.Node{
			{Name: "shape", OpType: "Shape", Inputs: []string{"x"}, Outputs: []string{"s"}},
			{Name: "gather", OpType: "Gather", Inputs: []string{"s", "idx"}, Outputs: []string{"nt"}},
			{Name: "concat", OpType: "Concat", Inputs: []string{"nt", "tail"}, Outputs: []string{"target"}, Attrs: map[string]*graph.Attribute{"axis": {Name: "axis", Type: graph.AttrInt, I: 0}}},
			{Name: "reshape", OpType: "Reshape", Inputs: []string{"x", "target"}, Outputs: []string{"r"}},
			{Name: "relu", OpType: "Relu", Inputs: []string{"r"}, Outputs: []string{"y"}},
		},
		Outputs: []graph.ValueInfo{{Name: "y", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32}}}}
	model := &graph.Model{IRVersion: 8, Opsets: []graph.Opset{{Version: 17}}, Graph: g}
	ps := &pricedSim{Backend: sim.New(sim.Options{Name: "sim", Ops: []string{"Relu"}}), perNode: time.Nanosecond}
	m, err := runtime.Prepare(ctx, model, &runtime.Options{Backends: []*hal.Device{pricedDevice(t, ps)}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if len(ps.seen) == 0 {
		t.Fatalf("no estimate asked:\n%s", m.Plan().Text())
	}
	sg := ps.seen[0]
	in, _ := sg.TypeOf(sg.Graph.Inputs[0].Name)
	out, _ := sg.TypeOf(sg.Graph.Outputs[0].Name)
	want := "[1,128,2,4]" // N → 1, T → NominalDim
	if in.Shape.String() != want || out.Shape.String() != want {
		t.Fatalf("estimated types %v → %v, want %s", in, out, want)
	}
	// the model itself still runs on its real shapes
	x := graph.MustFromSlice([]int{3, 5, 8}, make([]float32, 120))
	res, err := m.Run(ctx, map[string]*graph.Tensor{"x": x})
	if err != nil || res["y"].String() != graph.MustFromSlice([]int{3, 5, 2, 4}, make([]float32, 120)).String() {
		t.Fatalf("run: %v %v", err, res["y"])
	}
}

// Shape bounds, when given, are the sizes estimates use.
func TestCostUsesShapeBounds(t *testing.T) {
	ctx := context.Background()
	ps := &pricedSim{Backend: sim.New(sim.Options{Name: "sim", Ops: []string{"Relu"}}), perNode: time.Nanosecond}
	opts := &runtime.Options{Backends: []*hal.Device{pricedDevice(t, ps)},
		Compile: hal.CompileOptions{ShapeBounds: map[string][]hal.DimRange{"x": {{Min: 1, Max: 16}, {Min: 64, Max: 64}}}}}
	m, err := runtime.Prepare(ctx, reluChain(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	sg := ps.seen[0]
	if tp, _ := sg.TypeOf(sg.Graph.Inputs[0].Name); tp.Shape.String() != "[16,64]" {
		t.Errorf("estimated input type %v, want [16,64]", tp)
	}
}

func fvi(name string, dims ...graph.Dim) graph.ValueInfo {
	return graph.ValueInfo{Name: name, Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.Shape(dims)}}
}
