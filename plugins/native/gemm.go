package native

import "sync"

// The packed GEMM: C (m×n) = A (m×k, row-major, read in place) · B (k×n,
// packed in panels of the micro-kernel's nr columns), with an optional bias
// (per column or per row) and clamp fused into the last pass over k.
//
// Blocking (BLIS order, with A unpacked): for each kc block of k, for each
// mc block of rows, for each nr panel of B (kc·nr floats, kept in L1 while
// the rows of the block stream past it), for each mr tile of rows: one
// micro-kernel call. Threads split the tile grid of C, never k, so no two
// threads write the same element.

// panelsOf is the number of nr-wide panels of n columns.
func panelsOf(n, nr int) int { return (n + nr - 1) / nr }

// packedLen is the length of B (k×n) packed for nr.
func packedLen(k, n, nr int) int { return panelsOf(n, nr) * nr * k }

// packB packs B (k×n) into dst (packedLen(k, n, nr)), reading element
// (kk, j) at src[kk*rs + j*cs]; columns past n are zero.
func packB(dst, src []float32, k, n, nr, rs, cs int) {
	np := panelsOf(n, nr)
	for p := 0; p < np; p++ {
		j0 := p * nr
		w := min(nr, n-j0)
		panel := dst[p*k*nr : (p+1)*k*nr]
		for kk := 0; kk < k; kk++ {
			row := panel[kk*nr : kk*nr+nr]
			if cs == 1 {
				copy(row[:w], src[kk*rs+j0:kk*rs+j0+w])
			} else {
				for j := 0; j < w; j++ {
					row[j] = src[kk*rs+(j0+j)*cs]
				}
			}
			clear(row[w:])
		}
	}
}

// packBRows packs panels [p0, p1) of a row-major B (k×n, rows ldb apart)
// into dst, panel p0 at its start.
func packBRows(dst, src []float32, k, n, nr, ldb, p0, p1 int) {
	for p := p0; p < p1; p++ {
		j0 := p * nr
		w := min(nr, n-j0)
		panel := dst[(p-p0)*k*nr : (p-p0+1)*k*nr]
		if w == nr {
			copyRows(panel, src[j0:], k, nr, ldb)
			continue
		}
		for kk := 0; kk < k; kk++ {
			row := panel[kk*nr : kk*nr+nr]
			copy(row[:w], src[kk*ldb+j0:kk*ldb+j0+w])
			clear(row[w:])
		}
	}
}

// copyRows copies k rows of nr floats, ldb apart in src, to dst one after
// another; the kernels' panel widths as fixed-size copies (inline moves,
// no memmove call per row).
func copyRows(dst, src []float32, k, nr, ldb int) {
	switch nr {
	case 32:
		if k > 0 && copyRows32(dst[:32*k], src[:(k-1)*ldb+32], k, ldb) {
			return
		}
		for kk := 0; kk < k; kk++ {
			*(*[32]float32)(dst[kk*32:]) = *(*[32]float32)(src[kk*ldb:])
		}
	case 16:
		for kk := 0; kk < k; kk++ {
			*(*[16]float32)(dst[kk*16:]) = *(*[16]float32)(src[kk*ldb:])
		}
	default:
		for kk := 0; kk < k; kk++ {
			copy(dst[kk*nr:kk*nr+nr], src[kk*ldb:kk*ldb+nr])
		}
	}
}

// packedALen is the length of A (m×k) packed for mr: whole tiles of mr
// rows.
func packedALen(m, k, mr int) int { return (m + mr - 1) / mr * mr * k }

// packA packs A (m×k, rows lda apart) into dst (packedALen) for a
// kernel's packedA: tile t (rows t·mr to t·mr+mr) at t·mr·k, its k-th
// column as mr consecutive floats (rows past m zero). A block of kc
// columns from pc on is then the tile's floats from pc·mr on, one
// sequential stream, whatever kc.
func packA(dst, src []float32, m, k, lda, mr int) {
	for t := 0; t*mr < m; t++ {
		tile := dst[t*mr*k : (t+1)*mr*k]
		for i := 0; i < mr; i++ {
			r := t*mr + i
			if r >= m {
				for kk := 0; kk < k; kk++ {
					tile[kk*mr+i] = 0
				}
				continue
			}
			row := src[r*lda : r*lda+k]
			for kk, v := range row {
				tile[kk*mr+i] = v
			}
		}
	}
}

