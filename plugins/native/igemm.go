package native

// igemmFn is an indirect micro-kernel (see the package asmgenigemm): one
// h×32 tile of C from A packed for mr 14 (packA) and kc rows of B, row k
// the 32 floats at b + offs[k] bytes; C's columns where mask has a bit.
type igemmFn = func(kc int, a *float32, b *float32, offs *int64, c *float32, ldc int, bias *float32, flags int, mask uint32, lo, hi float32)

// igemmMR and igemmNR are the indirect kernels' tile: A packed for 14
// rows, 32 columns.
const (
	igemmMR = 14
	igemmNR = 32
	igemmKC = 256 // rows of B a pass (32 KiB of B's rows, in L1 across the row tiles)

	// the least work worth a task of the pool: tile-steps (one row tile
	// times one panel times one row of B, about 14 cycles: 1024 are some
	// 5 µs, where a loop on a hot pool costs about 0.5 µs, BenchmarkPoolLoop)
	// and floats of the phase planes' fill. At 4096 UltraFace's 30×40
	// layers (32→64 1×1, 8→16 3×3: 30-50 µs) ran on one thread.
	igemmTaskWork = 1024
	igemmFillWork = 32 << 10
)

// useIndirect: convolutions with a window (not 1×1 at stride 1, not
// depthwise) and constant weights run as an indirect GEMM where the
// kernels exist (a variable: tests and benchmarks compare both paths).
var useIndirect = true

// convIndirect is the layout of a convolution computed as an indirect
// GEMM: each input channel is copied once into sh·sw zero-padded phase
// planes (phase (qy, qx) holds the padded input's rows qy, qy+sh, … and
// columns qx, qx+sw, …), so that in phase coordinates every tap reads a
// window at stride 1. Output row oy then reads, for tap t, the run of a
// phase plane's row oy + ry(t) from column rx(t): B's row (ci, t) for the
// output columns j0… of row oy is the run at ci·ps + taps[t] + oy·wq + j0.
// Nothing is packed (no im2col): the kernel reads those runs in place
// through a table of offsets, and C stays in registers over the whole
// window (the tapped path's per-tap passes over C are gone).
//
// wide: the output is computed as oh rows of wq columns (the wq − ow
// past each row discarded) into a scratch C, then copied out, when that
// costs less than rounding each output row up to whole 32-column panels,
// which are otherwise written straight into the output (the last one of
// a row under a mask). Yunet's first layer (ow 80, 27 rows of B): rows,
// whose 20% more columns cost less than the copy; UltraFace's dilated
// 3×3s over 16 channels at ow 40: wide.
type convIndirect struct {
	hq, wq int     // rows and columns of one phase plane
	ps     int     // floats of one channel's phase planes (sh·sw·hq·wq)
	taps   []int   // per tap (ky·kw+kx): its offset in a channel's planes
	offs   []int64 // per row of B (ci·taps + t): (ci·ps + taps[t]) bytes
	wide   bool
	ncols  int // wide: columns of C (oh·wq rounded up to whole panels); else oh·ppr·32
	ppr    int // panels an output row (not wide)
}

func newConvIndirect(g *geom, cg int) *convIndirect {
	il := &convIndirect{hq: g.oh + (g.kh-1)*g.dh/g.sh, wq: g.ow + (g.kw-1)*g.dw/g.sw}
	il.ps = g.sh * g.sw * il.hq * il.wq
	for ky := 0; ky < g.kh; ky++ {
		for kx := 0; kx < g.kw; kx++ {
			qy, ry := ky*g.dh%g.sh, ky*g.dh/g.sh
			qx, rx := kx*g.dw%g.sw, kx*g.dw/g.sw
			il.taps = append(il.taps, (qy*g.sw+qx)*il.hq*il.wq+ry*il.wq+rx)
		}
	}
	il.offs = make([]int64, 0, cg*len(il.taps))
	for ci := 0; ci < cg; ci++ {
		for _, t := range il.taps {
			il.offs = append(il.offs, int64(4*(ci*il.ps+t)))
		}
	}
	il.ppr = panelsOf(g.ow, igemmNR)
	// cost in steps of B's rows a column: wide computes wq columns a row
	// and copies ow (about ten steps each), rows computes whole panels
	kk := cg * len(il.taps)
	il.wide = il.ppr*igemmNR*kk > il.wq*kk+10*g.ow
	if il.wide {
		il.ncols = panelsOf(g.oh*il.wq, igemmNR) * igemmNR
	} else {
		il.ncols = g.oh * il.ppr * igemmNR
	}
	return il
}

