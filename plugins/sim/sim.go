// Package sim is a SIMULATION backend for tests: it claims a configurable
// set of op types, executes them with the reference kernels and can inject
// faults (refuse to compile, fail or delay an execute, return wrong values
// or shapes). It is the test double for the partitioner, the runtime and
// the conformance suite, and reports DeviceSimulated: it is never
// presented as hardware.
package sim

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/switchyard-hal/switchyard/core/exec"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/plugins/cpu"
)

// Faults are injected misbehaviours. They are plain data so a simulated
// backend can be configured the same way in or out of process.
type Faults struct {
	// RefuseCompile makes Compile fail with Unsupported although Supports
	// claimed the nodes (a dishonest backend).
	RefuseCompile bool `json:"refuse_compile,omitempty"`
	// FailExecute makes every Execute fail with Internal.
	FailExecute bool `json:"fail_execute,omitempty"`
	// FailAfter makes Execute fail after this many successful calls (0 = never).
	FailAfter int64 `json:"fail_after,omitempty"`
	// UnavailableAfter makes Execute report Unavailable (a device that went
	// away) after this many successful calls (0 = never).
	UnavailableAfter int64 `json:"unavailable_after,omitempty"`
	// ExecuteDelay sleeps (honouring the context) before each Execute.
	ExecuteDelay time.Duration `json:"execute_delay,omitempty"`
	// WrongValues adds 1 to the first element of every float output.
	WrongValues bool `json:"wrong_values,omitempty"`
	// WrongValuesOp restricts WrongValues to subgraphs containing this op.
	WrongValuesOp string `json:"wrong_values_op,omitempty"`
	// WrongValuesWhenBroadcasting restricts WrongValues to executions whose
	// inputs have different shapes.
	WrongValuesWhenBroadcasting bool `json:"wrong_values_when_broadcasting,omitempty"`
	// SwallowNaN replaces NaN outputs by 0 (a backend that loses NaN).
	SwallowNaN bool `json:"swallow_nan,omitempty"`
	// WrongShape drops the last dimension of each output (keeping the data).
	WrongShape bool `json:"wrong_shape,omitempty"`
	// Mutations break one contract rule each (mutate.go).
	Mutations
}

// Options configure a simulation backend.
type Options struct {
	// Name defaults to "sim".
	Name string `json:"name,omitempty"`
	// Ops are the op types claimed (default domain; "domain:OpType" for
	// another, e.g. "com.microsoft:GroupQueryAttention"); empty claims
	// nothing.
	Ops []string `json:"ops"`
	// MaxTensorBytes, when > 0, is declared as the backend's limit and
	// enforced on Execute inputs.
	MaxTensorBytes int64 `json:"max_tensor_bytes,omitempty"`
	// HAL overrides the HAL range the backend declares (for version tests).
	HAL *hal.VersionRange `json:"hal,omitempty"`
	Faults
	// DeviceOptions make it a device with its own memory (see NewDeviceMemory).
	DeviceOptions
}

// Backend is the simulation backend.
type Backend struct {
	opts  Options
	ops   map[string]bool
	calls atomic.Int64
	// imports counts executables restored from compiled blobs (blob.go).
	imports atomic.Int64
}

// New makes a simulation backend.
func New(opts Options) *Backend {
	if opts.Name == "" {
		opts.Name = "sim"
	}
	b := &Backend{opts: opts, ops: map[string]bool{}}
	for _, op := range opts.Ops {
		b.ops[op] = true
	}
	return b
}

// Open makes the backend the options describe: the device-memory double
// when DeviceMemory is set, the host-memory one otherwise.
func Open(opts Options) hal.Backend {
	if opts.DeviceMemory {
		return NewDeviceMemory(opts)
	}
	return New(opts)
}

// Factory returns a registry factory for this configuration.
func Factory(opts Options) hal.Factory {
	b := Open(opts)
	info := b.Info()
	_ = b.Close()
	return hal.Factory{Info: info, Kind: hal.LoadLinked, Open: func(ctx context.Context) (hal.Backend, error) { return Open(opts), nil }}
}

// Calls counts Execute calls (for tests).
func (b *Backend) Calls() int64 { return b.calls.Load() }

func (b *Backend) Info() hal.Info {
	r := hal.VersionRange{Min: hal.Version{Major: 1}, Max: hal.Current}
	if b.opts.HAL != nil {
		r = *b.opts.HAL
	}
	ops := append([]string{}, b.opts.Ops...)
	sort.Strings(ops)
	return hal.Info{Name: b.opts.Name, Vendor: "Switchyard (simulation)", Version: "1.0.0", HAL: r, Device: hal.DeviceSimulated,
		Description: "SIMULATION backend for tests: reference kernels behind the HAL, claims " + strings.Join(ops, ",")}
}

func (b *Backend) Capabilities(ctx context.Context) (hal.Capabilities, error) {
	caps := hal.Capabilities{Layouts: []string{"NCHW"}, MaxTensorBytes: b.opts.MaxTensorBytes}
	ops := append([]string{}, b.opts.Ops...)
	if b.opts.AdvertiseOp != "" {
		ops = append(ops, b.opts.AdvertiseOp)
	}
	sort.Strings(ops)
	for _, op := range ops {
		if op == b.opts.HideOp {
			continue
		}
		dom, typ := splitOp(op)
		caps.Ops = append(caps.Ops, hal.OpCapability{Domain: dom, OpType: typ})
	}
	return caps, nil
}

