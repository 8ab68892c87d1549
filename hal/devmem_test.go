package hal_test

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

// A 1.1 feature asked of a 1.0 backend (or of one without the optional
// interface) is a clear Unsupported, never a panic.
func TestDeviceMemoryOnOldBackendIsUnsupported(t *testing.T) {
	old := hal.VersionRange{Min: hal.V1_0, Max: hal.V1_0}
	for _, tc := range []struct {
		name string
		opts sim.Options
		want string
	}{
		{"hal-1.0", sim.Options{Name: "old", Ops: []string{"Relu"}, HAL: &old}, "needs HAL 1.1; the backend speaks HAL 1.0"},
		{"no-interface", sim.Options{Name: "plain", Ops: []string{"Relu"}}, "backend has no device memory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := hal.NewDevice(sim.New(tc.opts), hal.LoadLinked)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			ctx := context.Background()
			_, err = d.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: []int{4}})
			if !errors.Is(err, hal.ErrUnsupported) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Allocate: %v, want Unsupported saying %q", err, tc.want)
			}
			if _, err := d.Upload(ctx, nil, nil, nil); !errors.Is(err, hal.ErrUnsupported) {
				t.Errorf("Upload: %v", err)
			}
			if _, err := d.Download(ctx, nil, nil, nil); !errors.Is(err, hal.ErrUnsupported) {
				t.Errorf("Download: %v", err)
			}
			if d.HasDeviceMemory() {
				t.Error("HasDeviceMemory is true")
			}
			sg := reluSubgraph()
			c, err := d.Compile(ctx, sg, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Release()
			if c.CanEnqueue() {
				t.Error("CanEnqueue is true")
			}
			if _, err := c.Enqueue(ctx, nil, nil, nil, nil); !errors.Is(err, hal.ErrUnsupported) {
				t.Errorf("Enqueue: %v", err)
			}
			if _, err := c.ExecuteProfiled(ctx, nil, nil); !errors.Is(err, hal.ErrUnsupported) {
				t.Errorf("ExecuteProfiled: %v", err)
			}
			if p := c.Precision(); p != hal.PrecisionFloat32 {
				t.Errorf("Precision = %q", p)
			}
			devs, err := d.Devices(ctx)
			if err != nil || len(devs) != 1 || devs[0].Index != 0 {
				t.Errorf("Devices = %+v, %v", devs, err)
			}
		})
	}
}

// The portable fence maps a context that ends first to DeadlineExceeded
// and passes the work's error through, wrapped once.
func TestSignalledFence(t *testing.T) {
	f := hal.Signalled(nil)
	if done, err := f.Poll(); !done || err != nil {
		t.Fatalf("Poll = %v, %v", done, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	if err := f.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := hal.Signalled(hal.Errorf(hal.CodeDeclined, "shape")).Wait(ctx); !errors.Is(err, hal.ErrDeclined) {
		t.Fatalf("declined: %v", err)
	}
}

// Subgraph.TypeOf reads boundary, produced and constant values.
func TestSubgraphTypeOf(t *testing.T) {
	sg := reluSubgraph()
	sg.Graph.Initializers = map[string]*graph.Tensor{"w": graph.MustFromSlice([]int{2}, []float32{1, 2})}
	if ty, ok := sg.TypeOf("y"); !ok || ty.DType != graph.Float32 {
		t.Errorf("y: %v %v", ty, ok)
	}
	if ty, ok := sg.TypeOf("w"); !ok || ty.Shape.String() == "" || sg.ConstOf("w") == nil {
		t.Errorf("w: %v %v", ty, ok)
	}
	if _, ok := sg.TypeOf("nope"); ok {
		t.Error("unknown name found")
	}
}

// An output of another shape than the runtime inferred fails the call
// with Internal naming the output, whatever the backend.
func TestCompiledExecuteChecksOutputs(t *testing.T) {
	d, err := hal.NewDevice(sim.New(sim.Options{Ops: []string{"Relu"}, Faults: sim.Faults{WrongShape: true}}), hal.LoadLinked)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	c, err := d.Compile(context.Background(), reluSubgraph(), nil)
	if err != nil {
		t.Fatal(err)
	}
	in := graph.MustFromSlice([]int{3}, []float32{-1, 0, 1})
	err = c.Execute(context.Background(), []*graph.Tensor{in}, []*graph.Tensor{{}})
	if !errors.Is(err, hal.ErrInternal) || !strings.Contains(err.Error(), `output "y"`) {
		t.Fatalf("wrong output shape: %v", err)
	}
}
