package native

import (
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// pool is a fixed set of worker goroutines that run the tasks of one
// parallel loop together with the calling goroutine. A nil pool or one
// without workers runs everything on the caller.
//
// A worker that finishes a loop spins for a while (spinChecks looks at
// cur, about tens of microseconds) before it parks on the channel: a
// decode step runs a few hundred short loops, one after another, and
// waking a parked goroutine costs about as much as one of them. The
// latest loop is published in cur for the spinning workers and sent on
// the channel for the parked ones; a worker that meets a loop twice or
// late finds no task left and touches nothing, or (the job reused) helps
// with a newer loop, so neither way is needed for correctness (the caller
// runs whatever no worker claims).
//
// A model's run holds the pool hot (begin/end around it): its workers
// are woken as the run starts and spin between its loops for up to
// hotSpin, not spinChecks, and endSpin past its end (for the next of a
// string of calls), and its caller spins for a loop's last tasks
// instead of parking (waitSpin). A CNN's nodes are loops of 20-300 µs
// with serial nodes (Slice, Concat, Softmax, small convolutions) between
// them that outlast spinChecks, and a parked worker took 100 µs to
// 1.5 ms to start (yieldAfterWake): traced at 2 threads, UltraFace's
// worker joined 22 of 56 loops, most of them after the caller had
// claimed every task, and the run was no faster than at 1 thread; held
// hot (with the yields), it joins 46-47 of 47 and runs about half the
// tasks.
type pool struct {
	workers int
	jobs    chan *job
	done    chan struct{} // closed by close: the workers return
	stop    sync.Once
	cur     atomic.Pointer[job]
	parked  atomic.Int32 // workers waiting on jobs
	closed  atomic.Bool
	hot     atomic.Int32 // runs in progress (begin without end)
	ended   atomic.Int64 // when the last run ended (Unix ns)

	// pf is what idle workers read ahead (bw_prefetch.go)
	pf atomic.Pointer[pfRun]
}

// spinChecks is how many times a worker looks for a new loop before it
// parks.
const spinChecks = 1 << 14

// hotSpin is how long a worker of a hot pool spins for the next loop
// before it parks: longer than the serial nodes between a model's loops
// (a gap past it costs one wake-up, small beside such a gap).
const hotSpin = time.Millisecond

// endSpin is how long a worker spins on after a run ended: a caller that
// runs the model again at once (a benchmark, a stream of frames) finds
// the workers awake.
const endSpin = 200 * time.Microsecond

// hotRuns turns begin and end on (tests compare without them).
var hotRuns = true

// wake is the empty loop begin sends a parked worker: it finds no task
// and spins for the run's loops.
var wake = newIdleJob()

// A job is one parallel loop in progress. Jobs are reused from loop to
// loop (forJob's caches), so a loop allocates nothing: a worker that
// meets a job late either finds no task left to claim (next is the
// empty range between loops) and touches nothing, or
// finds it reset for a newer loop and helps with that one, which is
// just as correct (the caller waits for done, not for the workers).
type job struct {
	r        runner       // runs one task
	n        atomic.Int64 // the loop's tasks
	seq      atomic.Uint64
	next     atomic.Uint64  // the tasks left to claim: [low 32 bits, high 32 bits); empty between loops
	done     atomic.Int64   // tasks finished
	finished sync.WaitGroup // one count, done when done reaches n
	waiting  atomic.Bool    // the caller waits in finished.Wait (or is about to)
	join     atomic.Int64   // loopTrace: when a worker started its first task (Unix ns)
}

// loopTrace, while set (a measurement tool's test), records every loop
// a pool runs.
var loopTrace atomic.Pointer[loopTracer]

// loopTracer holds the loops traced.
type loopTracer struct {
	mu    sync.Mutex
	loops []loopRecord
}

// loopRecord is one loop: its tasks, how many the caller ran, when it
// started and ended and when a worker joined (Unix ns; 0: none did).
type loopRecord struct {
	n, caller        int
	start, end, join int64
}

// runner is a loop's body.
type runner interface{ run(task int) }

// newIdleJob returns a job running no loop (its zero value: nothing to
// claim).
func newIdleJob() *job { return &job{} }

// work claims and runs tasks until none is left and returns how many it
// ran: the caller from the first task on, a worker from the last one
// down. A worker that comes late finds none and touches nothing else; a
// claim is a compare-and-swap of the whole range, so it can only take a
// task of the loop the job runs now.
//
// Kernels split their loops in order (task t the t-th share of the
// output's memory, or of its positions), so the caller computes the
// first part of every node's output and the worker the last, as in the
// node before: each thread reads mostly what its own core wrote, not
// the other's (a 3×3 depthwise of 480×14×14 after a loop that rewrote
// its input in 16 tasks took 79 µs at 2 threads where the same input
// warm in both caches took 37; claimed from the two ends, 30 and 27,
// BenchmarkT2bDW3Threads under chrt -r 1). The share between them still
// moves with whoever is faster.
func (j *job) work(worker bool) int {
	ran := 0
	for {
		var t int64
		for {
			v := j.next.Load()
			lo, hi := int64(v&(1<<32-1)), int64(v>>32)
			if lo >= hi {
				return ran
			}
			if !worker {
				if j.next.CompareAndSwap(v, v+1) {
					t = lo
					break
				}
			} else if j.next.CompareAndSwap(v, v-1<<32) {
				t = hi - 1
				break
			}
		}
		n := j.n.Load()
		if worker && ran == 0 && loopTrace.Load() != nil {
			j.join.CompareAndSwap(0, time.Now().UnixNano())
		}
		j.r.run(int(t))
		ran++
		if j.done.Add(1) == n {
			j.finished.Done()
			if j.waiting.Load() {
				runtime.Gosched() // see yieldAfterWake
			}
		}
	}
}

// loopJob is a job whose tasks run body.run(task); the bodies are
// forBody and chunkBody.
type loopJob[B runner] struct {
	job
	body B
}

func (f *loopJob[B]) run(t int) { f.body.run(t) }

// loopJobs caches idle loopJobs, a sync.Pool per body type (reflect's
// Type of B as key): a loop takes one and puts it back when done.
var loopJobs sync.Map

// getLoopJob returns an idle loopJob for body type B and its cache.
func getLoopJob[B runner]() (*loopJob[B], *sync.Pool) {
	key := reflect.TypeFor[B]()
	c, ok := loopJobs.Load(key)
	if !ok {
		c, _ = loopJobs.LoadOrStore(key, new(sync.Pool))
	}
	cache := c.(*sync.Pool)
	if f, ok := cache.Get().(*loopJob[B]); ok {
		return f, cache
	}
	f := &loopJob[B]{}
	f.r = f
	return f, cache
}

// runLoop runs body.run(t) for t < n on the pool (see pool.run) in a
// reused job.
func runLoop[B runner](p *pool, n int, body B) {
	f, cache := getLoopJob[B]()
	f.body = body
	p.run(&f.job, n)
	var zero B
	f.body = zero // hold nothing of the loop's
	cache.Put(f)
}

// newPool starts threads-1 workers (the caller is the last thread).
func newPool(threads int) *pool {
	p := &pool{workers: max(threads-1, 0)}
	if p.workers > 0 {
		p.jobs = make(chan *job, p.workers)
		p.done = make(chan struct{})
		for i := 0; i < p.workers; i++ {
			go p.worker()
		}
	}
	return p
}

// worker runs the pool's loops: the newest one while spinning, else the
// next one sent while parked. A job reused for a newer loop shows a new
// seq.
func (p *pool) worker() {
	var last *job
	var lastSeq uint64
	for {
		var j *job
		var idle time.Time
		for i := 0; !p.closed.Load(); i++ {
			if c := p.cur.Load(); c != nil {
				if s := c.seq.Load(); c != last || s != lastSeq {
					j, lastSeq = c, s
					break
				}
			}
			if !p.prefetchIdle() { // bw_prefetch.go
				spinPause()
			}
			if i&1023 == 1023 {
				if i >= spinChecks {
					now := time.Now()
					if idle.IsZero() {
						idle = now
					}
					if now.Sub(idle) > hotSpin || p.hot.Load() == 0 && now.UnixNano()-max(idle.UnixNano(), p.ended.Load()) > int64(endSpin) {
						break
					}
				}
				runtime.Gosched()
			}
		}
		if j == nil {
			p.parked.Add(1)
			select {
			case j = <-p.jobs:
			case <-p.done:
				p.parked.Add(-1)
				return
			}
			p.parked.Add(-1)
			lastSeq = j.seq.Load()
		}
		last = j
		j.work(true)
	}
}

// begin holds the pool hot for a run of many loops (a model's call):
// parked workers are woken now, while the run's first node starts, and
// spin between its loops until end (see hotSpin). Every begin needs its
// end; runs may overlap.
func (p *pool) begin() {
	if p == nil || p.workers == 0 || !hotRuns {
		return
	}
	p.hot.Add(1)
	woke := false
	for i := int(p.parked.Load()); i > 0; i-- {
		select {
		case p.jobs <- wake:
			woke = true
		default:
		}
	}
	if woke {
		runtime.Gosched() // see yieldAfterWake
	}
}

// yieldAfterWake: a goroutine that wakes another of the pool (a loop's
// caller sending a parked worker a job, a worker finishing the last task
// of a caller parked in Wait) yields its P at once. The woken goroutine
// is put on the waker's own P (its runnext), which the idle P's thread
// may take only after a pause; on this project's virtual machines it
// started 100 µs to 1.5 ms later, after the caller had run the whole
// loop (UltraFace at 2 threads: the worker took part in 1 of 47 loops).
// Yielding runs it on this P while the thread woken for the idle P
// takes the yielder from the global queue: both run within some µs.

// end closes a begin: once no run holds the pool hot, its workers park
// after endSpin.
func (p *pool) end() {
	if p != nil && p.workers > 0 && hotRuns {
		p.ended.Store(time.Now().UnixNano())
		p.hot.Add(-1)
	}
}

// threads is the number of goroutines a loop runs on.
func (p *pool) threads() int {
	if p == nil {
		return 1
	}
	return p.workers + 1
}

// parallel runs fn(0..n-1), each task once, on the workers and the caller,
// and returns when all are done (parallelFor without an argument).
func (p *pool) parallel(n int, fn func(task int)) {
	parallelFor(p, n, fn, func(fn func(int), t int) { fn(t) })
}

// run runs j's loop of n tasks: the job is offered to the workers
// without waiting for them (none free: the caller runs more of it), and
// the caller then waits only for tasks a worker has started, never for a
// worker still waking up. j must be idle (nothing to claim) and r set.
func (p *pool) run(j *job, n int) {
	tr := loopTrace.Load()
	var start int64
	if tr != nil {
		j.join.Store(0)
		start = time.Now().UnixNano()
	}
	j.n.Store(int64(n))
	j.done.Store(0)
	j.waiting.Store(false)
	j.finished.Add(1)
	j.next.Store(uint64(n) << 32)
	j.seq.Add(1)
	p.cur.Store(j)
	woke := false
	for i := min(int(p.parked.Load()), n-1); i > 0; i-- {
		select {
		case p.jobs <- j:
			woke = true
		default:
		}
	}
	if woke {
		runtime.Gosched() // see yieldAfterWake
	}
	caller := j.work(false)
	if j.done.Load() < int64(n) {
		p.waitSpin(j, p.hot.Load() > 0)
	}
	if j.done.Load() < int64(n) {
		j.waiting.Store(true)
	}
	j.finished.Wait()
	j.next.Store(0)
	if tr != nil {
		r := loopRecord{n: n, caller: caller, start: start, end: time.Now().UnixNano(), join: j.join.Load()}
		tr.mu.Lock()
		tr.loops = append(tr.loops, r)
		tr.mu.Unlock()
	}
}

// callerSpin is how long (about) the caller of a loop spins for the
// workers' last tasks before it parks: a loop's tail is one task (decode's
// products split to tasks of some hundred KB: tens of µs), and a parked
// caller is woken through the scheduler (another thread's wake-up, a
// futex on Linux), which can cost as much again on a virtual machine.
const callerSpin = 200 * time.Microsecond

// waitSpin spins until j's tasks are done or callerSpin has passed
// (hot: until they are done), yielding now and then (a goroutine this
// one's thread owes time to runs). A hot pool's caller does not park:
// the worker finishing the last task would wake it onto the worker's own
// P, and the worker, yielding to it (yieldAfterWake), could be left on
// the global queue with the other P asleep, the rest of the run on one
// thread (the traced UltraFace runs lost the worker that way after
// about 1 ms).
func (p *pool) waitSpin(j *job, hot bool) {
	var t0 time.Time
	n := j.n.Load()
	for i := 1; j.done.Load() < n; i++ {
		if !p.prefetchHead() { // tail_prefetch.go
			spinPause()
		}
		if i&255 == 0 {
			if t0.IsZero() {
				t0 = time.Now()
			} else if !hot && time.Since(t0) > callerSpin {
				return
			}
			runtime.Gosched()
		}
	}
}

// close ends the workers. jobs is never closed: a run still in progress
// on another goroutine (a model closed while it runs) may send to it
// (never blocking) and then runs its loops' tasks on the caller alone.
func (p *pool) close() {
	if p != nil && p.jobs != nil {
		p.stop.Do(func() {
			p.closed.Store(true)
			p.cur.Store(nil)
			close(p.done)
		})
	}
}

// parallelFor runs fn(arg, t) for t < n, each task once, on the
// workers and the caller, and returns when all are done. arg (passed by
// value; what it points to must outlive the call anyway) is kept with fn
// (a plain function) in a reused job (runLoop): a loop allocates
// nothing.
func parallelFor[T any](p *pool, n int, arg T, fn func(arg T, task int)) {
	if p == nil || p.workers == 0 || n <= 1 {
		for t := 0; t < n; t++ {
			fn(arg, t)
		}
		return
	}
	runLoop(p, n, forBody[T]{arg, fn})
}

// forBody is parallelFor's loop.
type forBody[T any] struct {
	arg T
	fn  func(arg T, task int)
}

func (b forBody[T]) run(t int) { b.fn(b.arg, t) }

// chunksFor splits n elements into chunks of at least 16384 for the pool
// and runs fn(arg, i0, i1) on each range, as parallelFor runs its tasks.
func chunksFor[T any](p *pool, n int, arg T, fn func(arg T, i0, i1 int)) {
	chunks := min(p.threads()*2, max(1, n/16384))
	if chunks <= 1 || p == nil || p.workers == 0 {
		fn(arg, 0, n)
		return
	}
	runLoop(p, chunks, chunkBody[T]{arg, fn, n, chunks})
}

// chunkBody is chunksFor's loop.
type chunkBody[T any] struct {
	arg       T
	fn        func(arg T, i0, i1 int)
	n, chunks int
}

func (c chunkBody[T]) run(t int) { c.fn(c.arg, c.n*t/c.chunks, c.n*(t+1)/c.chunks) }
