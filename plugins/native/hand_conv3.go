package native

import (
	"sync"
	"sync/atomic"
)

// A dense 3×3 convolution at stride 2 over few input channels — the first
// layer of most image models: 3 channels (RGB) into 16–32 at half the
// resolution — computed directly, one output row of up to 24 output
// channels a kernel call (the package asmgenhand). Through im2col and the
// GEMM it has k = 27: each of the GEMM's panels is packed from strided
// reads of the planes for 27 multiply-adds a float, and the split into
// even and odd columns is paid once per row of the im2col; the direct
// kernel splits each input row's columns once for all output channels and
// reads the planes in place. BenchmarkHandConv3 (CPU time, one thread) has
// the numbers; hand_landmark_full's 3→24 at 224×224 is the case it was
// written for.

// handC3MaxCin is the most input channels the direct kernels take: with
// more, k is large enough for the GEMM's tiles to do better.
const handC3MaxCin = 4

// handC3MaxOut is the most output channels a kernel call computes.
const handC3MaxOut = 24

// useHandC3: a variable, so that tests and benchmarks run the other paths
// too.
var useHandC3 = true

// handC3Slot is a convPlan's direct form, its weights packed on first use.
type handC3Slot struct {
	once  sync.Once
	ready atomic.Bool // k is set (checked first: a call builds no closure)
	k     *handC3
}

// get is p's direct form (nil: the kernels do not take it).
func (s *handC3Slot) get(p *convPlan) *handC3 {
	if s.ready.Load() {
		return s.k
	}
	s.once.Do(func() {
		s.k = handC3Plan(p)
		s.ready.Store(true)
	})
	return s.k
}

// handC3 is a plan's weights packed for the direct kernels: per group of
// output channels (o0, n), w[((ci·3+r)·3+k)·n+o] and the bias.
type handC3 struct {
	groups []handC3Group
	zero   atomic.Pointer[[]float32] // a row of zeros (the padding rows)
}

type handC3Group struct {
	o0, n int
	w, b  []float32
}

// handC3Plan is p's direct form, nil where the kernels do not take it.
func handC3Plan(p *convPlan) *handC3 {
	if !handC3Kernels || !p.constW || p.depthwise || p.group != 1 || p.win.nd != 2 || p.kh != 3 || p.kw != 3 ||
		p.win.sh != 2 || p.win.sw != 2 || p.win.dh != 1 || p.win.dw != 1 || p.cin > handC3MaxCin || p.cout%4 != 0 {
		return nil
	}
	ng := (p.cout + handC3MaxOut - 1) / handC3MaxOut
	per := ((p.cout+ng-1)/ng + 3) / 4 * 4
	h := &handC3{}
	for o0 := 0; o0 < p.cout; o0 += per {
		n := min(per, p.cout-o0)
		gr := handC3Group{o0: o0, n: n, w: make([]float32, p.cin*9*n), b: append([]float32(nil), p.bias[o0:o0+n]...)}
		for o := 0; o < n; o++ {
			src := p.w[(o0+o)*p.cin*9:]
			for t := 0; t < p.cin*9; t++ {
				gr.w[t*n+o] = src[t]
			}
		}
		h.groups = append(h.groups, gr)
	}
	return h
}

// zeros is a row of at least n zeros.
func (h *handC3) zeros(n int) []float32 {
	if z := h.zero.Load(); z != nil && len(*z) >= n {
		return *z
	}
	z := make([]float32, n)
	h.zero.Store(&z)
	return z
}

// handC3Task is the loop over output rows (parallelFor).
type handC3Task struct {
	h      *handC3
	p      *convPlan
	g      *geom
	x, y   []float32
	zero   []float32
	rows   int // batch·oh
	chunks int
}

// handConv3 computes p over x into y with the direct kernels and reports
// whether it did (false: the plan or the geometry is not theirs).
func handConv3(pl *pool, p *convPlan, g *geom, x, y []float32, batch int) bool {
	if !useHandC3 || !handC3Kernels || p.kh != 3 || p.kw != 3 || p.group != 1 || p.cin > handC3MaxCin {
		return false
	}
	h := p.hand.get(p)
	if h == nil || g.pl > 1 || g.pl < 0 || g.ow < 16 {
		return false
	}
	rows := batch * g.oh
	// about 0.011 ns a multiply-add (BenchmarkHandConv3, one thread)
	chunks := splitTasks(pl.threads(), rows, 0.011*float64(g.ow*p.cout*p.cin*9))
	a := handC3Task{h: h, p: p, g: g, x: x, y: y, zero: h.zeros(g.iw), rows: rows, chunks: chunks}
	parallelFor(pl, chunks, a, func(a handC3Task, t int) { a.run(t) })
	return true
}

func (a handC3Task) run(t int) {
	p, g := a.p, a.g
	hw, ohw := g.ih*g.iw, g.oh*g.ow
	flags := 0
	if p.clamp {
		flags = flagClamp
	}
	var rp [3 * handC3MaxCin]*float32
	for r := a.rows * t / a.chunks; r < a.rows*(t+1)/a.chunks; r++ {
		b, oy := r/g.oh, r%g.oh
		for ci := 0; ci < p.cin; ci++ {
			plane := a.x[(b*p.cin+ci)*hw : (b*p.cin+ci+1)*hw]
			for k := 0; k < 3; k++ {
				rp[3*ci+k] = &a.zero[0]
				if iy := oy*g.sh - g.pt + k; iy >= 0 && iy < g.ih {
					rp[3*ci+k] = &plane[iy*g.iw]
				}
			}
		}
		for i := range a.h.groups {
			gr := &a.h.groups[i]
			out := a.y[(b*p.cout+gr.o0)*ohw+oy*g.ow : (b*p.cout+gr.o0+gr.n-1)*ohw+(oy+1)*g.ow]
			handC3Call(g.pl, gr.n, &rp, p.cin, &gr.w[0], &gr.b[0], &out[0], ohw, g.iw, g.ow, flags, p.lo, p.hi)
		}
	}
}
