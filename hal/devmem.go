package hal

import (
	"context"
	"errors"
	"fmt"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// The portable side of HAL 1.1: every call checks that the backend
// negotiated 1.1 and implements the optional interface, validates
// arguments, recovers panics and wraps errors once.

// need11 refuses a 1.1 feature of a backend that negotiated 1.0 or lacks
// the interface.
func (d *Device) need11(op, feature string, has bool) error {
	if d.version.Less(V1_1) {
		return &Error{Code: CodeUnsupported, Backend: d.info.Name, Op: op, Msg: fmt.Sprintf("%s needs HAL 1.1; the backend speaks HAL %s", feature, d.version)}
	}
	if !has {
		return &Error{Code: CodeUnsupported, Backend: d.info.Name, Op: op, Msg: "backend has no " + feature}
	}
	return d.check(op)
}

// HasDeviceMemory reports whether the backend offers DeviceMemory under
// the negotiated version.
func (d *Device) HasDeviceMemory() bool {
	_, ok := d.b.(DeviceMemory)
	return ok && !d.version.Less(V1_1)
}

// Devices returns the backend's devices from its capabilities; a backend
// that lists none has one device described by its Info.
func (d *Device) Devices(ctx context.Context) ([]DeviceDesc, error) {
	caps, err := d.Capabilities(ctx)
	if err != nil {
		return nil, err
	}
	if len(caps.Devices) > 0 {
		return caps.Devices, nil
	}
	return []DeviceDesc{{Index: 0, Name: d.info.Name, Kind: d.info.Device, MemoryKinds: []MemoryKind{MemoryHost}, CacheKey: CacheKey{Vendor: d.info.Vendor, Device: d.info.Name, Driver: d.info.Version}}}, nil
}

// Allocate asks the backend's DeviceMemory for a buffer.
func (d *Device) Allocate(ctx context.Context, req BufferRequest) (Buffer, error) {
	dm, ok := d.b.(DeviceMemory)
	if err := d.need11("allocate", "device memory", ok); err != nil {
		return nil, err
	}
	if _, err := graph.CheckAlloc(req.DType, req.Shape); err != nil {
		return nil, &Error{Code: CodeResourceExhausted, Backend: d.info.Name, Op: "allocate", Err: err}
	}
	var b Buffer
	err := guard(func() (err error) { b, err = dm.Allocate(ctx, req); return })
	if err != nil {
		return nil, wrap(d.info.Name, "allocate", err)
	}
	if b == nil {
		return nil, &Error{Code: CodeInternal, Backend: d.info.Name, Op: "allocate", Msg: "backend returned a nil buffer"}
	}
	if b.DType() != req.DType || !graph.SameShape(b.Shape(), req.Shape) {
		return nil, &Error{Code: CodeInternal, Backend: d.info.Name, Op: "allocate", Msg: fmt.Sprintf("asked for %v%v, got a buffer of %v%v", req.DType, req.Shape, b.DType(), b.Shape())}
	}
	return b, nil
}

// Free gives a buffer back to the backend.
func (d *Device) Free(b Buffer) error {
	dm, ok := d.b.(DeviceMemory)
	if err := d.need11("free", "device memory", ok); err != nil {
		return err
	}
	if b == nil {
		return nil
	}
	return wrap(d.info.Name, "free", guard(func() error { return dm.Free(b) }))
}

// Upload copies a host tensor into a buffer after the given fences.
func (d *Device) Upload(ctx context.Context, dst Buffer, src *graph.Tensor, after []Fence) (Fence, error) {
	dm, ok := d.b.(DeviceMemory)
	if err := d.need11("upload", "device memory", ok); err != nil {
		return nil, err
	}
	if dst == nil || src == nil {
		return nil, &Error{Code: CodeInvalidArgument, Backend: d.info.Name, Op: "upload", Msg: "nil buffer or tensor"}
	}
	if err := src.Check(); err != nil {
		return nil, &Error{Code: CodeInvalidArgument, Backend: d.info.Name, Op: "upload", Err: err}
	}
	if src.DType != dst.DType() || !graph.SameShape(src.Shape, dst.Shape()) {
		return nil, &Error{Code: CodeInvalidArgument, Backend: d.info.Name, Op: "upload", Msg: fmt.Sprintf("tensor %v%v does not fit buffer %v%v", src.DType, src.Shape, dst.DType(), dst.Shape())}
	}
	if err := ctx.Err(); err != nil {
		return nil, wrap(d.info.Name, "upload", err)
	}
	var f Fence
	err := guard(func() (err error) { f, err = dm.Upload(ctx, dst, src, unwrapFences(after)); return })
	return d.fence("upload", f, err)
}

// Download copies a buffer into a caller-allocated host tensor after the
// given fences; dst is complete when the returned fence signals.
func (d *Device) Download(ctx context.Context, dst *graph.Tensor, src Buffer, after []Fence) (Fence, error) {
	dm, ok := d.b.(DeviceMemory)
	if err := d.need11("download", "device memory", ok); err != nil {
		return nil, err
	}
	if dst == nil || src == nil {
		return nil, &Error{Code: CodeInvalidArgument, Backend: d.info.Name, Op: "download", Msg: "nil buffer or tensor"}
	}
	if dst.Data == nil {
		t, err := graph.New(src.DType(), src.Shape())
		if err != nil {
			return nil, &Error{Code: CodeResourceExhausted, Backend: d.info.Name, Op: "download", Err: err}
		}
		*dst = *t
	}
	if dst.DType != src.DType() || !graph.SameShape(dst.Shape, src.Shape()) {
		return nil, &Error{Code: CodeInvalidArgument, Backend: d.info.Name, Op: "download", Msg: fmt.Sprintf("buffer %v%v does not fit tensor %v%v", src.DType(), src.Shape(), dst.DType, dst.Shape)}
	}
	if err := ctx.Err(); err != nil {
		return nil, wrap(d.info.Name, "download", err)
	}
	var f Fence
	err := guard(func() (err error) { f, err = dm.Download(ctx, dst, src, unwrapFences(after)); return })
	return d.fence("download", f, err)
}

func (d *Device) fence(op string, f Fence, err error) (Fence, error) {
	if err != nil {
		return nil, wrap(d.info.Name, op, err)
	}
	if f == nil {
		return nil, &Error{Code: CodeInternal, Backend: d.info.Name, Op: op, Msg: "backend returned a nil fence"}
	}
	return &portableFence{f: f, backend: d.info.Name, op: op}, nil
}

// CanEnqueue reports whether the executable runs asynchronously on
// buffers (AsyncExecutable under HAL 1.1 with device memory).
func (c *Compiled) CanEnqueue() bool {
	_, ok := c.exe.(AsyncExecutable)
	return ok && c.dev.HasDeviceMemory()
}

// Enqueue schedules the executable on buffers (see AsyncExecutable).
func (c *Compiled) Enqueue(ctx context.Context, inputs, outputs []Buffer, after []Fence, opts *EnqueueOptions) (Fence, error) {
	ae, ok := c.exe.(AsyncExecutable)
	name := c.dev.info.Name
	if err := c.dev.need11("enqueue", "asynchronous execution", ok && c.dev.HasDeviceMemory()); err != nil {
		return nil, err
	}
	if err := c.live(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, wrap(name, "enqueue", err)
	}
	if len(inputs) != len(c.inputs) || len(outputs) != len(c.outputs) {
		return nil, &Error{Code: CodeInvalidArgument, Backend: name, Op: "enqueue", Msg: fmt.Sprintf("got %d inputs and %d outputs, subgraph has %d and %d", len(inputs), len(outputs), len(c.inputs), len(c.outputs))}
	}
	for i, b := range inputs {
		if b == nil {
			return nil, &Error{Code: CodeInvalidArgument, Backend: name, Op: "enqueue", Msg: fmt.Sprintf("input %d (%q) is nil", i, c.inputs[i].Name)}
		}
		if err := checkType(c.inputs[i], "input", b.DType(), b.Shape()); err != nil {
			return nil, &Error{Code: CodeInvalidArgument, Backend: name, Op: "enqueue", Err: err}
		}
	}
	for i, b := range outputs {
		if b == nil {
			continue
		}
		if err := checkType(c.outputs[i], "output", b.DType(), b.Shape()); err != nil {
			return nil, &Error{Code: CodeInvalidArgument, Backend: name, Op: "enqueue", Err: err}
		}
	}
	if err := c.checkAliasing(inputs, outputs); err != nil {
		return nil, err
	}
	if opts == nil {
		opts = &EnqueueOptions{}
	}
	var f Fence
	err := guard(func() (err error) { f, err = ae.Enqueue(ctx, inputs, outputs, unwrapFences(after), *opts); return })
	f, err = c.dev.fence("enqueue", f, err)
	if err != nil {
		return nil, err
	}
	for i, b := range outputs {
		if b == nil {
			return nil, &Error{Code: CodeInternal, Backend: name, Op: "enqueue", Msg: fmt.Sprintf("output %d (%q) was not allocated", i, c.outputs[i].Name)}
		}
		if err := checkType(c.outputs[i], "output", b.DType(), b.Shape()); err != nil {
			return nil, &Error{Code: CodeInternal, Backend: name, Op: "enqueue", Err: err}
		}
	}
	return f, nil
}

// checkAliasing refuses an output buffer given twice, and one that is an
// input buffer unless the executable declares that pair in place
// (InPlaceExecutable).
func (c *Compiled) checkAliasing(inputs, outputs []Buffer) error {
	var pairs []InPlace
	checked := false
	for i, b := range outputs {
		if b == nil {
			continue
		}
		for j := 0; j < i; j++ {
			if sameBuffer(outputs[j], b) {
				return &Error{Code: CodeInvalidArgument, Backend: c.dev.info.Name, Op: "enqueue", Msg: fmt.Sprintf("outputs %d (%q) and %d (%q) are one buffer", j, c.outputs[j].Name, i, c.outputs[i].Name)}
			}
		}
		for k, in := range inputs {
			if !sameBuffer(in, b) {
				continue
			}
			if !checked {
				pairs, checked = c.InPlaceOutputs(), true
			}
			declared := false
			for _, p := range pairs {
				declared = declared || p.Output == i && p.Input == k
			}
			if !declared {
				return &Error{Code: CodeInvalidArgument, Backend: c.dev.info.Name, Op: "enqueue", Msg: fmt.Sprintf("output %d (%q) is the buffer of input %d (%q), which the executable does not declare it updates in place", i, c.outputs[i].Name, k, c.inputs[k].Name)}
			}
		}
	}
	return nil
}

// sameBuffer compares two buffers by identity (false for buffers whose
// dynamic type cannot be compared).
func sameBuffer(a, b Buffer) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a != nil && a == b
}

