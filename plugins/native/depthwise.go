package native

import "math"

// The depthwise convolution (one kh×kw filter per channel). Each plane is
// first copied into a zero-padded scratch plane — split into sw column
// phases when the column stride sw > 1, so that every tap reads whole
// contiguous vectors — and the output is then computed in tiles of R rows
// × V vectors of 8 columns (dwTile), the accumulators in registers across
// all the taps. The copy costs one read and write of the input; the taps
// then need no bounds checks, no padding cases and no per-tap stores.

// dwLane is the column width of the tile kernels' vectors.
const dwLane = 8

// dwLayout is where the taps of one plane's geometry read.
type dwLayout struct {
	hp, wq int   // rows and columns of one phase of the padded plane
	owv    int   // output columns rounded up to whole vectors
	offs   []int // per tap (ky·kw+kx): its offset in the phase planes
	hiOff  int   // the largest of offs
	ldx    int   // floats between successive output rows' inputs
	direct bool  // owv == ow: tiles write straight into the output
}

func newDWLayout(g *geom) *dwLayout {
	l := &dwLayout{owv: (g.ow + dwLane - 1) / dwLane * dwLane}
	l.hp = (g.oh-1)*g.sh + (g.kh-1)*g.dh + 1
	l.wq = l.owv + (g.kw-1)*g.dw/g.sw
	l.ldx = g.sh * l.wq
	l.direct = l.owv == g.ow
	l.offs = make([]int, 0, g.kh*g.kw)
	for ky := 0; ky < g.kh; ky++ {
		for kx := 0; kx < g.kw; kx++ {
			q, j0 := kx*g.dw%g.sw, kx*g.dw/g.sw
			l.offs = append(l.offs, q*l.hp*l.wq+ky*g.dh*l.wq+j0)
			l.hiOff = max(l.hiOff, l.offs[len(l.offs)-1])
		}
	}
	return l
}

// scratchLen is the floats one plane needs: the phase planes, and an
// output plane of whole vectors unless the tiles write into y.
func (l *dwLayout) scratchLen(g *geom) int {
	n := g.sw * l.hp * l.wq
	if !l.direct {
		n += g.oh * l.owv
	}
	return n
}

// fill copies plane x (ih×iw) into the sw phase planes of buf, zero where
// the windows read padding (or past the input).
func (l *dwLayout) fill(g *geom, x, buf []float32) {
	sw, iw, ih, pt, pl, wq, hp := g.sw, g.iw, g.ih, g.pt, g.pl, l.wq, l.hp
	if sw == 2 {
		l.fill2(g, x, buf)
		return
	}
	for q := 0; q < sw; q++ {
		// columns j of phase q read input column j·sw + q - pl: those in
		// [ja, jb) lie inside the input
		ja := min(max(0, (pl-q+sw-1)/sw), wq)
		jb := ja
		if last := iw - 1 + pl - q; last >= 0 {
			jb = min(max(ja, last/sw+1), wq)
		}
		ix0 := ja*sw + q - pl
		phase := buf[q*hp*wq : (q+1)*hp*wq]
		for r := 0; r < hp; r++ {
			row := phase[r*wq : (r+1)*wq]
			iy := r - pt
			if uint(iy) >= uint(ih) {
				clear(row)
				continue
			}
			src := x[iy*iw : (iy+1)*iw]
			clear(row[:ja])
			clear(row[jb:])
			if jb == ja {
				continue
			}
			dst := row[ja:jb]
			if sw == 1 {
				copy(dst, src[ix0:])
				continue
			}
			s := src[ix0 : ix0+(len(dst)-1)*sw+1]
			for j := range dst {
				dst[j] = s[j*sw]
			}
		}
	}
}

