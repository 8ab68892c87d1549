package native

// A 3×3 or 5×5 depthwise convolution at stride 2 over planes of even
// height and width with TensorFlow's SAME output (oh = ih/2, ow = iw/2)
// and k/2 or k/2−1 rows and columns of padding at the top and the left
// (hand_landmark_full's and pose_detection's 5×5 stride-2 blocks, their
// 3×3 ones over small planes), computed by the kernels of the package
// asmgenhand: handDWSplit2AVX512 splits each plane into its four parity
// planes (even/odd rows × even/odd columns, ih/2×iw/2 each), and
// handDWS2k*AVX512 runs over them as the flat stride-1 kernels do
// (hand_dwflat.go): 16 output positions a vector, each tap one
// multiply-add at an offset of −1, 0 or 1 rows and columns in one parity
// plane. The packed path transposes the planes to channels-last and back
// and computes every tap of a stride-2 window at 3–4× its arithmetic
// bound. BenchmarkHandDWSmall (CPU µs, one thread) has the numbers.

// dws2MaxW3 is the widest input plane a 3×3 takes here: none by default.
// BenchmarkHandDWSmall (CPU µs, one thread, load 7): 3×3 672×14×14
// packed 24-31 → here 33-35, 240×28×28 rows 28-40 → here 27-40, 144×56×56
// rows 61-62 → here 65-66: the packed path and the row kernels are as
// fast or faster (3×3's taps are few against the split's cost).
var dws2MaxW3 = 0

// useDWS2: a variable, so that tests and benchmarks run the other paths
// too.
var useDWS2 = true

// dws2Take reports whether the stride-2 parity-plane kernels compute a
// depthwise convolution of geometry g.
func dws2Take(g *geom) bool {
	k := g.kh
	return dws2Kernels != nil && useDWS2 && useHandDWFlat && useDW3Rows && (k == 3 || k == 5) && g.kw == k &&
		g.sh == 2 && g.sw == 2 && g.dh == 1 && g.dw == 1 && g.ih > 0 && g.iw > 0 && g.ih%2 == 0 && g.iw%2 == 0 &&
		g.oh*2 == g.ih && g.ow*2 == g.iw && (g.pt == k/2 || g.pt == k/2-1) && (g.pl == k/2 || g.pl == k/2-1) &&
		(k == 5 || g.iw <= dws2MaxW3)
}

// dws2Kernel is the kernel of g's filter and padding.
func dws2Kernel(g *geom) handDWFlatFn {
	return dws2Kernels[(g.kh/2-1)*4+(g.pt-(g.kh/2-1))*2+g.pl-(g.kh/2-1)]
}

// dws2SplitMasks holds handDWSplit2AVX512's masks of each width.
var dws2SplitMasks handDWMasksCache

// dws2SplitMasksOf is handDWSplit2AVX512's masks of input rows of iw
// columns: per 32 columns the lanes of the two loads below iw, then the
// store's lanes below iw/2.
func dws2SplitMasksOf(iw int) []uint16 {
	return dws2SplitMasks.of(iw, func() []uint16 {
		nc := (iw + 31) / 32
		m := make([]uint16, 3*nc)
		for j := 0; j < nc; j++ {
			for i := 0; i < 16; i++ {
				if 32*j+i < iw {
					m[3*j] |= 1 << i
				}
				if 32*j+16+i < iw {
					m[3*j+1] |= 1 << i
				}
				if 16*j+i < iw/2 {
					m[3*j+2] |= 1 << i
				}
			}
		}
		return m
	})
}

// dws2Scratch holds the tasks' parity planes.
var dws2Scratch scratchSet

// dws2Task is the loop over planes (parallelFor).
type dws2Task struct {
	p              *convPlan
	g              *geom
	x, y           []float32
	masks, split   []uint16
	planes, chunks int
	sc             *scratch
}

// dws2Depthwise is depthwise through the parity-plane kernels, planes
// split over the pool's threads in order.
func dws2Depthwise(pl *pool, p *convPlan, g *geom, x, y []float32, batch int) {
	planes := batch * p.cin
	chunks := splitTasks(pl.threads(), planes, dwPlaneNS(g))
	gap := g.ow + 1
	xs := g.oh*g.ow + gap
	sc := dws2Scratch.of(gap + 4*handDWGroup(4*xs)*xs + 16)
	parallelFor(pl, chunks, dws2Task{p: p, g: g, x: x, y: y, masks: handDWMasksOf(g.oh, g.ow, 3), split: dws2SplitMasksOf(g.iw),
		planes: planes, chunks: chunks, sc: sc}, func(a dws2Task, t int) { a.run(t) })
}

func (a dws2Task) run(t int) {
	p, g := a.p, a.g
	hw, ohw := g.ih*g.iw, g.oh*g.ow
	flags := 0
	if p.clamp {
		flags = flagClamp
	}
	taps := g.kh * g.kw
	fn := dws2Kernel(g)
	gap := g.ow + 1
	xs := ohw + gap
	nc := handDWGroup(4 * xs)
	buf := a.sc.get()
	defer a.sc.put(buf)
	// the parity planes at gap + q·xs, zeros between them (whatever the
	// buffer held before)
	pad := (*buf)[:gap+4*nc*xs+16]
	clear(pad[:gap])
	for i := 0; i < 4*nc; i++ {
		clear(pad[gap+i*xs+ohw : gap+(i+1)*xs])
	}
	clear(pad[gap+4*nc*xs:])
	nv := (ohw + 15) / 16
	p0, p1 := a.planes*t/a.chunks, a.planes*(t+1)/a.chunks
	for p0 < p1 {
		c0 := p0 % p.cin
		n := min(p1-p0, p.cin-c0, nc)
		_ = a.x[(p0+n)*hw-1]
		dws2Split(&a.x[p0*hw], n, g.ih, g.iw, &pad[gap], xs, a.split)
		_ = a.y[(p0+n)*ohw-1]
		fn(&pad[gap], n, xs, ohw, g.ow, &p.w[c0*taps], &p.bias[c0], &a.y[p0*ohw], &a.masks[0], nv, flags, p.lo, p.hi)
		p0 += n
	}
}
