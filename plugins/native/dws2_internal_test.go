package native

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestDWS2Direct: the stride-2 parity-plane kernels (3×3 and 5×5, every
// top and left padding they take) compute every plane size of their range
// (the path is taken: useDW3 and dws2Take report it) as the definition
// does, summed in float64, at one and two threads, with the plane after
// the output left as it was.
func TestDWS2Direct(t *testing.T) {
	if dws2Kernels == nil {
		t.Skip("no stride-2 parity-plane kernel here")
	}
	defer func(m int) { dws2MaxW3 = m }(dws2MaxW3)
	dws2MaxW3 = 1 << 20
	rng := rand.New(rand.NewPCG(29, 30))
	for _, c := range []struct{ n, ch, h, w, k int }{
		{1, 33, 14, 14, 3}, {2, 17, 28, 28, 3}, {1, 3, 2, 2, 3}, {2, 5, 6, 2, 3}, {1, 4, 2, 34, 3}, {1, 70, 4, 12, 3}, {1, 6, 40, 40, 3},
		{1, 33, 14, 14, 5}, {2, 17, 56, 56, 5}, {1, 3, 2, 2, 5}, {2, 5, 6, 2, 5}, {1, 4, 2, 34, 5}, {1, 70, 4, 12, 5},
		{1, 8, 28, 28, 5}, {2, 3, 20, 70, 5}, {1, 2, 64, 66, 5}, {1, 2, 112, 112, 5},
	} {
		k := c.k
		for _, pad := range [][2]int{{k/2 - 1, k/2 - 1}, {k / 2, k / 2}, {k / 2, k/2 - 1}, {k/2 - 1, k / 2}} {
			for _, threads := range []int{1, 2} {
				t.Run(fmt.Sprintf("%dx%dx%dx%d-k%d-p%d%d-t%d", c.n, c.ch, c.h, c.w, k, pad[0], pad[1], threads), func(t *testing.T) {
					p, _, _ := dwBenchPlan(t, c.ch, c.h, c.w, k, 2)
					p.win.pt, p.win.pl, p.win.pb, p.win.pr = pad[0], pad[1], k-1-pad[0], k-2-pad[1]
					p.clamp, p.lo, p.hi = true, -1, 2
					g, err := p.win.at(c.h, c.w)
					if err != nil {
						t.Fatal(err)
					}
					if !useDW3(&g) || !dws2Take(&g) || handDWFlat(&g) {
						t.Fatal("the stride-2 kernel does not take the shape")
					}
					hw, oh, ow := c.h*c.w, c.h/2, c.w/2
					ohw := oh * ow
					x := randSlice(rng, c.n*c.ch*hw)
					y := make([]float32, (c.n*c.ch+1)*ohw)
					for i := range y {
						y[i] = 1e9
					}
					pl := newPool(threads)
					defer pl.close()
					dws2Depthwise(pl, p, &g, x, y, c.n)
					for i := c.n * c.ch * ohw; i < len(y); i++ {
						if y[i] != 1e9 {
							t.Fatalf("wrote past the output at %d", i)
						}
					}
					for pi := 0; pi < c.n*c.ch; pi++ {
						ch := pi % c.ch
						for oy := 0; oy < oh; oy++ {
							for ox := 0; ox < ow; ox++ {
								s := float64(p.bias[ch])
								for r := 0; r < k; r++ {
									for q := 0; q < k; q++ {
										iy, ix := 2*oy+r-pad[0], 2*ox+q-pad[1]
										if iy >= 0 && iy < c.h && ix >= 0 && ix < c.w {
											s += float64(p.w[(ch*k+r)*k+q]) * float64(x[pi*hw+iy*c.w+ix])
										}
									}
								}
								want := math.Min(math.Max(s, -1), 2)
								got := y[pi*ohw+oy*ow+ox]
								if math.Abs(float64(got)-want) > 1e-5+1e-5*math.Abs(want) {
									t.Fatalf("plane %d (%d,%d): %v, want %v", pi, oy, ox, got, want)
								}
							}
						}
					}
				})
			}
		}
	}
}
