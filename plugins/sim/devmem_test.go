package sim_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/plugins/sim"
)

// addSubgraph is y = Relu(x) + w with a constant w of 4 floats.
func addSubgraph() *hal.Subgraph {
	t := func(name string) graph.ValueInfo {
		return graph.ValueInfo{Name: name, Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(4)}}
	}
	g := &graph.Graph{
		Name:         "sg",
		Inputs:       []graph.ValueInfo{t("x")},
		Outputs:      []graph.ValueInfo{t("y")},
		ValueInfo:    []graph.ValueInfo{t("r")},
		Initializers: map[string]*graph.Tensor{"w": graph.MustFromSlice([]int{4}, []float32{10, 20, 30, 40})},
		Nodes: []*graph.Node{
			{Name: "relu", OpType: "Relu", Inputs: []string{"x"}, Outputs: []string{"r"}},
			{Name: "add", OpType: "Add", Inputs: []string{"r", "w"}, Outputs: []string{"y"}},
		},
	}
	return &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}}
}

type devFixture struct {
	b   *sim.DeviceBackend
	d   *hal.Device
	exe *hal.Compiled
}

func newDev(t *testing.T, opts sim.Options) *devFixture {
	t.Helper()
	opts.Ops = []string{"Relu", "Add"}
	b := sim.NewDeviceMemory(opts)
	d, err := hal.NewDevice(b, hal.LoadLinked)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	if !d.HasDeviceMemory() {
		t.Fatal("the device-memory double does not offer device memory")
	}
	exe, err := d.Compile(context.Background(), addSubgraph(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = exe.Release() })
	if !exe.CanEnqueue() {
		t.Fatal("executable cannot enqueue")
	}
	return &devFixture{b: b, d: d, exe: exe}
}

// upload x, run, download y: the values are right, the buffers are opaque
// and the counters saw one upload, one execution and one download.
func TestDeviceMemoryRoundTrip(t *testing.T) {
	f := newDev(t, sim.Options{})
	ctx := context.Background()
	if c := f.b.Counters(); c.WeightUploads != 1 || c.WeightBytes != 16 {
		t.Fatalf("weights at compile: %+v", c)
	}
	x, err := f.d.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: []int{4}, Memory: hal.MemoryDeviceLocal})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := x.(hal.Mappable); ok {
		t.Fatal("a device-local buffer is host-addressable")
	}
	up, err := f.d.Upload(ctx, x, graph.MustFromSlice([]int{4}, []float32{-1, 2, -3, 4}), nil)
	if err != nil {
		t.Fatal(err)
	}
	outs := []hal.Buffer{nil}
	done, err := f.exe.Enqueue(ctx, []hal.Buffer{x}, outs, []hal.Fence{up}, &hal.EnqueueOptions{Profile: true})
	if err != nil {
		t.Fatal(err)
	}
	y := &graph.Tensor{}
	down, err := f.d.Download(ctx, y, outs[0], []hal.Fence{done})
	if err != nil {
		t.Fatal(err)
	}
	if err := down.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if got := graph.Data[float32](y); got[0] != 10 || got[1] != 22 || got[2] != 30 || got[3] != 44 {
		t.Fatalf("y = %v", got)
	}
	pf, ok := done.(hal.ProfiledFence)
	if !ok {
		t.Fatal("no profiled fence")
	}
	prof, err := pf.Profile()
	if err != nil {
		t.Fatal(err)
	}
	if len(prof.Kernels) != 2 || prof.Kernels[0].Nodes[0] != "relu" || prof.EndNS < prof.StartNS || prof.Kernels[1].StartNS < prof.StartNS {
		t.Fatalf("profile %+v", prof)
	}
	for _, b := range []hal.Buffer{x, outs[0]} {
		if err := f.d.Free(b); err != nil {
			t.Fatal(err)
		}
	}
	c := f.b.Counters()
	if c.Uploads != 1 || c.BytesUploaded != 16 || c.Downloads != 1 || c.BytesDownloaded != 16 || c.Enqueues != 1 || c.LiveBuffers != 0 {
		t.Fatalf("counters %+v", c)
	}
	if c.DownloadedValues["y"] != 1 || c.UploadedValues["x"] != 1 || c.HostRoundTrips() != 0 {
		t.Fatalf("per-value counters %+v", c)
	}
	if err := f.d.Free(x); !errors.Is(err, hal.ErrInvalidArgument) {
		t.Errorf("double free: %v", err)
	}
}

