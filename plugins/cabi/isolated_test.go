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
	"github.com/switchyard-hal/switchyard/core/runtime"
	"github.com/switchyard-hal/switchyard/hal"
	grpcplugin "github.com/switchyard-hal/switchyard/plugins/grpc"
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
