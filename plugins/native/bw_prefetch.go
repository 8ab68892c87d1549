package native

import (
	"os"
	"strconv"
	"sync/atomic"
)

// Decode's weight prefetch: a decode step (one activation row) is a chain
// of products that stream their weights from memory, with serial work
// between them (norms, attention, the activations' quantization, the
// executor, sampling between steps) during which one thread computes and
// the pool's other threads spin, and memory idles. While a worker of the
// pool has no task (the serial gaps, and a product's tail while another
// thread finishes its last task) it reads ahead the first bytes of the
// product that runs next, so that product starts on weights already in
// cache: the gaps' time becomes streaming time.
//
// Compile links each typed integer-path product to the one built after
// it (build order is run order; the last links to the first: the next
// step's first layer), and each decode call of a product names its
// successor's bytes to the pool (pool.pf) before its tasks start. A
// worker reads a chunk at a time (pfChunk) and looks for a new loop
// between chunks. Nothing depends on it but speed: the bytes are only
// read.

// pfRun is what a product hands the pool: the next product's weight bytes
// in the order a worker claims its tasks (workerLast), up to pfMax, and
// how far the workers got.
type pfRun struct {
	parts [][]byte
	limit int64
	off   atomic.Int64

	// head is the next product's first bytes in order (its first
	// task's, the caller's), which a loop's caller reads ahead while it
	// waits for the workers' last tasks (tail_prefetch.go), and hoff how
	// far it got
	head []byte
	hoff atomic.Int64
}

// pfChunk is how many bytes a worker reads ahead between looks for a new
// loop (some hundred ns from memory).
const pfChunk = 4 << 10

// pfMax is how many bytes of the next product are read ahead at most:
// what a core's L2 holds with room to spare (SWITCHYARD_NATIVE_PREFETCH
// sets it in bytes for measurements; 0 turns the prefetch off).
var pfMax = func() int64 {
	if v, err := strconv.ParseInt(os.Getenv("SWITCHYARD_NATIVE_PREFETCH"), 10, 64); err == nil && v >= 0 {
		return v
	}
	return 512 << 10
}()

// pfOff turns the read-ahead off (benchmarks alternate).
var pfOff atomic.Bool

// pfChain links the products of one compile as they are built.
type pfChain struct {
	first, last *pfLink
}

// pfLink is one product's place in the chain: its own bytes (in task
// order) and the run it hands the pool (its successor's bytes).
type pfLink struct {
	own  [][]byte
	head []byte // the first bytes of own in task order (callerHead)
	run  pfRun
}

// link adds a product whose tasks read own (in that order; the first
// task task bytes) to the chain: the last one added reads ahead into it,
// and it into the first (until another is added).
func (c *pfChain) link(task int, own ...[]byte) *pfLink {
	l := &pfLink{own: workerLast(own, int64(task)), head: callerHead(own, task)}
	if c.first == nil {
		c.first = l
	}
	if c.last != nil {
		c.last.run.set(l.own, l.head)
	}
	l.run.set(c.first.own, c.first.head)
	c.last = l
	return l
}

// workerLast is parts (one run of bytes) in the order a worker claims
// their tasks: the last task's bytes first, then the one before, down to
// the first (pool's job.work: the caller claims from the first task on,
// a worker from the last one down), so a worker that read ahead runs its
// tasks on bytes in its own cache.
func workerLast(parts [][]byte, task int64) [][]byte {
	var total int64
	for _, b := range parts {
		total += int64(len(b))
	}
	if task <= 0 || task >= total {
		return parts
	}
	var out [][]byte
	add := func(b []byte) { out = append(out, b) }
	for k := (total - 1) / task; k >= 0; k-- {
		pfEach(parts, k*task, min((k+1)*task, total), add)
	}
	return out
}

// set makes r read ahead parts, up to pfMax bytes, and head.
func (r *pfRun) set(parts [][]byte, head []byte) {
	r.parts, r.head = parts, head
	r.limit = 0
	for _, p := range parts {
		r.limit += int64(len(p))
	}
	r.limit = min(r.limit, pfMax)
}

// decodeLink is l for a product of one activation row (decode's), else
// nil: longer products are compute-bound, nothing to read ahead.
func decodeLink(l *pfLink, m int) *pfLink {
	if m != 1 {
		return nil
	}
	return l
}

// prefetchNext hands the pool l's successor (nil: nothing to read ahead,
// as for a product of several activation rows).
func (p *pool) prefetchNext(l *pfLink) {
	if p == nil || p.workers == 0 {
		return
	}
	if l == nil || l.run.limit == 0 || pfOff.Load() {
		p.pf.Store(nil)
		return
	}
	l.run.off.Store(0)
	l.run.hoff.Store(0)
	p.pf.Store(&l.run)
}

// prefetchIdle reads the next chunk of the pool's read-ahead, if any is
// left, and says whether it did (an idle worker's step instead of a
// pause).
func (p *pool) prefetchIdle() bool {
	r := p.pf.Load()
	if r == nil {
		return false
	}
	off := r.off.Add(pfChunk) - pfChunk
	if off >= r.limit {
		return false
	}
	pfEach(r.parts, off, min(off+pfChunk, r.limit), func(b []byte) { pfSink.Add(uint32(touchLines(b))) })
	return true
}

// pfEach calls fn on the pieces of parts (one run of bytes, part after
// part) between offsets off and end.
func pfEach(parts [][]byte, off, end int64, fn func(b []byte)) {
	for _, b := range parts {
		n := int64(len(b))
		if off < n && off < end {
			fn(b[off:min(end, n)])
		}
		if end <= n {
			return
		}
		off, end = max(off-n, 0), end-n
	}
}

// pfSink keeps touchLines' loads from being optimized away.
var pfSink atomic.Uint32

// touchLines reads one byte of every 64-byte line of b.
func touchLines(b []byte) byte {
	var s0, s1, s2, s3 byte
	i := 0
	for ; i+256 <= len(b); i += 256 {
		c := b[i : i+256 : i+256]
		s0 += c[0]
		s1 += c[64]
		s2 += c[128]
		s3 += c[192]
	}
	for ; i < len(b); i += 64 {
		s0 += b[i]
	}
	return s0 + s1 + s2 + s3
}
