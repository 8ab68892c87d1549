//go:generate go run ./internal/asmgenqgemm -out qgemm_amd64.s -stubs qgemm_stubs_amd64.go -pkg native

package native

import (
	"sync"
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/ggml"
)

// The integer path's GEMM: a BlockQuantMatMul of M ≥ 2 activation rows
// (a prompt's positions in prefill, the active sequences of a batched
// decode step) on a ggml Q5_0, Q8_0, Q4_K or Q6_K weight (Q4_0: its own
// panels, qgemm_q40.go, from 2 rows), in tiles of 4 weight
// rows × up to 8 activation rows held in registers (internal/asmgenqgemm:
// AVX-512 VNNI; the 32-element types' sixteen ZMM accumulators in
// Z16–Z31 hold two activation rows each; the K types' tiles are 4 × 4,
// their scales unpacked in the kernel). The activation rows are quantized
// once (core/ggml's Act, as for one row: quantizeGGMLAct) and packed for
// the tiles; each weight block is unpacked once for the tile's activation
// rows instead of once per row.
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

// qgemmKMinRows is the fewest rows a K-type product takes the tiles for
// (their scales are unpacked in the kernel, block by block: two rows, a
// batched decode step of two sequences, already read each weight once
// instead of twice).
const qgemmKMinRows = 2

// qgemmRows is the most activation rows a 32-element type's tile takes
// (the K types' take 4).
const qgemmRows = 8

// qgemmChunkBytes bounds the packed activations a tile pass reads.
const qgemmChunkBytes = 512 << 10

// qgemmPack is the packed activations of one call: per group of R ≤ 4
// rows, per pair of blocks R×64 int8 values, R×16 int32 corrections
// (−offset·lane sum) and R×2 float32 scales (a last odd block: R×32,
// R×8, R), as 4-byte words (the K types: per
// super-block R×256 values, R×16 int32 sums, R scales).
type qgemmPack struct{ buf []uint32 }

// The scratch of a call (quantized activations, their packing, a
// thread's K-type scales) is shared by all the weights: a prompt's
// products run one after the other and find it in cache, where one
// buffer per weight (168 in a Qwen2.5-0.5B) would be written cold.
var (
	qgemmActs  = sync.Pool{New: func() any { return new(ggml.Act) }}
	qgemmPacks = sync.Pool{New: func() any { return new(qgemmPack) }}
)

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

// pack packs rows r0..r1-1 of a (blocks of 32, nb a row) in groups of
// qgemmRows for the 32-element types' kernels: per group of R rows (P =
// ⌈R/2⌉ pairs, an odd R's last pair completed with a zero row), per
// block, per pair the two rows' 32 values, then per pair their eight
// corrections −off·(lane sum) each, then per pair their scales repeated
// eight times (48·P words a block).
func (pk *qgemmPack) pack(a *ggml.Act, r0, r1, nb int, off int32) {
	words := 0
	for g := r0; g < r1; g += qgemmRows {
		words += 48 * ((min(qgemmRows, r1-g) + 1) / 2) * nb
	}
	pk.buf = growT(pk.buf, words)
	bytes := unsafe.Slice((*int8)(unsafe.Pointer(&pk.buf[0])), 4*words)
	o := 0
	for g := r0; g < r1; g += qgemmRows {
		R := min(qgemmRows, r1-g)
		P := (R + 1) / 2
		for b := 0; b < nb; b++ {
			for r := 0; r < 2*P; r++ {
				qo := 4*o + 32*r
				co := o + 16*P + 8*r
				do := o + 32*P + 8*r
				if r == R {
					clear(bytes[qo : qo+32])
					clear(pk.buf[co : co+8])
					clear(pk.buf[do : do+8])
					continue
				}
				ab := (g+r)*nb + b
				copy(bytes[qo:qo+32], a.Q[ab*32:ab*32+32])
				for l := range 8 {
					pk.buf[co+l] = uint32(-off * a.Lanes[ab*8+l])
				}
				d := *(*uint32)(unsafe.Pointer(&a.D[ab]))
				for l := range 8 {
					pk.buf[do+l] = d
				}
			}
			o += 48 * P
		}
	}
}

// packK packs rows r0..r1-1 of a (super-blocks of 256, nb a row) in
// groups of 4 for type t's kernels (internal/asmgenqgemm's tileKZ): per
// group of R rows, per super-block the R rows' 256 values; Q4_K: their
// eight 32-value sums as int16, row r at bytes 16r of 64; Q6_K: per row
// its sixteen 16-value sums as int16 and 32 zero bytes; then the scales,
// row r's four times at bytes 16r of 64 (rows ≥ R zero).
func (pk *qgemmPack) packK(a *ggml.Act, t ggml.Type, r0, r1, nb int) {
	words := 0
	for g := r0; g < r1; g += 4 {
		words += qgemmKWords(t, min(4, r1-g)) * nb
	}
	pk.buf = growT(pk.buf, words)
	bytes := unsafe.Slice((*int8)(unsafe.Pointer(&pk.buf[0])), 4*words)
	pair := func(lo, hi int32) uint32 { return uint32(uint16(int16(lo))) | uint32(uint16(int16(hi)))<<16 }
	o := 0
	for g := r0; g < r1; g += 4 {
		R := min(4, r1-g)
		for b := 0; b < nb; b++ {
			for r := 0; r < R; r++ {
				ab := (g+r)*nb + b
				copy(bytes[4*o+256*r:4*o+256*r+256], a.Q[ab*256:ab*256+256])
			}
			o += 64 * R
			if t == ggml.Q4_K {
				s := pk.buf[o : o+16]
				clear(s)
				for r := 0; r < R; r++ {
					ab := (g+r)*nb + b
					for i := range 4 {
						s[4*r+i] = pair(a.Sum32[ab*8+2*i], a.Sum32[ab*8+2*i+1])
					}
				}
				o += 16
			} else {
				for r := 0; r < R; r++ {
					ab := (g+r)*nb + b
					s := pk.buf[o : o+16]
					for i := range 8 {
						s[i] = pair(a.Sum[ab*16+2*i], a.Sum[ab*16+2*i+1])
					}
					clear(s[8:])
					o += 16
				}
			}
			d := pk.buf[o : o+16]
			clear(d)
			for r := 0; r < R; r++ {
				v := *(*uint32)(unsafe.Pointer(&a.D[(g+r)*nb+b]))
				d[4*r], d[4*r+1], d[4*r+2], d[4*r+3] = v, v, v, v
			}
			o += 16
		}
	}
}

