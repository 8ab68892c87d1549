//go:generate go run ./internal/asmgenqgemm -out qgemm_amd64.s -stubs qgemm_stubs_amd64.go -pkg native

package native

import (
	"sync"
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/ggml"
)

// The integer path's GEMM: a BlockQuantMatMul of M ≥ 2 activation rows
// (a prompt's positions in prefill, the active sequences of a batched
// decode step) on a ggml Q4_0, Q5_0 or Q8_0 weight, in tiles of 4 weight
// rows × up to 4 activation rows held in registers (internal/asmgenqgemm:
// AVX-512 VNNI on YMM, the sixteen accumulators in Y16–Y31). The
// activation rows are quantized once (core/ggml's Act, as for one row)
// and packed for the tiles; each weight block is unpacked once for the
// tile's activation rows instead of once per row.
//
// Every output has the bits of the single-row kernel (and of core/ggml's
// Dot): per block the same exact integer lane sums, the same float32
// scale product, conversion, multiplication and addition into the same
// eight accumulators, reduced in the same order. A prompt's last position
// and a sequence decoded beside others get the logits they get alone.
//
// The weight rows are split over the pool's threads (multiples of 4);
// a thread's rows see the activations in chunks that stay in the L2
// cache (qgemmChunkBytes of packed rows).

// qgemmFn is a 4×R tile kernel: nb blocks of four weight rows ldw bytes
// apart at w, R packed activation rows at a; output (n, r) to
// y + r·ldy + 4n bytes.
type qgemmFn = func(nb int, w *uint8, ldw int, a *int8, y *float32, ldy int)

// qgemmChunkBytes bounds the packed activations a tile pass reads.
const qgemmChunkBytes = 512 << 10

// qgemmPack is the packed activations of one call: per group of R ≤ 4
// rows, per block R×32 int8 values, R×8 int32 corrections (−offset·lane
// sum) and R float32 scales, as 4-byte words.
type qgemmPack struct{ buf []uint32 }

var qgemmPacks = sync.Pool{New: func() any { return new(qgemmPack) }}

// qgemmOffset is the value the kernels add to type t's signed quants to
// make them unsigned bytes (the lanes' correction is −offset·Σx).
func qgemmOffset(t ggml.Type) int32 {
	switch t {
	case ggml.Q4_0:
		return 8
	case ggml.Q5_0:
		return 16
	}
	return 128
}

// pack packs rows r0..r1-1 of a (blocks of 32, nb a row) in groups of 4.
func (pk *qgemmPack) pack(a *ggml.Act, r0, r1, nb int, off int32) {
	words := (r1 - r0) * nb * 17
	pk.buf = growT(pk.buf, words)
	bytes := unsafe.Slice((*int8)(unsafe.Pointer(&pk.buf[0])), 4*words)
	o := 0
	for g := r0; g < r1; g += 4 {
		R := min(4, r1-g)
		for b := 0; b < nb; b++ {
			for r := 0; r < R; r++ {
				ab := (g+r)*nb + b
				copy(bytes[4*o+32*r:4*o+32*r+32], a.Q[ab*32:ab*32+32])
				c := pk.buf[o+8*R+8*r : o+8*R+8*r+8]
				for l := range c {
					c[l] = uint32(-off * a.Lanes[ab*8+l])
				}
				pk.buf[o+16*R+r] = *(*uint32)(unsafe.Pointer(&a.D[ab]))
			}
			o += 17 * R
		}
	}
}

// qgemmJob is one GEMM call's arguments for parallelFor.
type qgemmJob struct {
	w      *bqWeights
	a      *ggml.Act
	pk     *qgemmPack
	fns    *[4]qgemmFn
	y      []float32
	r0, r1 int
	per    int
}

// runGEMM computes y [m, n] = x [m, k] · Wᵀ with the tile kernels and
// reports whether it did (false: w has none here; nothing computed).
func (w *bqWeights) runGEMM(p *pool, x, y []float32, m int) bool {
	if m < 2 || w.gk == nil || !bqAsm {
		return false
	}
	fns := qgemmKernels(w.typ, w.gk.name)
	if fns == nil {
		return false
	}
	a := w.acts.Get().(*ggml.Act)
	defer w.acts.Put(a)
	K, nb := w.k, w.k/32
	a.Quantize(x, m, K, 32)
	pk := qgemmPacks.Get().(*qgemmPack)
	defer qgemmPacks.Put(pk)
	chunk := max(4, qgemmChunkBytes/(nb*68)&^3)
	j := qgemmJob{w: w, a: a, pk: pk, fns: fns, y: y, per: w.n}
	if t := p.threads(); t > 1 && m*w.n*K >= 1<<16 {
		j.per = ((w.n+2*t-1)/(2*t) + 3) &^ 3
	}
	for r0 := 0; r0 < m; r0 += chunk {
		j.r0, j.r1 = r0, min(m, r0+chunk)
		pk.pack(a, j.r0, j.r1, nb, qgemmOffset(w.typ))
		parallelFor(p, (w.n+j.per-1)/j.per, j, func(j qgemmJob, t int) {
			j.w.gemmRows(j, t*j.per, min(j.w.n, (t+1)*j.per))
		})
	}
	return true
}

// gemmRows computes outputs n0..n1-1 of the job's rows r0..r1-1.
func (w *bqWeights) gemmRows(j qgemmJob, n0, n1 int) {
	N, nb := w.n, w.k/32
	n := n0
	for ; n+4 <= n1; n += 4 {
		rows := w.raw[n*w.rb : (n+4)*w.rb]
		o := 0
		for g := j.r0; g < j.r1; g += 4 {
			R := min(4, j.r1-g)
			a := unsafe.Slice((*int8)(unsafe.Pointer(&j.pk.buf[o])), 68*R*nb)
			y := j.y[g*N+n : (g+R-1)*N+n+4]
			j.fns[R-1](nb, &rows[0], w.rb, &a[0], &y[0], 4*N)
			o += 17 * R * nb
		}
	}
	for ; n < n1; n++ {
		for r := j.r0; r < j.r1; r++ {
			j.y[r*N+n] = w.gk.dot(w, n, j.a, r)
		}
	}
}
