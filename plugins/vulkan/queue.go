package vulkan

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/hal/devkit"
)

// device is one usable physical device of the backend: its logical
// device, and the two goroutines that own its queue. The submitter takes
// jobs in the order they were enqueued, waits for fences of other
// backends, and submits; since every command buffer begins with a full
// memory barrier, work submitted earlier on the queue is ordered before
// it, so a fence of this device needs no host wait. The reaper waits for
// each submission's VkFence in turn and signals the job's fence.
type device struct {
	index int
	g     *gpu
	desc  hal.DeviceDesc
	// held are the jobs submitted to the queue whose work may still run
	// when the device was stopped (the one the reaper was waiting for, the
	// one the submitter had just submitted): stop finishes them once the
	// device is idle, so that their done callbacks (which may free an
	// executable's buffers) never run while the GPU still uses them
	heldMu sync.Mutex
	held   []*job

	jobs        chan *job
	reap        chan *job
	halt        chan struct{} // closed by close
	lost        atomic.Bool
	submits     atomic.Int64
	loseAfter   int64 // fault injection (Options.LoseDeviceAfter)
	workers     sync.WaitGroup
	closeOnce   sync.Once
	destroyOnce sync.Once

	fenceMu sync.Mutex
	vkFence []uintptr // idle VkFences

	traffic struct {
		sync.Mutex
		uploads, downloads, upBytes, downBytes, enqueues, executes int64
	}
}

// job is one submission.
type job struct {
	after  []hal.Fence     // fences of other backends to wait for first
	cb     uintptr         // command buffer
	done   func(err error) // on the reaper once the work completed (or failed)
	f      *fence
	prof   *hal.CallProfile // set by done on success when profiled
	vkf    uintptr
	err    error
	wallNS int64
}

// fence is the hal.Fence of a job: a signal-once fence (hal/devkit) that
// knows its device, so a job waits for its own device's fences in queue
// order only.
type fence struct {
	*devkit.Fence
	d *device
}

func newFence(d *device) *fence { return &fence{Fence: devkit.NewFence(), d: d} }

func newDevice(index int, g *gpu, desc hal.DeviceDesc, loseAfter int64) *device {
	d := &device{index: index, g: g, desc: desc, jobs: make(chan *job, 256), reap: make(chan *job, 256), halt: make(chan struct{}), loseAfter: loseAfter}
	d.workers.Add(2)
	go d.submitter()
	go d.reaper()
	return d
}

// cpuDevice reports a CPU implementation (lavapipe), whose deviceType
// says so: shaders are chosen for it where that matters.
func (d *device) cpuDevice() bool { return d.g.phys.props.DeviceType == vkPhysicalDeviceTypeCPU }

// errLost is the error of every call after the device was lost.
func (d *device) errLost() error {
	return hal.Errorf(hal.CodeUnavailable, "vulkan: device %d (%s) lost (VK_ERROR_DEVICE_LOST)", d.index, d.desc.Name)
}

func (d *device) usable() error {
	select {
	case <-d.halt:
		return hal.Errorf(hal.CodeFailedPrecondition, "vulkan: device closed")
	default:
	}
	if d.lost.Load() {
		return d.errLost()
	}
	return nil
}

// submit queues j; it never waits for device work.
func (d *device) submit(j *job) (*fence, error) {
	if err := d.usable(); err != nil {
		return nil, err
	}
	j.f = newFence(d)
	select {
	case d.jobs <- j:
		return j.f, nil
	case <-d.halt:
		return nil, hal.Errorf(hal.CodeFailedPrecondition, "vulkan: device closed")
	}
}

func (d *device) submitter() {
	defer d.workers.Done()
	for {
		var j *job
		select {
		case j = <-d.jobs:
		case <-d.halt:
			return
		}
		j.err = d.waitForeign(j.after)
		if j.err == nil && d.lost.Load() {
			j.err = d.errLost()
		}
		if j.err == nil {
			j.err = d.queueSubmit(j)
		}
		select {
		case d.reap <- j:
		case <-d.halt:
			if j.err == nil {
				// submitted: its work may be running; finished by stop
				// after vkDeviceWaitIdle (finishing it here freed buffers
				// lavapipe was still reading: a segfault on its thread in
				// about 1 of 6 runs of the devmem contract cases)
				d.hold(j)
			} else {
				d.finish(j, j.err)
			}
			return
		}
	}
}