// fill2 is fill for a column stride of 2: input column c goes to phase
// (c+pl)%2 at column (c+pl)/2, so each input row is split into its even
// and odd columns in one pass (deinterleave2) and the two phases' rows
// are zero outside the columns it writes.
func (l *dwLayout) fill2(g *geom, x, buf []float32) {
	iw, ih, pt, pl, wq, hp := g.iw, g.ih, g.pt, g.pl, l.wq, l.hp
	// even input columns (e = 0) and odd ones (e = 1): their phase, their
	// first column there and how many of them fit in wq
	var ph, off, cnt [2]int
	for e := 0; e < 2; e++ {
		ph[e], off[e] = (e+pl)%2, min((e+pl)/2, wq)
		cnt[e] = max(0, min((iw-e+1)/2, wq-off[e]))
	}
	nv := min(cnt[0], cnt[1])
	for r := 0; r < hp; r++ {
		rowE := buf[ph[0]*hp*wq+r*wq : ph[0]*hp*wq+(r+1)*wq]
		rowO := buf[ph[1]*hp*wq+r*wq : ph[1]*hp*wq+(r+1)*wq]
		iy := r - pt
		if uint(iy) >= uint(ih) {
			clear(rowE)
			clear(rowO)
			continue
		}
		src := x[iy*iw : (iy+1)*iw]
		ev, od := rowE[off[0]:off[0]+cnt[0]], rowO[off[1]:off[1]+cnt[1]]
		deinterleave2(nv, src, ev, od)
		for j := nv; j < len(ev); j++ {
			ev[j] = src[2*j]
		}
		for j := nv; j < len(od); j++ {
			od[j] = src[2*j+1]
		}
		clear(rowE[:off[0]])
		clear(rowE[off[0]+cnt[0]:])
		clear(rowO[:off[1]])
		clear(rowO[off[1]+cnt[1]:])
	}
}

// deinterleave2Go is ev[j] = x[2j], od[j] = x[2j+1] for j < n.
func deinterleave2Go(n int, x, ev, od []float32) {
	x, ev, od = x[:2*n], ev[:n], od[:n]
	for j := range ev {
		ev[j], od[j] = x[2*j], x[2*j+1]
	}
}

// depthwise is a Conv with one filter per channel, computed directly.
func depthwise(pl *pool, p *convPlan, cs *convShape, x, y []float32, batch int) {
	if cs.zero != nil {
		depthwise3(pl, p, cs, x, y, batch)
		return
	}
	if cs.packed != nil {
		depthwisePacked(pl, p, cs, x, y, batch)
		return
	}
	planes := batch * p.cin
	chunks := splitTasks(pl.threads(), planes, dwPlaneNS(&cs.g))
	if cs.direct != nil {
		parallelFor(pl, chunks, dwTask{p: p, cs: cs, x: x, y: y, planes: planes, chunks: chunks}, func(a dwTask, t int) {
			g, taps := &a.cs.g, a.cs.g.kh*a.cs.g.kw
			for pi := a.planes * t / a.chunks; pi < a.planes*(t+1)/a.chunks; pi++ {
				ch := pi % a.p.cin
				a.cs.direct.plane(g, a.x, pi*g.ih*g.iw, a.p.w[ch*taps:(ch+1)*taps], a.y[pi*g.oh*g.ow:(pi+1)*g.oh*g.ow], a.p.bias[ch], a.p.clamp, a.p.lo, a.p.hi)
			}
		})
		return
	}
	sc := p.ss.of(cs.layout.scratchLen(&cs.g))
	parallelFor(pl, chunks, dwTask{p: p, cs: cs, x: x, y: y, planes: planes, chunks: chunks, sc: sc}, func(a dwTask, t int) {
		buf := a.sc.get()
		defer a.sc.put(buf)
		g, l, taps := &a.cs.g, a.cs.layout, a.cs.g.kh*a.cs.g.kw
		for pi := a.planes * t / a.chunks; pi < a.planes*(t+1)/a.chunks; pi++ {
			ch := pi % a.p.cin
			yp := a.y[pi*g.oh*g.ow : (pi+1)*g.oh*g.ow]
			l.fill(g, a.x[pi*g.ih*g.iw:(pi+1)*g.ih*g.iw], *buf)
			l.plane(g, *buf, a.p.w[ch*taps:(ch+1)*taps], yp, a.p.bias[ch], a.p.clamp, a.p.lo, a.p.hi)
		}
	})
}