// beatsTransposed: over few output positions (useTransposed) the
// indirect GEMM still wins where its tiles (panels × row tiles) are no
// more than the transposed GEMM's, which also copies a window of kk
// floats for every position (UltraFace's 256→16 3×3 heads at 4×5: one
// panel of wide rows, two row tiles, against two tiles and 20 windows).
func (il *convIndirect) beatsTransposed(kern *microKernel, per, cout, ohw int) bool {
	return il.ncols/igemmNR*panelsOf(per, igemmMR) <= panelsOf(ohw, kern.mr)*panelsOf(cout, kern.nr)
}

// planesLen is the floats the phase planes of cg channels take, with the
// slack the kernels read past the last one (into discarded columns).
func (il *convIndirect) planesLen(cg int) int { return cg*il.ps + il.wq + 2*igemmNR }

// fill copies channel x (ih×iw) into its phase planes dst (ps floats),
// zero where the windows read padding.
func (il *convIndirect) fill(g *geom, x, dst []float32) { il.fillRows(g, x, dst, 0, il.hq) }

// fillRows is fill for rows [r0, r1) of every phase plane.
func (il *convIndirect) fillRows(g *geom, x, dst []float32, r0, r1 int) {
	sh, sw, wq := g.sh, g.sw, il.wq
	pp := il.hq * wq
	for qy := 0; qy < sh; qy++ {
		for r := r0; r < r1; r++ {
			iy := r*sh + qy - g.pt
			if uint(iy) >= uint(g.ih) {
				for qx := 0; qx < sw; qx++ {
					o := (qy*sw+qx)*pp + r*wq
					clear(dst[o : o+wq])
				}
				continue
			}
			src := x[iy*g.iw : (iy+1)*g.iw]
			switch sw {
			case 1:
				row := dst[qy*pp+r*wq : qy*pp+(r+1)*wq]
				ja := min(g.pl, wq)
				clear(row[:ja])
				n := copy(row[ja:], src)
				clear(row[ja+n:])
			case 2:
				// input columns 2j+e (e = 0, 1) go to phase (e+pl)%2 at
				// column j + (e+pl)/2
				var rows [2][]float32
				var off, cnt [2]int
				for e := 0; e < 2; e++ {
					q := (e + g.pl) % 2
					o := (qy*sw+q)*pp + r*wq
					rows[e] = dst[o : o+wq]
					off[e] = min((e+g.pl)/2, wq)
					cnt[e] = max(0, min((g.iw-e+1)/2, wq-off[e]))
				}
				ev, od := rows[0][off[0]:off[0]+cnt[0]], rows[1][off[1]:off[1]+cnt[1]]
				nv := min(cnt[0], cnt[1])
				deinterleave2(nv, src, ev, od)
				for j := nv; j < len(ev); j++ {
					ev[j] = src[2*j]
				}
				for j := nv; j < len(od); j++ {
					od[j] = src[2*j+1]
				}
				for e := 0; e < 2; e++ {
					clear(rows[e][:off[e]])
					clear(rows[e][off[e]+cnt[e]:])
				}
			default:
				for qx := 0; qx < sw; qx++ {
					o := (qy*sw+qx)*pp + r*wq
					row := dst[o : o+wq]
					for c := range row {
						ix := c*sw + qx - g.pl
						if uint(ix) < uint(g.iw) {
							row[c] = src[ix]
						} else {
							row[c] = 0
						}
					}
				}
			}
		}
	}
}