func (d *device) waitForeign(after []hal.Fence) error {
	for _, f := range after {
		if own, ok := f.(*fence); ok && own.d == d {
			continue // ordered by the queue
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-d.halt:
				cancel()
			case <-ctx.Done():
			}
		}()
		err := f.Wait(ctx)
		cancel()
		if err != nil {
			return fmt.Errorf("vulkan: a fence this call waits for failed: %w", err)
		}
	}
	return nil
}

func (d *device) queueSubmit(j *job) error {
	g := d.g
	n := d.submits.Add(1)
	if d.loseAfter > 0 && n > d.loseAfter {
		d.lost.Store(true)
		return d.errLost()
	}
	j.vkf = d.takeFence()
	if j.vkf == 0 {
		return hal.Errorf(hal.CodeResourceExhausted, "vulkan: vkCreateFence failed")
	}
	var ps pins
	cb := j.cb
	si := &vkSubmitInfo{SType: vkStructSubmitInfo, CommandBufferCount: 1, PCommandBuffers: pin(&ps, &cb)}
	j.wallNS = time.Now().UnixNano()
	r := g.l.queueSubmit(g.queue, 1, unsafe.Pointer(si), j.vkf)
	ps.done()
	if r != vkSuccess {
		d.giveFence(j.vkf, true)
		j.vkf = 0
		return d.vkErr("vkQueueSubmit", r)
	}
	return nil
}

// vkErr turns a failed call into a HAL error: device loss is Unavailable.
func (d *device) vkErr(call string, r int32) error {
	if r == vkErrorDeviceLost {
		d.lost.Store(true)
		return d.errLost()
	}
	if r == vkErrorOutOfDeviceMemory || r == vkErrorOutOfHostMemory {
		return hal.Errorf(hal.CodeResourceExhausted, "%v", check(call, r))
	}
	return hal.Errorf(hal.CodeInternal, "%v", check(call, r))
}

func (d *device) reaper() {
	defer d.workers.Done()
	for {
		var j *job
		select {
		case j = <-d.reap:
		case <-d.halt:
			return
		}
		err := j.err
		if err == nil {
			err = d.waitVk(j.vkf)
		}
		if err == errHalted {
			d.hold(j) // finished by stop, after vkDeviceWaitIdle
			return
		}
		d.finish(j, err)
	}
}

// hold keeps a submitted job for stop to finish once the device is idle.
func (d *device) hold(j *job) {
	d.heldMu.Lock()
	d.held = append(d.held, j)
	d.heldMu.Unlock()
}

// errHalted: the device was stopped while a job's work was pending.
var errHalted = hal.Errorf(hal.CodeUnavailable, "vulkan: device closed with the work pending")

// waitVk waits for a VkFence in slices, so close is not blocked forever.
func (d *device) waitVk(f uintptr) error {
	g := d.g
	for {
		ff := f
		r := g.l.waitForFences(g.handle, 1, &ff, 1, uint64(50*time.Millisecond))
		switch r {
		case vkSuccess:
			d.giveFence(f, false)
			return nil
		case vkTimeout:
			select {
			case <-d.halt:
				return errHalted
			default:
				continue
			}
		default:
			return d.vkErr("vkWaitForFences", r)
		}
	}
}

func (d *device) finish(j *job, err error) {
	if j.done != nil {
		j.done(err)
	}
	j.f.Signal(err, j.prof)
}

func (d *device) takeFence() uintptr {
	d.fenceMu.Lock()
	if n := len(d.vkFence); n > 0 {
		f := d.vkFence[n-1]
		d.vkFence = d.vkFence[:n-1]
		d.fenceMu.Unlock()
		return f
	}
	d.fenceMu.Unlock()
	fci := &vkFenceCreateInfo{SType: vkStructFenceCreate}
	var f uintptr
	if d.g.l.createFence(d.g.handle, unsafe.Pointer(fci), 0, &f) != vkSuccess {
		return 0
	}
	return f
}

func (d *device) giveFence(f uintptr, unsignalled bool) {
	if !unsignalled {
		ff := f
		if d.g.l.resetFences(d.g.handle, 1, &ff) != vkSuccess {
			d.g.l.destroyFence(d.g.handle, f, 0)
			return
		}
	}
	d.fenceMu.Lock()
	d.vkFence = append(d.vkFence, f)
	d.fenceMu.Unlock()
}