// dwTask is the depthwise loop over planes (parallelFor).
type dwTask struct {
	p              *convPlan
	cs             *convShape
	x, y           []float32
	planes, chunks int
	sc             *scratch
	w              []float32 // the packed path's weights
}

// plane computes one output plane from the filled phase planes in buf.
func (l *dwLayout) plane(g *geom, buf, w, y []float32, bias float32, clampOn bool, lo, hi float32) {
	in := buf[:g.sw*l.hp*l.wq]
	out, ldy := y, g.ow
	if !l.direct {
		out, ldy = buf[len(in):len(in)+g.oh*l.owv], l.owv
	}
	nv := l.owv / dwLane
	for oy := 0; oy < g.oh; {
		R := 1
		switch {
		case g.oh-oy >= 4:
			R = 4
		case g.oh-oy >= 2:
			R = 2
		}
		dwRun(R, nv, l.offs, l.hiOff, w, in[oy*l.ldx:], l.ldx, out[oy*ldy:], ldy, bias, clampOn, lo, hi)
		oy += R
	}
	if !l.direct {
		for oy := 0; oy < g.oh; oy++ {
			copy(y[oy*g.ow:(oy+1)*g.ow], out[oy*l.owv:])
		}
	}
}

// dwTileGo is the portable dwTile: y[r·ldy+j] = clamp(bias + Σ_t w[t] ·
// x[offs[t]+r·ldx+j]) for r < R, j < nt·V·dwLane.
func dwTileGo(R, V, nt int, offs []int, w, x []float32, ldx int, y []float32, ldy int, bias float32, clampOn bool, lo, hi float32) {
	n := V * dwLane
	var acc [8 * dwLane]float32
	for i := 0; i < nt; i++ {
		xi, yi := x[i*n:], y[i*n:]
		for r := 0; r < R; r++ {
			a := acc[:n]
			for j := range a {
				a[j] = bias
			}
			for t, off := range offs {
				wv := w[t]
				src := xi[off+r*ldx : off+r*ldx+n]
				for j, v := range src {
					a[j] += wv * v
				}
			}
			dst := yi[r*ldy : r*ldy+n]
			if clampOn {
				for j, v := range a {
					dst[j] = clamp(v, lo, hi)
				}
			} else {
				copy(dst, a)
			}
		}
	}
}

// dwRun computes nv vectors of R output rows side by side with as few
// tile calls as can be: the widest tiles (V = 8 with AVX-512, else 2 at R = 4 and 4) in one
// call, the rest narrower.
func dwRun(R, nv int, offs []int, hiOff int, w, x []float32, ldx int, y []float32, ldy int, bias float32, clampOn bool, lo, hi float32) {
	V := 4
	switch {
	case hasDW512 && R == 8:
		V = 4 // 8 rows of 32 columns: 16 accumulators
	case hasDW512:
		V = 8 // 64 columns: 4 AVX-512 vectors (at most 16 accumulators)
	case R == 4:
		V = 2
	}
	for v0 := 0; v0 < nv; {
		for V > nv-v0 {
			V /= 2
		}
		nt := (nv - v0) / V
		ox := v0 * dwLane
		dwTile(R, V, nt, offs, hiOff, w, x[ox:], ldx, y[ox:], ldy, bias, clampOn, lo, hi)
		v0 += nt * V
	}
}