// gemmOp is one GEMM call.
type gemmOp struct {
	m, n, k int
	a       []float32 // m rows of k floats, lda apart; or packed by packA when apacked
	lda     int
	apacked bool // a is packed for the kernel's mr (packA; the kernel has packedA)
	// atrans: a is Aᵀ in place, element (i, k) at a[k·lda + i] (read by
	// gemmATKernels: t2c_conv1x1t.go)
	atrans bool
	b      []float32 // packed for the kernel's nr (packedLen(k, n, nr)), or row-major when ldb > 0
	ldb    int       // 0: b is packed; else b is k rows of n floats, ldb apart, read in place
	c      []float32 // m rows of n floats, ldc apart
	ldc    int
	// bias, when biasMode is initColBias or initRowBias: padded to whole
	// panels (columns) or whole mr tiles (rows).
	bias     []float32
	biasMode int
	clamp    bool
	lo, hi   float32
}

// maxMR and maxNR bound the micro-kernels' tiles (scratch sizes).
const (
	maxMR = 16
	maxNR = 32
	maxKC = 256
)

// gemm runs g with kernel kern on the pool.
func gemm(kern *microKernel, p *pool, g *gemmOp) {
	if g.m == 0 || g.n == 0 {
		return
	}
	mt := (g.m + kern.mr - 1) / kern.mr // row tiles
	np := panelsOf(g.n, kern.nr)        // column panels
	colsFirst := g.n > g.m
	tm, tn := splitGrid(mt, np, g.k, p.threads(), colsFirst)
	if tm*tn == 1 {
		gemmBlock(kern, g, 0, g.m, 0, np)
		return
	}
	parallelFor(p, tm*tn, gemmTask{kern, *g, mt, np, tm, tn, colsFirst}, func(a gemmTask, t int) {
		// in the order of the split: column-major when split by columns
		// first (a 1×1 convolution's positions, as the loops before and
		// after it split theirs: see job.work)
		i, j := t/a.tn, t%a.tn
		if a.colsMajor {
			i, j = t%a.tm, t/a.tm
		}
		r0, r1 := a.mt*i/a.tm*a.kern.mr, min(a.mt*(i+1)/a.tm*a.kern.mr, a.g.m)
		p0, p1 := a.np*j/a.tn, a.np*(j+1)/a.tn
		gemmBlock(a.kern, &a.g, r0, r1, p0, p1)
	})
}

// gemmTask is one gemm's split over the pool (parallelFor).
type gemmTask struct {
	kern           *microKernel
	g              gemmOp
	mt, np, tm, tn int
	colsMajor      bool
}

// splitGrid divides the mt×np tile grid of a GEMM over k into tm×tn
// tasks for threads: a few tasks per thread (a preempted thread then
// holds less back), their count a multiple of threads where the grid
// allows (equal tasks end together), rows first (each task then reads
// fewer rows of A), never tasks of less than about gemmTaskWork
// tile-steps (the pool's hand-off costs some µs). Counted in tiles alone
// (64 a task at least), a small layer's GEMM ran on one thread at any
// thread count: UltraFace's 256→256 1×1 at 8×10 and 128→128 at 15×20,
// YOLOX's 512→256 and 256→256 at 13×13.
//
// colsFirst (C has more columns than rows) splits the columns first
// instead: a task then reads all of A and its own columns of B, and B,
// the larger, is read once in all. Split rows first, the tasks of one
// block of columns each read its B anew (from memory where B is larger
// than the caches): UltraFace's 16→32 1×1 at 120×160 (B read in place,
// 1.2 MB) took 134 µs at 1 thread and 183 µs at 2, in 12 tasks of one
// row tile each (BenchmarkGemmThreads, hot pool).
func splitGrid(mt, np, k, threads int, colsFirst bool) (tm, tn int) {
	want := min(threads*4, mt*np*max(k, 1)/gemmTaskWork)
	if threads <= 1 || want < 2 {
		return 1, 1
	}
	if colsFirst {
		tn = min(np, want)
		tm = max(1, min(mt, (want+tn-1)/tn))
		for t := tm; t <= min(mt, tm+threads); t++ {
			if t*tn%threads == 0 {
				return t, tn
			}
		}
		return tm, tn
	}
	tm = min(mt, want)
	tn = max(1, min(np, (want+tm-1)/tm))
	for t := tn; t <= min(np, tn+threads); t++ {
		if tm*t%threads == 0 {
			return tm, t
		}
	}
	return tm, tn
}