// close stops the workers (pending fences fail Unavailable) and destroys
// the device once it is idle.
func (d *device) close() {
	d.stop()
	d.destroyOnce.Do(func() {
		for _, f := range d.vkFence {
			d.g.l.destroyFence(d.g.handle, f, 0)
		}
		d.g.close()
	})
}

// stop stops the workers and fails what is pending; the device and what
// was made on it stay valid (to be freed) until close.
func (d *device) stop() {
	d.closeOnce.Do(func() {
		close(d.halt)
		d.workers.Wait()
		// the device finishes what was submitted before any job's
		// resources are released below
		d.g.l.deviceWaitIdle(d.g.handle)
		d.heldMu.Lock()
		held := d.held
		d.held = nil
		d.heldMu.Unlock()
		for _, j := range held {
			d.finish(j, errHalted)
		}
		for {
			select {
			case j := <-d.jobs:
				d.finish(j, hal.Errorf(hal.CodeUnavailable, "vulkan: device closed with the work pending"))
				continue
			case j := <-d.reap:
				d.finish(j, hal.Errorf(hal.CodeUnavailable, "vulkan: device closed with the work pending"))
				continue
			default:
			}
			break
		}
	})
}

// The one-off command buffers of uploads and downloads.

func (g *gpu) newCmd() (uintptr, error) {
	g.recMu.Lock()
	defer g.recMu.Unlock()
	ai := &vkCommandBufferAllocateInfo{SType: vkStructCmdBufAllocate, CommandPool: g.cmdPool, Level: vkCmdBufLevelPrimary, CommandBufferCount: 1}
	var cb uintptr
	if err := check("vkAllocateCommandBuffers", g.l.allocateCmdBufs(g.handle, unsafe.Pointer(ai), &cb)); err != nil {
		return 0, err
	}
	bi := &vkCommandBufferBeginInfo{SType: vkStructCmdBufBegin}
	if err := check("vkBeginCommandBuffer", g.l.beginCmdBuf(cb, unsafe.Pointer(bi))); err != nil {
		g.l.freeCmdBufs(g.handle, g.cmdPool, 1, &cb)
		return 0, err
	}
	return cb, nil
}

func (g *gpu) freeCmd(cb uintptr) {
	g.recMu.Lock()
	g.l.freeCmdBufs(g.handle, g.cmdPool, 1, &cb)
	g.recMu.Unlock()
}

// barrier orders all earlier commands' memory accesses before later ones.
func (g *gpu) barrier(cb uintptr) {
	mb := &vkMemoryBarrier{SType: vkStructMemoryBarrier,
		SrcAccessMask: vkAccessShaderWrite | vkAccessTransferWrite | vkAccessHostWrite | vkAccessShaderRead | vkAccessTransferRead,
		DstAccessMask: vkAccessShaderRead | vkAccessShaderWrite | vkAccessTransferRead | vkAccessTransferWrite | vkAccessHostRead}
	g.l.cmdPipelineBarrier(cb, vkStageCompute|vkStageTransfer|vkStageHost|vkStageTopOfPipe, vkStageCompute|vkStageTransfer|vkStageHost, 0, 1, unsafe.Pointer(mb), 0, 0, 0, 0)
}

func (g *gpu) copyBuf(cb uintptr, src, dst uintptr, srcOff, dstOff, size uint64) {
	r := &vkBufferCopy{SrcOffset: srcOff, DstOffset: dstOff, Size: size}
	g.l.cmdCopyBuffer(cb, src, dst, 1, unsafe.Pointer(r))
}

// dbuf is a buffer of the backend (hal.Buffer): device memory, reached
// only by Upload and Download (never Mappable). It is released when freed
// and no pending work uses it.
type dbuf struct {
	d     *device
	dt    graph.DType
	shape []int
	vb    *vbuf
	bytes uint64

	mu    sync.Mutex
	refs  int // 1 for the owner until Free, +1 per pending use
	freed bool
}

func (b *dbuf) DType() graph.DType     { return b.dt }
func (b *dbuf) Shape() []int           { return b.shape }
func (b *dbuf) Memory() hal.MemoryKind { return hal.MemoryDeviceLocal }
func (b *dbuf) Device() int            { return b.d.index }

func (b *dbuf) acquire() { b.mu.Lock(); b.refs++; b.mu.Unlock() }