// dwTileCheck (hiOff the largest of offs) panics unless the tile's reads and writes lie inside x and
// y (the assembly does not check).
func dwTileCheck(R, V int, offs []int, hiOff int, w, x []float32, ldx int, y []float32, ldy int) {
	n := V * dwLane
	_ = x[hiOff+(R-1)*ldx+n-1]
	_ = y[(R-1)*ldy+n-1]
	_ = w[len(offs)-1]
}

// dwDirect is the depthwise convolution of a column stride of 1 read
// straight from the unpadded input (no copy into padded planes): output
// rows are grouped by the filter rows that fall inside the input (all of
// them in the interior; the taps of the others are left out), output
// columns are tiles of 8, those whose windows reach past a side of the
// input computed with masked loads (dwMask, the lanes outside reading
// zero), the others by the plain tile kernels.
type dwDirect struct {
	ih, iw int
	rows   []dwRows
	cols   []dwCols
}

// dwRows are n output rows from oy whose windows read filter rows
// [kya, kyb) (offs: their taps' offsets from the first of those rows).
type dwRows struct {
	oy, n, kya, kyb int
	offs            []int
	hiOff           int
}

// dwCols is a run of nv tiles of 8 output columns from ox, or a masked
// tile of nv (1 or 2) vectors (edges set: one per row group) storing the
// lanes of smask.
type dwCols struct {
	ox, nv int
	edges  []dwEdge
	smask  *[2 * dwLane]int32
	last   int  // the last lane smask stores
	full   bool // smask stores all 8·nv lanes
}

// dwEdge are the taps of a masked tile for one row group, as (offset,
// tap index) pairs: plain ones, all their lanes inside the input, and
// masked ones with their lanes (mask, 8·nv per tap: -1 inside, 0 outside).
type dwEdge struct {
	plain, masked []int
	mask          []int32
}

func newDWDirect(g *geom) *dwDirect {
	d := &dwDirect{ih: g.ih, iw: g.iw}
	for oy := 0; oy < g.oh; oy++ {
		kya, kyb := g.kh, 0
		for ky := 0; ky < g.kh; ky++ {
			if iy := oy*g.sh - g.pt + ky*g.dh; iy >= 0 && iy < g.ih {
				kya, kyb = min(kya, ky), ky+1
			}
		}
		if kya >= kyb {
			kya, kyb = 0, 0
		}
		if n := len(d.rows); n > 0 && d.rows[n-1].kya == kya && d.rows[n-1].kyb == kyb {
			d.rows[n-1].n++
			continue
		}
		r := dwRows{oy: oy, n: 1, kya: kya, kyb: kyb}
		for ky := kya; ky < kyb; ky++ {
			for kx := 0; kx < g.kw; kx++ {
				r.offs = append(r.offs, (ky-kya)*g.dh*g.iw+kx*g.dw)
				r.hiOff = max(r.hiOff, r.offs[len(r.offs)-1])
			}
		}
		d.rows = append(d.rows, r)
	}
	// valid reports whether every window of the output columns
	// [ox, ox+n) lies inside the input's columns
	valid := func(ox, n int) bool {
		return ox-g.pl >= 0 && ox+n-1-g.pl+(g.kw-1)*g.dw < g.iw
	}
	switch {
	case g.ow >= 2*dwLane:
		// masked tiles of 16 columns at an edge whose windows reach past
		// it, plain vectors between them (the last one overlapping the
		// one before where the width is not whole vectors)
		a, b := 0, g.ow
		if !valid(0, dwLane) {
			d.addMasked(g, 0, 2)
			a = 2 * dwLane
		}
		// (a left tile of the whole width has the right edge's masks too)
		right := !valid(g.ow-dwLane, dwLane) && !(a > 0 && g.ow == 2*dwLane)
		if right {
			b = g.ow - 2*dwLane
		}
		for ox := a; ox < b; ox += dwLane {
			ox = min(ox, b-dwLane)
			if ox < 0 {
				break
			}
			if valid(ox, dwLane) {
				d.addPlain(ox)
			} else {
				d.addMasked(g, ox, 1)
			}
		}
		if right {
			d.addMasked(g, g.ow-2*dwLane, 2)
		}
	case g.ow >= dwLane:
		for ox := 0; ox < g.ow; ox += dwLane {
			ox = min(ox, g.ow-dwLane)
			if valid(ox, dwLane) {
				d.addPlain(ox)
			} else {
				d.addMasked(g, ox, 1)
			}
		}
	case g.ow > 0:
		d.addMasked(g, 0, 1)
	}
	return d
}