// ExecuteProfiled runs the executable once and returns that call's
// profile (ProfilingExecutable); without one it is Unsupported.
func (c *Compiled) ExecuteProfiled(ctx context.Context, inputs, outputs []*graph.Tensor) (*CallProfile, error) {
	pe, ok := c.exe.(ProfilingExecutable)
	if err := c.dev.need11("execute-profiled", "per-call profiling", ok); err != nil {
		return nil, err
	}
	var p *CallProfile
	err := c.execute(ctx, inputs, outputs, func() (err error) { p, err = pe.ExecuteProfiled(ctx, inputs, outputs); return })
	return p, err
}

// Precision is what the executable computes in: what it reports
// (PrecisionReporter), else float32.
func (c *Compiled) Precision() Precision {
	if pr, ok := c.exe.(PrecisionReporter); ok {
		var p Precision
		if guard(func() error { p = pr.Precision(); return nil }) == nil && p != "" {
			return p
		}
	}
	return PrecisionFloat32
}

// HostBytes is the host memory the executable reports holding
// (HostMemoryReporter), 0 when it reports none.
func (c *Compiled) HostBytes() int64 {
	if hr, ok := c.exe.(HostMemoryReporter); ok {
		var n int64
		if guard(func() error { n = hr.HostBytes(); return nil }) == nil && n > 0 {
			return n
		}
	}
	return 0
}