// Free while an operation is pending defers the release until its fence
// signals; a wait that times out returns at once with DeadlineExceeded.
func TestDeviceMemoryFreeIsDeferred(t *testing.T) {
	f := newDev(t, sim.Options{DeviceOptions: sim.DeviceOptions{FenceDelay: 100 * time.Millisecond}})
	ctx := context.Background()
	x, err := f.d.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: []int{4}, Memory: hal.MemoryDeviceLocal})
	if err != nil {
		t.Fatal(err)
	}
	up, err := f.d.Upload(ctx, x, graph.MustFromSlice([]int{4}, []float32{1, 2, 3, 4}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if done, _ := up.Poll(); done {
		t.Fatal("a delayed fence signalled at once")
	}
	if err := f.d.Free(x); err != nil {
		t.Fatal(err)
	}
	if c := f.b.Counters(); c.LiveBuffers != 1 {
		t.Fatalf("freed under a pending upload: %+v", c)
	}
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := up.Wait(short); !errors.Is(err, hal.ErrDeadlineExceeded) {
		t.Fatalf("wait: %v", err)
	}
	if d := time.Since(start); d > 80*time.Millisecond {
		t.Errorf("wait took %v", d)
	}
	if err := up.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return f.b.Counters().LiveBuffers == 0 })
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not reached in 5s")
}

// A fence that never signals stalls the queue until the backend closes;
// then it fails with Unavailable and every buffer is released.
func TestDeviceMemoryFenceNeverSignals(t *testing.T) {
	f := newDev(t, sim.Options{DeviceOptions: sim.DeviceOptions{FenceNeverSignals: true}})
	ctx := context.Background()
	x, _ := f.d.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: []int{4}, Memory: hal.MemoryDeviceLocal})
	up, err := f.d.Upload(ctx, x, graph.MustFromSlice([]int{4}, []float32{1, 2, 3, 4}), nil)
	if err != nil {
		t.Fatal(err)
	}
	outs := []hal.Buffer{nil}
	run, err := f.exe.Enqueue(ctx, []hal.Buffer{x}, outs, []hal.Fence{up}, nil)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := run.Wait(short); !errors.Is(err, hal.ErrDeadlineExceeded) {
		t.Fatalf("wait: %v", err)
	}
	_ = f.d.Free(x)
	_ = f.d.Free(outs[0])
	if c := f.b.Counters(); c.LiveBuffers != 2 || c.PendingOps != 1 {
		t.Fatalf("resources of a hung call must stay alive: %+v", c)
	}
	_ = f.exe.Release()
	if err := f.d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := run.Wait(ctx); !errors.Is(err, hal.ErrUnavailable) {
		t.Fatalf("after close: %v", err)
	}
	if c := f.b.Counters(); c.LiveBuffers != 0 || c.LiveWeights != 0 || c.LiveBytes != 0 || c.Queues != 0 {
		t.Fatalf("after close: %+v", c)
	}
}

// After DeviceLostAfter calls every call and every pending fence fails
// with Unavailable.
func TestDeviceMemoryLoss(t *testing.T) {
	f := newDev(t, sim.Options{DeviceOptions: sim.DeviceOptions{DeviceLostAfter: 2, FenceDelay: 20 * time.Millisecond}})
	ctx := context.Background()
	x, _ := f.d.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: []int{4}, Memory: hal.MemoryDeviceLocal})
	up, err := f.d.Upload(ctx, x, graph.MustFromSlice([]int{4}, []float32{1, 2, 3, 4}), nil) // call 1
	if err != nil {
		t.Fatal(err)
	}
	outs := []hal.Buffer{nil}
	run, err := f.exe.Enqueue(ctx, []hal.Buffer{x}, outs, []hal.Fence{up}, nil) // call 2
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.d.Download(ctx, &graph.Tensor{}, outs[0], []hal.Fence{run}) // call 3: lost
	if !errors.Is(err, hal.ErrUnavailable) || !strings.Contains(err.Error(), "device lost") {
		t.Fatalf("call after loss: %v", err)
	}
	if err := run.Wait(ctx); !errors.Is(err, hal.ErrUnavailable) {
		t.Fatalf("pending fence after loss: %v", err)
	}
	if _, err := f.d.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: []int{4}, Memory: hal.MemoryDeviceLocal}); !errors.Is(err, hal.ErrUnavailable) {
		t.Fatalf("allocate after loss: %v", err)
	}
	if !f.b.Counters().Lost {
		t.Error("counters do not say lost")
	}
}

