package grpcplugin

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/hal/devkit"
	"github.com/switchyard-hal/switchyard/hal/wire"
	halv1 "github.com/switchyard-hal/switchyard/hal/wire/switchyard/hal/v1"
)

// HAL 1.1 over the wire. A plugin that lists wire.FeatureDeviceMemory and
// speaks HAL 1.1 keeps its buffers and fences in its own process; the
// host holds opaque ids (remoteBuffer, remoteFence) scoped to that
// process, never its memory. Uploads and downloads move bytes through a
// call region of the pool; the plugin copies an upload's bytes before it
// answers, and a download's bytes are in the region when its fence has
// signalled. A plugin without the feature (every HAL 1.0 plugin) is never
// sent these RPCs: HAL() does not offer hal.DeviceMemory for it, Compile
// returns executables without Enqueue, and a 1.1 call reaching it anyway
// is Unsupported.
//
// Failure modes: an id from another backend, a freed buffer or a dead
// process's buffer is refused before anything is sent (InvalidArgument,
// or Unavailable naming the dead process); a fence outstanding when the
// process dies fails with Unavailable; a fence wait ends when the
// caller's context does (the work goes on in the plugin).

// Transfers counts the bytes HAL 1.1 calls moved between the host and
// the plugin process (uploads into and downloads out of its buffers).
type Transfers struct {
	Uploads, UploadBytes     int64
	Downloads, DownloadBytes int64
}

type transferCounters struct {
	uploads, uploadBytes, downloads, downloadBytes atomic.Int64
}

// Transfers returns what HAL 1.1 uploads and downloads have moved so far.
func (b *Backend) Transfers() Transfers {
	return Transfers{Uploads: b.xfer.uploads.Load(), UploadBytes: b.xfer.uploadBytes.Load(),
		Downloads: b.xfer.downloads.Load(), DownloadBytes: b.xfer.downloadBytes.Load()}
}

// HAL is what to register or wrap in a hal.Device: b itself, or, when the
// plugin serves HAL 1.1 device memory, b with hal.DeviceMemory (whose
// executables then implement hal.AsyncExecutable). Factory returns it.
func (b *Backend) HAL() hal.Backend {
	b.mu.Lock()
	p := b.cur
	b.mu.Unlock()
	if p != nil && p.devmem {
		return &DeviceMemoryBackend{b}
	}
	return b
}

// DeviceMemoryBackend is a plugin backend whose process serves HAL 1.1
// device memory (see Backend.HAL).
type DeviceMemoryBackend struct{ *Backend }

var (
	_ hal.DeviceMemory    = (*DeviceMemoryBackend)(nil)
	_ hal.AsyncExecutable = (*asyncExecutable)(nil)
)

// remoteBuffer is the host's handle on a plugin buffer.
type remoteBuffer struct {
	b  *Backend
	p  *process
	id uint64
	devkit.BufferInfo
	freed atomic.Bool
}

// devProcess returns the live process if it serves device memory.
func (b *Backend) devProcess(ctx context.Context, op string) (*process, error) {
	p, err := b.process(ctx, op)
	if err != nil {
		return nil, err
	}
	if !p.devmem {
		return nil, &hal.Error{Code: hal.CodeUnsupported, Backend: b.name, Op: op, Msg: fmt.Sprintf("plugin process %d (HAL %s) does not serve device memory (HAL 1.1)", p.pid, p.info.HAL)}
	}
	return p, nil
}

// own checks that hb is a live buffer of this backend in process p.
func (b *Backend) own(hb hal.Buffer, p *process, what string) (*remoteBuffer, error) {
	rb, ok := hb.(*remoteBuffer)
	if !ok || rb == nil || rb.b != b {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "%s is not a buffer of plugin %s (%T)", what, b.name, hb)
	}
	if rb.freed.Load() {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "%s (buffer %d) was freed", what, rb.id)
	}
	if rb.p != p {
		return nil, &hal.Error{Code: hal.CodeUnavailable, Backend: b.name, Msg: fmt.Sprintf("%s (buffer %d) lived in plugin process %d, which is gone", what, rb.id, rb.p.pid)}
	}
	return rb, nil
}

