package native

import (
	"sync/atomic"

	"github.com/switchyard-hal/switchyard/core/ggml"
)

// singleTaskBytes is bqkTaskBytes for a single product's loop
// (runGGMLInt; a sibling group's tasks keep bqkTaskBytes): about how
// many weight bytes a task of a product with one activation row reads at
// most. Each task starts its row streams on a memory latency, and a loop
// of bigger tasks starts fewer; the tail (one thread finishing its last
// task while the other waits) grows, and measured less. Qwen2.5-0.5B
// Q4_0 at 2 threads (down: 8 tasks of 112 rows, 306 KB, instead of 11
// of 88; the classifier 280 tasks of 544 rows instead of 559 of 272),
// TestTailDecodeAB in a quiet window (steps of 8.3-9.2 ms), three runs
// of 100 steps each: step median 8636 → 8267, 9096 → 8792, 9223 → 8941
// µs (-3.1..-4.3%), the classifier's loop -9..-11%, down's -1..-6%,
// the rest unchanged. (1 MB: the classifier another -3.5%, but
// attention's loop slower by 3-6% for no reason found yet.)
const singleTaskBytes = 512 << 10

// bigTaskBytes is singleTaskBytes for a product of at least
// bigProductBytes of weights (a classifier: Qwen2.5-0.5B's is 145 MB,
// Llama-3.2-1B's 266 MB at Q8_0; a layer's products are at most some
// MB): its loop has hundreds of tasks, each starting its row streams on
// a memory latency, and a tail of half a task is still a small part of
// it. (The tail helper measured 1 MB tasks for every single product:
// only the classifier's split changed, since a layer's products keep at
// least 4 tasks a thread; the classifier's loop 3.5% faster.)
const (
	bigTaskBytes    = 2 << 20
	bigProductBytes = 32 << 20
)

// bigTaskOff makes a classifier's tasks singleTaskBytes too (A/B
// measurements alternate).
var bigTaskOff atomic.Bool

// singleTaskRows is intTaskRows for runGGMLInt: tasks of at most
// singleTaskBytes for one activation row (bigTaskBytes for a product of
// bigProductBytes or more; bqkTaskBytesK for the K types, as before).
func (w *bqWeights) singleTaskRows(p *pool, m int) int {
	if t := p.threads(); t > 1 && m*w.n*w.k >= 1<<16 {
		tb := singleTaskBytes
		if w.n*w.rb >= bigProductBytes && !bigTaskOff.Load() {
			tb = bigTaskBytes
		}
		return w.x16TaskRows(bqkTaskRowsMax(w.n, w.rb, m, t, w.typ.BlockSize() == ggml.QK, tb))
	}
	return w.n
}
