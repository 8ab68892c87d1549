package native

// The 3×3 depthwise row kernels (stride 2 with one column of padding on
// the left or none, or stride 1 at dilation 1, 2 or 4 with as many
// columns of padding on the left as the dilation; see the package
// asmgendw3): each channel's plane is
// computed straight from the unpadded input, whole rows at a time, with
// no copy into padded planes, no transposes and no masked tap loads at
// the edges. A run of output rows whose three input rows all lie inside
// the input is one call; a row that reads the top or bottom padding is a
// call of its own with a row of zeros in place of the missing ones.

// dw3Fn is a 3×3 depthwise row kernel (dw3s1AVX512, dw3s2AVX512).
type dw3Fn func(x0, x1, x2 *float32, step, rows int, y *float32, ldy, iw, ow int, w *float32, bias float32, flags int, lo, hi float32)

// useDW3 reports whether the row kernels compute a depthwise convolution
// of geometry g: 3×3, strides 1 or 2 (both the same), the same dilation
// on both axes (1 at stride 2; 1, 2 or 4 at stride 1: DeepLabV3's atrous
// MobileNetV2 blocks), as many columns of padding on the left as the
// dilation (or none at stride 2: TensorFlow's SAME over an even width),
// and rows that read at least dw3MinIW
// input columns (on narrower planes the packed path's channel vectors
// are fuller). BenchmarkDW3 (CPU time, one thread, AVX-512, load 10-12;
// before → rows µs): 3×3 32×120×160 stride 2 169 → 58, 16×120×160 132 →
// 52, 32×60×80 63 → 33, 64×30×40 34 → 24, stride 2 19 → 10, 128×15×20
// 18 → 18, stride 2 12 → 8, 144×56×56 257 → 112, 72×65×65 177 → 70;
// narrower, the packed path wins: 256×8×10 12 → 15, 64×8×10 stride 2
// 1.9 → 2.2.
//
// It also reports the flat kernels' shapes (hand_dwflat.go) and the
// stride-2 parity-plane kernels' (dws2.go: 5×5, so the cost model prices
// them as family "dwconv/s2rows3", whose rate per FLOP measured them
// within 15%: 144×56×56 5×5 estimated 119 µs, measured 104-114).
func useDW3(g *geom) bool {
	// (small planes at stride 1: the flat kernel, hand_dwflat.go)
	// (stride-2 5×5: dws2.go; its 3×3 kernels stay off, dws2MaxW3 = 0)
	return handDWFlat(g) || dws2Take(g) || dw3RowsTake(g)
}

// dw3RowsTake reports whether the row kernels themselves take g (what
// useDW3 was before the flat kernel: dwpw's strips call them).
func dw3RowsTake(g *geom) bool {
	return useDW3Rows && dw3Kernel(g) != nil && g.kh == 3 && g.kw == 3 && g.dh == g.dw &&
		g.sh == g.sw && g.pt >= 0 && g.ow*g.sw >= dw3MinIW && g.oh > 0
}

// dw3Kernel is the row kernel of g's column stride and dilation (nil:
// none).
func dw3Kernel(g *geom) dw3Fn {
	if dw3Kernels == nil {
		return nil
	}
	switch {
	case g.sw == 2 && g.dw == 1 && g.pl == 1:
		return dw3Kernels[3]
	case g.sw == 2 && g.dw == 1 && g.pl == 0:
		return dw3Kernels[4]
	case g.sw == 1 && g.pl == g.dw && (g.dw == 1 || g.dw == 2 || g.dw == 4):
		return dw3Kernels[g.dw/2]
	}
	return nil
}

// useDW3Rows: a variable, so that tests and benchmarks run the other
// paths too.
var useDW3Rows = true

// dw3MinIW is the fewest input columns the output rows read that the row
// kernels take.
var dw3MinIW = 20

// dw3Plane computes output plane y (oh×ow) of the 3×3 filter w (9 taps)
// over input plane x (ih×iw); zero is a row of at least iw zeros.
func dw3Plane(g *geom, x, w, y, zero []float32, bias float32, clampOn bool, lo, hi float32) {
	dw3Rows(g, x, w, y, zero, bias, clampOn, lo, hi, 0, g.oh)
}

// depthwise3 is depthwise through the row kernels, planes split over the
// pool's threads in order. Split into strips of rows instead (the
// positions' order of the 1×1 convolutions around it), the calls of a
// few rows each cost more than the split saved: BenchmarkT2bDW3Threads,
// hot pool, 2 threads, strips of 4+ rows → planes: 240×28×28 85 → 29 µs
// (1 thread 57-69), 144×56×56 stride 2 67 → 26 (1 thread 50).
func depthwise3(pl *pool, p *convPlan, cs *convShape, x, y []float32, batch int) {
	if handDWFlat(&cs.g) {
		handDepthwiseFlat(pl, p, &cs.g, x, y, batch)
		return
	}
	if dws2Take(&cs.g) {
		dws2Depthwise(pl, p, &cs.g, x, y, batch)
		return
	}
	planes := batch * p.cin
	chunks := splitTasks(pl.threads(), planes, dwPlaneNS(&cs.g))
	parallelFor(pl, chunks, dwTask{p: p, cs: cs, x: x, y: y, planes: planes, chunks: chunks}, func(a dwTask, t int) {
		g := &a.cs.g
		hw, ohw := g.ih*g.iw, g.oh*g.ow
		for pi := a.planes * t / a.chunks; pi < a.planes*(t+1)/a.chunks; pi++ {
			ch := pi % a.p.cin
			dw3Plane(g, a.x[pi*hw:(pi+1)*hw], a.p.w[ch*9:(ch+1)*9], a.y[pi*ohw:(pi+1)*ohw], a.cs.zero, a.p.bias[ch], a.p.clamp, a.p.lo, a.p.hi)
		}
	})
}
