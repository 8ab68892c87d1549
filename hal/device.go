package hal

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// Device is the portable handle applications and the runtime hold for an
// opened backend. It validates arguments, recovers driver panics and wraps
// every driver error once into an *Error.
type Device struct {
	b       Backend
	info    Info
	kind    LoadKind
	version Version

	mu     sync.Mutex
	closed bool
}

// NewDevice wraps a backend that was obtained without a registry (tests,
// a plugin host). It negotiates the HAL version like Registry.Open.
func NewDevice(b Backend, kind LoadKind) (*Device, error) {
	if b == nil {
		return nil, &Error{Code: CodeInvalidArgument, Op: "open", Msg: "nil backend"}
	}
	var info Info
	if err := guard(func() error { info = b.Info(); return nil }); err != nil {
		return nil, wrap("", "info", err)
	}
	v, err := Negotiate(Current, info.HAL)
	if err != nil {
		_ = b.Close()
		return nil, wrap(info.Name, "open", err)
	}
	if kind == "" {
		kind = LoadLinked
	}
	return &Device{b: b, info: info, kind: kind, version: v}, nil
}

// Info returns the backend's static description.
func (d *Device) Info() Info { return d.info }

// Name is Info().Name.
func (d *Device) Name() string { return d.info.Name }

// Kind says how the backend was loaded.
func (d *Device) Kind() LoadKind { return d.kind }

// HALVersion is the negotiated contract version.
func (d *Device) HALVersion() Version { return d.version }

// Features lists the optional interfaces the backend implements.
func (d *Device) Features() []string { return optionalFeatures(d.b) }

// Backend returns the driver (for adapters such as the plugin server).
func (d *Device) Backend() Backend { return d.b }

func (d *Device) check(op string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return &Error{Code: CodeFailedPrecondition, Backend: d.info.Name, Op: op, Msg: "device is closed"}
	}
	return nil
}

// guard runs f, turning a panic into an Internal error with its stack.
func guard(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &Error{Code: CodeInternal, Msg: fmt.Sprintf("backend panicked: %v\n%s", p, debug.Stack())}
		}
	}()
	return f()
}

// Capabilities returns what the backend declares it can do.
func (d *Device) Capabilities(ctx context.Context) (Capabilities, error) {
	if err := d.check("capabilities"); err != nil {
		return Capabilities{}, err
	}
	var c Capabilities
	err := guard(func() (err error) { c, err = d.b.Capabilities(ctx); return })
	return c, wrap(d.info.Name, "capabilities", err)
}

// Supports asks for one verdict per node of sg. A declined node without a
// reason gets one saying so, so the placement report is never silent.
func (d *Device) Supports(ctx context.Context, sg *Subgraph) ([]Verdict, error) {
	if err := d.check("supports"); err != nil {
		return nil, err
	}
	if err := validateSubgraph(sg); err != nil {
		return nil, wrap(d.info.Name, "supports", err)
	}
	var vs []Verdict
	err := guard(func() (err error) { vs, err = d.b.Supports(ctx, sg); return })
	if err != nil {
		return nil, wrap(d.info.Name, "supports", err)
	}
	if len(vs) != len(sg.Graph.Nodes) {
		return nil, &Error{Code: CodeInternal, Backend: d.info.Name, Op: "supports", Msg: fmt.Sprintf("backend returned %d verdicts for %d nodes", len(vs), len(sg.Graph.Nodes))}
	}
	for i := range vs {
		if !vs[i].Supported && vs[i].Reason == "" {
			vs[i].Reason = "declined (the backend gave no reason)"
		}
	}
	return vs, nil
}

// Compile compiles sg; nil opts means defaults.
func (d *Device) Compile(ctx context.Context, sg *Subgraph, opts *CompileOptions) (*Compiled, error) {
	if err := d.check("compile"); err != nil {
		return nil, err
	}
	if err := validateSubgraph(sg); err != nil {
		return nil, wrap(d.info.Name, "compile", err)
	}
	if opts == nil {
		opts = &CompileOptions{}
	}
	if err := ctx.Err(); err != nil {
		return nil, wrap(d.info.Name, "compile", err)
	}
	var exe Executable
	err := guard(func() (err error) { exe, err = d.b.Compile(ctx, sg, *opts); return })
	if err != nil {
		return nil, wrap(d.info.Name, "compile", err)
	}
	if exe == nil {
		return nil, &Error{Code: CodeInternal, Backend: d.info.Name, Op: "compile", Msg: "backend returned a nil executable"}
	}
	if err := d.checkPrecision(exe, opts.Precision); err != nil {
		_ = guard(exe.Release)
		return nil, err
	}
	return d.compiled(exe, sg), nil
}

