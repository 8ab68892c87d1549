package native

import "sync"

// A 3×3 or 5×5 depthwise convolution at stride 1 with k/2 rows and
// columns of padding on every side over small planes (MobileNet-style
// blocks' 14×14 and 7×7 stages: hand_landmark_full's 672, 480 and 1152
// channels), computed by handDWFlat{3,5}AVX512 (the package
// asmgenhand): each plane one flat run of h·w floats, 16 positions a
// vector whatever the width, each tap one multiply-add reading a padded
// copy of the planes (zeros between them, so only the columns at the
// row's ends need masks), about 32 KiB of planes a call. The row kernels
// (dw3.go) fill a vector with one row of 14 or 7 columns and pay a call
// and its edge rows per plane; the packed path transposes the planes to
// channels-last and back. BenchmarkHandDWSmall (CPU µs, one thread) has
// the numbers.

// handDWFlatFn is handDWFlat3AVX512 or handDWFlat5AVX512.
type handDWFlatFn func(x *float32, planes, xs, hw, w int, wt, b, y *float32, masks *uint16, nv, flags int, lo, hi float32)

// handDWFlatMaxW is the widest plane the flat kernels take: on wider ones
// the 3×3 row kernels, which load each input vector once for three taps,
// do better. BenchmarkHandDWSmall (CPU µs, one thread, load 9; packed or
// planar → flat, 3×3 unless 5×5): 672×14×14 67-82 → 52-53, 480×14×14
// 59-62 → 35-37, 1152×7×7 34-36 → 28-31, 128×15×20 24-30 → 14, 240×28×28
// 98-151 → 62-64 (rows 89), 96×33×33 59-93 → 34-52 (rows 58); 5×5:
// 672×14×14 143-158 → 108-111, 480×14×14 103-109 → 75-77, 1152×7×7 66-71
// → 64, 240×28×28 170 → 129; wider, 3×3 144×56×56 rows 154-172 → flat
// 165-171, 24×112×112 rows 79-90 → 94-99. A 5×5 has no row kernel and
// takes the flat one at every width (load 8: 96×56×56 223-234 → 197-207,
// 32×112×112 311-391 → 268-271, 128×64×64 454-488 → 328-343).
var handDWFlatMaxW = 40

// useHandDWFlat: a variable, so that tests and benchmarks run the other
// paths too.
var useHandDWFlat = true

// handDWFlat reports whether a flat kernel computes a depthwise
// convolution of geometry g.
func handDWFlat(g *geom) bool {
	k := g.kh
	return handDWFlatKernels != nil && useHandDWFlat && useDW3Rows && (k == 3 || k == 5) && g.kw == k && g.sh == 1 && g.sw == 1 &&
		g.dh == 1 && g.dw == 1 && g.pt == k/2 && g.pl == k/2 && g.pb == k/2 && g.pr == k/2 && g.oh == g.ih && g.ow == g.iw &&
		(g.iw <= handDWFlatMaxW || k == 5) && g.ih > 0 && g.iw > 0
}

// handDWMasks holds the tap masks of each plane size and filter
// (h<<40 | w<<8 | k).
var handDWMasks handDWMasksCache

// handDWMasksCache is a small map of mask tables by key.
type handDWMasksCache struct {
	mu sync.Mutex
	by map[int][]uint16
}

// of is the table of key, made by mk the first time.
func (c *handDWMasksCache) of(key int, mk func() []uint16) []uint16 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok := c.by[key]; ok {
		return m
	}
	if c.by == nil || len(c.by) > 64 {
		c.by = map[int][]uint16{}
	}
	m := mk()
	c.by[key] = m
	return m
}

// handDWMasksOf is the masks of an h×w plane and a k×k filter: for each
// vector v of 16 flat positions p = 16v+i, the lanes whose column
// p mod w + dx lies inside the row, for dx = −k/2..−1, 1..k/2, then the
// lanes p < h·w (the store's).
func handDWMasksOf(h, w, k int) []uint16 {
	return handDWMasks.of(h<<40|w<<8|k, func() []uint16 { return handDWMasksMake(h, w, k) })
}

// handDWMasksMake builds handDWMasksOf's table.
func handDWMasksMake(h, w, k int) []uint16 {
	hw, pad := h*w, k/2
	nv, nm := (hw+15)/16, 2*pad+1
	m := make([]uint16, nv*nm)
	for v := 0; v < nv; v++ {
		j := 0
		for dx := -pad; dx <= pad; dx++ {
			if dx == 0 {
				continue
			}
			for i := 0; i < 16; i++ {
				if x := (16*v+i)%w + dx; x >= 0 && x < w {
					m[v*nm+j] |= 1 << i
				}
			}
			j++
		}
		for i := 0; i < 16 && 16*v+i < hw; i++ {
			m[v*nm+j] |= 1 << i
		}
	}
	return m
}

// handDWScratch holds the tasks' padded copies of their planes.
var handDWScratch scratchSet

// handDWGroup is the planes a kernel call takes: about 32 KiB of padded
// copies.
func handDWGroup(xs int) int { return max(1, min(64, (32<<10)/4/xs)) }

// handDWTask is the loop over planes (parallelFor).
type handDWTask struct {
	p              *convPlan
	g              *geom
	x, y           []float32
	masks          []uint16
	planes, chunks int
	sc             *scratch
}

// handDepthwiseFlat is depthwise through the flat kernel, planes split
// over the pool's threads in order.
func handDepthwiseFlat(pl *pool, p *convPlan, g *geom, x, y []float32, batch int) {
	planes := batch * p.cin
	chunks := splitTasks(pl.threads(), planes, dwPlaneNS(g))
	gap := g.kh / 2 * (g.iw + 1)
	xs := g.ih*g.iw + gap
	sc := handDWScratch.of(gap + handDWGroup(xs)*xs + 16)
	parallelFor(pl, chunks, handDWTask{p: p, g: g, x: x, y: y, masks: handDWMasksOf(g.ih, g.iw, g.kh), planes: planes, chunks: chunks, sc: sc},
		func(a handDWTask, t int) { a.run(t) })
}

func (a handDWTask) run(t int) {
	p, g := a.p, a.g
	hw := g.ih * g.iw
	flags := 0
	if p.clamp {
		flags = flagClamp
	}
	taps := g.kh * g.kw
	fn := handDWFlatKernels[g.kh/2-1]
	gap := g.kh / 2 * (g.iw + 1)
	xs := hw + gap
	nc := handDWGroup(xs)
	buf := a.sc.get()
	defer a.sc.put(buf)
	// the planes' copies at gap + i·xs, zeros between them (whatever the
	// buffer held before)
	pad := (*buf)[:gap+nc*xs+16]
	clear(pad[:gap])
	for i := 0; i < nc; i++ {
		clear(pad[gap+i*xs+hw : gap+(i+1)*xs])
	}
	clear(pad[gap+nc*xs:])
	nv := (hw + 15) / 16
	p0, p1 := a.planes*t/a.chunks, a.planes*(t+1)/a.chunks
	for p0 < p1 {
		c0 := p0 % p.cin
		n := min(p1-p0, p.cin-c0, nc)
		for i := 0; i < n; i++ {
			copy(pad[gap+i*xs:gap+i*xs+hw], a.x[(p0+i)*hw:(p0+i+1)*hw])
		}
		_ = a.y[(p0+n)*hw-1]
		fn(&pad[gap], n, xs, hw, g.iw, &p.w[c0*taps], &p.bias[c0], &a.y[p0*hw], &a.masks[0], nv, flags, p.lo, p.hi)
		p0 += n
	}
}
