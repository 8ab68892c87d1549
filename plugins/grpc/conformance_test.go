package grpcplugin_test

import (
	"context"
	"testing"

	"github.com/switchyard-hal/switchyard/conformance"
	"github.com/switchyard-hal/switchyard/hal"
	grpcplugin "github.com/switchyard-hal/switchyard/plugins/grpc"
	"github.com/switchyard-hal/switchyard/plugins/sim"
)

// The simulation backend served out of process (sdk/examples/simplugin)
// against the conformance suite: the same op set and limit as the
// in-process run in plugins/sim, every tensor through shared memory.
func TestConformanceOutOfProcess(t *testing.T) {
	path, sum := simPlugin(t)
	opts := sim.Options{
		Ops:            []string{"Add", "Sub", "Mul", "Div", "Max", "Min", "Relu", "Sigmoid", "Tanh", "Conv", "MatMul", "Gemm", "Softmax", "MaxPool", "AveragePool", "GlobalAveragePool", "Reshape", "Transpose", "Concat", "Flatten"},
		MaxTensorBytes: 4 << 20,
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
			return hal.NewDevice(b, hal.LoadProcess)
		},
	})
}