// checkPrecision holds an executable to the precision rule, whatever
// loads the backend (linked in, C library, plugin process): it computes
// float32 values in float32 unless the caller opted into exactly the
// reduced precision it reports (PrecisionReporter; see CheckPrecision).
func (d *Device) checkPrecision(exe Executable, asked Precision) error {
	pr, ok := exe.(PrecisionReporter)
	if !ok {
		return nil
	}
	var p Precision
	if err := guard(func() error { p = pr.Precision(); return nil }); err != nil {
		return wrap(d.info.Name, "compile", err)
	}
	if _, err := CheckPrecision(p, asked); err != nil {
		if oi, ok := d.b.(PrecisionOptIn); ok {
			for _, q := range oi.OptedInPrecisions() {
				if q == p {
					return nil // the user opted in when configuring the backend
				}
			}
		}
		return &Error{Code: CodeInternal, Backend: d.info.Name, Op: "compile", Err: err}
	}
	return nil
}

// PrecisionOptIn is implemented by backends whose user opted into a
// reduced precision when configuring the backend itself (xnnpack's int8
// option), rather than per compile (CompileOptions.Precision). An
// executable may report one of these precisions without the compile
// asking for it; it is still disclosed in the placement report. A
// backend that declares none is held to CompileOptions.Precision alone.
type PrecisionOptIn interface {
	OptedInPrecisions() []Precision
}

// EstimateCost asks an optional CostEstimator. A backend without one
// answers Unsupported; an estimate with a negative field, or a breakdown
// larger than its Latency, is Internal.
func (d *Device) EstimateCost(ctx context.Context, sg *Subgraph) (Cost, error) {
	ce, ok := d.b.(CostEstimator)
	if !ok {
		return Cost{}, &Error{Code: CodeUnsupported, Backend: d.info.Name, Op: "estimate-cost", Msg: "backend does not estimate costs"}
	}
	if err := d.check("estimate-cost"); err != nil {
		return Cost{}, err
	}
	if err := validateSubgraph(sg); err != nil {
		return Cost{}, wrap(d.info.Name, "estimate-cost", err)
	}
	if err := ctx.Err(); err != nil {
		return Cost{}, wrap(d.info.Name, "estimate-cost", err)
	}
	var c Cost
	err := guard(func() (err error) { c, err = ce.EstimateCost(ctx, sg); return })
	if err != nil {
		return Cost{}, wrap(d.info.Name, "estimate-cost", err)
	}
	if c.Latency < 0 || c.TransferBytes < 0 || c.Compute < 0 || c.Overhead < 0 || c.Boundary < 0 {
		return Cost{}, &Error{Code: CodeInternal, Backend: d.info.Name, Op: "estimate-cost", Msg: fmt.Sprintf("backend returned a negative estimate %+v", c)}
	}
	if parts := c.Compute + c.Overhead + c.Boundary; parts > c.Latency {
		return Cost{}, &Error{Code: CodeInternal, Backend: d.info.Name, Op: "estimate-cost", Msg: fmt.Sprintf("estimate breakdown (%v) exceeds its latency (%v)", parts, c.Latency)}
	}
	return c, nil
}

// ExportBlob serialises a compiled executable (optional BlobExporter).
func (d *Device) ExportBlob(ctx context.Context, c *Compiled) ([]byte, error) {
	be, ok := d.b.(BlobExporter)
	if !ok {
		return nil, &Error{Code: CodeUnsupported, Backend: d.info.Name, Op: "export-blob", Msg: "backend does not export compiled blobs"}
	}
	var b []byte
	err := guard(func() (err error) { b, err = be.ExportBlob(ctx, c.exe); return })
	return b, wrap(d.info.Name, "export-blob", err)
}

// AllocTensor asks an optional BufferAllocator for a tensor in memory the
// backend uses without copies; backends without one answer Unsupported.
func (d *Device) AllocTensor(ctx context.Context, dt graph.DType, shape []int) (*graph.Tensor, error) {
	ba, ok := d.b.(BufferAllocator)
	if !ok {
		return nil, &Error{Code: CodeUnsupported, Backend: d.info.Name, Op: "alloc-tensor", Msg: "backend has no device buffers"}
	}
	if err := d.check("alloc-tensor"); err != nil {
		return nil, err
	}
	if _, err := graph.CheckAlloc(dt, shape); err != nil {
		return nil, &Error{Code: CodeResourceExhausted, Backend: d.info.Name, Op: "alloc-tensor", Err: err}
	}
	var t *graph.Tensor
	err := guard(func() (err error) { t, err = ba.AllocTensor(ctx, dt, shape); return })
	return t, wrap(d.info.Name, "alloc-tensor", err)
}

// FreeTensor returns a tensor from AllocTensor.
func (d *Device) FreeTensor(t *graph.Tensor) error {
	ba, ok := d.b.(BufferAllocator)
	if !ok {
		return &Error{Code: CodeUnsupported, Backend: d.info.Name, Op: "free-tensor", Msg: "backend has no device buffers"}
	}
	return wrap(d.info.Name, "free-tensor", guard(func() error { return ba.FreeTensor(t) }))
}

