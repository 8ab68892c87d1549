package sim

import (
	"context"
	"reflect"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

// Mutations make the double break one rule of the HAL contract, for the
// conformance suite's mutation test (conformance/mutation_test.go): each
// is a backend bug the suite must catch by a named case. They are plain
// data, like Faults, so a double served out of process is mutated the
// same way. Leave them all false for a backend that keeps the contract.
type Mutations struct {
	// WriteInput makes Execute and Enqueue add 1 to the first element of
	// their first float input (the caller's tensor; the input buffer).
	WriteInput bool `json:"mutate_write_input,omitempty"`
	// SignalEarly makes the fences of Upload, Download and Enqueue signal
	// success when the operation is submitted; the operation itself runs
	// only when the next one is submitted.
	SignalEarly bool `json:"mutate_signal_early,omitempty"`
	// DropUpload makes Upload signal success without copying anything.
	DropUpload bool `json:"mutate_drop_upload,omitempty"`
	// AliasOutput writes an output into the memory of an input of the same
	// dtype and shape, a pair the executable does not declare in place:
	// Execute hands the caller the input's memory as the output, Enqueue
	// returns the input's buffer for an output left nil.
	AliasOutput bool `json:"mutate_alias_output,omitempty"`
	// SilentFloat16 rounds float32 outputs through float16 while the
	// executable reports float32.
	SilentFloat16 bool `json:"mutate_silent_float16,omitempty"`
	// ReportFloat16 makes executables compute in float16 and report it,
	// whatever the caller asked for.
	ReportFloat16 bool `json:"mutate_report_float16,omitempty"`
	// LeakBuffers makes Free (and Release of an executable's weights)
	// never give memory back.
	LeakBuffers bool `json:"mutate_leak_buffers,omitempty"`
	// ClaimAll makes Supports claim every node; Compile still refuses the
	// ones outside Ops.
	ClaimAll bool `json:"mutate_claim_all,omitempty"`
	// HideOp leaves an op it takes out of Capabilities.
	HideOp string `json:"mutate_hide_op,omitempty"`
	// AdvertiseOp declares in Capabilities an op Supports declines.
	AdvertiseOp string `json:"mutate_advertise_op,omitempty"`
}

// claim is Supports' restriction: allow, or everything under ClaimAll.
func (b *Backend) claim(n *graph.Node) (bool, string) {
	if b.opts.ClaimAll {
		return true, ""
	}
	return b.allow(n)
}

func dataPtr(t *graph.Tensor) uintptr {
	if t == nil || t.Data == nil {
		return 0
	}
	v := reflect.ValueOf(t.Data)
	if v.Kind() != reflect.Slice || v.Len() == 0 {
		return 0
	}
	return v.Pointer()
}

// mutateHost applies WriteInput and AliasOutput to a synchronous call's
// caller tensors once it computed.
func (m Mutations) mutateHost(inputs, outputs []*graph.Tensor) {
	if m.AliasOutput {
		for _, o := range outputs {
			for _, in := range inputs {
				if o == nil || in == nil || in.DType != o.DType || !graph.SameShape(in.Shape, o.Shape) || dataPtr(in) == 0 || dataPtr(in) == dataPtr(o) {
					continue
				}
				graph.CopyData(in.Data, o.Data)
				o.Data = in.Data
				break
			}
		}
	}
	if m.WriteInput {
		writeFirst(inputs)
	}
}

// writeFirst adds 1 to the first element of the first float input.
func writeFirst(inputs []*graph.Tensor) {
	for _, in := range inputs {
		if in != nil && in.DType.IsFloat() && in.Len() > 0 {
			in.SetFloat64(0, in.Float64At(0)+1)
			return
		}
	}
}

// reportingExecutable is a host-memory executable that reports (and
// computes in) a precision (ReportFloat16).
type reportingExecutable struct {
	*executable
	p hal.Precision
}

func (e *reportingExecutable) Execute(ctx context.Context, inputs, outputs []*graph.Tensor) error {
	if err := e.executable.Execute(ctx, inputs, outputs); err != nil {
		return err
	}
	for _, o := range outputs {
		roundTo(o, e.p)
	}
	return nil
}

func (e *reportingExecutable) Precision() hal.Precision { return e.p }

var _ hal.PrecisionReporter = (*reportingExecutable)(nil)

// Lose loses the device now, as DeviceLostAfter does after its count:
// pending fences fail with Unavailable and every later call is refused
// with Unavailable (for conformance.Harness.LoseDevice).
func (b *DeviceBackend) Lose() {
	if !b.lost.Swap(true) {
		b.stop(hal.Errorf(hal.CodeUnavailable, "simulated fault: device lost"))
	}
}

// wrongShape is the shape WrongShape gives an output: the last two dims
// merged, or a 1 appended.
func wrongShape(s []int) []int {
	if r := len(s); r >= 2 {
		return append(append([]int{}, s[:r-2]...), s[r-2]*s[r-1])
	}
	return append(append([]int{}, s...), 1)
}