// addPlain adds the vector at output column ox to the plain run it
// continues, or starts one.
func (d *dwDirect) addPlain(ox int) {
	if n := len(d.cols); n > 0 && d.cols[n-1].edges == nil && d.cols[n-1].ox+d.cols[n-1].nv*dwLane == ox {
		d.cols[n-1].nv++
		return
	}
	d.cols = append(d.cols, dwCols{ox: ox, nv: 1})
}

// addMasked adds a masked tile of nv vectors at output column ox (its
// stores: the columns below ow).
func (d *dwDirect) addMasked(g *geom, ox, nv int) {
	n := nv * dwLane
	c := dwCols{ox: ox, nv: nv, smask: new([2 * dwLane]int32)}
	for j := 0; j < n && ox+j < g.ow; j++ {
		c.smask[j], c.last = -1, j
	}
	c.full = c.last == n-1
	lanes := make([][]int32, g.kw) // per filter column
	plain := make([]bool, g.kw)
	for kx := range lanes {
		lanes[kx] = make([]int32, n)
		plain[kx] = true
		for j := range lanes[kx] {
			if ix := ox + j - g.pl + kx*g.dw; ix >= 0 && ix < g.iw {
				lanes[kx][j] = -1
			} else {
				plain[kx] = false
			}
		}
	}
	for _, rg := range d.rows {
		var e dwEdge
		for t, off := range rg.offs {
			if kx := t % g.kw; plain[kx] {
				e.plain = append(e.plain, off, t)
			} else {
				e.masked = append(e.masked, off, t)
				e.mask = append(e.mask, lanes[kx]...)
			}
		}
		c.edges = append(c.edges, e)
	}
	d.cols = append(d.cols, c)
}

// plane computes output plane y from the input plane at x[x0:] with the
// filter w (kh·kw taps).
func (d *dwDirect) plane(g *geom, x []float32, x0 int, w, y []float32, bias float32, clampOn bool, lo, hi float32) {
	ldx := g.sh * g.iw
	for ri := range d.rows {
		rg := &d.rows[ri]
		wt := w[rg.kya*g.kw : rg.kyb*g.kw]
		for oy := rg.oy; oy < rg.oy+rg.n; {
			R := 1
			switch left := rg.oy + rg.n - oy; {
			case left >= 8 && hasDW512:
				R = 8 // 8 independent sums a tap in a masked 16-column tile (4 wait on the FMA latency)
			case left >= 4:
				R = 4
			case left >= 2:
				R = 2
			}
			// the input row of filter row kya for output row oy
			xrow := x0 + (oy*g.sh-g.pt+rg.kya*g.dh)*g.iw - g.pl
			for ci := range d.cols {
				c := &d.cols[ci]
				if c.edges != nil {
					dwMaskTile(R, c.nv, &c.edges[ri], wt, x, xrow+c.ox, ldx, y[oy*g.ow+c.ox:(oy+R-1)*g.ow+c.ox+c.last+1], g.ow, bias, clampOn, lo, hi, c.smask, c.full)
					continue
				}
				dwRun(R, c.nv, rg.offs, rg.hiOff, wt, x[xrow+c.ox:], ldx, y[oy*g.ow+c.ox:], g.ow, bias, clampOn, lo, hi)
			}
			oy += R
		}
	}
}

