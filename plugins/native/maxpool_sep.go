package native

import "sync"

// sepScratch holds separable max pooling's scratch planes.
var sepScratch = sync.Pool{New: func() any { return new([]float32) }}

// separableMax reports whether a max pool of this window is cheaper as two
// 1-D passes (a row max, then a column max of the row maxima) than as the
// windowed loop: any window larger than 2×2. Max is separable exactly: a
// padded tap is skipped in either pass, and a NaN never wins in either
// (all NaN or all padding gives -Inf), as the reference.
func separableMax(g *geom) bool { return g.kh*g.kw > 4 && g.kh > 1 && g.kw > 1 }

// sepBatch is how many small planes separable max pooling takes at once,
// channels innermost; smallPlane is the largest plane it batches (a larger
// plane's runs are long enough alone).
const (
	sepBatch   = 64
	smallPlane = 32 * 32
)

// poolPlanes pools planes [p0, p1) of x into y. Max pools with a window
// over 2×2 run separably: small planes (YOLOX's SPP: 13×13 windows on
// 13×13 planes) a batch at a time with the channels innermost, so that
// each pass's runs are whole vectors of channels; the others one plane
// at a time (poolPlane).
func poolPlanes(g *geom, x, y []float32, p0, p1 int, isMax, includePad bool) {
	hw, ohw := g.ih*g.iw, g.oh*g.ow
	if !isMax || !separableMax(g) {
		for pi := p0; pi < p1; pi++ {
			poolPlane(g, x[pi*hw:(pi+1)*hw], y[pi*ohw:(pi+1)*ohw], isMax, includePad)
		}
		return
	}
	if hw > smallPlane || p1-p0 < 8 {
		for pi := p0; pi < p1; pi++ {
			maxPoolSeparable(g, x[pi*hw:(pi+1)*hw], y[pi*ohw:(pi+1)*ohw], 1)
		}
		return
	}
	sp := sepScratch.Get().(*[]float32)
	defer sepScratch.Put(sp)
	c := min(sepBatch, p1-p0)
	if need := (hw + ohw) * c; cap(*sp) < need {
		*sp = make([]float32, need)
	}
	xt, yt := (*sp)[:hw*c], (*sp)[hw*c:(hw+ohw)*c]
	for b := p0; b < p1; b += c {
		n := min(c, p1-b)
		transpose2D(xt[:hw*n], x[b*hw:(b+n)*hw], n, hw)
		maxPoolSeparable(g, xt[:hw*n], yt[:ohw*n], n)
		transpose2D(y[b*ohw:(b+n)*ohw], yt[:ohw*n], ohw, n)
	}
}

// maxPoolSeparable is MaxPool of c planes stored channels innermost
// (x: ih×iw×c, y: oh×ow×c; c = 1 is one plane) as a row pass over every
// input row into an ih×ow×c scratch, then a column pass over its rows:
// kw·ih·ow + kh·oh·ow comparisons per channel instead of kh·kw·oh·ow,
// each pass (the row pass at column stride 1, or with c > 1) a series of
// element-wise maxima of contiguous runs (maxInto, vectorised).
func maxPoolSeparable(g *geom, x, y []float32, c int) {
	sp := sepScratch.Get().(*[]float32)
	defer sepScratch.Put(sp)
	rl := g.ih * g.ow * c
	if cap(*sp) < rl {
		*sp = make([]float32, rl)
	}
	r := (*sp)[:rl]
	for i := range r {
		r[i] = negInf
	}
	wr, wx := g.ow*c, g.iw*c
	for iy := 0; iy < g.ih; iy++ {
		xr := x[iy*wx : (iy+1)*wx]
		rr := r[iy*wr : (iy+1)*wr]
		switch {
		case g.sw == 1:
			// tap kx reads ix = ox - pl + kx·dw: outputs [lo, hi) read inside
			for kx := 0; kx < g.kw; kx++ {
				off := kx*g.dw - g.pl
				lo, hi := max(0, -off), min(g.ow, g.iw-off)
				if lo < hi {
					maxInto(rr[lo*c:hi*c], xr[(lo+off)*c:(hi+off)*c])
				}
			}
		case c > 1:
			for ox := 0; ox < g.ow; ox++ {
				ix0 := ox*g.sw - g.pl
				for kx := 0; kx < g.kw; kx++ {
					if ix := ix0 + kx*g.dw; uint(ix) < uint(g.iw) {
						maxInto(rr[ox*c:(ox+1)*c], xr[ix*c:(ix+1)*c])
					}
				}
			}
		default:
			for ox := range rr {
				ix0 := ox*g.sw - g.pl
				s := negInf
				for kx := 0; kx < g.kw; kx++ {
					if ix := ix0 + kx*g.dw; uint(ix) < uint(g.iw) {
						if v := xr[ix]; v > s {
							s = v
						}
					}
				}
				rr[ox] = s
			}
		}
	}
	for oy := 0; oy < g.oh; oy++ {
		yr := y[oy*wr : (oy+1)*wr]
		for i := range yr {
			yr[i] = negInf
		}
		iy0 := oy*g.sh - g.pt
		for ky := 0; ky < g.kh; ky++ {
			iy := iy0 + ky*g.dh
			if uint(iy) >= uint(g.ih) {
				continue
			}
			maxInto(yr, r[iy*wr:(iy+1)*wr])
		}
	}
}

// maxIntoGo is y[i] = max(y[i], r[i]), a NaN in r never winning.
func maxIntoGo(y, r []float32) {
	r = r[:len(y)]
	for i, v := range r {
		if v > y[i] {
			y[i] = v
		}
	}
}
