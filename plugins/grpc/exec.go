package grpcplugin

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/hal/wire"
	halv1 "github.com/switchyard-hal/switchyard/hal/wire/switchyard/hal/v1"
)

// hostRegion is a host-created shared region and the process it is
// mapped in.
type hostRegion struct {
	r        *wire.Region
	mappedIn *process
}

// regionPool recycles host regions between calls so a steady stream of
// Executes maps nothing new.
type regionPool struct {
	b    *Backend
	mu   sync.Mutex
	free []*hostRegion
	next uint64
}

const (
	minRegion     = 64 << 10
	maxFreeRegion = 8
)

// get returns a region of at least size bytes mapped in p.
func (rp *regionPool) get(ctx context.Context, p *process, size int) (*hostRegion, error) {
	rp.mu.Lock()
	var hr *hostRegion
	for i, r := range rp.free {
		if len(r.r.Mem) >= size {
			hr = r
			rp.free = append(rp.free[:i], rp.free[i+1:]...)
			break
		}
	}
	if hr == nil {
		rp.next++
		id := rp.next
		rp.mu.Unlock()
		n := minRegion
		for n < size {
			n *= 2
		}
		r, err := wire.NewRegion(id, "switchyard-host", n)
		if err != nil {
			return nil, &hal.Error{Code: hal.CodeResourceExhausted, Backend: rp.b.name, Op: "execute", Err: err}
		}
		hr = &hostRegion{r: r}
	} else {
		rp.mu.Unlock()
	}
	if err := rp.mapIn(ctx, p, hr); err != nil {
		rp.retire(hr)
		return nil, err
	}
	return hr, nil
}

// mapIn makes sure the region is mapped in p (after a restart, again).
func (rp *regionPool) mapIn(ctx context.Context, p *process, hr *hostRegion) error {
	if hr.mappedIn == p {
		return nil
	}
	if err := p.fds.Send(hr.r.ID, hr.r.File); err != nil {
		return rp.b.callErr(ctx, p, "map-region", err)
	}
	resp, err := p.rpc.MapRegion(ctx, &halv1.MapRegionRequest{Region: hr.r.ID, Size: uint64(len(hr.r.Mem))})
	if err != nil {
		return rp.b.callErr(ctx, p, "map-region", err)
	}
	if err := wire.ErrorOf(resp.Status); err != nil {
		return err
	}
	hr.mappedIn = p
	return nil
}

// put returns a region after a call. A region whose call did not finish
// cleanly may still be written by the plugin (a hung Execute), so it is
// retired instead of reused.
func (rp *regionPool) put(ctx context.Context, hr *hostRegion, clean bool) {
	if !clean {
		rp.retire(hr)
		return
	}
	rp.mu.Lock()
	rp.free = append(rp.free, hr)
	sort.Slice(rp.free, func(i, j int) bool { return len(rp.free[i].r.Mem) < len(rp.free[j].r.Mem) })
	var evict *hostRegion
	if len(rp.free) > maxFreeRegion {
		evict = rp.free[0]
		rp.free = rp.free[1:]
	}
	rp.mu.Unlock()
	if evict != nil {
		rp.retire(evict)
	}
}

// retire unmaps the region here and asks a live plugin to drop it once
// no call of its uses it.
func (rp *regionPool) retire(hr *hostRegion) {
	if p := hr.mappedIn; p != nil && p.alive() {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		_, _ = p.rpc.UnmapRegion(ctx, &halv1.UnmapRegionRequest{Region: hr.r.ID})
		cancel()
	}
	_ = hr.r.Close()
}

func (rp *regionPool) closeAll() {
	rp.mu.Lock()
	free := rp.free
	rp.free = nil
	rp.mu.Unlock()
	for _, hr := range free {
		_ = hr.r.Close()
	}
}

// executable is a subgraph compiled in the plugin. It keeps the
// serialised subgraph so it can recompile on a restarted process.
type executable struct {
	b       *Backend
	model   []byte
	opts    hal.CompileOptions
	outputs []graph.ValueInfo

	recompile sync.Mutex
	mu        sync.Mutex
	p         *process
	id        uint64
	released  bool
	lastOut   []int

	precision hal.Precision // what the plugin's executable computes in (checked)
	profiles  bool          // the plugin can profile one call
}

// Precision is what the plugin's executable computes in
// (hal.PrecisionReporter), as it answered the compile.
func (e *executable) Precision() hal.Precision {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.precision
}

