//go:generate go run ./internal/asmgenq40 -out qgemm_q40_amd64.s -stubs qgemm_q40_stubs_amd64.go -pkg native

package native

import (
	"sync"
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/ggml"
)

// Q4_0's GEMM: the panels below from q40PanelMinRows rows; the tiles
// here where the panels are off (q40PanelsOn: the benchmarks compare).
// Q4_0's arithmetic is llama.cpp's repacked one (core/ggml's
// Dot: per block the exact int32 sum of its 32 products, converted, and
// added times float32(d_w·d_a) into one float32 accumulator by a fused
// multiply-add), so a tile needs each output's block sum in one lane.
// The tiles (internal/asmgenq40) put the activation rows across the
// lanes: 8 weight rows × L activation rows (L = 16 on ZMM, 8 on YMM),
// each weight row's bytes broadcast to every lane and multiplied with the
// interleaved activations by VPDPBUSD, eight a block, leaving lane i the
// block's sum for row i; one conversion and one fused multiply-add a
// block an output. Every output has the bits of core/ggml's Dot (and of
// the single-row kernels).
//
// The packed activations (packQ40), per group of L rows (a last group
// completed with zero rows), per block: for each group of four elements
// g (0..7), the L rows' four int8 values (4L bytes); the L rows' −8·Σq
// (int32: the offset 8 of the weights' nibbles taken off); their scales
// d_a (float32): 10·L words a block.

// q40Fn is a Q4_0 tile: nb blocks of 8 weight rows ldw bytes apart at w,
// an interleaved group at a; output (n, i) to y + i·ldy + 4n bytes for
// i < r.
type q40Fn = func(nb int, w *uint8, ldw int, a *int8, y *float32, ldy int, r int)

// q40MinRows is the fewest rows the tiles take: a weight row's unpacking
// (twelve instructions a block) is shared by a group's lanes, so for two
// or three rows the single-row kernels, row after row on weights then in
// the cache, cost less (BenchmarkQGEMM: 8 lanes cost about as much as 2
// rows on those).
const q40MinRows = 4

// q40Group is one group of packed rows: rows r0..r0+R-1 as L lanes at
// word off.
type q40Group struct{ r0, R, L, off int }

// q40Pack is one call's packed activations.
type q40Pack struct {
	buf    []uint32
	groups []q40Group
}

var q40Packs = sync.Pool{New: func() any { return new(q40Pack) }}

// q40Lanes is the lanes of the group of rows that starts with rem rows
// left: 16 while more than 8 remain, then 8.
func q40Lanes(rem int) int {
	if rem > 8 {
		return 16
	}
	return 8
}

// pack packs rows r0..r1-1 of a (nb blocks a row; a.Sum the blocks'
// sums) in groups.
func (pk *q40Pack) pack(a *ggml.Act, r0, r1, nb int) {
	pk.groups = pk.groups[:0]
	words := 0
	for g := r0; g < r1; {
		L := q40Lanes(r1 - g)
		R := min(L, r1-g)
		pk.groups = append(pk.groups, q40Group{r0: g, R: R, L: L, off: words})
		words += 10 * L * nb
		g += R
	}
	pk.buf = growT(pk.buf, words)
	for _, gr := range pk.groups {
		L := gr.L
		for b := 0; b < nb; b++ {
			o := gr.off + 10*L*b
			s := pk.buf[o : o+10*L]
			for i := 0; i < L; i++ {
				if i >= gr.R {
					for g := 0; g < 10; g++ {
						s[g*L+i] = 0
					}
					continue
				}
				ab := (gr.r0+i)*nb + b
				q := a.Q[ab*32 : ab*32+32]
				for g := 0; g < 8; g++ {
					s[g*L+i] = *(*uint32)(unsafe.Pointer(&q[4*g]))
				}
				s[8*L+i] = uint32(-8 * a.Sum[ab])
				s[9*L+i] = *(*uint32)(unsafe.Pointer(&a.D[ab]))
			}
		}
	}
}

// q40Job is one Q4_0 GEMM call's arguments for parallelFor.
type q40Job struct {
	w       *bqWeights
	a       *ggml.Act
	pk      *q40Pack
	f16, f8 q40Fn
	y       []float32
	r0, r1  int
	per     int
}