// InPlaceOutputs is what the executable reports (InPlaceExecutable),
// checked against its boundary: pairs whose output and input have the
// same dtype and compatible shapes (same rank, equal static dims), each
// output once; nil for an executable that
// reports none.
func (c *Compiled) InPlaceOutputs() []InPlace {
	ie, ok := c.exe.(InPlaceExecutable)
	if !ok {
		return nil
	}
	var got []InPlace
	if guard(func() error { got = ie.InPlaceOutputs(); return nil }) != nil {
		return nil
	}
	var out []InPlace
	seen := map[int]bool{}
	for _, p := range got {
		if p.Output < 0 || p.Output >= len(c.outputs) || p.Input < 0 || p.Input >= len(c.inputs) || seen[p.Output] {
			continue
		}
		o, in := c.outputs[p.Output].Type, c.inputs[p.Input].Type
		if o.DType != in.DType || !compatibleShapes(o.Shape, in.Shape) {
			continue
		}
		seen[p.Output] = true
		out = append(out, p)
	}
	return out
}

func compatibleShapes(a, b graph.Shape) bool {
	if a == nil || len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Static() && b[i].Static() && a[i].Value != b[i].Value {
			return false
		}
	}
	return true
}

func (c *Compiled) live() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.released {
		return &Error{Code: CodeFailedPrecondition, Backend: c.dev.info.Name, Op: "execute", Msg: "executable was released"}
	}
	return nil
}

