package nn

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// workers is the number of goroutines a kernel may use.
func workers() int {
	p := runtime.GOMAXPROCS(0)
	if p < 1 {
		p = 1
	}
	return p
}

// parallelTasks runs fn(0..n-1) on up to par goroutines, handing tasks out
// dynamically. A panic in a task is re-raised in the caller's goroutine, so
// that a recover there (the runtime's) still sees it.
func parallelTasks(n, par int, fn func(i int)) {
	parallelTasksW(n, par, func(_, i int) { fn(i) })
}

// parallelTasksW is parallelTasks that also tells fn which worker
// (0 ≤ w < par) runs it, for per-worker scratch buffers.
func parallelTasksW(n, par int, fn func(w, i int)) {
	if par > n {
		par = n
	}
	if par <= 1 {
		for i := 0; i < n; i++ {
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
				if i >= n {
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

// parallelRange splits [0,n) into about par*4 contiguous chunks (each at
// least minChunk long) and runs fn on them in parallel.
func parallelRange(n, par, minChunk int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	if minChunk < 1 {
		minChunk = 1
	}
	chunks := par * 4
	if par <= 1 {
		chunks = 1
	}
	if c := n / minChunk; c < chunks {
		chunks = c
	}
	if chunks <= 1 {
		fn(0, n)
		return
	}
	size := (n + chunks - 1) / chunks
	chunks = (n + size - 1) / size
	parallelTasks(chunks, par, func(i int) {
		lo := i * size
		hi := min(lo+size, n)
		fn(lo, hi)
	})
}
