package hal_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/plugins/sim"
)

// Device.Compile holds every backend, linked in included, to the precision
// rule: an executable reporting a reduced precision the caller did not opt
// into exactly is refused (and released), whatever loaded the backend.
func TestCompileChecksPrecision(t *testing.T) {
	ctx := context.Background()
	g := &graph.Graph{
		Inputs:  []graph.ValueInfo{{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(4)}}},
		Outputs: []graph.ValueInfo{{Name: "y", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(4)}}},
		Nodes:   []*graph.Node{{OpType: "Relu", Inputs: []string{"x"}, Outputs: []string{"y"}}},
	}
	sg := &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}}
	for _, devmem := range []bool{false, true} {
		opts := sim.Options{Ops: []string{"Relu"}, Faults: sim.Faults{Mutations: sim.Mutations{ReportFloat16: true}}}
		opts.DeviceMemory = devmem
		d, err := hal.NewDevice(sim.Open(opts), hal.LoadLinked)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			asked hal.Precision
			ok    bool
		}{{"", false}, {hal.PrecisionFloat32, false}, {hal.PrecisionBFloat16, false}, {hal.PrecisionFloat16, true}} {
			comp, err := d.Compile(ctx, sg, &hal.CompileOptions{Precision: c.asked})
			switch {
			case c.ok && err != nil:
				t.Errorf("devmem %v, asked %q: %v", devmem, c.asked, err)
			case c.ok && comp.Precision() != hal.PrecisionFloat16:
				t.Errorf("devmem %v, asked %q: precision %s", devmem, c.asked, comp.Precision())
			case !c.ok && (err == nil || !errors.Is(err, hal.ErrInternal) || !strings.Contains(err.Error(), "float16")):
				t.Errorf("devmem %v, asked %q: %v, want Internal naming float16", devmem, c.asked, err)
			}
			if comp != nil {
				comp.Release()
			}
		}
		d.Close()
	}
	// an honest backend that declares float16 uses it only when asked
	d, err := hal.NewDevice(sim.NewDeviceMemory(sim.Options{Ops: []string{"Relu"}, DeviceOptions: sim.DeviceOptions{Precisions: []hal.Precision{hal.PrecisionFloat16}}}), hal.LoadLinked)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for asked, want := range map[hal.Precision]hal.Precision{"": hal.PrecisionFloat32, hal.PrecisionFloat16: hal.PrecisionFloat16, hal.PrecisionBFloat16: hal.PrecisionFloat32} {
		comp, err := d.Compile(ctx, sg, &hal.CompileOptions{Precision: asked})
		if err != nil || comp.Precision() != want {
			t.Errorf("asked %q: %v, %v; want %s", asked, comp, err, want)
		}
		if comp != nil {
			comp.Release()
		}
	}
}
