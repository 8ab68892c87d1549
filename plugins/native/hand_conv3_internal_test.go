package native

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// handC3BenchPlan is a constant-weight 3×3 stride-2 Conv plan of cin→cout
// with pads (top, left, bottom, right) and a Relu6 clamp.
func handC3BenchPlan(tb testing.TB, rng *rand.Rand, cin, cout int, pads [4]int) *convPlan {
	kern := bestKernel()
	win := window{autoPad: "NOTSET", nd: 2, kh: 3, kw: 3, sh: 2, sw: 2, dh: 1, dw: 1, pt: pads[0], pl: pads[1], pb: pads[2], pr: pads[3]}
	p := &convPlan{win: win, cout: cout, cin: cin, group: 1, kh: 3, kw: 3, w: randSlice(rng, cout*cin*9), constW: true,
		clamp: true, lo: 0, hi: 6, ss: &scratchSet{}, planeSS: &scratchSet{}, wideSS: &scratchSet{}}
	p.biasStride = (cout + kern.mr - 1) / kern.mr * kern.mr
	p.bias = make([]float32, p.biasStride)
	copy(p.bias, randSlice(rng, cout))
	return p
}

// TestHandC3Direct: the direct kernels compute every shape of their range
// (the path is taken, handConv3 reports it) as the definition does, summed
// in float64, at one and two threads.
func TestHandC3Direct(t *testing.T) {
	if !handC3Kernels {
		t.Skip("no direct strided 3×3 kernels here")
	}
	rng := rand.New(rand.NewPCG(11, 12))
	for _, c := range []struct {
		cin, cout, h, w int
		pads            [4]int
	}{
		{3, 24, 20, 32, [4]int{0, 0, 1, 1}}, {3, 24, 21, 33, [4]int{1, 1, 1, 1}}, {1, 4, 5, 40, [4]int{0, 0, 0, 0}},
		{4, 8, 9, 63, [4]int{1, 0, 1, 0}}, {2, 12, 7, 34, [4]int{0, 1, 0, 1}}, {3, 16, 8, 66, [4]int{1, 1, 0, 0}},
		{3, 20, 6, 95, [4]int{0, 0, 1, 1}}, {3, 44, 6, 64, [4]int{1, 1, 1, 1}}, {3, 72, 4, 48, [4]int{0, 0, 1, 1}},
	} {
		for _, threads := range []int{1, 2} {
			t.Run(fmt.Sprintf("%d-%d-%dx%d-%v-t%d", c.cin, c.cout, c.h, c.w, c.pads, threads), func(t *testing.T) {
				p := handC3BenchPlan(t, rng, c.cin, c.cout, c.pads)
				g, err := p.win.at(c.h, c.w)
				if err != nil {
					t.Fatal(err)
				}
				batch := 2
				x := randSlice(rng, batch*c.cin*c.h*c.w)
				y := make([]float32, batch*c.cout*g.oh*g.ow)
				for i := range y {
					y[i] = float32(math.NaN())
				}
				pl := newPool(threads)
				defer pl.close()
				if !handConv3(pl, p, &g, x, y, batch) {
					t.Fatal("handConv3 declined the shape")
				}
				for b := 0; b < batch; b++ {
					for o := 0; o < c.cout; o++ {
						for oy := 0; oy < g.oh; oy++ {
							for ox := 0; ox < g.ow; ox++ {
								s := float64(p.bias[o])
								for ci := 0; ci < c.cin; ci++ {
									for r := 0; r < 3; r++ {
										for k := 0; k < 3; k++ {
											iy, ix := 2*oy-g.pt+r, 2*ox-g.pl+k
											if iy < 0 || iy >= c.h || ix < 0 || ix >= c.w {
												continue
											}
											s += float64(p.w[((o*c.cin+ci)*3+r)*3+k]) * float64(x[((b*c.cin+ci)*c.h+iy)*c.w+ix])
										}
									}
								}
								want := math.Min(math.Max(s, 0), 6)
								got := y[((b*c.cout+o)*g.oh+oy)*g.ow+ox]
								if math.Abs(float64(got)-want) > 1e-5+1e-5*math.Abs(want) {
									t.Fatalf("b %d o %d (%d,%d): %v, want %v", b, o, oy, ox, got, want)
								}
							}
						}
					}
				}
			})
		}
	}
}