// checkType checks a value's dtype and shape against a declared boundary type.
func checkType(vi graph.ValueInfo, what string, dt graph.DType, shape []int) error {
	want := vi.Type
	if want.DType != graph.Undefined && want.DType != dt {
		return fmt.Errorf("%s %q is %v, subgraph declares %v", what, vi.Name, dt, want.DType)
	}
	if want.Shape != nil {
		if len(want.Shape) != len(shape) {
			return fmt.Errorf("%s %q has shape %v, subgraph declares %v", what, vi.Name, shape, want.Shape)
		}
		for i, d := range want.Shape {
			if d.Static() && int(d.Value) != shape[i] {
				return fmt.Errorf("%s %q has shape %v, subgraph declares %v", what, vi.Name, shape, want.Shape)
			}
		}
	}
	return nil
}

// portableFence wraps a backend's fence: errors are wrapped once, a context
// that ends first gives DeadlineExceeded/Cancelled, panics are recovered.
type portableFence struct {
	f       Fence
	backend string
	op      string
}

func (p *portableFence) Wait(ctx context.Context) error {
	if done, err := p.Poll(); done {
		return err
	}
	err := guard(func() error { return p.f.Wait(ctx) })
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		return wrap(p.backend, p.op, cerr)
	}
	return wrap(p.backend, p.op, err)
}

func (p *portableFence) Poll() (bool, error) {
	var done bool
	err := guard(func() (err error) { done, err = p.f.Poll(); return })
	if !done {
		return false, nil
	}
	return true, wrap(p.backend, p.op, err)
}

// Profile passes through to a ProfiledFence.
func (p *portableFence) Profile() (*CallProfile, error) {
	pf, ok := p.f.(ProfiledFence)
	if !ok {
		return nil, &Error{Code: CodeUnsupported, Backend: p.backend, Op: "profile", Msg: "fence carries no profile"}
	}
	var prof *CallProfile
	err := guard(func() (err error) { prof, err = pf.Profile(); return })
	return prof, wrap(p.backend, "profile", err)
}

// unwrapFences hands backends their own fences back.
func unwrapFences(fs []Fence) []Fence {
	out := make([]Fence, 0, len(fs))
	for _, f := range fs {
		if f == nil {
			continue
		}
		if p, ok := f.(*portableFence); ok {
			out = append(out, p.f)
			continue
		}
		out = append(out, f)
	}
	return out
}

// FenceOf returns the backend's own fence behind a portable one (for
// adapters such as the plugin server).
func FenceOf(f Fence) Fence {
	if p, ok := f.(*portableFence); ok {
		return p.f
	}
	return f
}

// Signalled is a fence that has already signalled with err (for backends
// whose work completes synchronously).
func Signalled(err error) Fence { return doneFence{err} }

type doneFence struct{ err error }

func (f doneFence) Wait(context.Context) error { return f.err }
func (f doneFence) Poll() (bool, error)        { return true, f.err }