// dwMaskTileGo is the portable dwMaskTile: y[r·ldy+j] = clamp(bias + Σ_t
// w[t] · x[xoff+off_t+r·ldx+j]) for r < R and the lanes j < 8V of smask,
// over e's plain taps and the lanes of its masked ones. y ends at the
// last element stored.
func dwMaskTileGo(R, V int, e *dwEdge, w, x []float32, xoff, ldx int, y []float32, ldy int, bias float32, clampOn bool, lo, hi float32, smask *[2 * dwLane]int32) {
	n := V * dwLane
	for r := 0; r < R; r++ {
		for j := 0; j < n; j++ {
			if smask[j] == 0 {
				continue
			}
			a := bias
			for i := 0; i < len(e.plain); i += 2 {
				a += w[e.plain[i+1]] * x[xoff+e.plain[i]+r*ldx+j]
			}
			for i := 0; i < len(e.masked); i += 2 {
				if e.mask[i/2*n+j] != 0 {
					a += w[e.masked[i+1]] * x[xoff+e.masked[i]+r*ldx+j]
				}
			}
			if clampOn {
				a = clamp(a, lo, hi)
			}
			y[r*ldy+j] = a
		}
	}
}

// The packed depthwise path, for small planes: L channels (16 with
// AVX-512, else 8) at a time are transposed channels-last into a
// zero-padded scratch plane of L-lane vectors, every output position is
// then one vector of L channels (one FMA a tap, no edge cases, no lanes
// wasted past a short row), and the block is transposed back. On planes
// of a few vectors' width the planar tiles spend most of their time on
// edges, short rows and call overhead; this path spends it on FMAs, at
// the price of the two transposes (in and out, 8×8 blocks in assembly).

// dwPacked is the packed layout of one geometry, computed in strips of
// rows output rows (the strip's input rows, padded plane and outputs stay
// in L2 whatever the plane's size).
type dwPacked struct {
	L      int
	rows   int   // output rows a strip
	hs, wp int   // rows and columns of a strip's padded plane
	offs   []int // per tap: its offset in the packed plane (floats)
	hiOff  int
	ldx    int // floats between successive output rows' inputs
}

func newDWPacked(g *geom, L int) *dwPacked {
	d := &dwPacked{L: L}
	d.wp = (g.ow-1)*g.sw + (g.kw-1)*g.dw + 1
	d.ldx = g.sh * d.wp * L
	// about 96 KiB a strip: input rows, padded plane and outputs
	per := (g.sh*(g.iw+d.wp) + g.ow) * L * 4
	d.rows = min(g.oh, max(1, (96<<10)/per))
	d.hs = (d.rows-1)*g.sh + (g.kh-1)*g.dh + 1
	for ky := 0; ky < g.kh; ky++ {
		for kx := 0; kx < g.kw; kx++ {
			d.offs = append(d.offs, (ky*g.dh*d.wp+kx*g.dw)*L)
			d.hiOff = max(d.hiOff, d.offs[len(d.offs)-1])
		}
	}
	return d
}

// usePacked returns the lanes of the packed path for a depthwise
// convolution of geometry g over c channels, 0 where the planar tiles
// compute it: the packed path takes column stride 2 at every width and
// stride 1 up to 56 output columns. Measured by BenchmarkDepthwisePacked
// (CPU time, one thread, AVX-512, load 16; planar → packed µs): 3×3
// 256×8×10 52 → 12, 128×15×20 43 → 25, stride 2 55 → 11, 64×30×40 49 → 36,
// stride 2 62 → 13, 480×33×33 448 → 311, 32×120×160 stride 2 217 → 138,
// 48×129×129 stride 2 351 → 285; 5×5 256×12×12 101 → 30, 64×48×48 stride 2
// 94 → 42. At stride 1 from about 64 columns on the planar tiles fill
// their vectors and read the input in place (72×65×65 171 → 203 packed).
// MediaPipe's 224×224 models' 56-column planes are still the packed
// path's (load 14-18, same benchmark: 144×56×56 3×3 346-387 → 260-265;
// 24×112×112 stays planar, 135 → 193 packed).
func usePacked(g *geom, c int) int {
	L := dwPackedLanes(c)
	if L == 0 || g.sw > 2 || g.sw < 1 || g.pt < 0 || g.pl < 0 || g.ow > dwPackedMaxOW[g.sw-1] {
		return 0
	}
	return L
}

