package cabi

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/hal/devkit"
)

// HAL 1.1 over the C ABI: the seven optional table functions (allocate,
// free_buffer, upload, download, enqueue, wait_fence, release_fence).
// Buffers and fences are opaque 64-bit handles the library issues; the
// host keeps each in a wrapper of its own type (so a foreign or forged
// hal.Buffer is refused here before the library sees it) and never
// dereferences them. A library without the functions is a HAL 1.0
// backend: Backend itself does not implement hal.DeviceMemory, so the
// portable layer answers Unsupported without calling anything.

// bind11 checks the HAL 1.1 part of a bound table: all seven functions or
// none. It reports whether device memory is offered under version v.
func bind11(tbl *cTable, v hal.Version) (bool, error) {
	if uintptr(tbl.structSize) < tableSize11 {
		// a library built against the 1.0 header: whatever the host's
		// table holds past its size is not the library's
		tbl.allocate, tbl.freeBuffer, tbl.upload, tbl.download, tbl.enqueue, tbl.waitFence, tbl.releaseFence = 0, 0, 0, 0, 0, 0, 0
		return false, nil
	}
	fns := []struct {
		name string
		ptr  uintptr
	}{{"allocate", tbl.allocate}, {"free_buffer", tbl.freeBuffer}, {"upload", tbl.upload}, {"download", tbl.download},
		{"enqueue", tbl.enqueue}, {"wait_fence", tbl.waitFence}, {"release_fence", tbl.releaseFence}}
	var set, unset []string
	for _, f := range fns {
		if f.ptr != 0 {
			set = append(set, f.name)
		} else {
			unset = append(unset, f.name)
		}
	}
	if len(set) > 0 && len(unset) > 0 {
		return false, fmt.Errorf("its function table has some HAL 1.1 functions (%s) but not all: NULL %s (all seven or none)", strings.Join(set, ", "), strings.Join(unset, ", "))
	}
	return len(set) > 0 && !v.Less(hal.V1_1), nil
}

// DeviceBackend is a C delegate that offers device memory (HAL 1.1): the
// Backend plus hal.DeviceMemory. Backend.HAL returns it for such a
// library; Factory registers what HAL returns.
type DeviceBackend struct{ *Backend }

var _ hal.DeviceMemory = (*DeviceBackend)(nil)

// HasDeviceMemory reports whether the library carries the HAL 1.1
// device-memory functions and 1.1 was negotiated.
func (b *Backend) HasDeviceMemory() bool { return b.devmem }

// HAL returns the backend to hand the portable layer: a *DeviceBackend
// when the library offers device memory, b itself (a HAL 1.0 backend)
// otherwise.
func (b *Backend) HAL() hal.Backend {
	if b.devmem {
		return &DeviceBackend{b}
	}
	return b
}

func (b *Backend) unsupported11(op string) error {
	return &hal.Error{Code: hal.CodeUnsupported, Op: op, Msg: fmt.Sprintf("cabi: %s: the library has no HAL 1.1 device memory (it speaks HAL %s)", b.info.Name, b.version)}
}

// buffer is the host's view of a library buffer: its handle and what it
// holds, nothing else.
type buffer struct {
	b *Backend
	h uint64
	devkit.BufferInfo
	freed atomic.Bool
}

// own resolves a hal.Buffer to one of this library's live buffers.
func (b *Backend) own(hb hal.Buffer, what string) (*buffer, error) {
	x, ok := hb.(*buffer)
	if !ok || x == nil || x.b != b {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "cabi: %s: %s is not a buffer of this delegate (%T)", b.info.Name, what, hb)
	}
	if x.freed.Load() {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "cabi: %s: %s (buffer %d) was freed", b.info.Name, what, x.h)
	}
	return x, nil
}