// runGEMMQ40 is runGEMM for a Q4_0 weight (false: no tiles here).
func (w *bqWeights) runGEMMQ40(p *pool, x, y []float32, m int) bool {
	f16, f8 := q40Tiles(w.gk.name)
	pf := q40Panels(w.gk.name)
	if m < q40PanelMinRows || w.n < 16 {
		pf = nil
	}
	if pf == nil && (f16 == nil || m < q40MinRows) {
		return false
	}
	a := qgemmActs.Get().(*ggml.Act)
	defer qgemmActs.Put(a)
	K := w.k
	nb := K / 32
	quantizeGGMLAct(a, x, m, K, 32)
	if pf != nil {
		w.runPanelsQ40(p, pf, a, y, m)
		return true
	}
	pk := q40Packs.Get().(*q40Pack)
	defer q40Packs.Put(pk)
	// rows a pass: their packed blocks within qgemmChunkBytes (40
	// bytes a row a block), whole groups of 16
	chunk := max(16, qgemmChunkBytes/(40*nb)/16*16)
	j := q40Job{w: w, a: a, pk: pk, f16: f16, f8: f8, y: y, per: w.n}
	if t := p.threads(); t > 1 && m*w.n*K >= 1<<16 {
		j.per = ((w.n+2*t-1)/(2*t) + 7) &^ 7
	}
	for r0 := 0; r0 < m; r0 += chunk {
		j.r0, j.r1 = r0, min(m, r0+chunk)
		pk.pack(a, j.r0, j.r1, nb)
		parallelFor(p, (w.n+j.per-1)/j.per, j, func(j q40Job, t int) {
			j.w.gemmRowsQ40(j, t*j.per, min(j.w.n, (t+1)*j.per))
		})
	}
	return true
}

// gemmRowsQ40 computes outputs n0..n1-1 of the job's rows.
func (w *bqWeights) gemmRowsQ40(j q40Job, n0, n1 int) {
	N, nb := w.n, w.k/32
	n := n0
	for ; n+8 <= n1; n += 8 {
		rows := w.raw[n*w.rb : (n+8)*w.rb]
		for _, gr := range j.pk.groups {
			words := 10 * gr.L * nb
			a := unsafe.Slice((*int8)(unsafe.Pointer(&j.pk.buf[gr.off])), 4*words)
			y := j.y[gr.r0*N+n : (gr.r0+gr.R-1)*N+n+8]
			f := j.f16
			if gr.L == 8 {
				f = j.f8
			}
			f(nb, &rows[0], w.rb, &a[0], &y[0], 4*N, gr.R)
		}
	}
	for ; n < n1; n++ {
		for r := j.r0; r < j.r1; r++ {
			j.y[r*N+n] = w.gk.dot(w, n, j.a, r)
		}
	}
}

// The panels: for a product of several activation rows (a prompt's
// prefill, a batched decode step: q40PanelMinRows or more), each thread packs 16 weight rows
// at a time into a panel in the x16 layout (blockquant_x16q40.go: per
// block the 16 rows' scales, then four vectors whose dword lane i is row
// i's quant bytes 4t..4t+3) and multiplies it by every activation row:
// the weight rows are the lanes (internal/asmgenq40's panel kernels),
// each activation dword is broadcast from memory into VPDPBUSD, a
// block's weights are unpacked once for up to 16 activation rows
// (instead of once per weight row and group of rows, as the tiles above
// must), and each output's block sum is one lane's (core/ggml's Dot's
// steps, to the bit). The panel (288 bytes a block) stays in the L1 or
// L2 cache while the activation rows stream past it; packing it costs a
// few cycles a block against 8·M VPDPBUSD.
//
// The activations are packed per group of R ≤ 16 rows, per block: the R
// rows' 32 int8 values, then their R corrections −8·Σq (int32), then
// their R scales d_a (float32): 40·R bytes.

// q40PanelMinRows is the fewest activation rows that take the panels (a
// variable: the benchmarks move it). From two rows on they cost less
// than the tiles and than the single-row kernels row after row
// (BenchmarkQ40Panels, one thread, CPU time: K 2048 × N 8192 at 2 rows
// 0.35-0.42 ms against 0.78 row after row; 5 rows 0.51-0.62 against
// 1.36-1.41 on the tiles): a panel's weights are read from memory once,
// prefetched, for all the rows.
var q40PanelMinRows = 2

// q40PanelFns are the panel kernels (pack, and the products of 1 to 16
// activation rows: kern[R-1]).
type q40PanelFns struct {
	pack func(nb int, w *uint8, ldw int, dst *uint8)
	kern [16]func(nb int, w *uint8, a *int8, y *float32, ldy int, pf uintptr, pfn int)
}

// q40PfGroups is the most activation groups whose kernels prefetch the
// next panel (from the last back): five cover its 4.5 lines a block at
// one line a block each.
const q40PfGroups = 5

// q40PanelAct is one call's activations packed for the panel kernels.
type q40PanelAct struct{ buf []byte }

