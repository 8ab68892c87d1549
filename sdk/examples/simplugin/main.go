// Command simplugin serves the simulation backend (plugins/sim) as a
// plugin process: the worked example of sdk.Serve. Its whole job is
//
//	sdk.Serve(sim.Open(opts), nil)
//
// Configuration comes from SWITCHYARD_SIM_OPTIONS, a JSON sim.Options
// (default: {"ops":["Conv","Relu","Add","MatMul"]}), so a manifest's env
// (or a test) can shape the simulated device and its faults; with
// "device_memory": true it serves the device-memory double (HAL 1.1:
// buffers and fences stay in this process, the host holds ids).
//
// SWITCHYARD_SIMPLUGIN_HANG=1 adds a fault the in-process simulator cannot
// have: Execute blocks forever and ignores its context, like a wedged
// driver; the host's per-call deadline is what ends the call.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/plugins/sim"
	"github.com/switchyard-hal/switchyard/sdk"
)

func main() {
	opts := sim.Options{Ops: []string{"Conv", "Relu", "Add", "MatMul"}}
	if s := os.Getenv("SWITCHYARD_SIM_OPTIONS"); s != "" {
		opts = sim.Options{}
		if err := json.Unmarshal([]byte(s), &opts); err != nil {
			fmt.Fprintf(os.Stderr, "simplugin: SWITCHYARD_SIM_OPTIONS: %v\n", err)
			os.Exit(1)
		}
	}
	var b hal.Backend = sim.Open(opts) // "device_memory": true serves the HAL 1.1 double
	if os.Getenv("SWITCHYARD_SIMPLUGIN_HANG") == "1" {
		b = hanging{b}
	}
	sdk.Logger().Info("simulation plugin starting", "ops", opts.Ops)
	sdk.Serve(b, nil)
}

type hanging struct{ hal.Backend }

func (h hanging) Compile(ctx context.Context, sg *hal.Subgraph, o hal.CompileOptions) (hal.Executable, error) {
	e, err := h.Backend.Compile(ctx, sg, o)
	if err != nil {
		return nil, err
	}
	return hangingExe{e}, nil
}

type hangingExe struct{ hal.Executable }

func (hangingExe) Execute(ctx context.Context, in, out []*graph.Tensor) error {
	select {} // a wedged driver: never returns, ignores ctx
}
