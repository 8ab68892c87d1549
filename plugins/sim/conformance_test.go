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

// The device-memory double, with the same op set, against the suite: its
// values travel through device-local buffers, queues and fences.
func TestConformanceDeviceMemory(t *testing.T) {
	opts := sim.Options{
		Ops:            []string{"Add", "Sub", "Mul", "Div", "Max", "Min", "Relu", "Sigmoid", "Tanh", "Conv", "MatMul", "Gemm", "Softmax", "MaxPool", "AveragePool", "GlobalAveragePool", "Reshape", "Transpose", "Concat", "Flatten"},
		MaxTensorBytes: 4 << 20,
	}
	conformance.Run(t, conformance.Harness{
		Open: func(ctx context.Context) (*hal.Device, error) {
			return hal.NewDevice(sim.NewDeviceMemory(opts), hal.LoadLinked)
		},
	})
}
