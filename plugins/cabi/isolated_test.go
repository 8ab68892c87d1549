package cabi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	grpcplugin "github.com/switchyard-hal/switchyard/plugins/grpc"
	"github.com/switchyard-hal/switchyard/runtime"
)

var (
	hostOnce sync.Once
	hostPath string
	hostErr  error
)

// TestMain removes the isolation host built by the tests. The test binary
// is also the library probe's child (Probe starts /proc/self/exe).
func TestMain(m *testing.M) {
	ServeProbe()
	code := m.Run()
	if hostPath != "" {
		_ = os.RemoveAll(filepath.Dir(hostPath))
	}
	os.Exit(code)
}

// buildHost builds the isolation host once per test binary.
func buildHost(t *testing.T) string {
	t.Helper()
	hostOnce.Do(func() {
		dir, err := os.MkdirTemp("", "switchyard-cabi-host")
		if err != nil {
			hostErr = err
			return
		}
		hostPath = filepath.Join(dir, "switchyard-cabi-host")
		cmd := exec.Command("go", "build", "-o", hostPath, "github.com/switchyard-hal/switchyard/sdk/c/host")
		if out, err := cmd.CombinedOutput(); err != nil {
			hostErr = fmt.Errorf("building the isolation host: %v\n%s", err, out)
		}
	})
	if hostErr != nil {
		t.Fatal(hostErr)
	}
	return hostPath
}

func openIsolated(t *testing.T, lib string, restart grpcplugin.RestartPolicy) *hal.Device {
	t.Helper()
	b, err := OpenIsolated(context.Background(), lib, IsolatedOptions{HostPath: buildHost(t), Restart: restart, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	d, err := hal.NewDevice(b, hal.LoadProcess)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// Loaded isolated, a C delegate that dereferences NULL during execute makes
// that Run fail with Unavailable while the application keeps running; with
// ReplaceOnCPU the Runs go on, on the reference kernels.
func TestIsolatedCrashIsUnavailable(t *testing.T) {
	ctx := context.Background()
	lib := brokenLib(t, "CRASH")
	x := map[string]*graph.Tensor{"x": graph.MustFromSlice([]int{4}, []float32{-1, 0, 1, 2})}

	dev := openIsolated(t, lib, grpcplugin.RestartPolicy{Disabled: true})
	m, err := runtime.LoadBytes(ctx, reluModel(t), &runtime.Options{Backends: []*hal.Device{dev}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	_, err = m.Run(ctx, x)
	if !errors.Is(err, hal.ErrUnavailable) {
		t.Fatalf("want Unavailable after the delegate crashed, got %v", err)
	}
	t.Logf("crash surfaced as: %v", err)

	// the application is alive: the same model still runs on cpu
	ref, err := runtime.LoadBytes(ctx, reluModel(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ref.Run(ctx, x); err != nil {
		t.Fatal(err)
	}

	dev = openIsolated(t, lib, grpcplugin.RestartPolicy{Disabled: true})
	m2, err := runtime.LoadBytes(ctx, reluModel(t), &runtime.Options{Backends: []*hal.Device{dev}, OnUnavailable: runtime.ReplaceOnCPU})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	got, err := m2.Run(ctx, x)
	if err != nil {
		t.Fatalf("ReplaceOnCPU: %v", err)
	}
	if y := graph.Data[float32](got["y"]); y[0] != 0 || y[3] != 2 {
		t.Fatalf("y = %v", y)
	}
	if m2.Plan().Partitions[0].Replaced == nil {
		t.Error("the re-placement is not in the placement report")
	}
}

// The example delegate gives the same results isolated as in-process.
func TestIsolatedExampleDelegate(t *testing.T) {
	ctx := context.Background()
	dev := openIsolated(t, exampleLib(t), grpcplugin.RestartPolicy{})
	m, err := runtime.LoadBytes(ctx, reluModel(t), &runtime.Options{Backends: []*hal.Device{dev}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	got, err := m.Run(ctx, map[string]*graph.Tensor{"x": graph.MustFromSlice([]int{4}, []float32{-1, 0, 1, 2})})
	if err != nil {
		t.Fatal(err)
	}
	if y := graph.Data[float32](got["y"]); y[0] != 0 || y[3] != 2 {
		t.Fatalf("y = %v", y)
	}
	if n := len(m.PartitionStats()); n != 1 {
		t.Fatalf("%d delegated partitions, want 1", n)
	}
}

// Isolated, a HAL 1.1 library keeps its 1.1 surface over the plugin
// protocol: its devices, a compile for device 1, device memory and the
// profile of an enqueued call (node names mapped in the host process).
func TestIsolatedHAL11(t *testing.T) {
	ctx := context.Background()
	dev := openIsolated(t, exampleLib2(t), grpcplugin.RestartPolicy{})
	ds, err := dev.Devices(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 2 || ds[1].Name != "example-cpu1" || ds[1].CacheKey.Driver != "1.1.0" {
		t.Fatalf("devices over the plugin protocol: %+v", ds)
	}
	if !dev.HasDeviceMemory() {
		t.Fatal("isolated 1.1 library has no device memory")
	}
	exe, err := dev.Compile(ctx, namedMulRelu(), &hal.CompileOptions{Device: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Release()
	in, err := dev.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: []int{1, 3}, Memory: hal.MemoryDeviceLocal, Device: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Free(in)
	up, err := dev.Upload(ctx, in, graph.MustFromSlice([]int{1, 3}, []float32{1, 1, 1}), nil)
	if err != nil {
		t.Fatal(err)
	}
	outs := []hal.Buffer{nil}
	f, err := exe.Enqueue(ctx, []hal.Buffer{in}, outs, []hal.Fence{up}, &hal.EnqueueOptions{Profile: true})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Free(outs[0])
	if err := f.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	p, err := f.(hal.ProfiledFence).Profile()
	if err != nil {
		t.Fatal(err)
	}
	if err := checkExampleProfile(p, 1); err != nil {
		t.Errorf("%v: %+v", err, p)
	}
}

// Isolated, an opt-in to float16 is used and disclosed as in process: the
// plugin protocol carries the precision the compile used; without the
// opt-in the library computes float32.
func TestIsolatedPrecisionDisclosed(t *testing.T) {
	ctx := context.Background()
	dev := openIsolated(t, exampleLib(t), grpcplugin.RestartPolicy{})
	exe, err := dev.Compile(ctx, mulRelu(), &hal.CompileOptions{Precision: hal.PrecisionFloat16})
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Release()
	out := []*graph.Tensor{{}}
	if err := exe.Execute(ctx, []*graph.Tensor{graph.MustFromSlice([]int{1, 3}, []float32{0.1, 0, 0})}, out); err != nil {
		t.Fatal(err)
	}
	if y := graph.Data[float32](out[0]); y[0] == 0.1 || y[0] < 0.0999 || y[0] > 0.1001 || exe.Precision() != hal.PrecisionFloat16 {
		t.Fatalf("isolated float16 opt-in: y[0] = %v, precision %q", y[0], exe.Precision())
	}
	exe32, err := dev.Compile(ctx, mulRelu(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer exe32.Release()
	if err := exe32.Execute(ctx, []*graph.Tensor{graph.MustFromSlice([]int{1, 3}, []float32{0.1, 0, 0})}, out); err != nil {
		t.Fatal(err)
	}
	if y := graph.Data[float32](out[0]); y[0] != 0.1 || exe32.Precision() != hal.PrecisionFloat32 {
		t.Fatalf("isolated without opt-in: y[0] = %v, precision %q", y[0], exe32.Precision())
	}
}
