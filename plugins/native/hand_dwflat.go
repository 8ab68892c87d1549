package native

import "sync"

// A 3×3 depthwise convolution at stride 1 with one row and column of
// padding on every side over small planes (MobileNet-style blocks' 14×14
// and 7×7 stages: hand_landmark_full's 672, 480 and 1152 channels),
// computed by handDWFlatAVX512 (the package asmgenhand): each plane one
// flat run of h·w floats, 16 positions a vector whatever the width, each
// tap one masked multiply-add reading the input in place. The row kernels
// (dw3.go) fill a vector with one row of 14 or 7 columns and pay a call
// and its edge rows per plane; the packed path transposes the planes to
// channels-last and back. BenchmarkHandDWSmall (CPU µs, one thread) has
// the numbers.

// handDWFlatFn is handDWFlatAVX512.
type handDWFlatFn func(x *float32, planes, hw, w int, wt, b, y *float32, masks *uint16, nv, flags int, lo, hi float32)

// handDWFlatMaxW is the widest plane the flat kernel takes: on wider ones
// the row kernels, which load each input vector once for three taps, do
// better. BenchmarkHandDWSmall (CPU µs, one thread, load 10; rows → flat):
// 128×15×20 28 → 15, 240×28×28 89 → 79, 96×33×33 58 → 48; 144×56×56 154-172
// → 175, 24×112×112 79-90 → 121-129.
var handDWFlatMaxW = 40

// useHandDWFlat: a variable, so that tests and benchmarks run the other
// paths too.
var useHandDWFlat = true

// handDWFlat reports whether the flat kernel computes a depthwise
// convolution of geometry g.
func handDWFlat(g *geom) bool {
	return handDWFlatKernel != nil && useHandDWFlat && useDW3Rows && g.kh == 3 && g.kw == 3 && g.sh == 1 && g.sw == 1 && g.dh == 1 && g.dw == 1 &&
		g.pt == 1 && g.pl == 1 && g.pb == 1 && g.pr == 1 && g.oh == g.ih && g.ow == g.iw && g.iw <= handDWFlatMaxW && g.ih > 0 && g.iw > 0
}

// handDWMasks holds the tap masks of each plane size (h<<32 | w).
var handDWMasks struct {
	mu sync.Mutex
	by map[int][]uint16
}

// handDWMasksOf is the masks of an h×w plane: for each vector v of 16
// flat positions and tap t = 3(dy+1)+dx+1, the lanes p = 16v+i < h·w whose
// tap (y+dy, x+dx) lies inside the plane.
func handDWMasksOf(h, w int) []uint16 {
	key := h<<32 | w
	handDWMasks.mu.Lock()
	defer handDWMasks.mu.Unlock()
	if m, ok := handDWMasks.by[key]; ok {
		return m
	}
	hw := h * w
	nv := (hw + 15) / 16
	m := make([]uint16, nv*9)
	for v := 0; v < nv; v++ {
		for t := 0; t < 9; t++ {
			dy, dx := t/3-1, t%3-1
			for i := 0; i < 16; i++ {
				p := 16*v + i
				if p >= hw {
					break
				}
				y, x := p/w+dy, p%w+dx
				if y >= 0 && y < h && x >= 0 && x < w {
					m[v*9+t] |= 1 << i
				}
			}
		}
	}
	if handDWMasks.by == nil || len(handDWMasks.by) > 64 {
		handDWMasks.by = map[int][]uint16{}
	}
	handDWMasks.by[key] = m
	return m
}

// handDWTask is the loop over planes (parallelFor).
type handDWTask struct {
	p              *convPlan
	g              *geom
	x, y           []float32
	masks          []uint16
	planes, chunks int
}

// handDepthwiseFlat is depthwise through the flat kernel, planes split
// over the pool's threads in order.
func handDepthwiseFlat(pl *pool, p *convPlan, g *geom, x, y []float32, batch int) {
	planes := batch * p.cin
	chunks := splitTasks(pl.threads(), planes, dwPlaneNS(g))
	parallelFor(pl, chunks, handDWTask{p: p, g: g, x: x, y: y, masks: handDWMasksOf(g.ih, g.iw), planes: planes, chunks: chunks},
		func(a handDWTask, t int) { a.run(t) })
}

func (a handDWTask) run(t int) {
	p, g := a.p, a.g
	hw := g.ih * g.iw
	flags := 0
	if p.clamp {
		flags = flagClamp
	}
	p0, p1 := a.planes*t/a.chunks, a.planes*(t+1)/a.chunks
	for p0 < p1 {
		c0 := p0 % p.cin
		n := min(p1-p0, p.cin-c0)
		_ = a.x[(p0+n)*hw-1]
		_ = a.y[(p0+n)*hw-1]
		handDWFlatKernel(&a.x[p0*hw], n, hw, g.iw, &p.w[c0*9], &p.bias[c0], &a.y[p0*hw], &a.masks[0], len(a.masks)/9, flags, p.lo, p.hi)
		p0 += n
	}
}
