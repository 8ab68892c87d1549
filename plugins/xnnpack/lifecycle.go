package xnnpack

import "github.com/switchyard-hal/switchyard/hal"

// Lifetime of the C objects. Executables hold XNNPACK runtimes that run on
// the backend's pthreadpools; destroying a pool under a runtime that is
// running (or runs later) makes xnn_invoke_runtime wait forever or touch
// freed memory. So every call that may enter C (Compile, Execute, Release)
// is counted between enter and leave, and Close
//
//  1. refuses new calls (FailedPrecondition "xnnpack: device closed"; they
//     never reach C) and asks running Executes to stop between stages,
//  2. waits for the counted calls to leave C (a stage already running in C
//     cannot be interrupted; it ends on its own),
//  3. frees the runtimes of every executable still live, then the pools.
//
// An executable released after Close is a no-op.

func errClosed() error {
	return hal.Errorf(hal.CodeFailedPrecondition, "xnnpack: device closed")
}

// enter counts a call that may enter C, or refuses it once Close started.
func (b *Backend) enter() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return errClosed()
	}
	b.calls.Add(1)
	return nil
}

func (b *Backend) leave() { b.calls.Done() }

// track records a compiled executable, so that Close frees it.
func (b *Backend) track(e *Executable) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.exes[e] = struct{}{}
}

func (b *Backend) untrack(e *Executable) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.exes, e)
}

// Close fails later calls of the backend and of its executables with
// FailedPrecondition, waits for calls inside C to finish, then frees every
// executable still live and the thread pools. Safe to call more than once
// and concurrently with Execute.
func (b *Backend) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.closing.Store(true)
	b.mu.Unlock()
	// no enter succeeds any more: the count only goes down
	b.calls.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	for e := range b.exes {
		e.releaseInstances()
		delete(b.exes, e)
	}
	for e := range b.qexes {
		e.free()
		delete(b.qexes, e)
	}
	for k, p := range b.pools {
		if p != 0 {
			b.lib.poolDestroy(p)
		}
		delete(b.pools, k)
	}
	return nil
}