var (
	q40PanelActs = sync.Pool{New: func() any { return new(q40PanelAct) }}
	q40PanelBufs = sync.Pool{New: func() any { return new(q40PanelAct) }}
)

// pack packs the m rows of a (nb blocks a row) in groups of 16.
func (pa *q40PanelAct) pack(a *ggml.Act, m, nb int) {
	pa.buf = growT(pa.buf, 40*m*nb)
	o := 0
	for g := 0; g < m; g += 16 {
		R := min(16, m-g)
		for b := 0; b < nb; b++ {
			blk := pa.buf[o : o+40*R]
			for k := 0; k < R; k++ {
				ab := (g+k)*nb + b
				copy(blk[32*k:32*k+32], unsafe.Slice((*byte)(unsafe.Pointer(&a.Q[32*ab])), 32))
				*(*int32)(unsafe.Pointer(&blk[32*R+4*k])) = -8 * a.Sum[ab]
				*(*float32)(unsafe.Pointer(&blk[36*R+4*k])) = a.D[ab]
			}
			o += 40 * R
		}
	}
}

// q40PanelJob is one panel product's arguments for parallelFor.
type q40PanelJob struct {
	w    *bqWeights
	fns  *q40PanelFns
	a    *ggml.Act
	pa   *q40PanelAct
	y    []float32
	m    int
	per  int // weight rows a task: a multiple of 16
	tail int // the first row past the last whole panel
}

// runPanelsQ40 computes y [m, n] = a · Wᵀ with the panel kernels.
func (w *bqWeights) runPanelsQ40(p *pool, fns *q40PanelFns, a *ggml.Act, y []float32, m int) {
	nb := w.k / 32
	pa := q40PanelActs.Get().(*q40PanelAct)
	defer q40PanelActs.Put(pa)
	pa.pack(a, m, nb)
	j := q40PanelJob{w: w, fns: fns, a: a, pa: pa, y: y, m: m, per: w.n, tail: w.n &^ 15}
	if t := p.threads(); t > 1 {
		// about four tasks a thread, claimed as threads free up
		j.per = ((w.n+4*t-1)/(4*t) + 15) &^ 15
	}
	parallelFor(p, (w.n+j.per-1)/j.per, j, func(j q40PanelJob, t int) {
		j.w.panelRowsQ40(j, t*j.per, min(j.w.n, (t+1)*j.per))
	})
}

// panelRowsQ40 computes outputs n0..n1-1 (n0 a multiple of 16) of every
// activation row.
func (w *bqWeights) panelRowsQ40(j q40PanelJob, n0, n1 int) {
	N, nb := w.n, w.k/32
	pb := q40PanelBufs.Get().(*q40PanelAct)
	defer q40PanelBufs.Put(pb)
	pb.buf = growT(pb.buf, x16Q40Size(nb))
	n := n0
	for ; n+16 <= n1; n += 16 {
		rows := w.raw[n*w.rb : (n+16)*w.rb]
		j.fns.pack(nb, &rows[0], w.rb, &pb.buf[0])
		// the last q40PfGroups groups' kernels prefetch the next panel's
		// rows (contiguous: 16·rb bytes from rows' end) into the L2
		// cache, pfn lines a block each, a part each: spread over
		// several groups the prefetch asks the memory for a few GB/s,
		// where one group's kernel alone asked for more than two threads
		// get (the earlier groups would see the lines evicted by the
		// activations streaming past where those exceed the cache)
		next := uintptr(unsafe.Pointer(&rows[0])) + uintptr(16*w.rb)
		G := (j.m + 15) / 16
		P := min(G, q40PfGroups)
		lines := (16*w.rb+63)/64 + 1
		pfn := (lines + P*nb - 1) / (P * nb)
		if n+32 > n1 {
			pfn = 0 // the task's last panel
		}
		o := 0
		for g := 0; g < j.m; g += 16 {
			R := min(16, j.m-g)
			y := j.y[g*N+n : (g+R-1)*N+n+16]
			pfg, pfs := uintptr(0), 0
			if i := g/16 - (G - P); i >= 0 && pfn > 0 {
				pfg, pfs = next+uintptr(64*i*pfn*nb), pfn
			}
			j.fns.kern[R-1](nb, &pb.buf[0], (*int8)(unsafe.Pointer(&j.pa.buf[o])), &y[0], 4*N, pfg, pfs)
			o += 40 * R * nb
		}
	}
	for ; n < n1; n++ {
		for r := 0; r < j.m; r++ {
			j.y[r*N+n] = w.gk.dot(w, n, j.a, r)
		}
	}
}

// q40PanelsOn turns the panel kernels on (tests and benchmarks compare
// them with the tiles).
var q40PanelsOn = true
