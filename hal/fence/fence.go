// Package fence is a hal.Fence for a backend's queue to hand out: it
// signals once (whichever of the work, a failure or a shutdown comes
// first decides its result) and carries the call's profile
// (hal.ProfiledFence). It links only the HAL contract.
package fence

import (
	"context"
	"sync"

	"github.com/switchyard-hal/switchyard/hal"
)

// Fence is a signal-once fence. The zero value is not ready: use New.
type Fence struct {
	done chan struct{}
	once sync.Once
	err  error
	prof *hal.CallProfile
}

// New returns an unsignalled fence.
func New() *Fence { return &Fence{done: make(chan struct{})} }

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