// ExecuteProfiled runs one call and returns the plugin's profile of it
// (hal.ProfilingExecutable); Unsupported when the plugin's executable
// cannot profile single calls.
func (e *executable) ExecuteProfiled(ctx context.Context, inputs, outputs []*graph.Tensor) (*hal.CallProfile, error) {
	e.mu.Lock()
	ok := e.profiles
	e.mu.Unlock()
	if !ok {
		return nil, &hal.Error{Code: hal.CodeUnsupported, Backend: e.b.name, Op: "execute-profiled", Msg: "the plugin's executable does not profile single calls"}
	}
	w, err := e.execute(ctx, inputs, outputs, true)
	if err != nil {
		return nil, err
	}
	if w == nil {
		return nil, &hal.Error{Code: hal.CodeInternal, Backend: e.b.name, Op: "execute-profiled", Msg: "the plugin answered a profiled call without a profile"}
	}
	p, err := wire.ProfileFrom(w)
	if err != nil {
		return nil, &hal.Error{Code: hal.CodeInternal, Backend: e.b.name, Op: "execute-profiled", Err: err}
	}
	return p, nil
}

// remote returns the executable's id in the live process, compiling it
// there first after a restart.
func (e *executable) remote(ctx context.Context) (*process, uint64, error) {
	p, err := e.b.process(ctx, "execute")
	if err != nil {
		return nil, 0, err
	}
	e.mu.Lock()
	if e.released {
		e.mu.Unlock()
		return nil, 0, &hal.Error{Code: hal.CodeFailedPrecondition, Backend: e.b.name, Op: "execute", Msg: "executable was released"}
	}
	if e.p == p {
		id := e.id
		e.mu.Unlock()
		return p, id, nil
	}
	e.mu.Unlock()
	e.recompile.Lock()
	defer e.recompile.Unlock()
	e.mu.Lock()
	if e.p == p {
		id := e.id
		e.mu.Unlock()
		return p, id, nil
	}
	e.mu.Unlock()
	c, err := e.b.compileOn(ctx, p, e.model, e.opts)
	if err != nil {
		return nil, 0, err
	}
	e.b.log.Info("recompiled subgraph on restarted plugin", "plugin", e.b.name, "pid", p.pid, "generation", p.gen)
	e.mu.Lock()
	e.p, e.id, e.precision, e.profiles = p, c.id, c.precision, c.profiles
	e.mu.Unlock()
	return p, c.id, nil
}

func (e *executable) Execute(ctx context.Context, inputs, outputs []*graph.Tensor) error {
	_, err := e.execute(ctx, inputs, outputs, false)
	return err
}