// after turns fences into ids of p. A fence already seen to succeed is
// left out; one seen to fail fails the call; a fence of another process
// that has not signalled is Unavailable; a foreign fence (another
// backend's) is waited for here, with ctx.
func (b *Backend) after(ctx context.Context, p *process, fs []hal.Fence) ([]uint64, error) {
	var ids []uint64
	for _, f := range fs {
		f = hal.FenceOf(f)
		if f == nil {
			continue
		}
		rf, ok := f.(*remoteFence)
		if !ok || rf.b != b {
			if err := f.Wait(ctx); err != nil {
				return nil, err
			}
			continue
		}
		if done, err := rf.Poll(); done {
			if err != nil {
				return nil, err
			}
			continue
		}
		if rf.p != p {
			return nil, &hal.Error{Code: hal.CodeUnavailable, Backend: b.name, Msg: fmt.Sprintf("fence %d belonged to plugin process %d, which is gone", rf.id, rf.p.pid)}
		}
		ids = append(ids, rf.id)
	}
	if len(ids) > wire.MaxFenceList {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "%d fences to wait for, more than %d", len(ids), wire.MaxFenceList)
	}
	return ids, nil
}

// released takes the fence ids queued for release in p.
func (p *process) released() []uint64 {
	p.relMu.Lock()
	defer p.relMu.Unlock()
	n := min(len(p.release), wire.MaxFenceList)
	out := append([]uint64{}, p.release[:n]...)
	p.release = p.release[n:]
	return out
}

func (p *process) queueRelease(id uint64) {
	p.relMu.Lock()
	p.release = append(p.release, id)
	p.relMu.Unlock()
}

// remoteFence is the host's handle on a plugin fence. A waiter goroutine
// (started by the first Wait or Poll, or at once for downloads) holds a
// WaitFence call open until the plugin's fence signals, the process dies
// or the backend closes.
type remoteFence struct {
	b    *Backend
	p    *process
	id   uint64
	once sync.Once
	sig  *devkit.Fence // the outcome, once known (Wait, Poll, Profile)
	// then runs once the fence has signalled (its error, nil on success)
	// and returns the fence's result: a download copies out here
	then func(error) error
	// finished guards the completion: the waiter and Poll may both learn
	// that the fence signalled
	finished sync.Once
}

// complete records the fence's outcome once, runs then, and signals done.
func (f *remoteFence) complete(err error, prof *hal.CallProfile) {
	f.finished.Do(func() {
		if f.then != nil {
			err = f.then(err)
		}
		f.sig.Signal(err, prof)
	})
}

func (b *Backend) newFence(p *process, id uint64, then func(error) error) *remoteFence {
	f := &remoteFence{b: b, p: p, id: id, sig: devkit.NewFence(), then: then}
	// once no one can name the fence again, the plugin may forget it
	runtime.AddCleanup(f, func(id uint64) { p.queueRelease(id) }, id)
	return f
}

func (f *remoteFence) start() {
	f.once.Do(func() {
		f.b.wg.Add(1)
		go f.wait()
	})
}

func (f *remoteFence) wait() {
	defer f.b.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-f.p.dead:
		case <-f.p.fds.Done():
		case <-f.b.stopping:
		case <-ctx.Done():
		}
		cancel()
	}()
	var err error
	var prof *hal.CallProfile
	backoff := time.Millisecond
	for {
		if !f.p.alive() {
			err = f.gone()
			break
		}
		var r *halv1.WaitFenceResponse
		r, err = f.p.rpc.WaitFence(ctx, &halv1.WaitFenceRequest{Fence: f.id, Wait: true, ReleaseFences: f.p.released()})
		if err != nil {
			if !f.p.alive() || ctx.Err() != nil {
				err = f.gone()
			} else {
				err = f.b.callErr(ctx, f.p, "fence", err)
			}
			break
		}
		if err = wire.ErrorOf(r.Status); err != nil {
			break
		}
		if !r.Done {
			// the plugin ended the wait without the fence signalling: ask
			// again, backing off so a plugin that answers at once cannot
			// make the host spin
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
			}
			backoff = min(2*backoff, 50*time.Millisecond)
			continue
		}
		err = wire.ErrorOf(r.Result)
		if err == nil {
			prof, err = wire.ProfileFrom(r.Profile)
		}
		break
	}
	f.complete(err, prof)
}

