package sim_test

import (
	"context"
	"testing"

	"github.com/switchyard-hal/switchyard/conformance"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/plugins/sim"
)

// The simulation backend, claiming a typical accelerator's op set and
// declaring a 4 MiB tensor limit, against the conformance suite. Ops it
// does not claim are reported as not delegated.
func TestConformance(t *testing.T) {
	opts := sim.Options{
		Ops:            []string{"Add", "Sub", "Mul", "Div", "Max", "Min", "Relu", "Sigmoid", "Tanh", "Conv", "MatMul", "Gemm", "Softmax", "MaxPool", "AveragePool", "GlobalAveragePool", "Reshape", "Transpose", "Concat", "Flatten"},
		MaxTensorBytes: 4 << 20,
	}
	conformance.Run(t, conformance.Harness{
		Open: func(ctx context.Context) (*hal.Device, error) { return hal.NewDevice(sim.New(opts), hal.LoadLinked) },
	})
}

// The device-memory double, with the same op set (and GroupQueryAttention
// for its declared in-place pairs), against the suite with its HAL 1.1
// cases: values travel through device-local buffers, queues and fences on
// two devices of 64 MiB each, float16 may be opted into, and the device
// can be lost.
func TestConformanceDeviceMemory(t *testing.T) {
	opts := sim.Options{
		Ops:            []string{"Add", "Sub", "Mul", "Div", "Max", "Min", "Relu", "Sigmoid", "Tanh", "Conv", "MatMul", "Gemm", "Softmax", "MaxPool", "AveragePool", "GlobalAveragePool", "Reshape", "Transpose", "Concat", "Flatten", "com.microsoft:GroupQueryAttention"},
		MaxTensorBytes: 4 << 20,
		DeviceOptions:  sim.DeviceOptions{Devices: 2, MemoryBytes: 64 << 20, Precisions: []hal.Precision{hal.PrecisionFloat16}},
	}
	conformance.Run(t, conformance.Harness{
		Open: func(ctx context.Context) (*hal.Device, error) {
			return hal.NewDevice(sim.NewDeviceMemory(opts), hal.LoadLinked)
		},
		LoseDevice: func(ctx context.Context, d *hal.Device) error {
			d.Backend().(*sim.DeviceBackend).Lose()
			return nil
		},
	})
}