func (b *Backend) allocate(req hal.BufferRequest) (*buffer, error) {
	if !b.devmem {
		return nil, b.unsupported11("allocate")
	}
	if req.DType == graph.String || !req.DType.Supported() {
		return nil, hal.Errorf(hal.CodeUnsupported, "cabi: %v buffers do not cross the C ABI", req.DType)
	}
	if len(req.Shape) > maxRank {
		return nil, hal.Errorf(hal.CodeUnsupported, "cabi: a buffer of rank %d (at most %d)", len(req.Shape), maxRank)
	}
	if _, err := graph.CheckAlloc(req.DType, req.Shape); err != nil {
		return nil, hal.Errorf(hal.CodeResourceExhausted, "cabi: %v", err)
	}
	if req.Memory < hal.MemoryHost || req.Memory > hal.MemoryDeviceLocal || req.Device < 0 {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "cabi: memory kind %v on device %d", req.Memory, req.Device)
	}
	dims := make([]int64, max(len(req.Shape), 1))
	for i, d := range req.Shape {
		dims[i] = int64(d)
	}
	cr := &cBufferRequest{structSize: uint32(unsafe.Sizeof(cBufferRequest{})), dtype: int32(req.DType), rank: int32(len(req.Shape)),
		memory: int32(req.Memory), device: int32(req.Device), shape: unsafe.Pointer(&dims[0])}
	if err := b.enter(); err != nil {
		return nil, err
	}
	defer b.mu.RUnlock()
	var h uint64
	st := new(cStatus)
	if code := int32(call(b.table.allocate, b.table.self, uintptr(unsafe.Pointer(cr)), uintptr(unsafe.Pointer(&h)), uintptr(unsafe.Pointer(st)))); code != 0 {
		return nil, cErr(code, st)
	}
	if h == 0 {
		return nil, hal.Errorf(hal.CodeInternal, "cabi: %s: allocate succeeded but returned handle 0", b.info.Name)
	}
	return &buffer{b: b, h: h, BufferInfo: devkit.NewBufferInfo(req.DType, append([]int{}, req.Shape...), req.Memory, req.Device)}, nil
}

// Allocate makes a library buffer (hal.DeviceMemory).
func (d *DeviceBackend) Allocate(ctx context.Context, req hal.BufferRequest) (hal.Buffer, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	x, err := d.allocate(req)
	if err != nil {
		return nil, err
	}
	return x, nil
}

// Free gives a buffer back; freeing twice is InvalidArgument.
func (d *DeviceBackend) Free(hb hal.Buffer) error {
	x, err := d.own(hb, "buffer")
	if err != nil {
		return err
	}
	return d.free(x)
}

func (b *Backend) free(x *buffer) error {
	if !x.freed.CompareAndSwap(false, true) {
		return hal.Errorf(hal.CodeInvalidArgument, "cabi: %s: buffer %d was freed", b.info.Name, x.h)
	}
	if err := b.enter(); err != nil {
		return err
	}
	defer b.mu.RUnlock()
	st := new(cStatus)
	if code := int32(call(b.table.freeBuffer, b.table.self, uintptr(x.h), uintptr(unsafe.Pointer(st)))); code != 0 {
		return cErr(code, st)
	}
	return nil
}

// fence is a library fence. Once it has been seen signalled its result is
// kept here and the library is not asked again; the handle is released
// when the fence is garbage (or with the library at Close).
type fence struct {
	b    *Backend
	h    uint64
	mu   sync.Mutex
	done bool
	err  error

	// a profiled enqueue (hal11.go): the executable, and the profile once read
	exe     *executable
	prof    *hal.CallProfile
	profErr error
}

// pinned is a download's destination, pinned until its fence signals.
type pinned struct{ p runtime.Pinner }

// waitSlice bounds one wait_fence call, so a context ending is noticed
// within it.
const waitSlice = 5 * time.Millisecond

func (b *Backend) newFence(h uint64, pin *pinned) (hal.Fence, error) {
	if h == 0 {
		if pin != nil {
			pin.p.Unpin()
		}
		return nil, hal.Errorf(hal.CodeInternal, "cabi: %s: the library returned fence handle 0", b.info.Name)
	}
	if pin != nil {
		b.pinMu.Lock()
		if b.pins == nil {
			b.pins = map[uint64]*pinned{}
		}
		b.pins[h] = pin
		b.pinMu.Unlock()
	}
	f := &fence{b: b, h: h}
	runtime.AddCleanup(f, func(h uint64) { b.forget(h) }, h)
	return f, nil
}

// forget releases a fence nobody can name any more. A download whose
// destination may still be written keeps its handle until Close.
func (b *Backend) forget(h uint64) {
	if err := b.enter(); err != nil {
		return // closed: the library freed its fences
	}
	defer b.mu.RUnlock()
	b.pinMu.Lock()
	_, pending := b.pins[h]
	b.pinMu.Unlock()
	if pending {
		var sig int32
		st := new(cStatus)
		call(b.table.waitFence, b.table.self, uintptr(h), 0, uintptr(unsafe.Pointer(&sig)), uintptr(unsafe.Pointer(st)))
		if sig == 0 {
			return
		}
		b.unpin(h)
	}
	call(b.table.releaseFence, b.table.self, uintptr(h))
}