func (f *remoteFence) gone() error {
	select {
	case <-f.b.stopping:
		return &hal.Error{Code: hal.CodeUnavailable, Backend: f.b.name, Op: "fence", Msg: "the plugin backend was closed with the fence outstanding"}
	default:
	}
	return &hal.Error{Code: hal.CodeUnavailable, Backend: f.b.name, Op: "fence", Msg: fmt.Sprintf("plugin process %d died with fence %d outstanding", f.p.pid, f.id)}
}

// Wait blocks until the fence signals or ctx ends (then ctx's error at
// once; the work goes on).
func (f *remoteFence) Wait(ctx context.Context) error {
	f.start()
	return f.sig.Wait(ctx)
}

// Poll reports whether the fence has signalled, without waiting for it:
// when the waiter has not heard yet, it asks the plugin once (a query
// that does not wait), so a fence that signalled on the device is seen
// as signalled — in particular every fence a signalled fence waited for
// (the waiters' answers may arrive in any order).
func (f *remoteFence) Poll() (bool, error) {
	f.start()
	if done, err := f.sig.Poll(); done {
		return true, err
	}
	if !f.p.alive() {
		return false, nil // the waiter reports the death
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := f.p.rpc.WaitFence(ctx, &halv1.WaitFenceRequest{Fence: f.id, Wait: false})
	if err != nil || wire.ErrorOf(r.Status) != nil || !r.Done {
		return false, nil // not signalled, or the waiter will report why
	}
	ferr := wire.ErrorOf(r.Result)
	var prof *hal.CallProfile
	if ferr == nil {
		prof, ferr = wire.ProfileFrom(r.Profile)
	}
	f.complete(ferr, prof) // signalled when it returns, by this call or the waiter's
	return f.sig.Poll()
}

// Profile is the plugin's profile of an enqueued call (hal/devkit's
// Profile: Unsupported when the plugin sent none).
func (f *remoteFence) Profile() (*hal.CallProfile, error) { return f.sig.Profile() }

// Allocate asks the plugin for a buffer.
func (d *DeviceMemoryBackend) Allocate(ctx context.Context, req hal.BufferRequest) (hal.Buffer, error) {
	b := d.Backend
	if _, _, _, err := wire.BufferType(int32(req.DType), wire.Dims(req.Shape)); err != nil {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "%v", err)
	}
	if req.Device < 0 || req.Device >= wire.MaxDevices {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "device %d does not exist", req.Device)
	}
	ctx, cancel := b.callCtx(ctx)
	defer cancel()
	p, err := b.devProcess(ctx, "allocate")
	if err != nil {
		return nil, err
	}
	r, err := p.rpc.Allocate(ctx, &halv1.AllocateRequest{Dtype: int32(req.DType), Shape: wire.Dims(req.Shape), Memory: int32(req.Memory), Device: int32(req.Device)})
	if err != nil {
		return nil, b.callErr(ctx, p, "allocate", err)
	}
	if err := wire.ErrorOf(r.Status); err != nil {
		return nil, err
	}
	dt, shape, mk, err := wire.CheckBufferDesc(r.Buffer)
	if err != nil {
		return nil, hal.Errorf(hal.CodeInternal, "the plugin described its buffer badly: %v", err)
	}
	return &remoteBuffer{b: b, p: p, id: r.Buffer.Id, BufferInfo: devkit.NewBufferInfo(dt, shape, mk, int(r.Buffer.Device))}, nil
}

// Free gives a buffer back. A buffer of a process that is gone went with
// it (nil).
func (d *DeviceMemoryBackend) Free(hb hal.Buffer) error {
	b := d.Backend
	rb, ok := hb.(*remoteBuffer)
	if !ok || rb == nil || rb.b != b {
		return hal.Errorf(hal.CodeInvalidArgument, "not a buffer of plugin %s (%T)", b.name, hb)
	}
	if rb.freed.Swap(true) {
		return hal.Errorf(hal.CodeInvalidArgument, "buffer %d was freed twice", rb.id)
	}
	if !rb.p.alive() {
		return nil
	}
	ctx, cancel := b.callCtx(context.Background())
	defer cancel()
	r, err := rb.p.rpc.Free(ctx, &halv1.FreeRequest{Buffer: rb.id})
	if err != nil {
		if !rb.p.alive() {
			return nil
		}
		return b.callErr(ctx, rb.p, "free", err)
	}
	return wire.ErrorOf(r.Status)
}

