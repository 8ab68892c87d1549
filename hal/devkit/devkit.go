// Package devkit holds ready-made parts of a backend with device memory:
// a hal.Fence for its queue to hand out, which signals once (whichever of
// the work, a failure or a shutdown comes first decides its result) and
// carries the call's profile (hal.ProfiledFence), and the description
// every hal.Buffer reports. It links only the HAL contract.
package devkit

import (
	"context"
	"sync"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

// Fence is a signal-once fence. The zero value is not ready: use NewFence.
type Fence struct {
	done chan struct{}
	once sync.Once
	err  error
	prof *hal.CallProfile
}

// New returns an unsignalled fence.
func NewFence() *Fence { return &Fence{done: make(chan struct{})} }

// Signal signals the fence with the work's error (nil on success) and
// profile (nil: none was taken). Only the first call counts; it reports
// whether this call was that one.
func (f *Fence) Signal(err error, prof *hal.CallProfile) bool {
	first := false
	f.once.Do(func() {
		f.err, f.prof, first = err, prof, true
		close(f.done)
	})
	return first
}

// Done is closed once the fence has signalled.
func (f *Fence) Done() <-chan struct{} { return f.done }

// Wait blocks until the fence signals or ctx ends (then it returns ctx's
// error at once; the work goes on). A signalled fence answers its result
// even with ctx already ended.
func (f *Fence) Wait(ctx context.Context) error {
	select {
	case <-f.done:
		return f.err
	default:
	}
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Poll reports without blocking whether the fence has signalled and, if
// so, the work's error.
func (f *Fence) Poll() (bool, error) {
	select {
	case <-f.done:
		return true, f.err
	default:
		return false, nil
	}
}

// Profile returns a copy of the call's profile once the fence has
// signalled: FailedPrecondition before, Unavailable when the work failed,
// Unsupported when the call was not profiled.
func (f *Fence) Profile() (*hal.CallProfile, error) {
	select {
	case <-f.done:
	default:
		return nil, hal.Errorf(hal.CodeFailedPrecondition, "the fence has not signalled")
	}
	if f.err != nil {
		return nil, &hal.Error{Code: hal.CodeUnavailable, Msg: "the operation did not complete", Err: f.err}
	}
	if f.prof == nil {
		return nil, hal.Errorf(hal.CodeUnsupported, "the call was not enqueued with Profile")
	}
	p := *f.prof
	p.Kernels = append([]hal.KernelTiming{}, f.prof.Kernels...)
	return &p, nil
}

var _ hal.ProfiledFence = (*Fence)(nil)

// BufferInfo is what every hal.Buffer reports: a backend's buffer type
// embeds it and adds its handle.
type BufferInfo struct {
	dtype  graph.DType
	shape  []int
	memory hal.MemoryKind
	device int
}

// NewBufferInfo describes a buffer of dtype dt and the given shape (kept,
// not copied) in memory of kind mem on device dev.
func NewBufferInfo(dt graph.DType, shape []int, mem hal.MemoryKind, dev int) BufferInfo {
	return BufferInfo{dtype: dt, shape: shape, memory: mem, device: dev}
}

// DType is the buffer's element type.
func (i BufferInfo) DType() graph.DType { return i.dtype }

// Shape is the buffer's shape.
func (i BufferInfo) Shape() []int { return i.shape }

// Memory is the kind of memory the buffer lives in.
func (i BufferInfo) Memory() hal.MemoryKind { return i.memory }

// Device is the index of the device the buffer lives on.
func (i BufferInfo) Device() int { return i.device }