// taskGrain is the most tasks a thread that a kernel's loop over many
// equal units (planes, strips, channel blocks) is split into. The pool's
// threads claim tasks one at a time, so a thread that joins a loop late
// (a worker waking or handing over from the last loop) or is preempted
// midway takes fewer of them and the others more: with 4 tasks a thread
// (the earlier split) such a delay held the loop's end back by up to a
// quarter of a thread's share, with 8 by an eighth. A claim costs two
// atomic adds on a line the threads share (some 0.1-0.2 µs between two
// cores), small beside taskMinNS.
const taskGrain = 8

// taskMinNS is the least estimated time worth a task of its own: a loop
// estimated at less than two of them runs on its caller alone (the
// hand-off to a worker and back costs about a µs on a hot pool,
// BenchmarkPoolLoop, and the worker then reads the caller's output from
// the other core's cache).
const taskMinNS = 3000

// splitTasks is the number of tasks a loop of units equal units of about
// unitNS ns each is split into on threads threads: up to taskGrain a
// thread, none under taskMinNS of estimated work, never more than units;
// 1 at one thread.
func splitTasks(threads, units int, unitNS float64) int {
	if threads <= 1 || units <= 1 {
		return 1
	}
	return max(1, min(units, taskGrain*threads, int(float64(units)*unitNS/taskMinNS)))
}

// dwPlaneNS estimates a depthwise plane's time in ns (taps multiply-adds
// over oh×ow outputs read at stride sh×sw): 3×3 planes measured 0.25-0.3
// ns an output at stride 1 (pose_detection's 144×56×56, 480×14×14,
// 1152×7×7 through the row kernels, one thread), 1.1 at stride 2, plus
// about 20 ns a plane.
func dwPlaneNS(g *geom) float64 {
	return 20 + 0.033*float64(g.oh*g.ow*g.kh*g.kw*g.sh*g.sw)
}

// gemmTaskWork is the least work worth a task of the pool, in
// tile-steps (one row tile times one panel times one step of k), as the
// indirect GEMM's igemmTaskWork.
const gemmTaskWork = igemmTaskWork

// gemmScratch is a gemmBlock's scratch: the last, partial row tile of A
// and a partial tile of C. Pooled: as arrays on the stack they would
// escape to the heap through the micro-kernel's function value (18 KiB
// allocated and zeroed per call).
type gemmScratch struct {
	apad [maxMR * maxKC]float32
	tile [maxMR * maxNR]float32
	bpad [maxKC * maxNR]float32 // a partial last panel of an unpacked B
}

var gemmScratches = sync.Pool{New: func() any { return new(gemmScratch) }}

// gemmBlock computes rows [r0, r1) and panels [p0, p1) of C.
func gemmBlock(kern *microKernel, g *gemmOp, r0, r1, p0, p1 int) {
	mr, nr := kern.mr, kern.nr
	gs := gemmScratches.Get().(*gemmScratch)
	defer gemmScratches.Put(gs)
	apad, tile, bpad := gs.apad[:], gs.tile[:], gs.bpad[:]
	k := g.k
	for pc := 0; pc < k || pc == 0; pc += kern.kc {
		kc := min(kern.kc, k-pc)
		flags := g.biasMode
		if pc > 0 {
			flags = initC
		}
		if pc+kc >= k && g.clamp {
			flags |= flagClamp
		}
		for ic := r0; ic < r1; ic += kern.mc {
			ie := min(ic+kern.mc, r1)
			// rows of a partial last tile, copied with zero rows below
			// (unless a kernel of that many rows reads them in place)
			if g.apacked || g.atrans {
				gemmPackedA(kern, g, pc, kc, flags, ic, ie, p0, p1, tile, bpad)
				continue
			}
			full := ie - (ie-ic)%mr
			var tail kernelFn
			if full < ie && ie-full < len(kern.tails) {
				tail = kern.tails[ie-full]
			}
			if full < ie && tail == nil {
				clear(apad[:mr*kc])
				for i := full; i < ie; i++ {
					copy(apad[(i-full)*kc:(i-full)*kc+kc], g.a[i*g.lda+pc:i*g.lda+pc+kc])
				}
			}
			for jp := p0; jp < p1; jp++ {
				j0 := jp * nr
				w := min(nr, g.n-j0)
				bp, ldb := bPanel(g, nr, jp, pc, kc, bpad)
				for i0 := ic; i0 < ie; i0 += mr {
					ap := (*float32)(nil)
					lda := g.lda
					fn, h, tailed := kern.fn, mr, false
					switch {
					case i0 < full:
						ap = aptr(g.a, i0*g.lda+pc)
					case tail != nil:
						ap, fn, h, tailed = aptr(g.a, i0*g.lda+pc), tail, ie-i0, true
					default:
						ap, lda, h = &apad[0], kc, ie-i0
					}
					bias := biasPtr(g, i0, j0)
					if (h == mr || tailed) && w == nr {
						fn(kc, ap, lda, bp, ldb, &g.c[i0*g.ldc+j0], g.ldc, bias, flags, g.lo, g.hi)
						continue
					}
					// partial tile: through the scratch tile
					if flags&3 == initC {
						for i := 0; i < h; i++ {
							copy(tile[i*nr:i*nr+w], g.c[(i0+i)*g.ldc+j0:(i0+i)*g.ldc+j0+w])
						}
					}
					fn(kc, ap, lda, bp, ldb, &tile[0], nr, bias, flags, g.lo, g.hi)
					for i := 0; i < h; i++ {
						copy(g.c[(i0+i)*g.ldc+j0:(i0+i)*g.ldc+j0+w], tile[i*nr:i*nr+w])
					}
				}
			}
		}
	}
}