func (b *Backend) unpin(h uint64) {
	b.pinMu.Lock()
	p := b.pins[h]
	delete(b.pins, h)
	b.pinMu.Unlock()
	if p != nil {
		p.p.Unpin()
	}
}

func (b *Backend) unpinAll() {
	b.pinMu.Lock()
	pins := b.pins
	b.pins = nil
	b.pinMu.Unlock()
	for _, p := range pins {
		p.p.Unpin()
	}
}

// wait asks the library once, waiting at most timeout.
func (f *fence) wait(timeout time.Duration) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done {
		return true, f.err
	}
	b := f.b
	if err := b.enter(); err != nil {
		f.done, f.err = true, &hal.Error{Code: hal.CodeUnavailable, Msg: fmt.Sprintf("cabi: %s: the delegate was closed before the fence signalled", b.info.Name)}
		return true, f.err
	}
	defer b.mu.RUnlock()
	var sig int32
	st := new(cStatus)
	code := int32(call(b.table.waitFence, b.table.self, uintptr(f.h), uintptr(timeout.Nanoseconds()), uintptr(unsafe.Pointer(&sig)), uintptr(unsafe.Pointer(st))))
	if sig == 0 && code == 0 {
		return false, nil
	}
	f.done = true
	if code != 0 {
		// the work's error, or (not signalled) the library refusing the
		// handle, e.g. InvalidArgument for one it does not know
		f.err = b.declined(code, cErr(code, st))
	}
	b.unpin(f.h)
	return true, f.err
}

