package native

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestPoolRunsEachTaskOnce runs loops of every size on pools of 1 to 4
// threads, cold, hot (begin/end), with pauses that let the workers park
// and from several goroutines at once sharing one pool: every task runs
// exactly once and every loop returns after its last task.
func TestPoolRunsEachTaskOnce(t *testing.T) {
	for threads := 1; threads <= 4; threads++ {
		p := newPool(threads)
		var wg sync.WaitGroup
		for g := 0; g < 3; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := 0; r < 40; r++ {
					hot := r%2 == 0
					if hot {
						p.begin()
					}
					for n := 0; n < 12; n++ {
						runs := make([]atomic.Int32, n)
						parallelFor(p, n, runs, func(runs []atomic.Int32, t int) { runs[t].Add(1) })
						for i := range runs {
							if c := runs[i].Load(); c != 1 {
								t.Errorf("%d threads, %d tasks: task %d ran %d times", threads, n, i, c)
							}
						}
					}
					if hot {
						p.end()
					}
					if r%8 == 7 {
						time.Sleep(endSpin + hotSpin) // the workers park
					}
				}
			}()
		}
		wg.Wait()
		if h := p.hot.Load(); h != 0 {
			t.Errorf("%d threads: hot %d after every end", threads, h)
		}
		p.close()
	}
}

// TestPoolWorkersJoinHotRun checks that a hot pool's workers take part
// in a run's loops after a pause long enough to park them (woken by
// begin, or by the loop itself): a loop of tasks that each wait for the
// others to start (as many as threads) completes only when every thread
// runs one.
func TestPoolWorkersJoinHotRun(t *testing.T) {
	const threads = 2
	p := newPool(threads)
	defer p.close()
	for r := 0; r < 3; r++ {
		time.Sleep(endSpin + hotSpin + time.Millisecond)
		p.begin()
		var started atomic.Int32
		var timedOut atomic.Bool
		parallelFor(p, threads, &started, func(s *atomic.Int32, _ int) {
			s.Add(1)
			deadline := time.Now().Add(5 * time.Second)
			for s.Load() < threads {
				if time.Now().After(deadline) {
					timedOut.Store(true)
					return
				}
			}
		})
		p.end()
		if timedOut.Load() {
			t.Fatalf("round %d: a hot pool's worker did not join the loop within 5 s", r)
		}
	}
}

// TestPoolCloseDuringRuns closes pools while other goroutines run loops
// on them (a backend closed under a model still running): nothing
// panics, every loop's tasks still run exactly once (on the caller once
// the workers are gone), and loops after close keep working.
func TestPoolCloseDuringRuns(t *testing.T) {
	for threads := 2; threads <= 4; threads++ {
		p := newPool(threads)
		var wg sync.WaitGroup
		for g := 0; g < 3; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := 0; r < 200; r++ {
					if r%3 == 0 {
						p.begin()
					}
					runs := make([]atomic.Int32, 1+r%9)
					parallelFor(p, len(runs), runs, func(runs []atomic.Int32, t int) { runs[t].Add(1) })
					for i := range runs {
						if c := runs[i].Load(); c != 1 {
							t.Errorf("%d threads: task %d ran %d times", threads, i, c)
						}
					}
					if r%3 == 0 {
						p.end()
					}
					if r%50 == 49 {
						time.Sleep(endSpin + hotSpin) // the workers park
					}
				}
			}()
		}
		time.Sleep(2 * time.Millisecond)
		p.close()
		wg.Wait()
		p.close() // twice is fine
	}
}