// dwPackedMaxOW are the widest output rows the packed path takes at
// column strides 1 and 2.
var dwPackedMaxOW = [2]int{56, math.MaxInt}

// scratchLen is the floats one block needs: a strip's input rows
// channels-last, its padded plane and its outputs.
func (d *dwPacked) scratchLen(g *geom) int {
	return (d.hs*g.iw + d.hs*d.wp + d.rows*g.ow) * d.L
}

// toChannelsLast writes dst[pos·ld + ci] = x[ci·hw + pos] for ci < c and
// pos < n (8×8 blocks in assembly where the CPU can).
func toChannelsLast(dst, x []float32, c, hw, n, ld int) {
	nb := n / 8
	if !has8x8Transpose {
		nb = 0
	}
	for h := 0; h < c; h += 8 {
		c1 := min(h+8, c)
		if nb > 0 && c1 == h+8 {
			transpose8(nb, x[h*hw:], hw, dst[h:], ld)
		} else {
			c1, nb = c, 0 // the last channels one by one
		}
		for pos := nb * 8; pos < n; pos++ {
			for ci := h; ci < c1; ci++ {
				dst[pos*ld+ci] = x[ci*hw+pos]
			}
		}
		if c1 == c {
			break
		}
	}
}

// block computes the L output planes y (oh·ow apart) from the L input
// planes x (ih·iw apart) with the packed weights w ([taps][L]) and the
// bias of those channels, through buf (scratchLen floats), a strip of
// output rows at a time: strips [s0, s1).
func (d *dwPacked) block(g *geom, x, y, w, bias, buf []float32, clampOn bool, lo, hi float32, s0, s1 int) {
	L, hw, ohw := d.L, g.ih*g.iw, g.oh*g.ow
	t := buf[:d.hs*g.iw*L]
	pp := buf[d.hs*g.iw*L : d.hs*(g.iw+d.wp)*L]
	o := buf[d.hs*(g.iw+d.wp)*L : (d.hs*(g.iw+d.wp)+d.rows*g.ow)*L]
	ncol := max(0, min(g.iw, d.wp-g.pl))
	for oy0 := s0 * d.rows; oy0 < min(g.oh, s1*d.rows); oy0 += d.rows {
		ns := min(d.rows, g.oh-oy0)
		hs := (ns-1)*g.sh + (g.kh-1)*g.dh + 1
		// the strip's input rows [ia, ib), channels-last
		r0 := oy0*g.sh - g.pt
		ia, ib := max(r0, 0), min(r0+hs, g.ih)
		// rows of whole 8×8 blocks that fit go straight into the padded
		// plane, others through t
		direct := g.iw%8 == 0 && ncol == g.iw
		if ib > ia && !direct {
			toChannelsLast(t, x[ia*g.iw:], L, hw, (ib-ia)*g.iw, L)
		}
		// the padded plane: those rows at (iy - r0, pl), zero around them
		for r := 0; r < hs; r++ {
			row := pp[r*d.wp*L : (r+1)*d.wp*L]
			iy := r0 + r
			if iy < ia || iy >= ib || ncol == 0 {
				clear(row)
				continue
			}
			clear(row[:g.pl*L])
			if direct {
				toChannelsLast(row[g.pl*L:], x[iy*g.iw:], L, hw, g.iw, L)
			} else {
				copy(row[g.pl*L:(g.pl+ncol)*L], t[(iy-ia)*g.iw*L:])
			}
			clear(row[(g.pl+ncol)*L:])
		}
		dwcRun(L, g.sw, ns, g.ow, d.offs, d.hiOff, w, bias, pp, d.ldx, o, g.ow*L, clampOn, lo, hi)
		// back to planes: y[c·ohw + pos] = o[(pos - oy0·ow)·L + c]
		n, p0 := ns*g.ow, oy0*g.ow
		nb := n / 8
		for q := 0; q < nb*8; q += 8 {
			transpose8(L/8, o[q*L:], L, y[p0+q:], ohw)
		}
		for q := nb * 8; q < n; q++ {
			for c := 0; c < L; c++ {
				y[c*ohw+p0+q] = o[q*L+c]
			}
		}
	}
}