// Upload copies src through a call region into the plugin's buffer.
func (d *DeviceMemoryBackend) Upload(ctx context.Context, dst hal.Buffer, src *graph.Tensor, after []hal.Fence) (hal.Fence, error) {
	b := d.Backend
	ctx, cancel := b.callCtx(ctx)
	defer cancel()
	p, err := b.devProcess(ctx, "upload")
	if err != nil {
		return nil, err
	}
	rb, err := b.own(dst, p, "upload destination")
	if err != nil {
		return nil, err
	}
	if src == nil || src.DType != rb.DType() || !graph.SameShape(src.Shape, rb.Shape()) {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "upload of %v into a buffer of %v%v", src, rb.DType(), rb.Shape())
	}
	ids, err := b.after(ctx, p, after)
	if err != nil {
		return nil, err
	}
	n := wire.ByteSize(src)
	hr, err := b.pool.get(ctx, p, max(n, 1))
	if err != nil {
		return nil, err
	}
	if n, err = wire.WriteTensor(hr.r.Mem, src); err != nil {
		b.pool.put(ctx, hr, true)
		return nil, hal.Errorf(hal.CodeInvalidArgument, "upload: %v", err)
	}
	r, err := p.rpc.Upload(ctx, &halv1.UploadRequest{Buffer: rb.id, After: ids, ReleaseFences: p.released(),
		Src: &halv1.TensorDesc{Dtype: int32(src.DType), Shape: wire.Dims(src.Shape), Data: &halv1.RegionSlice{Region: hr.r.ID, Length: uint64(n)}}})
	b.pool.put(ctx, hr, err == nil) // the plugin has its copy once it answered
	if err != nil {
		return nil, b.callErr(ctx, p, "upload", err)
	}
	if err := wire.ErrorOf(r.Status); err != nil {
		return nil, err
	}
	b.xfer.uploads.Add(1)
	b.xfer.uploadBytes.Add(int64(n))
	return b.newFence(p, r.Fence, nil), nil
}

// Download copies the plugin's buffer into dst through a call region;
// dst is complete when the returned fence has signalled.
func (d *DeviceMemoryBackend) Download(ctx context.Context, dst *graph.Tensor, src hal.Buffer, after []hal.Fence) (hal.Fence, error) {
	b := d.Backend
	ctx, cancel := b.callCtx(ctx)
	defer cancel()
	p, err := b.devProcess(ctx, "download")
	if err != nil {
		return nil, err
	}
	rb, err := b.own(src, p, "download source")
	if err != nil {
		return nil, err
	}
	if dst == nil || dst.Data == nil || dst.DType != rb.DType() || !graph.SameShape(dst.Shape, rb.Shape()) {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "download of a buffer of %v%v into %v", rb.DType(), rb.Shape(), dst)
	}
	ids, err := b.after(ctx, p, after)
	if err != nil {
		return nil, err
	}
	n := wire.StaticByteSize(rb.DType(), rb.Shape())
	hr, err := b.pool.get(ctx, p, max(n, 1))
	if err != nil {
		return nil, err
	}
	r, err := p.rpc.Download(ctx, &halv1.DownloadRequest{Buffer: rb.id, After: ids, ReleaseFences: p.released(),
		Dst: &halv1.RegionSlice{Region: hr.r.ID, Length: uint64(n)}})
	if err != nil {
		b.pool.put(ctx, hr, false)
		return nil, b.callErr(ctx, p, "download", err)
	}
	if err := wire.ErrorOf(r.Status); err != nil {
		b.pool.put(ctx, hr, true)
		return nil, err
	}
	f := b.newFence(p, r.Fence, func(err error) error {
		if err != nil {
			b.pool.put(context.Background(), hr, false) // the plugin may still write it
			return err
		}
		err = copyOut(dst, hr.r.Mem[:n])
		b.pool.put(context.Background(), hr, true)
		if err == nil {
			b.xfer.downloads.Add(1)
			b.xfer.downloadBytes.Add(int64(n))
		}
		return err
	})
	f.start() // the region goes back to the pool when the fence signals
	return f, nil
}

