package native

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// dw3Ref is one plane of a 3×3 depthwise convolution in float64.
func dw3Ref(g *geom, x, w []float32, bias float32, clampOn bool, lo, hi float32) []float32 {
	y := make([]float32, g.oh*g.ow)
	for oy := 0; oy < g.oh; oy++ {
		for ox := 0; ox < g.ow; ox++ {
			s := float64(bias)
			for ky := 0; ky < 3; ky++ {
				for kx := 0; kx < 3; kx++ {
					iy, ix := oy*g.sh-g.pt+ky*g.dh, ox*g.sw-g.pl+kx*g.dw
					if iy >= 0 && iy < g.ih && ix >= 0 && ix < g.iw {
						s += float64(w[ky*3+kx]) * float64(x[iy*g.iw+ix])
					}
				}
			}
			v := float32(s)
			if clampOn {
				v = clamp(v, lo, hi)
			}
			y[oy*g.ow+ox] = v
		}
	}
	return y
}

// The row kernels against dw3Ref at every width from 1 to 70 (every
// column count a vector, its masks and its tail can take), both strides,
// dilations 1, 2 and 4 at stride 1, no left padding at stride 2, top
// padding 0 to 2 (times the
// dilation), bottom and right padding 0 to 2, clamped and not; and
// nothing written past the plane.
func TestDW3Rows(t *testing.T) {
	if dw3Kernels == nil {
		t.Skip("no 3×3 depthwise row kernels on this CPU")
	}
	rng := rand.New(rand.NewPCG(11, 12))
	for _, sd := range [][3]int{{1, 1, 1}, {2, 1, 1}, {1, 2, 2}, {1, 4, 4}, {2, 1, 0}} {
		s, d, pl := sd[0], sd[1], sd[2]
		for iw := 1; iw <= 70; iw++ {
			for _, pad := range [][3]int{{1, 1, 1}, {0, 0, 0}, {2, 2, 2}, {1, 0, 1}, {0, 2, 1}} {
				ih := 1 + (iw*7)%(9*d)
				pt, pb, pr := pad[0]*d, pad[1]*d, pad[2]*d
				win := window{autoPad: "NOTSET", nd: 2, kh: 3, kw: 3, sh: s, sw: s, dh: d, dw: d, pt: pt, pl: pl, pb: pb, pr: pr}
				g, err := win.at(ih, iw)
				if err != nil || g.oh <= 0 || g.ow <= 0 {
					continue
				}
				x := randSlice(rng, ih*iw)
				w := randSlice(rng, 9)
				bias := float32(rng.NormFloat64())
				zero := make([]float32, iw)
				for _, clampOn := range []bool{false, true} {
					name := fmt.Sprintf("s%d d%d pl%d %dx%d pads %v clamp %v", s, d, pl, ih, iw, pad, clampOn)
					y := make([]float32, g.oh*g.ow+5)
					for i := range y {
						y[i] = 42
					}
					dw3Plane(&g, x, w, y[:g.oh*g.ow], zero, bias, clampOn, -0.5, 0.75)
					want := dw3Ref(&g, x, w, bias, clampOn, -0.5, 0.75)
					for i, v := range want {
						if d := y[i] - v; d > 1e-5*(1+abs32(v)) || -d > 1e-5*(1+abs32(v)) {
							t.Fatalf("%s: y[%d] (row %d col %d) = %v, want %v", name, i, i/g.ow, i%g.ow, y[i], v)
						}
					}
					for i := g.oh * g.ow; i < len(y); i++ {
						if y[i] != 42 {
							t.Fatalf("%s: wrote past the plane at %d", name, i)
						}
					}
				}
			}
		}
	}
}

// BenchmarkDW3: the row kernels against the path the plane takes
// without them (the packed path or the planar tiles, as shapeFor picks),
// CPU time at one thread.
//
//	go test ./plugins/native -run '^$' -bench DW3 -benchtime 200x
func BenchmarkDW3(b *testing.B) {
	if dw3Kernels == nil {
		b.Skip("no 3×3 depthwise row kernels on this CPU")
	}
	pl := newPool(1)
	defer pl.close()
	defer func(v bool) { useDW3Rows = v }(useDW3Rows)
	for _, sh := range [][5]int{ // c, h, w, stride, dilation
		{32, 120, 160, 2, 1}, {16, 120, 160, 1, 1}, {32, 60, 80, 1, 1}, {32, 60, 80, 2, 1}, {64, 30, 40, 1, 1}, {64, 30, 40, 2, 1},
		{128, 15, 20, 1, 1}, {128, 15, 20, 2, 1}, {256, 8, 10, 1, 1}, {64, 8, 10, 2, 1}, {48, 129, 129, 2, 1}, {16, 129, 129, 1, 1},
		{24, 112, 112, 1, 1}, {64, 112, 112, 2, 1}, {144, 56, 56, 1, 1}, {96, 33, 33, 1, 1}, {72, 65, 65, 1, 1}, {32, 104, 104, 1, 1}, {64, 52, 52, 2, 1},
		{16, 208, 208, 2, 1}, {32, 104, 104, 2, 1}, {16, 104, 104, 1, 1}, // YOLOX-nano
		{192, 33, 33, 1, 2}, {288, 33, 33, 1, 2}, {480, 33, 33, 1, 4}, // DeepLabV3's atrous blocks
		{64, 112, 112, 2, 0}, {144, 56, 56, 2, 0}, {32, 128, 128, 2, 0}, // stride 2 padded as TensorFlow's SAME (dilation 0: no left padding)
	} {
		c, h, w, s, d := sh[0], sh[1], sh[2], sh[3], sh[4]
		p, _, _ := dwBenchPlan(b, c, h, w, 3, s)
		p.win.dh, p.win.dw, p.win.pt, p.win.pl, p.win.pb, p.win.pr = d, d, d, d, d, d
		if d == 0 {
			p.win.dh, p.win.dw, p.win.pt, p.win.pl, p.win.pb, p.win.pr = 1, 1, 0, 0, 1, 1
		}
		xt := &graph.Tensor{DType: graph.Float32, Shape: []int{1, c, h, w}}
		var shapes [2]*convShape
		for i, on := range []bool{false, true} {
			useDW3Rows = on
			p.shape.Store(nil)
			cs, err := p.shapeFor(xt)
			if err != nil {
				b.Fatal(err)
			}
			shapes[i] = cs
		}
		x := make([]float32, c*h*w)
		y := make([]float32, c*shapes[0].g.oh*shapes[0].g.ow)
		name := fmt.Sprintf("%dx%dx%d-s%dd%d", c, h, w, s, d)
		b.Run("before/"+name, func(b *testing.B) {
			cpuLoop(b, func() { depthwise(pl, p, shapes[0], x, y, 1) })
		})
		b.Run("rows/"+name, func(b *testing.B) {
			cpuLoop(b, func() { depthwise(pl, p, shapes[1], x, y, 1) })
		})
	}
}