// indTask is the indirect convolution's loop over panels of columns
// (parallelFor).
type indTask struct {
	p              *convPlan
	il             *convIndirect
	g              *geom
	a, planes, c   []float32 // c: the wide scratch, or the group's output
	bias           []float32
	tiles          []igemmTile
	per, kk, tasks int
	np             int
}

// runIndirect computes the convolution through the indirect kernels
// (convIndirect). Constant weights, packed for mr 14.
func (p *convPlan) runIndirect(bc *buildCtx, cs *convShape, X, Y []float32, batch int) {
	il, g := cs.ind, &cs.g
	cg, per := p.cin/p.group, p.cout/p.group
	kk := cg * len(il.taps)
	wa, gs, tiles := p.igemmWeights(per, kk)
	hw, ohw := cs.ih*cs.iw, g.oh*g.ow
	psc := p.planeSS.of(il.planesLen(cg))
	pbuf := psc.get()
	defer psc.put(pbuf)
	planes := *pbuf
	// the slack is read (into discarded columns) but never written
	clear(planes[cg*il.ps:])
	var cw []float32
	if il.wide {
		wsc := p.wideSS.of(per * il.ncols)
		wbuf := wsc.get()
		defer wsc.put(wbuf)
		cw = *wbuf
	}
	threads := bc.pool.threads()
	np := il.ncols / igemmNR
	// tasks of at least igemmTaskWork tile-steps (as gemm's splitGrid:
	// a small convolution is not worth the pool's hand-offs), a few a
	// thread; the planes' fill split only when it copies enough
	tasks := min(np, 4*threads, max(1, len(tiles)*np*kk/igemmTaskWork))
	fills := min(cg, 4*threads, max(1, cg*il.ps/igemmFillWork))
	if threads == 1 {
		tasks, fills = 1, 1
	}
	for b := 0; b < batch; b++ {
		for gi := 0; gi < p.group; gi++ {
			xs := X[(b*p.cin+gi*cg)*hw : (b*p.cin+(gi+1)*cg)*hw]
			if bands := il.fillBands(threads, tasks, np, fills, cg); bands > 0 {
				parallelFor(bc.pool, bands, indFill{il, g, xs, planes, hw, cg, tasks}, indFill.runBand) // thr_bands.go
			} else {
				parallelFor(bc.pool, fills, indFill{il, g, xs, planes, hw, cg, fills}, func(a indFill, t int) {
					for ci := a.cg * t / a.chunks; ci < a.cg*(t+1)/a.chunks; ci++ {
						a.il.fill(a.g, a.xs[ci*a.hw:(ci+1)*a.hw], a.planes[ci*a.il.ps:(ci+1)*a.il.ps])
					}
				})
			}
			yg := Y[(b*p.cout+gi*per)*ohw : (b*p.cout+(gi+1)*per)*ohw]
			c := yg
			if il.wide {
				c = cw
			}
			parallelFor(bc.pool, tasks, indTask{p, il, g, wa[gi*gs:], planes, c, p.bias[gi*p.biasStride:], tiles, per, kk, tasks, np},
				func(a indTask, t int) { a.run(t) })
			if il.wide {
				// the output's columns out of the wide rows
				copies := 1
				if threads > 1 {
					copies = min(per, 2*threads, max(1, per*ohw/igemmFillWork))
				}
				if bands := il.fillBands(threads, tasks, np, copies, per); bands > 0 {
					parallelFor(bc.pool, bands, indCopy{il, g, cw, yg, per, bands}, indCopy.runBand) // thr_bands.go
				} else {
					parallelFor(bc.pool, copies, indCopy{il, g, cw, yg, per, copies}, func(a indCopy, t int) {
						ohw := a.g.oh * a.g.ow
						for co := a.per * t / a.tasks; co < a.per*(t+1)/a.tasks; co++ {
							src, dst := a.cw[co*a.il.ncols:], a.y[co*ohw:(co+1)*ohw]
							for oy := 0; oy < a.g.oh; oy++ {
								copy(dst[oy*a.g.ow:(oy+1)*a.g.ow], src[oy*a.il.wq:oy*a.il.wq+a.g.ow])
							}
						}
					})
				}
			}
		}
	}
}

