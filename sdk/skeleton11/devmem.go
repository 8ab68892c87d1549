package skeleton11

import (
	"context"
	"fmt"
	"sync"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/hal/devkit"
)

// buffer is the handle the host holds. Its memory lives in the device's
// store (here a Go tensor; for you, a driver allocation).
type buffer struct {
	b     *Backend
	dtype graph.DType
	shape []int
	kind  hal.MemoryKind
	bytes int64

	// guarded by b.mu
	mem   *graph.Tensor
	uses  int  // queued or running operations using it
	freed bool // Free was called; memory released once uses is 0
}

func (h *buffer) DType() graph.DType     { return h.dtype }
func (h *buffer) Shape() []int           { return h.shape }
func (h *buffer) Memory() hal.MemoryKind { return h.kind }
func (h *buffer) Device() int            { return 0 }

// hostBuffer is a buffer in host memory: the host may map it.
type hostBuffer struct{ *buffer }

// HostView aliases the buffer's memory (valid until Free).
func (h hostBuffer) HostView() (*graph.Tensor, error) {
	h.b.mu.Lock()
	defer h.b.mu.Unlock()
	if h.freed || h.mem == nil {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "the buffer was freed")
	}
	return h.mem, nil
}

var _ hal.Mappable = hostBuffer{}

// Allocate makes a buffer of a declared kind on device 0.
func (b *Backend) Allocate(ctx context.Context, req hal.BufferRequest) (hal.Buffer, error) {
	if req.Memory != hal.MemoryHost && req.Memory != hal.MemoryDeviceLocal {
		return nil, hal.Errorf(hal.CodeUnsupported, "the device has host and device-local memory, not %v", req.Memory)
	}
	if req.Device != 0 {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "device %d does not exist (the skeleton has one)", req.Device)
	}
	n, err := graph.CheckAlloc(req.DType, req.Shape)
	if err != nil || req.DType == graph.String {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "cannot allocate %v%v: %v", req.DType, req.Shape, err)
	}
	size := int64(n) * int64(req.DType.Size())
	if size > maxBufferBytes {
		return nil, hal.Errorf(hal.CodeResourceExhausted, "%d bytes are over the largest buffer of %d", size, maxBufferBytes)
	}
	if err := b.reserve(size); err != nil {
		return nil, err
	}
	mem, err := graph.New(req.DType, req.Shape)
	if err != nil {
		b.unreserve(size)
		return nil, hal.Errorf(hal.CodeResourceExhausted, "%v", err)
	}
	h := &buffer{b: b, dtype: req.DType, shape: append([]int{}, req.Shape...), kind: req.Memory, bytes: size, mem: mem}
	if req.Memory == hal.MemoryHost {
		return hostBuffer{h}, nil
	}
	return h, nil
}

// handle finds the skeleton's buffer behind a hal.Buffer.
func (b *Backend) handle(hb hal.Buffer) (*buffer, bool) {
	switch h := hb.(type) {
	case *buffer:
		return h, h != nil && h.b == b
	case hostBuffer:
		return h.buffer, h.buffer != nil && h.b == b
	}
	return nil, false
}

// Free gives a buffer back; its memory is released once no queued
// operation uses it. It never blocks.
func (b *Backend) Free(hb hal.Buffer) error {
	h, ok := b.handle(hb)
	if !ok {
		return hal.Errorf(hal.CodeInvalidArgument, "not a buffer of this backend (%T)", hb)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if h.freed {
		return hal.Errorf(hal.CodeInvalidArgument, "buffer freed twice")
	}
	h.freed = true
	if h.uses == 0 {
		b.releaseLocked(h)
	}
	return nil
}

func (b *Backend) releaseLocked(h *buffer) {
	if h.mem != nil {
		h.mem = nil
		b.used -= h.bytes
	}
}

// use takes a hold on live buffers for one operation (nil when one is
// freed or foreign).
func (b *Backend) use(hbs []hal.Buffer) ([]*buffer, error) {
	hs := make([]*buffer, len(hbs))
	for i, hb := range hbs {
		h, ok := b.handle(hb)
		if !ok {
			return nil, hal.Errorf(hal.CodeInvalidArgument, "buffer %d is not a buffer of this backend (%T)", i, hb)
		}
		hs[i] = h
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, hal.Errorf(hal.CodeFailedPrecondition, "%s is closed", Name)
	}
	for i, h := range hs {
		if h.freed || h.mem == nil {
			return nil, hal.Errorf(hal.CodeInvalidArgument, "buffer %d was freed", i)
		}
	}
	for _, h := range hs {
		h.uses++
	}
	return hs, nil
}

func (b *Backend) unuse(hs []*buffer) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, h := range hs {
		h.uses--
		if h.freed && h.uses == 0 {
			b.releaseLocked(h)
		}
	}
}

