package native

import "golang.org/x/sys/cpu"

// hasQ4decV8: bqkQ4_0Dot8V (Q4_0's eight-row ZMM kernel with a row's
// four blocks in one register: internal/asmgenbqk's q4dec.go) needs
// AVX-512 VBMI (VPERMI2B) and GFNI besides what bqkQ4_0Dot8G needs.
var hasQ4decV8 = cpu.X86.HasAVX512VBMI && cpu.X86.HasAVX512GFNI

// q4decOff turns bqkQ4_0Dot8V off (Dot8G runs; benchmarks alternate).
var q4decOff bool

// q4decDot4n runs the first rows of a Q4_0 dot4n call (n = len(y) rows
// of rb bytes from rows, nb blocks each, against x, xd, xs: Act.Sum)
// through bqkQ4_0Dot8V, which gives bqkQ4_0Dot8G's bits, and returns how
// many it did (n rounded down to a multiple of 8; 0 where the kernel is
// missing or nb is not a multiple of 4). Like newBQK32ZKernel, it cuts
// the rows into eight runs of consecutive rows, a group one row of each,
// so that each row of a group streams its run in order. (Sixteen rows a
// group, which saves another ~12% of the instructions, measured ~9%
// faster on weights in cache but 30-40% slower streaming from memory at
// one thread on Zen 5: sixteen streams a core are too many for the
// prefetchers.)
func q4decDot4n(nb int, rows []byte, rb int, x []int8, xd []float32, xs []int32, y []float32) int {
	s := len(y) / 8
	if !hasQ4decV8 || q4decOff || nb%4 != 0 || s == 0 {
		return 0
	}
	bqkQ4_0Dot8V(nb, &rows[0], s*rb, &x[0], &xd[0], &xs[0], &y[0], s, rb, s)
	return 8 * s
}