// indCopy is the wide rows' copy into the output over channels
// (parallelFor).
type indCopy struct {
	il         *convIndirect
	g          *geom
	cw, y      []float32
	per, tasks int
}

// indFill is the phase planes' fill over channels (parallelFor).
type indFill struct {
	il             *convIndirect
	g              *geom
	xs, planes     []float32
	hw, cg, chunks int
}

// run computes task t's panels: for each, B's rows a pass of igemmKC at
// a time over every row tile.
func (a indTask) run(t int) {
	il, g, p := a.il, a.g, a.p
	kern := igemmKernels
	q0, q1 := a.np*t/a.tasks, a.np*(t+1)/a.tasks
	ohw := g.oh * g.ow
	for q := q0; q < q1; q++ {
		var bcol int
		var c []float32
		ldc, mask := il.ncols, ^uint32(0)
		if il.wide {
			bcol, c = q*igemmNR, a.c[q*igemmNR:]
		} else {
			oy, ox0 := q/il.ppr, q%il.ppr*igemmNR
			bcol, c, ldc = oy*il.wq+ox0, a.c[oy*g.ow+ox0:], ohw
			if w := g.ow - ox0; w < igemmNR {
				mask = 1<<w - 1
			}
		}
		bp := &a.planes[bcol]
		for pc := 0; pc < a.kk; pc += igemmKC {
			n := min(igemmKC, a.kk-pc)
			flags := initRowBias
			if pc > 0 {
				flags = initC
			}
			if pc+n >= a.kk && p.clamp {
				flags |= flagClamp
			}
			for j, tl := range a.tiles {
				kern[tl.h](n, &a.a[j*igemmMR*a.kk+pc*igemmMR], bp, &il.offs[pc], &c[tl.i0*ldc], ldc, &a.bias[tl.i0], flags, mask, p.lo, p.hi)
			}
		}
	}
}

// igemmTile is one row tile of the indirect GEMM: rows [i0, i0+h).
type igemmTile struct{ i0, h int }

// igemmTiles splits m rows into the fewest tiles of at most igemmMR,
// balanced (heights differ by one at most): 16 output channels as 8 + 8,
// not 14 + 2, whose 2-row kernel (four accumulators) waits on its FMAs'
// latency at half the FMA rate.
func igemmTiles(m int) []igemmTile {
	t := panelsOf(m, igemmMR)
	ts := make([]igemmTile, t)
	i0 := 0
	for j := range ts {
		h := m / t
		if j < m%t {
			h++
		}
		ts[j] = igemmTile{i0, h}
		i0 += h
	}
	return ts
}

// igemmWeights returns the constant weights packed for the indirect
// kernels, once: each group's rows in balanced tiles (igemmTiles), tile
// j at j·14·kk with its k-th column as 14 floats (the rows past its
// height zero), the floats between groups, and the tiles.
func (p *convPlan) igemmWeights(per, kk int) ([]float32, int, []igemmTile) {
	p.igOnce.Do(func() {
		p.igTiles = igemmTiles(per)
		p.igStride = len(p.igTiles) * igemmMR * kk
		p.igW = make([]float32, p.igStride*p.group)
		for gi := 0; gi < p.group; gi++ {
			w := p.w[gi*per*kk:]
			for j, tl := range p.igTiles {
				dst := p.igW[gi*p.igStride+j*igemmMR*kk:]
				for i := 0; i < tl.h; i++ {
					row := w[(tl.i0+i)*kk : (tl.i0+i+1)*kk]
					for k, v := range row {
						dst[k*igemmMR+i] = v
					}
				}
			}
		}
	})
	return p.igW, p.igStride, p.igTiles
}
