package grpcplugin_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/onnx"
	"github.com/switchyard-hal/switchyard/hal"
	halv1 "github.com/switchyard-hal/switchyard/hal/wire/switchyard/hal/v1"
	grpcplugin "github.com/switchyard-hal/switchyard/plugins/grpc"
	"github.com/switchyard-hal/switchyard/plugins/sim"
	swrt "github.com/switchyard-hal/switchyard/runtime"
)

// devPlugin starts the simulation plugin serving the device-memory
// double (HAL 1.1) and returns it as the runtime sees it.
func devPlugin(t testing.TB, opts sim.Options) (*grpcplugin.Backend, *hal.Device) {
	t.Helper()
	opts.DeviceMemory = true
	b := openPlugin(t, grpcplugin.Options{Env: []string{simEnv(opts)}})
	hb := b.HAL()
	if _, ok := hb.(hal.DeviceMemory); !ok {
		t.Fatalf("a plugin serving the device double is offered as %T, without device memory", hb)
	}
	return b, device(t, hb, hal.LoadProcess)
}

// twoPartitions is runtime's residency model: partition A = {xa =
// Add(x, w); a = Relu(xa); b = Relu(a)}, a cpu node n = Neg(b),
// partition B = {y = Add(a, n)}; a goes from A to B and nowhere else.
func twoPartitions() []byte {
	g := &graph.Graph{
		Name:         "two",
		Inputs:       []graph.ValueInfo{{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(4)}}},
		Outputs:      []graph.ValueInfo{{Name: "y", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32}}},
		Initializers: map[string]*graph.Tensor{"w": graph.MustFromSlice([]int{1}, []float32{0.5})},
		Nodes: []*graph.Node{
			{Name: "add_w", OpType: "Add", Inputs: []string{"x", "w"}, Outputs: []string{"xa"}},
			{Name: "relu_a", OpType: "Relu", Inputs: []string{"xa"}, Outputs: []string{"a"}},
			{Name: "relu_b", OpType: "Relu", Inputs: []string{"a"}, Outputs: []string{"b"}},
			{Name: "neg", OpType: "Neg", Inputs: []string{"b"}, Outputs: []string{"n"}},
			{Name: "add_y", OpType: "Add", Inputs: []string{"a", "n"}, Outputs: []string{"y"}},
		},
	}
	return onnx.Encode(&graph.Model{IRVersion: 8, Opsets: []graph.Opset{{Version: 17}}, Graph: g})
}

