package native

import (
	"fmt"
	"testing"
)

// BenchmarkDWS2Parts runs the stride-2 parity-plane path's two halves
// apart, one thread, CPU time per run: the split (handDWSplit2AVX512)
// and the taps (handDWS2k5*) over every plane of the shape, one
// handDWGroup at a time as dws2Task does.
//
//	go test ./plugins/native -run '^$' -bench DWS2Parts -benchtime 200x
func BenchmarkDWS2Parts(b *testing.B) {
	if dws2Kernels == nil {
		b.Skip("no stride-2 parity-plane kernel here")
	}
	for _, sh := range [][3]int{{144, 56, 56}, {672, 14, 14}, {240, 28, 28}} {
		c, h, w := sh[0], sh[1], sh[2]
		p, _, _ := dwBenchPlan(b, c, h, w, 5, 2)
		p.win.pt, p.win.pl, p.win.pb, p.win.pr = 1, 1, 2, 2
		g, err := p.win.at(h, w)
		if err != nil {
			b.Fatal(err)
		}
		x := make([]float32, c*h*w)
		y := make([]float32, c*g.oh*g.ow)
		ohw, gap := g.oh*g.ow, g.ow+1
		xs := ohw + gap
		nc := handDWGroup(4 * xs)
		pad := make([]float32, gap+4*nc*xs+16)
		split, masks := dws2SplitMasksOf(w), handDWMasksOf(g.oh, g.ow, 3)
		fn := dws2Kernel(&g)
		name := fmt.Sprintf("%dx%dx%d", c, h, w)
		b.Run("split/"+name, func(b *testing.B) {
			cpuLoop(b, func() {
				for p0 := 0; p0 < c; p0 += nc {
					dws2Split(&x[p0*h*w], min(nc, c-p0), h, w, &pad[gap], xs, split)
				}
			})
		})
		b.Run("taps/"+name, func(b *testing.B) {
			cpuLoop(b, func() {
				for p0 := 0; p0 < c; p0 += nc {
					fn(&pad[gap], min(nc, c-p0), xs, ohw, g.ow, &p.w[p0*25], &p.bias[p0], &y[p0*ohw], &masks[0], (ohw+15)/16, 0, 0, 0)
				}
			})
		})
	}
}