func (b *dbuf) release() {
	b.mu.Lock()
	b.refs--
	last := b.refs == 0
	b.mu.Unlock()
	if last {
		b.d.g.free(b.vb)
	}
}

func (d *device) newBuf(dt graph.DType, shape []int) (*dbuf, error) {
	n, err := graph.CheckAlloc(dt, shape)
	if err != nil {
		return nil, hal.Errorf(hal.CodeResourceExhausted, "%v", err)
	}
	size := uint64(n * dt.Size())
	if size > d.g.maxRange {
		return nil, hal.Errorf(hal.CodeResourceExhausted, "vulkan: %d bytes is over the device's storage buffer range (%d)", size, d.g.maxRange)
	}
	vb, err := d.g.alloc(size, false)
	if err != nil {
		return nil, hal.Errorf(hal.CodeResourceExhausted, "%v", err)
	}
	return &dbuf{d: d, dt: dt, shape: append([]int{}, shape...), vb: vb, bytes: size, refs: 1}, nil
}

// tensorBytes is a tensor's data as bytes (fixed-size dtypes only).
func tensorBytes(t *graph.Tensor) ([]byte, error) {
	b, ok := graph.RawBytes(t)
	if !ok {
		return nil, hal.Errorf(hal.CodeUnsupported, "vulkan: %v tensors cannot be copied to the device", t.DType)
	}
	return b, nil
}

// upload copies src into dst after the fences.
func (d *device) upload(dst *dbuf, src *graph.Tensor, after []hal.Fence) (hal.Fence, error) {
	data, err := tensorBytes(src)
	if err != nil {
		return nil, err
	}
	if err := d.usable(); err != nil {
		return nil, err
	}
	stg, err := d.g.alloc(uint64(len(data)), true)
	if err != nil {
		return nil, hal.Errorf(hal.CodeResourceExhausted, "%v", err)
	}
	copy(stg.bytes(), data)
	cb, err := d.g.newCmd()
	if err != nil {
		d.g.free(stg)
		return nil, hal.Errorf(hal.CodeInternal, "%v", err)
	}
	d.g.barrier(cb)
	if len(data) > 0 {
		d.g.copyBuf(cb, stg.buf, dst.vb.buf, 0, 0, uint64(len(data)))
	}
	d.g.barrier(cb)
	d.g.l.endCmdBuf(cb)
	dst.acquire()
	d.count(func() { d.traffic.uploads++; d.traffic.upBytes += int64(len(data)) })
	f, err := d.submit(&job{after: after, cb: cb, done: func(error) { d.g.free(stg); d.g.freeCmd(cb); dst.release() }})
	if err != nil {
		d.g.free(stg)
		d.g.freeCmd(cb)
		dst.release()
		return nil, err
	}
	return f, nil
}

// download copies src into dst after the fences; dst is complete when the
// fence signals.
func (d *device) download(dst *graph.Tensor, src *dbuf, after []hal.Fence) (hal.Fence, error) {
	data, err := tensorBytes(dst)
	if err != nil {
		return nil, err
	}
	if err := d.usable(); err != nil {
		return nil, err
	}
	stg, err := d.g.alloc(uint64(len(data)), true)
	if err != nil {
		return nil, hal.Errorf(hal.CodeResourceExhausted, "%v", err)
	}
	cb, err := d.g.newCmd()
	if err != nil {
		d.g.free(stg)
		return nil, hal.Errorf(hal.CodeInternal, "%v", err)
	}
	d.g.barrier(cb)
	if len(data) > 0 {
		d.g.copyBuf(cb, src.vb.buf, stg.buf, 0, 0, uint64(len(data)))
	}
	d.g.barrier(cb)
	d.g.l.endCmdBuf(cb)
	src.acquire()
	d.count(func() { d.traffic.downloads++; d.traffic.downBytes += int64(len(data)) })
	f, err := d.submit(&job{after: after, cb: cb, done: func(err error) {
		if err == nil {
			copy(data, stg.bytes())
		}
		d.g.free(stg)
		d.g.freeCmd(cb)
		src.release()
	}})
	if err != nil {
		d.g.free(stg)
		d.g.freeCmd(cb)
		src.release()
		return nil, err
	}
	return f, nil
}

func (d *device) count(f func()) { d.traffic.Lock(); f(); d.traffic.Unlock() }