// Upload copies src into dst on the queue after the fences.
func (b *Backend) Upload(ctx context.Context, dst hal.Buffer, src *graph.Tensor, after []hal.Fence) (hal.Fence, error) {
	hs, err := b.use([]hal.Buffer{dst})
	if err != nil {
		return nil, err
	}
	h := hs[0]
	if src == nil || src.DType != h.dtype || !graph.SameShape(src.Shape, h.shape) {
		b.unuse(hs)
		return nil, hal.Errorf(hal.CodeInvalidArgument, "upload of %v into a buffer of %v%v", src, h.dtype, h.shape)
	}
	return b.q.submit(&work{after: after, uses: hs, run: func(ctx context.Context, _ *hal.CallProfile) error {
		graph.CopyData(h.mem.Data, src.Data)
		return nil
	}}), nil
}

// Download copies src into the caller's dst on the queue after the fences.
func (b *Backend) Download(ctx context.Context, dst *graph.Tensor, src hal.Buffer, after []hal.Fence) (hal.Fence, error) {
	hs, err := b.use([]hal.Buffer{src})
	if err != nil {
		return nil, err
	}
	h := hs[0]
	if dst == nil || dst.Data == nil || dst.DType != h.dtype || !graph.SameShape(dst.Shape, h.shape) {
		b.unuse(hs)
		return nil, hal.Errorf(hal.CodeInvalidArgument, "download of a buffer of %v%v into %v", h.dtype, h.shape, dst)
	}
	return b.q.submit(&work{after: after, uses: hs, run: func(ctx context.Context, _ *hal.CallProfile) error {
		graph.CopyData(dst.Data, h.mem.Data)
		return nil
	}}), nil
}

// Enqueue schedules the program on buffers after the fences; outputs
// left nil are allocated (device-local) and stored into the slice.
func (e *Executable) Enqueue(ctx context.Context, inputs, outputs []hal.Buffer, after []hal.Fence, opts hal.EnqueueOptions) (hal.Fence, error) {
	e.mu.Lock()
	released := e.released
	e.mu.Unlock()
	if released {
		return nil, hal.Errorf(hal.CodeFailedPrecondition, "the executable was released")
	}
	if len(outputs) != len(e.outputs) {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "got %d outputs, the subgraph has %d", len(outputs), len(e.outputs))
	}
	shapes := make([][]int, len(inputs))
	for i, hb := range inputs {
		h, ok := e.b.handle(hb)
		if !ok {
			return nil, hal.Errorf(hal.CodeInvalidArgument, "input %d is not a buffer of this backend (%T)", i, hb)
		}
		if h.dtype != graph.Float32 {
			return nil, hal.Errorf(hal.CodeInvalidArgument, "input %d is %v, only float32 is handled", i, h.dtype)
		}
		shapes[i] = h.shape
	}
	sh, err := e.shapes(shapes)
	if err != nil {
		return nil, err
	}
	var allocated []hal.Buffer
	undo := func() {
		for _, a := range allocated {
			_ = e.b.Free(a)
		}
	}
	for i, o := range e.outputs {
		if outputs[i] != nil {
			h, ok := e.b.handle(outputs[i])
			if !ok || h.dtype != graph.Float32 || !graph.SameShape(h.shape, sh[o.Name]) {
				undo()
				return nil, hal.Errorf(hal.CodeInvalidArgument, "output %q: the call writes float32%v into a buffer of %v%v", o.Name, sh[o.Name], outputs[i].DType(), outputs[i].Shape())
			}
			continue
		}
		a, err := e.b.Allocate(ctx, hal.BufferRequest{DType: graph.Float32, Shape: sh[o.Name], Memory: hal.MemoryDeviceLocal})
		if err != nil {
			undo()
			return nil, err
		}
		allocated = append(allocated, a)
	}
	all := append(append([]hal.Buffer{}, inputs...), outputs...)
	k := 0
	for i := range outputs {
		if outputs[i] == nil {
			all[len(inputs)+i] = allocated[k]
			k++
		}
	}
	hs, err := e.b.use(all)
	if err != nil {
		undo()
		return nil, err
	}
	k = 0
	for i := range outputs {
		if outputs[i] == nil {
			outputs[i] = allocated[k]
			k++
		}
	}
	w := &work{after: after, uses: hs, profile: opts.Profile}
	w.run = func(ctx context.Context, prof *hal.CallProfile) error {
		in := make([][]float32, len(inputs))
		into := make([][]float32, len(outputs))
		for i := range inputs {
			in[i] = hs[i].mem.Data.([]float32)
		}
		for i := range outputs {
			into[i] = hs[len(inputs)+i].mem.Data.([]float32)
		}
		if !opts.Profile {
			prof = nil
		}
		return e.run(ctx, in, into, prof)
	}
	return e.b.q.submit(w), nil
}

