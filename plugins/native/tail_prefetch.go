package native

import "sync/atomic"

// Experiments on decode's weight read-ahead (bw_prefetch.go), switched
// at run time so that measurements alternate them step by step.

// tailHeadOn: the idle workers read the next product's first
// tailHeadBytes (its first task's, which the caller runs) before its
// last ones (the worker's own).
var tailHeadOn atomic.Bool

// tailHeadBytes is how much of a product's head runHead reads first.
const tailHeadBytes = 64 << 10

// tailPfMax, where positive, replaces pfMax (the bytes read ahead of
// each product).
var tailPfMax atomic.Int64

// headFirst is parts (one run of bytes) with the first min(task,
// tailHeadBytes) bytes first (in order), then the rest in workerLast's
// order: the last task's bytes, the one's before, down to the first
// task's that the head left.
func headFirst(parts [][]byte, task int64) [][]byte {
	var total int64
	for _, b := range parts {
		total += int64(len(b))
	}
	h := min(task, tailHeadBytes)
	if task <= 0 || task >= total {
		return parts
	}
	var out [][]byte
	add := func(b []byte) { out = append(out, b) }
	pfEach(parts, 0, h, add)
	for k := (total - 1) / task; k >= 1; k-- {
		pfEach(parts, k*task, min((k+1)*task, total), add)
	}
	pfEach(parts, h, task, add)
	return out
}