// packDW returns the depthwise weights w (c filters of taps) as c/L
// blocks of [taps][L].
func packDW(w []float32, c, taps, L int) []float32 {
	out := make([]float32, c*taps)
	for b := 0; b < c/L; b++ {
		for t := 0; t < taps; t++ {
			for l := 0; l < L; l++ {
				out[(b*taps+t)*L+l] = w[(b*L+l)*taps+t]
			}
		}
	}
	return out
}

// packedW returns the weights packed for L lanes (packed on first use).
func (p *convPlan) packedW(L int) []float32 {
	i := 0
	if L == 8 {
		i = 1
	}
	p.dwOnce[i].Do(func() { p.dwW[i] = packDW(p.w, p.cin, p.kh*p.kw, L) })
	return p.dwW[i]
}

// depthwisePacked is depthwise through the packed path.
func depthwisePacked(pl *pool, p *convPlan, cs *convShape, x, y []float32, batch int) {
	d, g := cs.packed, &cs.g
	w := p.packedW(d.L)
	// tasks: a block's strips (several threads share a block of few
	// channels over a large plane)
	strips := (g.oh + d.rows - 1) / d.rows
	units := batch * p.cin / d.L * strips
	chunks := splitTasks(pl.threads(), units, float64(d.L*d.rows)/float64(g.oh)*dwPlaneNS(g))
	sc := p.ss.of(d.scratchLen(g))
	parallelFor(pl, chunks, dwTask{p: p, cs: cs, x: x, y: y, planes: units, chunks: chunks, sc: sc, w: w}, func(a dwTask, t int) {
		buf := a.sc.get()
		defer a.sc.put(buf)
		d, g := a.cs.packed, &a.cs.g
		L, hw, ohw, taps := d.L, g.ih*g.iw, g.oh*g.ow, g.kh*g.kw
		per := a.p.cin / L
		strips := (g.oh + d.rows - 1) / d.rows
		u0, u1 := a.planes*t/a.chunks, a.planes*(t+1)/a.chunks
		for u := u0; u < u1; {
			bi, s0 := u/strips, u%strips
			s1 := min(strips, s0+u1-u) // this block's strips in the task
			cb := bi % per
			pi := bi / per * a.p.cin // the batch's first plane
			c0 := cb * L
			d.block(g, a.x[(pi+c0)*hw:(pi+c0+L)*hw], a.y[(pi+c0)*ohw:(pi+c0+L)*ohw], a.w[cb*taps*L:(cb+1)*taps*L], a.p.bias[c0:c0+L], *buf, a.p.clamp, a.p.lo, a.p.hi, s0, s1)
			u += s1 - s0
		}
	})
}

// dwcRunGo is the portable dwcRun.
func dwcRunGo(L, s, rows, ow int, offs []int, w, bias, x []float32, ldx int, y []float32, ldy int, clampOn bool, lo, hi float32) {
	for r := 0; r < rows; r++ {
		for j := 0; j < ow; j++ {
			for l := 0; l < L; l++ {
				a := bias[l]
				for t, off := range offs {
					a += w[t*L+l] * x[r*ldx+j*s*L+off+l]
				}
				if clampOn {
					a = clamp(a, lo, hi)
				}
				y[r*ldy+j*L+l] = a
			}
		}
	}
}