// work is one queued operation.
type work struct {
	after   []hal.Fence
	uses    []*buffer
	run     func(ctx context.Context, prof *hal.CallProfile) error
	profile bool
	fence   *devkit.Fence    // hal/devkit: a ready signal-once fence
	prof    *hal.CallProfile // the operation's timing, handed over with the fence
}

// queue runs operations in submission order, each after its fences, on
// one goroutine started with the first.
type queue struct {
	b       *Backend
	mu      sync.Mutex
	items   []*work
	running bool
	stopped bool
	wake    chan struct{}
	exited  chan struct{}
}

func (q *queue) submit(w *work) hal.Fence {
	w.fence, w.prof = devkit.NewFence(), &hal.CallProfile{Device: 0, Queue: Name + "-0"}
	q.mu.Lock()
	if q.stopped {
		q.mu.Unlock()
		q.b.unuse(w.uses)
		w.fence.Signal(context.Cause(q.b.halt), w.prof)
		return w.fence
	}
	if q.wake == nil {
		q.wake, q.exited = make(chan struct{}, 1), make(chan struct{})
	}
	q.items = append(q.items, w)
	if !q.running {
		q.running = true
		go q.loop()
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return w.fence
}

func (q *queue) loop() {
	defer close(q.exited)
	for {
		q.mu.Lock()
		for len(q.items) == 0 && !q.stopped {
			q.mu.Unlock()
			<-q.wake
			q.mu.Lock()
		}
		if q.stopped {
			q.mu.Unlock()
			return
		}
		w := q.items[0]
		q.items = q.items[1:]
		q.mu.Unlock()
		err := q.process(w)
		// the hold on the buffers ends before the fence signals
		q.b.unuse(w.uses)
		w.fence.Signal(err, w.prof)
	}
}

func (q *queue) process(w *work) error {
	halt := q.b.halt
	for _, f := range w.after {
		if err := f.Wait(halt); err != nil {
			if cause := context.Cause(halt); cause != nil && halt.Err() != nil {
				return cause
			}
			return fmt.Errorf("%s: a fence this operation waited for failed: %w", Name, err)
		}
	}
	if halt.Err() != nil {
		return context.Cause(halt)
	}
	w.prof.StartNS = q.b.now()
	err := w.run(halt, w.prof)
	w.prof.EndNS = q.b.now()
	if err != nil && halt.Err() != nil {
		return context.Cause(halt)
	}
	return err
}

// shutdown stops the queue at Close: operations not started fail with
// the halt reason.
func (q *queue) shutdown() {
	q.mu.Lock()
	q.stopped = true
	running := q.running
	q.mu.Unlock()
	if running {
		select {
		case q.wake <- struct{}{}:
		default:
		}
		<-q.exited
	}
	q.mu.Lock()
	rest := q.items
	q.items = nil
	q.mu.Unlock()
	for _, w := range rest {
		q.b.unuse(w.uses)
		w.fence.Signal(context.Cause(q.b.halt), w.prof)
	}
}
