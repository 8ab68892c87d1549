package native

import "sync"

// sepScratch holds the row-pass planes of separable max pooling.
var sepScratch = sync.Pool{New: func() any { return new([]float32) }}

// separableMax reports whether a max pool of this window is cheaper as two
// 1-D passes (a row max, then a column max of the row maxima) than as the
// windowed loop: any window larger than 2×2. Max is separable exactly: a
// padded tap is skipped in either pass, and a NaN never wins in either
// (all NaN or all padding gives -Inf), as the reference.
func separableMax(g *geom) bool { return g.kh*g.kw > 4 && g.kh > 1 && g.kw > 1 }

// maxPoolSeparable is MaxPool of one plane x (ih×iw) into y (oh×ow) as a
// row pass over every input row into an ih×ow scratch plane, then a column
// pass over its rows: kw·ih·ow + kh·oh·ow comparisons instead of
// kh·kw·oh·ow, each pass (the row pass at column stride 1) a series of
// element-wise maxima of contiguous runs (maxInto, vectorised).
func maxPoolSeparable(g *geom, x, y []float32) {
	sp := sepScratch.Get().(*[]float32)
	if cap(*sp) < g.ih*g.ow {
		*sp = make([]float32, g.ih*g.ow)
	}
	r := (*sp)[:g.ih*g.ow]
	for i := range r {
		r[i] = negInf
	}
	for iy := 0; iy < g.ih; iy++ {
		xr := x[iy*g.iw : (iy+1)*g.iw]
		rr := r[iy*g.ow : (iy+1)*g.ow]
		if g.sw == 1 {
			// tap kx reads ix = ox - pl + kx·dw: outputs [lo, hi) read inside
			for kx := 0; kx < g.kw; kx++ {
				off := kx*g.dw - g.pl
				lo, hi := max(0, -off), min(g.ow, g.iw-off)
				if lo < hi {
					maxInto(rr[lo:hi], xr[lo+off:hi+off])
				}
			}
			continue
		}
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
	for oy := 0; oy < g.oh; oy++ {
		yr := y[oy*g.ow : (oy+1)*g.ow]
		for i := range yr {
			yr[i] = negInf
		}
		iy0 := oy*g.sh - g.pt
		for ky := 0; ky < g.kh; ky++ {
			iy := iy0 + ky*g.dh
			if uint(iy) >= uint(g.ih) {
				continue
			}
			maxInto(yr, r[iy*g.ow:(iy+1)*g.ow])
		}
	}
	sepScratch.Put(sp)
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