// BenchmarkHandConv3 runs the first convolutions of MediaPipe's models
// (hand_landmark_full, pose_detection: 3→24 at 224×224 and 3→48 at
// 256×256 (the latter two groups of 24), 3→16 at 128×128 as
// face_detection's) through Conv's compute at one thread, direct and by
// the paths before it, in CPU time per run:
//
//	go test ./plugins/native -run '^$' -bench HandConv3 -benchtime 200x
func BenchmarkHandConv3(b *testing.B) {
	kern := bestKernel()
	bc := &buildCtx{kern: &kern}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, sh := range [][4]int{{3, 24, 224, 224}, {3, 48, 256, 256}, {3, 24, 128, 128}, {3, 16, 128, 128}, {3, 32, 224, 224}} {
		cin, cout, h, w := sh[0], sh[1], sh[2], sh[3]
		p := handC3BenchPlan(b, rng, cin, cout, [4]int{0, 0, 1, 1})
		p.indirect = useIndirect && igemmKernels != nil && kern.mr == igemmMR && kern.nr == igemmNR && kern.packedA != nil && usePackedA
		x := graph.MustFromSlice([]int{1, cin, h, w}, randSlice(rng, cin*h*w))
		ctx := &kernels.Context{Alloc: oneTensorAlloc{graph.MustFromSlice([]int{1, cout, h / 2, w / 2}, make([]float32, cout*h/2*w/2))}}
		for _, direct := range []bool{false, true} {
			b.Run(fmt.Sprintf("%dx%dx%dx%d/direct=%v", cout, cin, h, w, direct), func(b *testing.B) {
				useHandC3 = direct
				defer func() { useHandC3 = true }()
				p.shape.Store(nil)
				cpuLoop(b, func() {
					if _, err := p.compute(bc, ctx, x); err != nil {
						b.Fatal(err)
					}
				})
			})
		}
	}
}

// TestHandDWFlatDirect: the flat depthwise kernels (3×3 and 5×5) compute every plane
// size of its range (the path is taken: useDW3 and handDWFlat report it)
// as the definition does, summed in float64, at one and two threads, with
// the planes around each one's output left as they were.
func TestHandDWFlatDirect(t *testing.T) {
	if handDWFlatKernels == nil {
		t.Skip("no flat depthwise kernel here")
	}
	rng := rand.New(rand.NewPCG(13, 14))
	for _, c := range []struct{ n, ch, h, w, k int }{
		{1, 33, 14, 14, 3}, {2, 17, 7, 7, 3}, {1, 3, 1, 1, 3}, {2, 5, 5, 1, 3}, {1, 4, 1, 16, 3}, {3, 9, 16, 16, 3}, {1, 70, 3, 11, 3},
		{1, 33, 14, 14, 5}, {2, 17, 7, 7, 5}, {1, 3, 1, 1, 5}, {2, 5, 5, 2, 5}, {1, 4, 2, 17, 5}, {3, 9, 16, 16, 5}, {1, 70, 3, 11, 5}, {1, 8, 28, 28, 5}, {2, 3, 20, 70, 5},
	} {
		for _, threads := range []int{1, 2} {
			t.Run(fmt.Sprintf("%dx%dx%dx%d-k%d-t%d", c.n, c.ch, c.h, c.w, c.k, threads), func(t *testing.T) {
				k, r0 := c.k, c.k/2
				p, _, _ := dwBenchPlan(t, c.ch, c.h, c.w, k, 1)
				p.clamp, p.lo, p.hi = true, -1, 2
				g, err := p.win.at(c.h, c.w)
				if err != nil {
					t.Fatal(err)
				}
				if !useDW3(&g) || !handDWFlat(&g) {
					t.Fatal("the flat kernel does not take the shape")
				}
				hw := c.h * c.w
				x := randSlice(rng, c.n*c.ch*hw)
				// a guard plane after the output: left as it was
				y := make([]float32, (c.n*c.ch+1)*hw)
				for i := range y {
					y[i] = 1e9
				}
				pl := newPool(threads)
				defer pl.close()
				handDepthwiseFlat(pl, p, &g, x, y, c.n)
				for i := c.n * c.ch * hw; i < len(y); i++ {
					if y[i] != 1e9 {
						t.Fatalf("wrote past the output at %d", i)
					}
				}
				for pi := 0; pi < c.n*c.ch; pi++ {
					ch := pi % c.ch
					for oy := 0; oy < c.h; oy++ {
						for ox := 0; ox < c.w; ox++ {
							s := float64(p.bias[ch])
							for r := 0; r < k; r++ {
								for q := 0; q < k; q++ {
									iy, ix := oy+r-r0, ox+q-r0
									if iy >= 0 && iy < c.h && ix >= 0 && ix < c.w {
										s += float64(p.w[(ch*k+r)*k+q]) * float64(x[pi*hw+iy*c.w+ix])
									}
								}
							}
							want := math.Min(math.Max(s, -1), 2)
							got := y[pi*hw+oy*c.w+ox]
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