// bPanel is B's panel jp (nr columns) over rows [pc, pc+kc) and its row
// stride: packed B's panel, B in place for a whole panel, or a partial
// panel of B in place copied into bpad with its columns zero-padded (once
// per panel and row block: few columns); nil when kc is 0.
func bPanel(g *gemmOp, nr, jp, pc, kc int, bpad []float32) (*float32, int) {
	j0 := jp * nr
	w := min(nr, g.n-j0)
	switch {
	case kc == 0:
		return nil, nr
	case g.ldb == 0:
		return &g.b[jp*g.k*nr+pc*nr], nr
	case w == nr:
		return &g.b[pc*g.ldb+j0], g.ldb
	}
	for kk := 0; kk < kc; kk++ {
		row := bpad[kk*nr : kk*nr+nr]
		copy(row[:w], g.b[(pc+kk)*g.ldb+j0:(pc+kk)*g.ldb+j0+w])
		clear(row[w:])
	}
	return &bpad[0], nr
}

// gemmPackedA computes rows [ic, ie) (ic a whole number of tiles) and
// panels [p0, p1) of C over columns [pc, pc+kc) of A, A packed (packA):
// every tile, the last partial one too, read in place by the packedA
// kernel of its height; or A transposed in place (atrans), by the
// gemmATKernels of its height.
func gemmPackedA(kern *microKernel, g *gemmOp, pc, kc, flags, ic, ie, p0, p1 int, tile, bpad []float32) {
	mr, nr, k := kern.mr, kern.nr, g.k
	for jp := p0; jp < p1; jp++ {
		j0 := jp * nr
		w := min(nr, g.n-j0)
		bp, ldb := bPanel(g, nr, jp, pc, kc, bpad)
		for i0 := ic; i0 < ie; i0 += mr {
			h := min(mr, ie-i0)
			fn := kern.packedA[h]
			ap, astep := aptr(g.a, i0*k+pc*mr), mr
			if g.atrans {
				fn, ap, astep = gemmATKernels[h], aptr(g.a, pc*g.lda+i0), g.lda
			}
			bias := biasPtr(g, i0, j0)
			if w == nr {
				fn(kc, ap, astep, bp, ldb, &g.c[i0*g.ldc+j0], g.ldc, bias, flags, g.lo, g.hi)
				continue
			}
			if flags&3 == initC {
				for i := 0; i < h; i++ {
					copy(tile[i*nr:i*nr+w], g.c[(i0+i)*g.ldc+j0:(i0+i)*g.ldc+j0+w])
				}
			}
			fn(kc, ap, astep, bp, ldb, &tile[0], nr, bias, flags, g.lo, g.hi)
			for i := 0; i < h; i++ {
				copy(g.c[(i0+i)*g.ldc+j0:(i0+i)*g.ldc+j0+w], tile[i*nr:i*nr+w])
			}
		}
	}
}

// aptr is &a[off], or nil for an empty A (k == 0 reads nothing).
func aptr(a []float32, off int) *float32 {
	if off >= len(a) {
		return nil
	}
	return &a[off]
}

func biasPtr(g *gemmOp, i0, j0 int) *float32 {
	switch g.biasMode {
	case initColBias:
		return &g.bias[j0]
	case initRowBias:
		return &g.bias[i0]
	}
	return nil
}
