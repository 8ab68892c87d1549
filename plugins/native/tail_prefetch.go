package native

import "sync/atomic"

// The caller's read-ahead at a loop's end: a decode product's loop ends
// with one thread finishing its last task while the others wait. A
// waiting worker reads the next product's last bytes ahead (its own
// tasks': bw_prefetch.go); a waiting caller (pool.waitSpin) reads the
// next product's first bytes, those of the task it claims first, a
// callerChunk at a time, up to callerHeadBytes.

// callerHeadOff turns the caller's read-ahead off (measurements
// alternate).
var callerHeadOff atomic.Bool

const (
	// callerHeadBytes is how much of a product's first task a waiting
	// caller reads ahead at most.
	callerHeadBytes = 64 << 10

	// callerChunk is how much a waiting caller reads between looks at
	// the loop's tasks (some 100 ns from memory).
	callerChunk = 1 << 10
)

// callerHead is the bytes a waiting caller reads ahead of a product
// whose tasks read parts (in that order; the first task task bytes): its
// first task's first callerHeadBytes, as far as they lie in its first
// part.
func callerHead(parts [][]byte, task int) []byte {
	if len(parts) == 0 || task <= 0 {
		return nil
	}
	return parts[0][:min(len(parts[0]), task, callerHeadBytes)]
}

// prefetchHead reads the next chunk of the next product's head, if any
// is left, and says whether it did (a waiting caller's step instead of
// a pause).
func (p *pool) prefetchHead() bool {
	r := p.pf.Load()
	if r == nil || callerHeadOff.Load() {
		return false
	}
	n := int64(len(r.head))
	off := r.hoff.Add(callerChunk) - callerChunk
	if off >= n {
		return false
	}
	pfSink.Add(uint32(touchLines(r.head[off:min(off+callerChunk, n)])))
	return true
}