// execute runs one call; with profile it asks the plugin for the call's
// profile and returns it.
func (e *executable) execute(ctx context.Context, inputs, outputs []*graph.Tensor, profile bool) (*halv1.CallProfile, error) {
	ctx, cancel := e.b.callCtx(ctx)
	defer cancel()
	p, id, err := e.remote(ctx)
	if err != nil {
		return nil, err
	}
	if len(outputs) != len(e.outputs) {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "got %d outputs, subgraph has %d", len(outputs), len(e.outputs))
	}
	// tensors in device buffers travel by descriptor; the rest is laid
	// out in a call region: inputs, then output space, each 64-byte aligned
	inDB := make([]*deviceBuf, len(inputs))
	outDB := make([]*deviceBuf, len(outputs))
	off := 0
	inOff := make([]int, len(inputs))
	for i, t := range inputs {
		if t == nil {
			return nil, hal.Errorf(hal.CodeInvalidArgument, "input %d is nil", i)
		}
		if inDB[i] = e.b.deviceBuf(t); inDB[i] != nil {
			continue
		}
		inOff[i] = off
		off += wire.AlignUp(wire.ByteSize(t))
	}
	outOff := make([]int, len(outputs))
	outCap := make([]int, len(outputs))
	e.mu.Lock()
	for i, o := range outputs {
		if o.Data != nil {
			if outDB[i] = e.b.deviceBuf(o); outDB[i] != nil {
				continue
			}
		}
		n := -1
		if o.Data != nil {
			n = wire.ByteSize(o)
		} else if shape, ok := e.outputs[i].Type.Shape.Ints(); ok && e.outputs[i].Type.DType != graph.Undefined {
			n = wire.StaticByteSize(e.outputs[i].Type.DType, shape)
		}
		if n < 0 {
			n = e.lastOut[i]
		}
		outOff[i], outCap[i] = off, n
		off += wire.AlignUp(n)
	}
	e.mu.Unlock()
	for _, db := range append(append([]*deviceBuf{}, inDB...), outDB...) {
		if db != nil {
			if err := e.b.pool.mapIn(ctx, p, db.hr); err != nil {
				return nil, err
			}
		}
	}
	needRegion := false // any tensor not in a device buffer needs call space
	for i := range inputs {
		needRegion = needRegion || inDB[i] == nil
	}
	for i := range outputs {
		needRegion = needRegion || outDB[i] == nil
	}
	var hr *hostRegion
	if needRegion {
		if hr, err = e.b.pool.get(ctx, p, off); err != nil {
			return nil, err
		}
	}
	putRegion := func(clean bool) {
		if hr != nil {
			e.b.pool.put(ctx, hr, clean)
		}
	}
	req := &halv1.ExecuteRequest{Executable: id, Inputs: make([]*halv1.TensorDesc, len(inputs)), Outputs: make([]*halv1.OutputSlot, len(outputs)), Profile: profile}
	for i, t := range inputs {
		if db := inDB[i]; db != nil {
			region, n, err := db.slice(t)
			if err != nil {
				putRegion(true)
				return nil, hal.Errorf(hal.CodeInvalidArgument, "input %d: %v", i, err)
			}
			req.Inputs[i] = &halv1.TensorDesc{Dtype: int32(t.DType), Shape: wire.Dims(t.Shape), Data: &halv1.RegionSlice{Region: region, Offset: 0, Length: n}}
			continue
		}
		n, err := wire.WriteTensor(hr.r.Mem[inOff[i]:], t)
		if err != nil {
			putRegion(true)
			return nil, hal.Errorf(hal.CodeInvalidArgument, "input %d: %v", i, err)
		}
		req.Inputs[i] = &halv1.TensorDesc{Dtype: int32(t.DType), Shape: wire.Dims(t.Shape), Data: &halv1.RegionSlice{Region: hr.r.ID, Offset: uint64(inOff[i]), Length: uint64(n)}}
	}
	for i, o := range outputs {
		if db := outDB[i]; db != nil {
			req.Outputs[i] = &halv1.OutputSlot{Space: &halv1.RegionSlice{Region: db.hr.r.ID, Offset: 0, Length: uint64(db.size)}, Preallocated: true, Dtype: int32(o.DType), Shape: wire.Dims(o.Shape)}
			continue
		}
		slot := &halv1.OutputSlot{Space: &halv1.RegionSlice{Region: hr.r.ID, Offset: uint64(outOff[i]), Length: uint64(outCap[i])}}
		if o.Data != nil {
			slot.Preallocated, slot.Dtype, slot.Shape = true, int32(o.DType), wire.Dims(o.Shape)
		}
		req.Outputs[i] = slot
	}
	// any output may come back in a region the plugin creates: its
	// descriptor is accepted only while this call is in flight
	defer p.fds.Expect(len(outputs))()
	resp, err := p.door.Execute(ctx, req)
	if errors.Is(err, wire.ErrDoorbellBusy) || errors.Is(err, wire.ErrDoorbellClosed) {
		resp, err = p.rpc.Execute(ctx, req)
	}
	if err != nil {
		putRegion(false)
		return nil, e.b.callErr(ctx, p, "execute", err)
	}
	defer putRegion(true)
	if resp == nil {
		return nil, hal.Errorf(hal.CodeInternal, "the plugin answered Execute with neither a response nor an error")
	}
	if err := wire.ErrorOf(resp.Status); err != nil {
		return nil, err
	}
	if len(resp.Outputs) != len(outputs) {
		return nil, hal.Errorf(hal.CodeInternal, "plugin returned %d outputs for %d", len(resp.Outputs), len(outputs))
	}
	for i, d := range resp.Outputs {
		if db := outDB[i]; db != nil {
			// written in place in the caller's device buffer: check only
			if d == nil || d.Data == nil || d.Data.Region != db.hr.r.ID || d.Data.Offset != 0 || graph.DType(d.Dtype) != outputs[i].DType {
				e.discardRest(p, resp.Outputs[i:])
				return nil, hal.Errorf(hal.CodeInternal, "output %d (%q): the plugin did not write the caller's device buffer in place", i, e.outputs[i].Name)
			}
			if shape, err := wire.Shape(d.Shape); err != nil || !graph.SameShape(shape, outputs[i].Shape) {
				e.discardRest(p, resp.Outputs[i:])
				return nil, hal.Errorf(hal.CodeInvalidArgument, "output %d (%q): result shape %v, caller allocated %v", i, e.outputs[i].Name, d.Shape, outputs[i].Shape)
			}
			continue
		}
		n, err := e.readOutput(ctx, p, hr, outOff[i], outCap[i], d, outputs[i], e.outputs[i].Type)
		if err != nil {
			e.discardRest(p, resp.Outputs[i:])
			return nil, &hal.Error{Code: hal.CodeOf(err), Msg: fmt.Sprintf("output %d (%q)", i, e.outputs[i].Name), Err: err}
		}
		e.mu.Lock()
		e.lastOut[i] = n
		e.mu.Unlock()
	}
	return resp.Profile, nil
}

// fdGrace bounds the wait for a plugin region's descriptor: the plugin
// sends it before its response, so by the time the response is read it is
// already queued; a plugin that names a region it never sent fails fast.
const fdGrace = 2 * time.Second