// splitOp reads an Ops entry: "OpType" (default domain) or "domain:OpType".
func splitOp(op string) (domain, opType string) {
	if d, t, ok := strings.Cut(op, ":"); ok {
		return d, t
	}
	return "", op
}

func (b *Backend) allow(n *graph.Node) (bool, string) {
	key := n.OpType
	if n.Domain != "" {
		key = n.Domain + ":" + n.OpType
	}
	if !b.ops[key] {
		return false, fmt.Sprintf("op %s is not in the simulated set", n.OpType)
	}
	return true, ""
}

func (b *Backend) Supports(ctx context.Context, sg *hal.Subgraph) ([]hal.Verdict, error) {
	return cpu.Verdicts(sg, b.claim), nil
}

func (b *Backend) Compile(ctx context.Context, sg *hal.Subgraph, opts hal.CompileOptions) (hal.Executable, error) {
	e, err := b.compile(sg)
	if err != nil {
		return nil, err
	}
	if b.opts.ReportFloat16 {
		return &reportingExecutable{executable: e, p: hal.PrecisionFloat16}, nil
	}
	return e, nil
}

// compile compiles onto the reference kernels (the device-memory double
// wraps the result).
func (b *Backend) compile(sg *hal.Subgraph) (*executable, error) {
	for i, v := range cpu.Verdicts(sg, b.allow) {
		if !v.Supported {
			return nil, hal.Errorf(hal.CodeUnsupported, "node %d (%s): %s", i, sg.Graph.Nodes[i].Label(), v.Reason)
		}
	}
	if b.opts.RefuseCompile {
		return nil, hal.Errorf(hal.CodeUnsupported, "simulated fault: compile refused")
	}
	p, err := exec.Compile(sg.Graph, exec.Options{Opsets: sg.Opsets})
	if err != nil {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "%v", err)
	}
	corrupt := b.opts.WrongValues
	if corrupt && b.opts.WrongValuesOp != "" {
		corrupt = false
		for _, n := range sg.Graph.Nodes {
			if n.OpType == b.opts.WrongValuesOp {
				corrupt = true
			}
		}
	}
	return &executable{b: b, prog: p, corrupt: corrupt}, nil
}

func (b *Backend) Close() error { return nil }

type executable struct {
	b       *Backend
	prog    *exec.Program
	corrupt bool
}

func (e *executable) Execute(ctx context.Context, inputs, outputs []*graph.Tensor) error {
	if err := e.pre(ctx, inputs); err != nil {
		return err
	}
	if err := (&cpu.Executable{Program: e.prog}).Execute(ctx, inputs, outputs); err != nil {
		return err
	}
	e.post(inputs, outputs)
	e.b.opts.mutateHost(inputs, outputs)
	return nil
}

// pre applies the faults that act before a call computes: the call
// counter, the declared tensor limit, the delay, unavailability, failures.
func (e *executable) pre(ctx context.Context, inputs []*graph.Tensor) error {
	n := e.b.calls.Add(1)
	f := e.b.opts.Faults
	if lim := e.b.opts.MaxTensorBytes; lim > 0 {
		for i, t := range inputs {
			if sz := int64(t.Len() * t.DType.Size()); sz > lim {
				return hal.Errorf(hal.CodeResourceExhausted, "input %d holds %d bytes, over the declared limit of %d", i, sz, lim)
			}
		}
	}
	if f.ExecuteDelay > 0 {
		select {
		case <-time.After(f.ExecuteDelay):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if f.UnavailableAfter > 0 && n > f.UnavailableAfter {
		return hal.Errorf(hal.CodeUnavailable, "simulated fault: device gone (call %d)", n)
	}
	if f.FailExecute || f.FailAfter > 0 && n > f.FailAfter {
		return hal.Errorf(hal.CodeInternal, "simulated fault: execute failed (call %d)", n)
	}
	return nil
}

// post applies the faults that act on computed outputs.
func (e *executable) post(inputs, outputs []*graph.Tensor) {
	f := e.b.opts.Faults
	broadcasting := false
	for _, t := range inputs {
		if t != nil && inputs[0] != nil && !graph.SameShape(t.Shape, inputs[0].Shape) {
			broadcasting = true
		}
	}
	for _, o := range outputs {
		if e.corrupt && (!f.WrongValuesWhenBroadcasting || broadcasting) && o.DType.IsFloat() && o.Len() > 0 {
			o.SetFloat64(0, o.Float64At(0)+1)
		}
		if f.SilentFloat16 {
			roundTo(o, hal.PrecisionFloat16)
		}
		if f.SwallowNaN && o.DType.IsFloat() {
			for i := 0; i < o.Len(); i++ {
				if math.IsNaN(o.Float64At(i)) {
					o.SetFloat64(i, 0)
				}
			}
		}
		if f.WrongShape {
			// same data, wrong shape: merge the last two dims, or add one
			if r := len(o.Shape); r >= 2 {
				o.Shape = append(append([]int{}, o.Shape[:r-2]...), o.Shape[r-2]*o.Shape[r-1])
			} else {
				o.Shape = append(append([]int{}, o.Shape...), 1)
			}
		}
	}
}

func (e *executable) Release() error { return nil }
