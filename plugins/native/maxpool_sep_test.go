package native

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestMaxPoolSeparable compares the two-pass max pool with the windowed
// reference loop (poolPoint at every output) over windows, strides,
// dilations, pads and ceil mode, with NaNs and whole-NaN windows in the
// input.
func TestMaxPoolSeparable(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	type c struct{ kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, ih, iw int }
	cases := []c{
		{13, 13, 1, 1, 1, 1, 6, 6, 6, 6, 13, 13}, // YOLOX SPP
		{9, 9, 1, 1, 1, 1, 4, 4, 4, 4, 13, 13},
		{5, 5, 1, 1, 1, 1, 2, 2, 2, 2, 20, 17},
		{3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 56, 56}, // ResNet stem
		{3, 2, 2, 1, 2, 2, 1, 1, 2, 0, 11, 8},
		{2, 3, 1, 3, 1, 1, 0, 2, 1, 0, 7, 9},
		{4, 4, 3, 3, 1, 2, 0, 0, 0, 0, 10, 12},
	}
	for _, cs := range cases {
		for _, ceil := range []bool{false, true} {
			w := window{autoPad: "NOTSET", nd: 2, kh: cs.kh, kw: cs.kw, sh: cs.sh, sw: cs.sw, dh: cs.dh, dw: cs.dw,
				pt: cs.pt, pl: cs.pl, pb: cs.pb, pr: cs.pr, ceil: ceil}
			g, err := w.at(cs.ih, cs.iw)
			if err != nil {
				t.Fatal(err)
			}
			if !separableMax(&g) {
				continue
			}
			x := make([]float32, g.ih*g.iw)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
				if rng.IntN(7) == 0 {
					x[i] = float32(math.NaN())
				}
			}
			for i := 0; i < g.iw && i < len(x); i++ { // a whole NaN row
				x[i] = float32(math.NaN())
			}
			// one plane, and a batch of planes (channels innermost when
			// small: 9 planes, so the batch path runs)
			const planes = 9
			hw, ohw := g.ih*g.iw, g.oh*g.ow
			xs := make([]float32, planes*hw)
			for p := 0; p < planes; p++ {
				copy(xs[p*hw:], x)
				for i := p; i < hw; i += 5 {
					xs[p*hw+i] = float32(rng.NormFloat64())
				}
			}
			got := make([]float32, ohw)
			maxPoolSeparable(&g, x, got, 1)
			gotB := make([]float32, planes*ohw)
			poolPlanes(&g, xs, gotB, 0, planes, true, false)
			for p := -1; p < planes; p++ {
				xp, gp := x, got
				if p >= 0 {
					xp, gp = xs[p*hw:(p+1)*hw], gotB[p*ohw:(p+1)*ohw]
				}
				for oy := 0; oy < g.oh; oy++ {
					for ox := 0; ox < g.ow; ox++ {
						want := poolPoint(&g, xp, oy, ox, true, false)
						if v := gp[oy*g.ow+ox]; v != want && !(v != v && want != want) {
							t.Fatalf("%+v ceil %v plane %d: y[%d,%d] = %v, want %v", cs, ceil, p, oy, ox, v, want)
						}
					}
				}
			}
		}
	}
}