// qgemmKWords is the packed words of a group of R rows a super-block.
func qgemmKWords(t ggml.Type, R int) int {
	if t == ggml.Q4_K {
		return 64*R + 32
	}
	return 80*R + 16
}

// qgemmJob is one GEMM call's arguments for parallelFor.
type qgemmJob struct {
	w      *bqWeights
	a      *ggml.Act
	pk     *qgemmPack
	fns    *[qgemmRows]qgemmFn
	kfns   *[4]qgemmFn
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
	if w.typ == ggml.Q4_0 {
		return w.runGEMMQ40(p, x, y, m) // qgemm_q40.go
	}
	if w.runFew(p, x, y, m) { // a batched decode step's few rows (blockquant_few_amd64.go)
		return true
	}
	fns, kfns := qgemmKernels(w.typ, w.gk.name)
	if fns == nil && (kfns == nil || m < qgemmKMinRows) {
		return false
	}
	a := qgemmActs.Get().(*ggml.Act)
	defer qgemmActs.Put(a)
	K, be := w.k, ggml.ActBlock(w.typ)
	nb := K / be
	quantizeGGMLAct(a, x, m, K, be)
	pk := qgemmPacks.Get().(*qgemmPack)
	defer qgemmPacks.Put(pk)
	chunk := max(qgemmRows, qgemmChunkBytes/(nb*96*be/32)/qgemmRows*qgemmRows)
	j := qgemmJob{w: w, a: a, fns: fns, kfns: kfns, y: y, per: w.n}
	if t := p.threads(); t > 1 && m*w.n*K >= 1<<16 {
		j.per = ((w.n+2*t-1)/(2*t) + 3) &^ 3
	}
	for r0 := 0; r0 < m; r0 += chunk {
		j.r0, j.r1 = r0, min(m, r0+chunk)
		if kfns != nil {
			pk.packK(a, w.typ, j.r0, j.r1, nb)
		} else {
			pk.pack(a, j.r0, j.r1, nb, qgemmOffset(w.typ))
		}
		j.pk = pk
		parallelFor(p, (w.n+j.per-1)/j.per, j, func(j qgemmJob, t int) {
			j.w.gemmRows(j, t*j.per, min(j.w.n, (t+1)*j.per))
		})
	}
	return true
}

// gemmRows computes outputs n0..n1-1 of the job's rows r0..r1-1.
func (w *bqWeights) gemmRows(j qgemmJob, n0, n1 int) {
	if j.kfns != nil {
		w.gemmRowsK(j, n0, n1)
		return
	}
	N, nb := w.n, w.k/32
	n := n0
	for ; n+4 <= n1; n += 4 {
		rows := w.raw[n*w.rb : (n+4)*w.rb]
		o := 0
		for g := j.r0; g < j.r1; g += qgemmRows {
			R := min(qgemmRows, j.r1-g)
			words := 48 * ((R + 1) / 2) * nb
			a := unsafe.Slice((*int8)(unsafe.Pointer(&j.pk.buf[o])), 4*words)
			y := j.y[g*N+n : (g+R-1)*N+n+4]
			j.fns[R-1](nb, &rows[0], w.rb, &a[0], &y[0], 4*N)
			o += words
		}
	}
	for ; n < n1; n++ {
		for r := j.r0; r < j.r1; r++ {
			j.y[r*N+n] = w.gk.dot(w, n, j.a, r)
		}
	}
}

// gemmRowsK is gemmRows for a K type.
func (w *bqWeights) gemmRowsK(j qgemmJob, n0, n1 int) {
	N, nb := w.n, w.k/256
	n := n0
	for ; n+4 <= n1; n += 4 {
		rows := w.raw[n*w.rb : (n+4)*w.rb]
		o := 0
		for g := j.r0; g < j.r1; g += 4 {
			R := min(4, j.r1-g)
			words := qgemmKWords(w.typ, R) * nb
			a := unsafe.Slice((*int8)(unsafe.Pointer(&j.pk.buf[o])), 4*words)
			y := j.y[g*N+n : (g+R-1)*N+n+4]
			j.kfns[R-1](nb, &rows[0], w.rb, &a[0], &y[0], 4*N)
			o += words
		}
	}
	for ; n < n1; n++ {
		for r := j.r0; r < j.r1; r++ {
			j.y[r*N+n] = w.gk.dot(w, n, j.a, r)
		}
	}
}
