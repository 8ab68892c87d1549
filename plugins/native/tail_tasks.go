package native

import "github.com/switchyard-hal/switchyard/core/ggml"

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

// singleTaskRows is intTaskRows for runGGMLInt: tasks of at most
// singleTaskBytes for one activation row (bqkTaskBytesK for the K
// types, as before).
func (w *bqWeights) singleTaskRows(p *pool, m int) int {
	if t := p.threads(); t > 1 && m*w.n*w.k >= 1<<16 {
		return w.x16TaskRows(bqkTaskRowsMax(w.n, w.rb, m, t, w.typ.BlockSize() == ggml.QK, singleTaskBytes))
	}
	return w.n
}
