package grpcplugin_test

import (
	"context"
	"testing"

	"github.com/switchyard-hal/switchyard/conformance"
	"github.com/switchyard-hal/switchyard/hal"
	grpcplugin "github.com/switchyard-hal/switchyard/plugins/grpc"
	"github.com/switchyard-hal/switchyard/plugins/sim"
)

// The device-memory double served out of process against the suite,
// HAL 1.1 cases included: buffers, fences and enqueues cross the process
// boundary by id, two devices are kept apart, and losing the device is
// killing the plugin process.
func TestConformanceOutOfProcessDeviceMemory(t *testing.T) {
	path, sum := simPlugin(t)
	opts := sim.Options{
		Ops:            []string{"Add", "Sub", "Mul", "Div", "Max", "Min", "Relu", "Sigmoid", "Tanh", "Conv", "MatMul", "Gemm", "Softmax", "MaxPool", "AveragePool", "GlobalAveragePool", "Reshape", "Transpose", "Concat", "Flatten"},
		MaxTensorBytes: 4 << 20,
		DeviceOptions:  sim.DeviceOptions{DeviceMemory: true, Devices: 2, MemoryBytes: 64 << 20, Precisions: []hal.Precision{hal.PrecisionFloat16}},
	}
	gaps, err := conformance.BuiltinGaps("sim")
	if err != nil {
		t.Fatal(err)
	}
	conformance.Run(t, conformance.Harness{
		Binary: path,
		Gaps:   gaps,
		Open: func(ctx context.Context) (*hal.Device, error) {
			b, err := grpcplugin.Open(ctx, grpcplugin.Options{Path: path, SHA256: sum, Env: []string{simEnv(opts)}, Logger: quietLogger(t)})
			if err != nil {
				return nil, err
			}
			return hal.NewDevice(b.HAL(), hal.LoadProcess)
		},
		LoseDevice: func(ctx context.Context, d *hal.Device) error {
			return d.Backend().(interface{ Kill() error }).Kill()
		},
	})
}