// discardRest closes the descriptors of plugin regions named by outputs
// that will not be read (a call that failed on an earlier output).
func (e *executable) discardRest(p *process, ds []*halv1.TensorDesc) {
	for _, d := range ds {
		if d != nil && d.Data != nil && d.Data.Region&wire.PluginRegionBit != 0 {
			p.fds.Discard(d.Data.Region)
		}
	}
}

// readOutput copies one output out of shared memory into dst. The
// descriptor is checked against the output's inferred type (want) and its
// size bounded (wire.CheckOutput) before anything is mapped, allocated or
// copied; an output in the call region must lie in the slot offered for it
// ([slotOff, slotOff+slotCap)); a plugin region must be sealed against
// resizing (wire.MapRegion), so that a plugin cannot make the host fault.
// Every mismatch is Internal, naming both types.
func (e *executable) readOutput(ctx context.Context, p *process, hr *hostRegion, slotOff, slotCap int, d *halv1.TensorDesc, dst *graph.Tensor, want graph.ValueType) (int, error) {
	dt, shape, size, err := wire.CheckOutput(d, want)
	if err != nil {
		return 0, hal.Errorf(hal.CodeInternal, "%v", err)
	}
	if dst.Data != nil && (dt != dst.DType || !graph.SameShape(shape, dst.Shape)) {
		return 0, hal.Errorf(hal.CodeInvalidArgument, "result is %v%v, caller allocated %v%v", dt, shape, dst.DType, dst.Shape)
	}
	var mem []byte
	switch id := d.Data.Region; {
	case hr != nil && id == hr.r.ID:
		if d.Data.Offset < uint64(slotOff) || d.Data.Length > uint64(slotCap) || d.Data.Offset-uint64(slotOff) > uint64(slotCap)-d.Data.Length {
			return 0, hal.Errorf(hal.CodeInternal, "the plugin placed the result at [%d, +%d) of the call region, outside the output's slot [%d, +%d)", d.Data.Offset, d.Data.Length, slotOff, slotCap)
		}
		mem = hr.r.Mem
	case id&wire.PluginRegionBit != 0:
		if d.Data.Offset != 0 {
			p.fds.Discard(id)
			return 0, hal.Errorf(hal.CodeInternal, "the plugin placed the result at offset %d of its region %#x (a plugin region holds one output at offset 0)", d.Data.Offset, id)
		}
		rctx, cancel := context.WithTimeout(ctx, fdGrace)
		f, err := p.fds.Receive(rctx, id)
		cancel()
		if err != nil {
			return 0, hal.Errorf(hal.CodeInternal, "the plugin named region %#x for the result: %v", id, err)
		}
		r, err := wire.MapRegion(id, f, max(size, 1))
		if err != nil {
			return 0, hal.Errorf(hal.CodeInternal, "%v", err)
		}
		defer r.Close()
		mem = r.Mem
	default:
		return 0, hal.Errorf(hal.CodeInternal, "plugin names region %d, which is not this call's", id)
	}
	b, err := wire.Slice(mem, d.Data)
	if err != nil {
		return 0, hal.Errorf(hal.CodeInternal, "%v", err)
	}
	if dst.Data != nil {
		if raw, ok := wire.RawBytes(dst); ok && dst.DType != graph.Bool {
			if len(b) != len(raw) {
				return 0, hal.Errorf(hal.CodeInternal, "result holds %d bytes, %v%v needs %d", len(b), dst.DType, dst.Shape, len(raw))
			}
			copy(raw, b)
			return len(b), nil
		}
		t, err := wire.ViewTensor(d.Dtype, d.Shape, b, true)
		if err != nil {
			return 0, hal.Errorf(hal.CodeInternal, "%v", err)
		}
		graph.CopyData(dst.Data, t.Data)
		return len(b), nil
	}
	t, err := wire.ViewTensor(d.Dtype, d.Shape, b, true)
	if err != nil {
		return 0, hal.Errorf(hal.CodeInternal, "%v", err)
	}
	*dst = *t
	return len(b), nil
}

func (e *executable) Release() error {
	e.mu.Lock()
	if e.released {
		e.mu.Unlock()
		return nil
	}
	e.released = true
	p, id := e.p, e.id
	e.mu.Unlock()
	if p == nil || !p.alive() {
		return nil // its process is gone, and the executable with it
	}
	ctx, cancel := e.b.callCtx(context.Background())
	defer cancel()
	r, err := p.rpc.Release(ctx, &halv1.ReleaseRequest{Executable: id})
	if err != nil {
		if !p.alive() {
			return nil
		}
		return e.b.callErr(ctx, p, "release", err)
	}
	return wire.ErrorOf(r.Status)
}
