package switchyard_test

import (
	"testing"

	"github.com/switchyard-hal/switchyard"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/runtime"
)

// TestOwnConstantsMatchRuntime: the API's constants are its own (go doc
// shows no other package), and each equals the runtime's value it is
// converted to at the boundary.
func TestOwnConstantsMatchRuntime(t *testing.T) {
	for api, rt := range map[switchyard.DType]graph.DType{
		switchyard.Undefined: graph.Undefined, switchyard.Float32: graph.Float32, switchyard.Float64: graph.Float64,
		switchyard.Float16: graph.Float16, switchyard.BFloat16: graph.BFloat16, switchyard.Int8: graph.Int8,
		switchyard.Int16: graph.Int16, switchyard.Int32: graph.Int32, switchyard.Int64: graph.Int64,
		switchyard.Uint8: graph.Uint8, switchyard.Uint16: graph.Uint16, switchyard.Uint32: graph.Uint32,
		switchyard.Uint64: graph.Uint64, switchyard.Bool: graph.Bool, switchyard.String: graph.String,
	} {
		if int32(api) != int32(rt) || api.String() != rt.String() {
			t.Errorf("DType %v = %d, runtime's %v = %d", api, api, rt, rt)
		}
	}
	for api, rt := range map[switchyard.Precision]hal.Precision{
		switchyard.PrecisionFloat32: hal.PrecisionFloat32, switchyard.PrecisionFloat16: hal.PrecisionFloat16,
		switchyard.PrecisionBFloat16: hal.PrecisionBFloat16, switchyard.PrecisionInt8: hal.PrecisionInt8,
	} {
		if string(api) != string(rt) {
			t.Errorf("Precision %q, hal's %q", api, rt)
		}
	}
	if int(switchyard.FailRun) != int(runtime.FailRun) || int(switchyard.ReplaceOnCPU) != int(runtime.ReplaceOnCPU) {
		t.Error("OnUnavailable constants differ from the runtime's")
	}
	if switchyard.CPU != runtime.CPU {
		t.Errorf("CPU %q, runtime's %q", switchyard.CPU, runtime.CPU)
	}
}