// Two partitions on a HAL 1.1 plugin process: the value between them
// stays in the plugin (zero bytes through the host), the host moves
// exactly what the plan lists, and the output equals the cpu-only run.
func TestDeviceMemoryTwoPartitionsOutOfProcess(t *testing.T) {
	ctx := context.Background()
	ref, err := swrt.LoadBytes(ctx, twoPartitions(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	x := map[string]*graph.Tensor{"x": graph.MustFromSlice([]int{4}, []float32{-1, 2, -3, 4})}
	want, err := ref.Run(ctx, x)
	if err != nil {
		t.Fatal(err)
	}
	b, dev := devPlugin(t, sim.Options{Ops: []string{"Relu", "Add"}})
	if dev.HALVersion() != hal.V1_1 || !dev.HasDeviceMemory() {
		t.Fatalf("negotiated HAL %s, device memory %v", dev.HALVersion(), dev.HasDeviceMemory())
	}
	m, err := swrt.LoadBytes(ctx, twoPartitions(), &swrt.Options{Backends: []*hal.Device{dev}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	plan := m.Plan()
	var planUp, planDown int64
	for _, tr := range plan.Transfers {
		if tr.Direction == "upload" {
			planUp += tr.Bytes
		} else if tr.Direction == "download" {
			planDown += tr.Bytes
		}
	}
	if len(plan.Resident) != 1 || plan.Resident[0].Value != "a" {
		t.Fatalf("resident values %+v\n%s", plan.Resident, plan.Text())
	}
	for run := 0; run < 3; run++ {
		before := b.Transfers()
		out, st, err := m.RunWithStats(ctx, x, swrt.RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := equalOutputs(want, out); err != nil {
			t.Fatal(err)
		}
		after := b.Transfers()
		up, down := after.UploadBytes-before.UploadBytes, after.DownloadBytes-before.DownloadBytes
		// x and n go in, b and y come out (16 bytes each); a never crosses
		if up != 32 || down != 32 || up != planUp || down != planDown || st.UploadBytes != up || st.DownloadBytes != down {
			t.Fatalf("run %d: host moved %d up, %d down; plan lists %d, %d; stats %d, %d\n%s", run, up, down, planUp, planDown, st.UploadBytes, st.DownloadBytes, plan.Text())
		}
		t.Logf("run %d: %d bytes uploaded, %d downloaded through the host (value a stayed in the plugin)", run, up, down)
	}
}

// A plugin reporting HAL 1.0 (even one whose backend has device memory)
// is offered without it; the runtime calls it on host tensors as before;
// 1.1 RPCs sent to it anyway are Unsupported.
func TestDeviceMemoryOnHAL10Plugin(t *testing.T) {
	ctx := context.Background()
	v10 := hal.VersionRange{Min: hal.V1_0, Max: hal.V1_0}
	b := openPlugin(t, grpcplugin.Options{Env: []string{simEnv(sim.Options{Ops: []string{"Relu", "Add"}, HAL: &v10, DeviceOptions: sim.DeviceOptions{DeviceMemory: true}})}})
	hb := b.HAL()
	if _, ok := hb.(hal.DeviceMemory); ok {
		t.Fatal("a HAL 1.0 plugin is offered with device memory")
	}
	dev := device(t, hb, hal.LoadProcess)
	if dev.HALVersion() != hal.V1_0 {
		t.Fatalf("negotiated %s", dev.HALVersion())
	}
	_, err := dev.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: []int{4}, Memory: hal.MemoryDeviceLocal})
	if !errors.Is(err, hal.ErrUnsupported) || !strings.Contains(err.Error(), "1.1") {
		t.Fatalf("Allocate on a 1.0 plugin: %v", err)
	}
	// the host-side wrapper forced onto it refuses before sending anything
	forced := &grpcplugin.DeviceMemoryBackend{Backend: b}
	if _, err := forced.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: []int{4}, Memory: hal.MemoryDeviceLocal}); !errors.Is(err, hal.ErrUnsupported) {
		t.Fatalf("forced Allocate: %v", err)
	}
	// and the plugin refuses the RPC itself
	r, err := grpcplugin.RawRPC(b).Allocate(ctx, &halv1.AllocateRequest{Dtype: int32(graph.Float32), Shape: []int64{4}, Memory: int32(hal.MemoryDeviceLocal)})
	if err != nil || hal.Code(r.Status.GetCode()) != hal.CodeUnsupported {
		t.Fatalf("raw Allocate on a 1.0 plugin: %v %v", r, err)
	}
	m, err := swrt.LoadBytes(ctx, reluAddModel(4), &swrt.Options{Backends: []*hal.Device{dev}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	got, err := m.Run(ctx, map[string]*graph.Tensor{"x": graph.MustFromSlice([]int{4}, []float32{-1, 2, -3, 4})})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(graph.Data[float32](got["z"])) != fmt.Sprint([]float32{-1, 4, -3, 8}) {
		t.Fatalf("got %v", got["z"])
	}
	if tr := b.Transfers(); tr.Uploads != 0 || tr.Downloads != 0 {
		t.Fatalf("HAL 1.1 transfers on a 1.0 plugin: %+v", tr)
	}
}

func wantCode(t *testing.T, what string, st *halv1.Status, err error, code hal.Code) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: transport error %v", what, err)
	}
	if hal.Code(st.GetCode()) != code {
		t.Fatalf("%s: status %v, want code %v", what, st, code)
	}
	t.Logf("%s: %s", what, st.GetMessage())
}

// What a buggy or hostile host could send, and what a confused caller
// could pass: every bad id is a clear error, never a panic, and the
// plugin keeps serving.
func TestDeviceMemoryHostile(t *testing.T) {
	ctx := context.Background()
	b, dev := devPlugin(t, sim.Options{Ops: []string{"Relu", "Add"}})
	raw := grpcplugin.RawRPC(b)
	const forged = 1 << 40
	r1, err := raw.Free(ctx, &halv1.FreeRequest{Buffer: forged})
	wantCode(t, "free of a forged buffer id", r1.GetStatus(), err, hal.CodeInvalidArgument)
	r2, err := raw.Upload(ctx, &halv1.UploadRequest{Buffer: forged})
	wantCode(t, "upload into a forged buffer id", r2.GetStatus(), err, hal.CodeInvalidArgument)
	r3, err := raw.WaitFence(ctx, &halv1.WaitFenceRequest{Fence: forged, Wait: true})
	wantCode(t, "wait on an unknown fence", r3.GetStatus(), err, hal.CodeInvalidArgument)
	r4, err := raw.Allocate(ctx, &halv1.AllocateRequest{Dtype: int32(graph.Float32), Shape: []int64{1 << 40, 1 << 40}})
	wantCode(t, "allocate of 2^80 elements", r4.GetStatus(), err, hal.CodeInvalidArgument)
	r5, err := raw.Allocate(ctx, &halv1.AllocateRequest{Dtype: int32(graph.String), Shape: []int64{2}})
	wantCode(t, "allocate of strings", r5.GetStatus(), err, hal.CodeInvalidArgument)

	buf, err := dev.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: []int{4}, Memory: hal.MemoryDeviceLocal})
	if err != nil {
		t.Fatal(err)
	}
	r6, err := raw.Enqueue(ctx, &halv1.EnqueueRequest{Executable: forged})
	wantCode(t, "enqueue of a forged executable", r6.GetStatus(), err, hal.CodeFailedPrecondition)
	r7, err := raw.Download(ctx, &halv1.DownloadRequest{Buffer: 1, After: []uint64{forged}, Dst: &halv1.RegionSlice{Length: 16}})
	wantCode(t, "download after a forged fence", r7.GetStatus(), err, hal.CodeInvalidArgument)
	r8, err := raw.Download(ctx, &halv1.DownloadRequest{Buffer: 1, Dst: &halv1.RegionSlice{Region: forged, Length: 16}})
	wantCode(t, "download into an unmapped region", r8.GetStatus(), err, hal.CodeInvalidArgument)
	r9, err := raw.Download(ctx, &halv1.DownloadRequest{Buffer: 1, Dst: &halv1.RegionSlice{Length: 1 << 30}})
	wantCode(t, "download into a slice of the wrong size", r9.GetStatus(), err, hal.CodeInvalidArgument)

	// a buffer of another backend
	other := sim.NewDeviceMemory(sim.Options{Ops: []string{"Relu"}})
	defer other.Close()
	ob, err := other.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: []int{4}, Memory: hal.MemoryDeviceLocal})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dev.Upload(ctx, ob, graph.MustFromSlice([]int{4}, []float32{1, 2, 3, 4}), nil); !errors.Is(err, hal.ErrInvalidArgument) {
		t.Fatalf("upload into another backend's buffer: %v", err)
	}
	// upload, download round trip, then double free
	f, err := dev.Upload(ctx, buf, graph.MustFromSlice([]int{4}, []float32{1, 2, 3, 4}), nil)
	if err != nil {
		t.Fatal(err)
	}
	dst := &graph.Tensor{}
	df, err := dev.Download(ctx, dst, buf, []hal.Fence{f})
	if err != nil {
		t.Fatal(err)
	}
	if err := df.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(graph.Data[float32](dst)) != "[1 2 3 4]" {
		t.Fatalf("round trip gave %v", dst)
	}
	if err := dev.Free(buf); err != nil {
		t.Fatal(err)
	}
	if err := dev.Free(buf); !errors.Is(err, hal.ErrInvalidArgument) {
		t.Fatalf("double free: %v", err)
	}
	if _, err := dev.Upload(ctx, buf, graph.MustFromSlice([]int{4}, []float32{1, 2, 3, 4}), nil); !errors.Is(err, hal.ErrInvalidArgument) {
		t.Fatalf("upload into a freed buffer: %v", err)
	}
	if err := b.Health(ctx); err != nil {
		t.Fatalf("the plugin stopped serving: %v", err)
	}
}

