package nn

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// stop is a run's Done channel (nil: never). The parallel helpers poll it
// before each task or chunk, and long loops between blocks of work, so a
// big product or convolution gives up soon after its deadline; the kernel
// then returns ctx.Stop(n) (its output is incomplete).
type stop <-chan struct{}

func (s stop) done() bool { return kernels.Done(s) }

// stopOf is the stop of a kernel call.
func stopOf(ctx *kernels.Context) stop {
	if ctx == nil || ctx.Context == nil {
		return nil
	}
	return ctx.Done()
}

// stopped turns a kernel's result into ctx.Stop(n) when the context ended
// while it ran (the output may be incomplete).
func stopped(ctx *kernels.Context, n *graph.Node) func([]*graph.Tensor, error) ([]*graph.Tensor, error) {
	return func(out []*graph.Tensor, err error) ([]*graph.Tensor, error) {
		if err == nil && ctx.Stopped() {
			return nil, ctx.Stop(n)
		}
		return out, err
	}
}

// minChunks is the fewest chunks parallelRange cuts work into, even on one
// goroutine, so that it checks its stop between them.
const minChunks = 8

// workers is the number of goroutines a kernel may use.
func workers() int {
	p := runtime.GOMAXPROCS(0)
	if p < 1 {
		p = 1
	}
	return p
}

// parallelTasks runs fn(0..n-1) on up to par goroutines, handing tasks out
// dynamically, and hands out no more once st is done. A panic in a task is
// re-raised in the caller's goroutine, so that a recover there (the
// runtime's) still sees it.
func parallelTasks(st stop, n, par int, fn func(i int)) {
	parallelTasksW(st, n, par, func(_, i int) { fn(i) })
}

// parallelTasksW is parallelTasks that also tells fn which worker
// (0 ≤ w < par) runs it, for per-worker scratch buffers.
func parallelTasksW(st stop, n, par int, fn func(w, i int)) {
	if par > n {
		par = n
	}
	if par <= 1 {
		for i := 0; i < n && !st.done(); i++ {
			fn(0, i)
		}
		return
	}
	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		panicMu  sync.Mutex
		panicVal any
	)
	for w := 0; w < par; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					panicMu.Lock()
					if panicVal == nil {
						panicVal = fmt.Sprintf("%v\n%s", p, debug.Stack())
					}
					panicMu.Unlock()
					next.Store(int64(n)) // stop handing out work
				}
			}()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || st.done() {
					return
				}
				fn(w, i)
			}
		}(w)
	}
	wg.Wait()
	if panicVal != nil {
		panic(fmt.Sprintf("nn: worker panic: %v", panicVal))
	}
}

// parallelRange splits [0,n) into about par*4 (at least minChunks)
// contiguous chunks, each at least minChunk long, and runs fn on them in
// parallel until st is done.
func parallelRange(st stop, n, par, minChunk int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	if minChunk < 1 {
		minChunk = 1
	}
	chunks := max(par*4, minChunks)
	if c := n / minChunk; c < chunks {
		chunks = c
	}
	if chunks <= 1 {
		fn(0, n)
		return
	}
	size := (n + chunks - 1) / chunks
	chunks = (n + size - 1) / size
	parallelTasks(st, chunks, par, func(i int) {
		lo := i * size
		hi := min(lo+size, n)
		fn(lo, hi)
	})
}
