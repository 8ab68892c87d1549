package native

import (
	"os"

	"github.com/switchyard-hal/switchyard/core/ggml"
)

// The x16 layout: on the integer path, where the CPU has AVX-512 VNNI
// (x16Usable), a typed weight whose type has an x16Kind keeps a second
// copy of its rows [0, N&^15) repacked at compile into groups of 16
// rows: per block (in order), the 16 rows' data interleaved so that one
// ZMM register holds the same four quant bytes of each of the 16 rows
// (dword lane i: row i), and one VPDPBUSD with an activation dword
// broadcast from memory multiplies 16 rows at once; the 16 rows' float16
// scales are one VCVTPH2PS. Each kind's kernel computes core/ggml's Dot
// to the bit for every row (the lanes are rows, so each row's sums keep
// Dot's order). llama.cpp repacks Q4_0 the same way (block_q4_0x8), for
// the same reason: in ggml's layout each row and block costs an unpack, a
// scale broadcast and a reduction, and the decode kernels are bound by
// that, not by memory. The rows past the last whole group (N%16) keep the
// kernels of the raw layout.

// x16Kind is one ggml type's x16 layout and kernel. Each type's file
// adds its kind to x16Kinds in an init, only where this CPU can run its
// gemv (past what x16Usable already requires: AVX-512 F, BW, VL, VNNI
// and F16C on amd64; no kinds elsewhere).
type x16Kind struct {
	// size is the bytes of one group of 16 rows of nb blocks.
	size func(nb int) int
	// repack writes one group: the 16 raw rows of rb bytes at raw (each
	// nb blocks in ggml's layout) into dst (size(nb) bytes).
	repack func(dst, raw []byte, rb, nb int)
	// gemv computes, for ng consecutive groups at packed, core/ggml's
	// Dot of each of their 16·ng rows with activation row r of a into
	// y[0:16·ng] (group g's row i into y[16g+i]).
	gemv func(packed []byte, nb, ng int, a *ggml.Act, r int, y []float32)
	// gemm, optional, is gemv for nr activation rows r..r+nr−1 (nr 1 to
	// x16GemmRows) sharing each block's unpacked weights, row r+k's
	// outputs at y[k·ldy:]. A kind with it takes products of several
	// activation rows (batched decode, prefill) from the x16 copy; the
	// others keep the raw layout's GEMM for those.
	gemm func(packed []byte, nb, ng int, a *ggml.Act, r, nr int, y []float32, ldy int)
	// gemmMax, when not 0, is the most activation rows of a product that
	// takes gemm: longer ones (prefill) keep the raw layout's GEMM where
	// its tiles are faster for the type (Q5_0, Q6_K: Qwen2.5-0.5B-shape
	// Q4_K_M's 128-token prefill took 644-733 ms through gemm, 551-619
	// through the raw tiles, 2 threads).
	gemmMax int
}

// x16GemmRows is the most activation rows an x16Kind's gemm takes.
const x16GemmRows = 4

// x16Kinds are the x16 kinds by type (filled in init functions).
var x16Kinds = map[ggml.Type]*x16Kind{}

// x16On turns the x16 layout on for weights compiled from now on (tests
// compare both paths). It is off unless SWITCHYARD_NATIVE_X16=1: the
// kernels are about 2.2 times the raw layout's in cache (Q4_0 4864x896,
// one thread), which pays where decode is bound by the kernels' compute
// (two threads sharing one core), but on a machine whose two threads
// have a core each decode is bound by memory: there Llama-3.2-1B-shape
// Q4_0 measured 25.1/24.4 ms a token at 2 threads without the layout and
// 27.7/29.9 with it, its 128-token prefill 602/572 ms against 890/859
// (x16 gemm for every row count), and the repack adds load time and,
// where the raw rows stay in use, resident memory.
var x16On = os.Getenv("SWITCHYARD_NATIVE_X16") == "1"

// x16Weights is a weight's rows [0, n) in the x16 layout.
type x16Weights struct {
	kind   *x16Kind
	buf    []byte
	n      int // rows packed: a multiple of 16
	nb, gs int // blocks a row, bytes a group
}

// initX16 packs w's rows in the x16 layout where its type has a kind, the
// integer path is on (w.gk) and the CPU and the forced kernel family
// (SWITCHYARD_NATIVE_QKERNEL) allow it.
func (w *bqWeights) initX16() {
	w.x16 = nil
	if !x16On || w.gk == nil || w.typ == 0 || w.n < 16 || !x16Usable() {
		return
	}
	kind := x16Kinds[w.typ]
	if kind == nil {
		return
	}
	nb := w.k / w.typ.BlockSize()
	n, gs := w.n&^15, kind.size(nb)
	x := &x16Weights{kind: kind, buf: x16Alloc(n / 16 * gs), n: n, nb: nb, gs: gs}
	for g := 0; g < n/16; g++ {
		kind.repack(x.buf[g*gs:(g+1)*gs], w.raw[16*g*w.rb:16*(g+1)*w.rb], w.rb, nb)
	}
	w.x16 = x
	if kind.gemm != nil {
		// only the tail rows read the raw bytes now (products of
		// several rows too, up to gemmMax: longer ones fault in the
		// pages they read again); a kind without gemm keeps them for the
		// raw layout's GEMM
		x16Release(w.raw[:n*w.rb])
	}
}

// x16Chunk is about how many packed weight bytes a task computes for
// every activation row before going on (they stay in cache for the
// next rows).
const x16Chunk = 32 << 10

// x16Rows computes outputs n0.. of every activation row of a (m rows;
// y is [m, N]) from the x16 copy, as far as it goes (n0 a multiple of 16,
// up to n1), and returns the first output it left to the raw kernels.
func (w *bqWeights) x16Rows(a *ggml.Act, y []float32, m, n0, n1 int) int {
	x := w.x16
	if x == nil || n0 >= x.n {
		return n0
	}
	end := min(n1, x.n) &^ 15
	N, gs := w.n, x.gs
	step := max(1, x16Chunk/gs)
	for n := n0; n < end; {
		ng := min(step, (end-n)/16)
		p := x.buf[n/16*gs : (n/16+ng)*gs]
		for r := 0; r < m; {
			if nr := min(x16GemmRows, m-r); x.kind.gemm != nil && nr > 1 {
				x.kind.gemm(p, x.nb, ng, a, r, nr, y[r*N+n:(r+nr-1)*N+n+16*ng], N)
				r += nr
				continue
			}
			x.kind.gemv(p, x.nb, ng, a, r, y[r*N+n:r*N+n+16*ng])
			r++
		}
		n += 16 * ng
	}
	return max(n0, end)
}

// x16Gemm reports whether w's products of m activation rows are the x16
// copy's (its kind has gemm, for m rows): run takes runGGMLInt for them,
// not the raw layout's GEMM.
func (w *bqWeights) x16Gemm(m int) bool {
	if w.x16 == nil || w.x16.kind.gemm == nil {
		return false
	}
	return w.x16.kind.gemmMax == 0 || m <= w.x16.kind.gemmMax
}

// x16TaskRows rounds a task's rows to whole groups where w has the x16
// layout.
func (w *bqWeights) x16TaskRows(per int) int {
	if w.x16 == nil {
		return per
	}
	return (per + 15) &^ 15
}