// A fence that never signals: a 200 ms deadline gives DeadlineExceeded
// within 250 ms; killing the plugin then fails the outstanding fence with
// Unavailable, and the buffer of the dead process is refused.
func TestDeviceMemoryFenceDeadlineAndCrash(t *testing.T) {
	ctx := context.Background()
	b, dev := devPlugin(t, sim.Options{Ops: []string{"Relu", "Add"}, DeviceOptions: sim.DeviceOptions{FenceNeverSignals: true}})
	g := reluAddModel(4)
	ir, err := onnx.Decode(g, onnx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := dev.Compile(ctx, &hal.Subgraph{Graph: ir.Graph, Opsets: ir.Opsets}, &hal.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if !c.CanEnqueue() {
		t.Fatal("the plugin's executable cannot enqueue")
	}
	in, err := dev.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: []int{4}, Memory: hal.MemoryDeviceLocal})
	if err != nil {
		t.Fatal(err)
	}
	uf, err := dev.Upload(ctx, in, graph.MustFromSlice([]int{4}, []float32{1, 2, 3, 4}), nil)
	if err != nil {
		t.Fatal(err)
	}
	outs := make([]hal.Buffer, 1)
	f, err := c.Enqueue(ctx, []hal.Buffer{in}, outs, []hal.Fence{uf}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	start := time.Now()
	err = f.Wait(dctx)
	took := time.Since(start)
	cancel()
	if !errors.Is(err, hal.ErrDeadlineExceeded) || took > 3*time.Second { // the deadline is honoured, not hung on (generous: loaded CI machines)
		t.Fatalf("wait on a fence that never signals: %v after %v", err, took)
	}
	t.Logf("DeadlineExceeded after %v", took)
	errc := make(chan error, 1)
	go func() { errc <- f.Wait(ctx) }()
	time.Sleep(50 * time.Millisecond)
	if err := b.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	select {
	case err := <-errc:
		if !errors.Is(err, hal.ErrUnavailable) {
			t.Fatalf("outstanding fence after kill -9: %v", err)
		}
		t.Logf("outstanding fence failed %v after kill -9: %v", time.Since(killed), err)
	case <-time.After(5 * time.Second):
		t.Fatal("outstanding fence did not fail after kill -9")
	}
	// the restarted process does not know the dead one's buffers
	if _, err := dev.Upload(ctx, in, graph.MustFromSlice([]int{4}, []float32{1, 2, 3, 4}), nil); !errors.Is(err, hal.ErrUnavailable) {
		t.Fatalf("upload into a dead process's buffer: %v", err)
	}
	if err := dev.Free(outs[0]); err != nil {
		t.Fatalf("free of a dead process's buffer: %v", err)
	}
}

// The HAL 1.1 compile options and per-call profiles cross the wire: shape
// bounds reach the plugin's backend (a shape outside them is declined at
// run time), the precision the plugin's executable uses comes back (an
// opted-in one that the device offers, float32 otherwise), and a profiled
// call returns that call's device timestamps with its nodes.
func TestCompileOptionsAndProfilesOutOfProcess(t *testing.T) {
	ctx := context.Background()
	_, dev := devPlugin(t, sim.Options{Ops: []string{"Relu"}, DeviceOptions: sim.DeviceOptions{Precisions: []hal.Precision{hal.PrecisionFloat16}}})
	sym := graph.Shape{{Param: "n"}, {Value: 4}}
	sg := swrt.TypedSubgraph(&hal.Subgraph{Graph: &graph.Graph{
		Name:    "relu",
		Inputs:  []graph.ValueInfo{{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: sym}}},
		Outputs: []graph.ValueInfo{{Name: "y", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: sym}}},
		Nodes:   []*graph.Node{{Name: "relu_y", OpType: "Relu", Inputs: []string{"x"}, Outputs: []string{"y"}}},
	}, Opsets: []graph.Opset{{Version: 17}}})
	c, err := dev.Compile(ctx, sg, &hal.CompileOptions{Precision: hal.PrecisionFloat16, ShapeBounds: map[string][]hal.DimRange{"x": {{Min: 1, Max: 2}, {Min: 4, Max: 4}}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if p := c.Precision(); p != hal.PrecisionFloat16 {
		t.Fatalf("precision %q, want float16", p)
	}
	x := graph.MustFromSlice([]int{2, 4}, []float32{-1, 0.1, 2, -3, 4, 1.0001, -5, 6})
	out := []*graph.Tensor{{}}
	prof, err := c.ExecuteProfiled(ctx, []*graph.Tensor{x}, out)
	if err != nil {
		t.Fatal(err)
	}
	got := graph.Data[float32](out[0])
	if got[1] == 0.1 || got[1] < 0.0999 || got[1] > 0.1001 || got[0] != 0 || got[7] != 6 {
		t.Fatalf("outputs %v: want Relu rounded through float16", got)
	}
	if prof == nil || prof.EndNS < prof.StartNS || len(prof.Kernels) != 1 || len(prof.Kernels[0].Nodes) != 1 || prof.Kernels[0].Nodes[0] != "relu_y" {
		t.Fatalf("profile %+v", prof)
	}
	err = c.Execute(ctx, []*graph.Tensor{graph.MustFromSlice([]int{3, 4}, make([]float32, 12))}, []*graph.Tensor{{}})
	if !errors.Is(err, hal.ErrDeclined) || !strings.Contains(err.Error(), "outside the compiled bound [1, 2]") {
		t.Fatalf("a shape outside the bounds: %v, want declined naming the bound", err)
	}
	// a precision the device does not offer: float32, and said so
	c2, err := dev.Compile(ctx, sg, &hal.CompileOptions{Precision: hal.PrecisionBFloat16})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Release()
	if p := c2.Precision(); p != hal.PrecisionFloat32 {
		t.Fatalf("precision %q, want float32", p)
	}
}