// Wait waits until the fence signals or ctx ends (then ctx's error; the
// work goes on).
func (f *fence) Wait(ctx context.Context) error {
	for {
		slice := waitSlice
		if dl, ok := ctx.Deadline(); ok {
			slice = min(slice, max(time.Until(dl), 0))
		}
		if done, err := f.wait(slice); done {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// Poll reports whether the fence has signalled, without waiting.
func (f *fence) Poll() (bool, error) { return f.wait(0) }

// afterList turns fences into library handles. Fences of this library
// that have signalled are left out (their failure fails the call); a
// fence of another backend is waited for here, with ctx.
func (b *Backend) afterList(ctx context.Context, after []hal.Fence) ([]uint64, error) {
	var hs []uint64
	for _, af := range after {
		if af == nil {
			continue
		}
		if f, ok := af.(*fence); ok && f.b == b {
			if done, err := f.wait(0); done {
				if err != nil {
					return nil, &hal.Error{Code: hal.CodeOf(err), Msg: "cabi: work this call is ordered after failed", Err: err}
				}
				continue
			}
			hs = append(hs, f.h)
			continue
		}
		if err := af.Wait(ctx); err != nil {
			return nil, err
		}
	}
	return hs, nil
}

func handles(hs []uint64) uintptr {
	if len(hs) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(&hs[0]))
}

func checkBufferTensor(t *graph.Tensor, x *buffer, what string) error {
	if t.DType != x.DType() || !graph.SameShape(t.Shape, x.Shape()) {
		return hal.Errorf(hal.CodeInvalidArgument, "cabi: %s %v%v does not fit buffer %v%v", what, t.DType, t.Shape, x.DType(), x.Shape())
	}
	if t.DType == graph.String {
		return hal.Errorf(hal.CodeInvalidArgument, "cabi: strings do not cross the C ABI")
	}
	return nil
}

// copyArgs checks an upload's or a download's buffer hb and host tensor
// t against each other and resolves the fences to wait for; ct describes
// t to the library.
func (d *DeviceBackend) copyArgs(ctx context.Context, hb hal.Buffer, bufWhat string, t *graph.Tensor, what string, after []hal.Fence) (*buffer, []uint64, cTensor, error) {
	x, err := d.own(hb, bufWhat)
	if err != nil {
		return nil, nil, cTensor{}, err
	}
	if err := checkCrossing(what, 0, t); err != nil {
		return nil, nil, cTensor{}, err
	}
	if err := checkBufferTensor(t, x, what); err != nil {
		return nil, nil, cTensor{}, err
	}
	hs, err := d.afterList(ctx, after)
	if err != nil {
		return nil, nil, cTensor{}, err
	}
	return x, hs, describe(t, make([]int64, max(len(t.Shape), 1))), nil
}

// Upload copies src into dst after the fences; the library has copied
// src when the call returns.
func (d *DeviceBackend) Upload(ctx context.Context, dst hal.Buffer, src *graph.Tensor, after []hal.Fence) (hal.Fence, error) {
	x, hs, ct, err := d.copyArgs(ctx, dst, "destination", src, "upload source", after)
	if err != nil {
		return nil, err
	}
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer d.mu.RUnlock()
	var h uint64
	st := new(cStatus)
	if code := int32(call(d.table.upload, d.table.self, uintptr(x.h), uintptr(unsafe.Pointer(&ct)), handles(hs), uintptr(len(hs)), uintptr(unsafe.Pointer(&h)), uintptr(unsafe.Pointer(st)))); code != 0 {
		return nil, cErr(code, st)
	}
	runtime.KeepAlive(src)
	return d.newFence(h, nil)
}

// Download copies src into dst after the fences; dst (pinned meanwhile)
// is complete when the fence signals.
func (d *DeviceBackend) Download(ctx context.Context, dst *graph.Tensor, src hal.Buffer, after []hal.Fence) (hal.Fence, error) {
	x, hs, ct, err := d.copyArgs(ctx, src, "source", dst, "download destination", after)
	if err != nil {
		return nil, err
	}
	var pin *pinned
	if ct.data != nil {
		pin = new(pinned)
		pin.p.Pin(ct.data)
	}
	if err := d.enter(); err != nil {
		if pin != nil {
			pin.p.Unpin()
		}
		return nil, err
	}
	defer d.mu.RUnlock()
	var h uint64
	st := new(cStatus)
	if code := int32(call(d.table.download, d.table.self, uintptr(unsafe.Pointer(&ct)), uintptr(x.h), handles(hs), uintptr(len(hs)), uintptr(unsafe.Pointer(&h)), uintptr(unsafe.Pointer(st)))); code != 0 {
		if pin != nil {
			pin.p.Unpin()
		}
		return nil, cErr(code, st)
	}
	return d.newFence(h, pin)
}

// Enqueue runs the executable on library buffers after the fences
// (hal.AsyncExecutable). Outputs left nil are allocated here, of the
// shapes the host inferred or, where those are dynamic, of the shapes
// infer_outputs gives for the inputs' shapes, in the first input's memory.
func (e *executable) Enqueue(ctx context.Context, inputs, outputs []hal.Buffer, after []hal.Fence, opts hal.EnqueueOptions) (hal.Fence, error) {
	b := e.b
	if !b.devmem {
		return nil, b.unsupported11("enqueue")
	}
	if len(inputs) != e.nIn || len(outputs) != e.nOut {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "cabi: got %d inputs and %d outputs, the executable has %d and %d", len(inputs), len(outputs), e.nIn, e.nOut)
	}
	ins := make([]uint64, max(len(inputs), 1))
	descs := make([]*graph.Tensor, len(inputs))
	mem := hal.MemoryHost
	for i, in := range inputs {
		x, err := b.own(in, fmt.Sprintf("input %d", i))
		if err != nil {
			return nil, err
		}
		if i == 0 {
			mem = x.Memory()
		}
		ins[i] = x.h
		descs[i] = &graph.Tensor{DType: x.DType(), Shape: x.Shape()}
	}
	outs := make([]uint64, max(len(outputs), 1))
	var fresh []*buffer
	freeFresh := func() {
		for _, x := range fresh {
			_ = b.free(x)
		}
	}
	var inferred [][]int
	for i, o := range outputs {
		if o != nil {
			x, err := b.own(o, fmt.Sprintf("output %d", i))
			if err != nil {
				return nil, err
			}
			outs[i] = x.h
			continue
		}
		shape := e.outShapes[i]
		if shape == nil {
			if inferred == nil {
				var err error
				if inferred, err = e.inferShapes(descs); err != nil {
					freeFresh()
					return nil, err
				}
			}
			shape = inferred[i]
		}
		x, err := b.allocate(hal.BufferRequest{DType: e.outDTypes[i], Shape: shape, Memory: mem, Device: e.device})
		if err != nil {
			freeFresh()
			return nil, err
		}
		fresh = append(fresh, x)
		outs[i] = x.h
	}
	hs, err := b.afterList(ctx, after)
	if err != nil {
		freeFresh()
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		freeFresh()
		return nil, err
	}
	profiled := opts.Profile && b.profEnqueue
	h, err := e.enqueue(ins, outs, hs, profiled)
	if err != nil {
		freeFresh()
		return nil, err
	}
	k := 0
	for i, o := range outputs {
		if o == nil {
			outputs[i] = fresh[k]
			k++
		}
	}
	hf, err := b.newFence(h, nil)
	if err == nil && profiled {
		hf.(*fence).exe = e
	}
	return hf, err
}

func (e *executable) enqueue(ins, outs, hs []uint64, profiled bool) (uint64, error) {
	b := e.b
	if err := b.enter(); err != nil {
		return 0, err
	}
	defer b.mu.RUnlock()
	if e.handle == 0 {
		return 0, hal.Errorf(hal.CodeFailedPrecondition, "cabi: %s: executable was released", b.info.Name)
	}
	if e.serial {
		e.serialMu.Lock()
		defer e.serialMu.Unlock()
	}
	var h uint64
	st := new(cStatus)
	var code int32
	if profiled {
		eo := &cEnqueueOptions{structSize: uint32(unsafe.Sizeof(cEnqueueOptions{})), flags: enqueueProfile}
		code = int32(call(b.table.enqueueWithOptions, b.table.self, e.handle, uintptr(unsafe.Pointer(&ins[0])), uintptr(e.nIn), uintptr(unsafe.Pointer(&outs[0])), uintptr(e.nOut),
			handles(hs), uintptr(len(hs)), uintptr(unsafe.Pointer(eo)), uintptr(unsafe.Pointer(&h)), uintptr(unsafe.Pointer(st))))
	} else {
		code = int32(call(b.table.enqueue, b.table.self, e.handle, uintptr(unsafe.Pointer(&ins[0])), uintptr(e.nIn), uintptr(unsafe.Pointer(&outs[0])), uintptr(e.nOut),
			handles(hs), uintptr(len(hs)), uintptr(unsafe.Pointer(&h)), uintptr(unsafe.Pointer(st))))
	}
	if code != 0 {
		return 0, b.declined(code, cErr(code, st))
	}
	return h, nil
}

// inferShapes asks infer_outputs for the output shapes of inputs of these
// dtypes and shapes (no data), checked as Execute checks them.
func (e *executable) inferShapes(inputs []*graph.Tensor) ([][]int, error) {
	ndims := len(e.outDTypes) * maxRank
	for _, t := range inputs {
		if len(t.Shape) > maxRank {
			return nil, hal.Errorf(hal.CodeUnsupported, "cabi: input of rank %d", len(t.Shape))
		}
		ndims += len(t.Shape)
	}
	f := new(frame)
	f.reset(len(inputs), e.nOut, ndims, e.b.callSize())
	dims := f.dims
	for i, t := range inputs {
		f.ins[i] = describe(t, dims)
		dims = dims[len(t.Shape):]
	}
	for i := range f.outs {
		f.outs[i] = cTensor{rank: -1, shape: slicePtr(dims[i*maxRank : (i+1)*maxRank])}
	}
	if err := e.b.enter(); err != nil {
		return nil, err
	}
	defer e.b.mu.RUnlock()
	if e.handle == 0 {
		return nil, hal.Errorf(hal.CodeFailedPrecondition, "cabi: %s: executable was released", e.b.info.Name)
	}
	if e.serial {
		e.serialMu.Lock()
		defer e.serialMu.Unlock()
	}
	if code := int32(call(e.b.table.inferOutputs, e.handle, uintptr(unsafe.Pointer(&f.call)), uintptr(unsafe.Pointer(&f.status)))); code != 0 {
		return nil, cErr(code, &f.status)
	}
	bound := bindSymbols(e.inShapes, inputs)
	out := make([][]int, e.nOut)
	limit := e.maxOut
	for i := range out {
		o := &f.outs[i]
		_, shape, n, err := checkInferred(i, o.dtype, o.rank, dims[i*maxRank:(i+1)*maxRank], e.outTypes[i], bound, limit)
		if err != nil {
			return nil, err
		}
		limit -= n
		out[i] = shape
	}
	return out, nil
}

var _ hal.AsyncExecutable = (*executable)(nil)