// copyOut copies a tensor's little-endian bytes into dst.
func copyOut(dst *graph.Tensor, b []byte) error {
	if raw, ok := wire.RawBytes(dst); ok && dst.DType != graph.Bool {
		if len(raw) != len(b) {
			return hal.Errorf(hal.CodeInternal, "download holds %d bytes, %v%v needs %d", len(b), dst.DType, dst.Shape, len(raw))
		}
		copy(raw, b)
		return nil
	}
	t, err := wire.ViewTensor(int32(dst.DType), wire.Dims(dst.Shape), b, true)
	if err != nil {
		return hal.Errorf(hal.CodeInternal, "%v", err)
	}
	graph.CopyData(dst.Data, t.Data)
	return nil
}

// asyncExecutable is an executable of a plugin that serves device memory.
type asyncExecutable struct{ *executable }

// Enqueue schedules the executable in the plugin on its buffers.
func (a *asyncExecutable) Enqueue(ctx context.Context, inputs, outputs []hal.Buffer, after []hal.Fence, opts hal.EnqueueOptions) (hal.Fence, error) {
	e := a.executable
	b := e.b
	ctx, cancel := b.callCtx(ctx)
	defer cancel()
	p, id, err := e.remote(ctx)
	if err != nil {
		return nil, err
	}
	if !p.devmem {
		return nil, &hal.Error{Code: hal.CodeUnsupported, Backend: b.name, Op: "enqueue", Msg: fmt.Sprintf("plugin process %d does not serve device memory (HAL 1.1)", p.pid)}
	}
	if len(outputs) != len(e.outputs) {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "got %d outputs, subgraph has %d", len(outputs), len(e.outputs))
	}
	req := &halv1.EnqueueRequest{Executable: id, Profile: opts.Profile, Inputs: make([]uint64, len(inputs)), Outputs: make([]uint64, len(outputs))}
	for i, in := range inputs {
		rb, err := b.own(in, p, fmt.Sprintf("input %d", i))
		if err != nil {
			return nil, err
		}
		req.Inputs[i] = rb.id
	}
	for i, o := range outputs {
		if o == nil {
			continue
		}
		rb, err := b.own(o, p, fmt.Sprintf("output %d", i))
		if err != nil {
			return nil, err
		}
		req.Outputs[i] = rb.id
	}
	if req.After, err = b.after(ctx, p, after); err != nil {
		return nil, err
	}
	req.ReleaseFences = p.released()
	r, err := p.rpc.Enqueue(ctx, req)
	if err != nil {
		return nil, b.callErr(ctx, p, "enqueue", err)
	}
	if err := wire.ErrorOf(r.Status); err != nil {
		return nil, err
	}
	if len(r.Outputs) != len(outputs) {
		return nil, hal.Errorf(hal.CodeInternal, "the plugin described %d outputs for %d", len(r.Outputs), len(outputs))
	}
	made := make([]hal.Buffer, len(outputs))
	for i, w := range r.Outputs {
		dt, shape, mk, err := wire.CheckBufferDesc(w)
		if err != nil {
			return nil, hal.Errorf(hal.CodeInternal, "output %d: the plugin described its buffer badly: %v", i, err)
		}
		if req.Outputs[i] != 0 {
			if w.Id != req.Outputs[i] {
				return nil, hal.Errorf(hal.CodeInternal, "output %d: the plugin wrote buffer %d, not the caller's %d", i, w.Id, req.Outputs[i])
			}
			continue
		}
		made[i] = &remoteBuffer{b: b, p: p, id: w.Id, BufferInfo: devkit.NewBufferInfo(dt, shape, mk, int(w.Device))}
	}
	for i, m := range made {
		if m != nil {
			outputs[i] = m
		}
	}
	return b.newFence(p, r.Fence, nil), nil
}