// Inputs over DeclineShapesOver elements are declined (Enqueue and
// Execute), and so are outputs whose shape is known only after running.
func TestDeviceMemoryDecline(t *testing.T) {
	f := newDev(t, sim.Options{DeviceOptions: sim.DeviceOptions{DeclineShapesOver: 3}})
	ctx := context.Background()
	x, _ := f.d.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: []int{4}, Memory: hal.MemoryDeviceLocal})
	defer f.d.Free(x)
	if _, err := f.exe.Enqueue(ctx, []hal.Buffer{x}, []hal.Buffer{nil}, nil, nil); !errors.Is(err, hal.ErrDeclined) || !strings.Contains(err.Error(), "over the simulated limit of 3") {
		t.Fatalf("enqueue: %v", err)
	}
	err := f.exe.Execute(ctx, []*graph.Tensor{graph.MustFromSlice([]int{4}, []float32{1, 2, 3, 4})}, []*graph.Tensor{{}})
	if !errors.Is(err, hal.ErrDeclined) {
		t.Fatalf("execute: %v", err)
	}
	if c := f.b.Counters(); c.Declines != 2 {
		t.Fatalf("declines %d", c.Declines)
	}
}

// Two devices: each listed; a buffer of one is refused by the other's
// executable; reduced precision only when asked for and offered.
func TestDeviceMemoryDevicesAndPrecision(t *testing.T) {
	b := sim.NewDeviceMemory(sim.Options{Ops: []string{"Relu", "Add"}, DeviceOptions: sim.DeviceOptions{Devices: 2, Precisions: []hal.Precision{hal.PrecisionFloat16}}})
	d, err := hal.NewDevice(b, hal.LoadLinked)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := context.Background()
	devs, err := d.Devices(ctx)
	if err != nil || len(devs) != 2 || devs[1].Index != 1 || devs[1].Kind != hal.DeviceSimulated || devs[0].CacheKey == devs[1].CacheKey {
		t.Fatalf("devices %+v %v", devs, err)
	}
	on1, err := d.Compile(ctx, addSubgraph(), &hal.CompileOptions{Device: 1, Precision: hal.PrecisionFloat16})
	if err != nil {
		t.Fatal(err)
	}
	defer on1.Release()
	if on1.Precision() != hal.PrecisionFloat16 {
		t.Errorf("precision %v", on1.Precision())
	}
	on0, err := d.Compile(ctx, addSubgraph(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer on0.Release()
	if on0.Precision() != hal.PrecisionFloat32 {
		t.Errorf("default precision %v", on0.Precision())
	}
	x, _ := d.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: []int{4}, Memory: hal.MemoryDeviceLocal})
	defer d.Free(x)
	if _, err := on1.Enqueue(ctx, []hal.Buffer{x}, []hal.Buffer{nil}, nil, nil); !errors.Is(err, hal.ErrInvalidArgument) || !strings.Contains(err.Error(), "lives on device 0") {
		t.Fatalf("cross-device input: %v", err)
	}
	if _, err := d.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: []int{4}, Memory: hal.MemoryHostVisible}); !errors.Is(err, hal.ErrUnsupported) {
		t.Errorf("host-visible: %v", err)
	}
	// float16 rounding is visible in the values
	y := []*graph.Tensor{{}}
	if err := on1.Execute(ctx, []*graph.Tensor{graph.MustFromSlice([]int{4}, []float32{0.1, 0, 0, 0})}, y); err != nil {
		t.Fatal(err)
	}
	if v := graph.Data[float32](y[0])[0]; v == 10.1 || v < 10.09 || v > 10.11 {
		t.Errorf("float16 result %v", v)
	}
}
