//go:generate go run ./internal/asmgenq40 -out qgemm_q40_amd64.s -stubs qgemm_q40_stubs_amd64.go -pkg native

package native

import (
	"sync"
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/ggml"
)

// runGEMMQ40 is runGEMM for a Q4_0 weight: the panels below from
// q40PanelMinRows rows where there are panel kernels and whole panels
// (16 rows or more; false: the single-row kernels take the product).
func (w *bqWeights) runGEMMQ40(p *pool, x, y []float32, m int) bool {
	pf := q40Panels(w.gk.name)
	if pf == nil || m < q40PanelMinRows || w.n < 16 {
		return false
	}
	a := qgemmActs.Get().(*ggml.Act)
	defer qgemmActs.Put(a)
	quantizeGGMLAct(a, x, m, w.k, 32)
	w.runPanelsQ40(p, pf, a, y, m)
	return true
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
// than the single-row kernels row after row (BenchmarkQ40Panels, one
// thread, CPU time: K 2048 × N 8192 at 2 rows 0.35-0.42 ms against 0.78
// row after row; at 5 rows 0.51-0.62 against 1.36-1.41 on the 8×16
// tiles that preceded the panels): a panel's weights are read from
// memory once, prefetched, for all the rows.
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