// Close closes the backend; later calls are no-ops.
func (d *Device) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.mu.Unlock()
	return wrap(d.info.Name, "close", guard(d.b.Close))
}

func validateSubgraph(sg *Subgraph) error {
	if sg == nil || sg.Graph == nil {
		return &Error{Code: CodeInvalidArgument, Msg: "nil subgraph"}
	}
	if len(sg.Graph.Outputs) == 0 && len(sg.Graph.Nodes) > 0 {
		return &Error{Code: CodeInvalidArgument, Msg: "subgraph has no outputs"}
	}
	outer := map[string]bool{}
	if err := sg.Graph.Validate(outer); err != nil {
		return &Error{Code: CodeInvalidArgument, Msg: "invalid subgraph", Err: err}
	}
	return nil
}

// Compiled is the portable handle of a compiled subgraph.
type Compiled struct {
	exe     Executable
	dev     *Device
	inputs  []graph.ValueInfo
	outputs []graph.ValueInfo

	mu       sync.Mutex
	released bool
}

// Inputs and Outputs describe the boundary in order.
func (c *Compiled) Inputs() []graph.ValueInfo  { return c.inputs }
func (c *Compiled) Outputs() []graph.ValueInfo { return c.outputs }

// Executable returns the driver's executable (for adapters).
func (c *Compiled) Executable() Executable { return c.exe }

// Execute validates inputs against the subgraph's declared boundary types
// and runs the executable. See Executable.Execute for the output contract.
// Outputs are checked against the declared (inferred) types after the
// call: a backend that returns another dtype, rank or static dim fails the
// call with Internal naming the output and both types.
func (c *Compiled) Execute(ctx context.Context, inputs, outputs []*graph.Tensor) error {
	return c.execute(ctx, inputs, outputs, func() error { return c.exe.Execute(ctx, inputs, outputs) })
}

func (c *Compiled) execute(ctx context.Context, inputs, outputs []*graph.Tensor, call func() error) error {
	name := c.dev.info.Name
	if err := c.live(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return wrap(name, "execute", err)
	}
	if len(inputs) != len(c.inputs) || len(outputs) != len(c.outputs) {
		return &Error{Code: CodeInvalidArgument, Backend: name, Op: "execute", Msg: fmt.Sprintf("got %d inputs and %d outputs, subgraph has %d and %d", len(inputs), len(outputs), len(c.inputs), len(c.outputs))}
	}
	for i, t := range inputs {
		if err := checkTensor(c.inputs[i], t); err != nil {
			return &Error{Code: CodeInvalidArgument, Backend: name, Op: "execute", Err: err}
		}
	}
	for i, t := range outputs {
		if t == nil {
			return &Error{Code: CodeInvalidArgument, Backend: name, Op: "execute", Msg: fmt.Sprintf("output %d (%q) is nil; pass an empty tensor to have it filled", i, c.outputs[i].Name)}
		}
	}
	err := guard(call)
	if err != nil {
		return wrap(name, "execute", err)
	}
	for i, t := range outputs {
		if err := t.Check(); err != nil {
			return &Error{Code: CodeInternal, Backend: name, Op: "execute", Msg: fmt.Sprintf("output %d (%q) is malformed", i, c.outputs[i].Name), Err: err}
		}
		if err := checkType(c.outputs[i], "output", t.DType, t.Shape); err != nil {
			return &Error{Code: CodeInternal, Backend: name, Op: "execute", Msg: "backend returned a wrong output", Err: err}
		}
	}
	return nil
}

func checkTensor(vi graph.ValueInfo, t *graph.Tensor) error {
	if t == nil {
		return fmt.Errorf("input %q is nil", vi.Name)
	}
	if err := t.Check(); err != nil {
		return fmt.Errorf("input %q: %w", vi.Name, err)
	}
	want := vi.Type
	if want.DType != graph.Undefined && want.DType != t.DType {
		return fmt.Errorf("input %q is %v, subgraph wants %v", vi.Name, t.DType, want.DType)
	}
	if want.Shape != nil {
		if len(want.Shape) != len(t.Shape) {
			return fmt.Errorf("input %q has shape %v, subgraph wants %v", vi.Name, t.Shape, want.Shape)
		}
		for i, d := range want.Shape {
			if d.Static() && int(d.Value) != t.Shape[i] {
				return fmt.Errorf("input %q has shape %v, subgraph wants %v", vi.Name, t.Shape, want.Shape)
			}
		}
	}
	return nil
}

// Release frees the executable; later calls are no-ops.
func (c *Compiled) Release() error {
	c.mu.Lock()
	if c.released {
		c.mu.Unlock()
		return nil
	}
	c.released = true
	c.mu.Unlock()
	return wrap(c.dev.info.Name, "release", guard(c.exe.Release))
}
