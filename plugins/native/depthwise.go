package native

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
func depthwise(pl *pool, p *convPlan, g *geom, x, y []float32, batch int) {
	c := p.cin
	planes := batch * c
	l := newDWLayout(g)
	sc := p.ss.of(l.scratchLen(g))
	chunks := min(planes, 4*pl.threads())
	taps := g.kh * g.kw
	pl.parallel(chunks, func(t int) {
		buf := sc.get()
		defer sc.put(buf)
		for pi := planes * t / chunks; pi < planes*(t+1)/chunks; pi++ {
			ch := pi % c
			yp := y[pi*g.oh*g.ow : (pi+1)*g.oh*g.ow]
			l.fill(g, x[pi*g.ih*g.iw:(pi+1)*g.ih*g.iw], *buf)
			l.plane(g, *buf, p.w[ch*taps:(ch+1)*taps], yp, p.bias[ch], p.clamp, p.lo, p.hi)
		}
	})
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
		for v0 := 0; v0 < nv; {
			V := 1
			switch left := nv - v0; {
			case R < 4 && left >= 4:
				V = 4
			case left >= 2:
				V = 2
			}
			ox := v0 * dwLane
			dwTile(R, V, l.offs, l.hiOff, w, in[oy*l.ldx+ox:], l.ldx, out[oy*ldy+ox:], ldy, bias, clampOn, lo, hi)
			v0 += V
		}
		oy += R
	}
	if !l.direct {
		for oy := 0; oy < g.oh; oy++ {
			copy(y[oy*g.ow:(oy+1)*g.ow], out[oy*l.owv:])
		}
	}
}

// dwTileGo is the portable dwTile: y[r·ldy+j] = clamp(bias + Σ_t w[t] ·
// x[offs[t]+r·ldx+j]) for r < R, j < V·dwLane.
func dwTileGo(R, V int, offs []int, w, x []float32, ldx int, y []float32, ldy int, bias float32, clampOn bool, lo, hi float32) {
	n := V * dwLane
	var acc [4 * 4 * dwLane]float32
	for r := 0; r < R; r++ {
		a := acc[r*n : (r+1)*n]
		for j := range a {
			a[j] = bias
		}
		for t, off := range offs {
			wv := w[t]
			src := x[off+r*ldx : off+r*ldx+n]
			for j, v := range src {
				a[j] += wv * v
			}
		}
		dst := y[r*ldy : r*ldy+n]
		if clampOn {
			for j, v := range a {
				dst[j] = clamp(v, lo, hi)
			}
		} else {
			copy(dst, a)
		}
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
