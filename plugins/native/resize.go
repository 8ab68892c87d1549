package native

import (
	"fmt"
	"math"
	"sync/atomic"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	resizeops "github.com/switchyard-hal/switchyard/core/ops/resize"
	"github.com/switchyard-hal/switchyard/hal"
)

// Resize and Upsample: claimed for float32 inputs, so that a model's
// upsampling stays inside its native partition (deeplab_v3's opset-9
// Upsample and palm_detection_lite's RESIZE_BILINEAR each split it in two,
// on the reference kernels between). The sizes or scales are read at run
// time (the output shape comes from core/ops/resize's MakePlan, as the
// reference computes it). A rank-4 resize of the last two dims in linear
// or nearest mode with the half_pixel, pytorch_half_pixel, asymmetric or
// align_corners coordinates runs here on float32, separably, rows in
// parallel; everything else (other modes or coordinates, antialias, other
// axes, other dtypes, and the errors) runs the reference kernel inside
// the partition.

func checkResize(sg *hal.Subgraph, n *graph.Node) string { return needF32(sg, n, 0) }

// resizeTask is a resize's loop over output rows (chunksFor, by output
// element: a row belongs to the chunk holding its first element).
type resizeTask struct {
	y, x    []float32
	ih, iw  int
	oh, ow  int
	rows    resizeAxis
	cols    resizeAxis
	nearest bool
	sc      *scratch // linear: two horizontally interpolated rows per chunk
}

// hrows caches, for one chunk of output rows, the horizontal
// interpolation of the two input rows the last output row read: with
// upsampling, successive output rows read the same pair or share a row,
// so most rows cost one vertical blend instead of four reads per value.
type hrows struct {
	buf   []float32 // two rows of ow
	key   [2]int    // the input row (plane·ih + row) in each slot, -1 none
	slots [2][]float32
	// nhwc: the channels of a channels-last row (ufc_resize_nhwc.go),
	// 0 for a row of one plane
	nhwc int
}

func (h *hrows) pair(t *resizeTask, k0 int, r0 []float32, k1 int, r1 []float32) (top, bot []float32) {
	s0, s1 := h.find(k0), h.find(k1)
	switch {
	case s0 < 0 && s1 < 0:
		s0 = 0
		h.fill(t, s0, k0, r0)
		if k1 == k0 {
			s1 = s0
		} else {
			s1 = 1
			h.fill(t, s1, k1, r1)
		}
	case s0 < 0:
		s0 = 1 - s1
		h.fill(t, s0, k0, r0)
	case s1 < 0:
		s1 = 1 - s0
		h.fill(t, s1, k1, r1)
	}
	return h.slots[s0], h.slots[s1]
}

func (h *hrows) find(key int) int {
	for k := range h.key {
		if h.key[k] == key {
			return k
		}
	}
	return -1
}

// fill interpolates input row src along the columns into slot k (a
// channels-last row of h.nhwc channels where set: resizeNHWC).
func (h *hrows) fill(t *resizeTask, k, key int, src []float32) {
	h.key[k] = key
	if h.nhwc > 0 {
		hlerpNHWC(&t.cols, h.slots[k], src, h.nhwc)
		return
	}
	hlerp(&t.cols, h.slots[k], src)
}

// hlerp interpolates the input row src along the columns into dst.
func hlerp(c *resizeAxis, dst, src []float32) {
	a, b := len(dst), len(dst) // [a, b): the by-2 run's outputs
	if c.jb > c.ja {
		a, b = 2*c.ja, 2*c.jb
		upsample2(c.jb-c.ja, src[c.ja+c.e:], src[c.ja:], dst[a:b], c.w0, c.w1)
	}
	for ox := range dst[:a] {
		a0, a1 := c.i0[ox], c.i1[ox]
		dst[ox] = src[a0] + c.w[ox]*(src[a1]-src[a0])
	}
	for ox := b; ox < len(dst); ox++ {
		a0, a1 := c.i0[ox], c.i1[ox]
		dst[ox] = src[a0] + c.w[ox]*(src[a1]-src[a0])
	}
}

// resizeAxis maps each output index to its source: i0 (nearest: the
// index), and for linear i1 and the weight w of i1.
type resizeAxis struct {
	i0, i1 []int
	w      []float32
	j0, j1 []int32 // linear: i0 and i1 as int32 (resizeRows, lerpRows)
	// linear by 2 (upsample2): outputs 2j and 2j+1 for j in [ja, jb)
	// are w0 of the way from column j+e to j+e+1 (e = -1 or 0) and w1
	// from j to j+1 (ja = jb: none)
	ja, jb, e int
	w0, w1    float32
}

func buildResize(bc *buildCtx, n *graph.Node, f *fusion) (kernels.Func, error) {
	opset := bc.sg.OpsetVersion("")
	var a resizeops.Attrs
	var err error
	if n.OpType == "Upsample" {
		a, err = resizeops.UpsampleAttrs(n)
	} else {
		a, err = resizeops.ResizeAttrs(n, opset)
	}
	if err != nil || !resizeFast(a) {
		return nil, nil // the reference kernel (and its errors); never fused (resizeNHWCFollow)
	}
	ref, _ := kernels.Lookup("", n.OpType)
	k := &resizeKernel{a: a, ref: ref, pool: bc.pool}
	nhwc := f != nil && f.nhwc
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		return k.run(ctx, node, in, nhwc)
	}, nil
}

// resizeKernel is one Resize node's kernel: its attributes, the
// reference kernel, and what its calls keep (the last plan, scratch).
type resizeKernel struct {
	a      resizeops.Attrs
	ref    *kernels.Schema
	pool   *pool
	ss, hs scratchSet
	last   atomic.Pointer[resizePlan]
}

// run resizes in[0]; nhwc: the output goes channels-last (the Resize took
// over a Transpose by [0 2 3 1], ufc_resize_nhwc.go).
func (k *resizeKernel) run(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor, nhwc bool) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if x == nil || x.DType != graph.Float32 || len(x.Shape) != 4 || x.Len() == 0 {
		return k.fallback(ctx, node, in, nhwc)
	}
	var roi, scales, sizes *graph.Tensor
	var err error
	switch {
	case node.OpType == "Upsample":
		if scales, err = resizeops.UpsampleScales(node, ctx.Opset, 4, kernels.Input(in, 1)); err != nil {
			return k.fallback(ctx, node, in, nhwc)
		}
	case ctx.Opset < 11:
		scales = kernels.Input(in, 1)
	default:
		roi, scales, sizes = kernels.Input(in, 1), kernels.Input(in, 2), kernels.Input(in, 3)
	}
	rp := k.last.Load()
	if !rp.matches(x.Shape, roi, scales, sizes) {
		p, err := resizeops.MakePlan(node, k.a, x.Shape, roi, scales, sizes)
		if err != nil || p.Out[0] != x.Shape[0] || p.Out[1] != x.Shape[1] || p.Out[2] == 0 || p.Out[3] == 0 {
			return k.fallback(ctx, node, in, nhwc)
		}
		rp = newResizePlan(k.a, x.Shape, p.Out, p.Scales, roi, scales, sizes)
		k.last.Store(rp)
	}
	t := resizeTask{x: f32(x), ih: x.Shape[2], iw: x.Shape[3], oh: rp.out[2], ow: rp.out[3], nearest: k.a.Mode == resizeops.ModeNearest}
	t.rows, t.cols = rp.rows, rp.cols
	if nhwc && resizeNHWCDirect(&t, rp.out[1]) {
		return k.runNHWC(ctx, &t, rp.out)
	}
	y, err := ctx.NewUninit(graph.Float32, rp.out[:])
	if err != nil {
		return nil, err
	}
	t.y = f32(y)
	rows := x.Shape[0] * x.Shape[1] * t.oh
	switch {
	case !t.nearest && t.ow < shortResizeRow && t.ih*t.iw < 1<<24 && t.ih*t.ow < 1<<24:
		resizeShort(k.pool, &t, x.Shape[0]*x.Shape[1], &k.hs, rp.r0, rp.r1)
	default:
		if !t.nearest {
			t.sc = k.ss.of(2 * t.ow)
		}
		chunksFor(k.pool, rows*t.ow, t, func(t resizeTask, e0, e1 int) {
			var h *hrows
			if t.sc != nil {
				b := t.sc.get()
				defer t.sc.put(b)
				h = &hrows{buf: *b, key: [2]int{-1, -1}}
				h.slots = [2][]float32{h.buf[:t.ow], h.buf[t.ow : 2*t.ow]}
			}
			for r := (e0 + t.ow - 1) / t.ow; r < (e1+t.ow-1)/t.ow; r++ {
				resizeRow(&t, r, h)
			}
		})
	}
	if nhwc {
		return toNHWC(ctx, k.pool, y)
	}
	return ctx.Outputs(y), nil
}

// fallback runs the reference kernel, then the Transpose it took over
// when nhwc.
func (k *resizeKernel) fallback(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor, nhwc bool) ([]*graph.Tensor, error) {
	outs, err := k.ref.Kernel(ctx, node, in)
	if err != nil || !nhwc {
		return outs, err
	}
	if len(outs) != 1 || outs[0] == nil {
		return nil, fmt.Errorf("native: %s: %d outputs from the reference Resize", node.Label(), len(outs))
	}
	return toNHWC(ctx, k.pool, outs[0])
}

// resizeFast: the modes and coordinates the kernel here computes.
func resizeFast(a resizeops.Attrs) bool {
	if a.Antialias {
		return false
	}
	switch a.Ctm {
	case "half_pixel", resizeops.CtmPytorchHalfPixel, resizeops.CtmAsymmetric, resizeops.CtmAlignCorners:
	default:
		return false
	}
	switch a.Mode {
	case resizeops.ModeLinear:
		return true
	case resizeops.ModeNearest:
		switch a.NearestMode {
		case "round_prefer_floor", "round_prefer_ceil", "floor", "ceil":
			return true
		}
	}
	return false
}

// shortResizeRow: a linear Resize to rows narrower than this runs as two
// passes over the whole tensor (resizeShort), not row by row.
const shortResizeRow = 64

// resizeShort is a linear Resize of planes planes as a horizontal pass
// over every input row into scratch (resizeRows) and a vertical pass
// over every output row (lerpRows), each one call per chunk of planes:
// the same arithmetic in the same order as resizeRow, without a call, a
// cache lookup and a scalar tail per short row (pose_detection's 7→14
// and 14→28 upsamplings).
func resizeShort(pl *pool, t *resizeTask, planes int, hs *scratchSet, r0, r1 []int32) {
	ps := t.ih * t.ow
	sc := hs.of(planes * ps)
	buf := sc.get()
	defer sc.put(buf)
	// about 0.5 ns an output (pose_detection's 1152 planes 7×7 → 14×14:
	// 142 µs at one thread)
	chunks := splitTasks(pl.threads(), planes, 0.5*float64(t.oh*t.ow))
	parallelFor(pl, chunks, shortTask{t, *buf, r0, r1, planes, chunks}, func(a shortTask, c int) {
		p0, p1 := a.planes*c/a.chunks, a.planes*(c+1)/a.chunks
		t, ps := a.t, a.t.ih*a.t.ow
		h := a.h[p0*ps : p1*ps]
		resizeRows((p1-p0)*t.ih, t.iw, t.ow, t.x[p0*t.ih*t.iw:p1*t.ih*t.iw], h, t.cols.j0, t.cols.j1, t.cols.w)
		lerpRows(p1-p0, t.oh, t.ow, ps, h, t.y[p0*t.oh*t.ow:p1*t.oh*t.ow], a.r0, a.r1, t.rows.w)
	})
}

// shortTask is resizeShort's loop over chunks of planes (parallelFor).
type shortTask struct {
	t              *resizeTask
	h              []float32
	r0, r1         []int32
	planes, chunks int
}

// resizePlan is what a Resize call derives from its input's shape and
// its roi, scales and sizes inputs: the output shape, both axes' source
// maps and resizeShort's row offsets. Kept for the next call (the same
// shape and the same input values reuse it: nothing is derived or
// allocated again), read-only once stored.
type resizePlan struct {
	in, out     [4]int
	roi, scales []float64
	sizes       []float64
	has         [3]bool // roi, scales, sizes given
	rows, cols  resizeAxis
	r0, r1      []int32 // linear: rows.i0, rows.i1 times the output width
}

func newResizePlan(a resizeops.Attrs, in, out []int, sc []float64, roi, scales, sizes *graph.Tensor) *resizePlan {
	p := &resizePlan{in: [4]int(in), out: [4]int(out)}
	for i, t := range [3]*graph.Tensor{roi, scales, sizes} {
		if t == nil {
			continue
		}
		p.has[i] = true
		v := make([]float64, t.Len())
		for k := range v {
			v[k] = t.Float64At(k)
		}
		switch i {
		case 0:
			p.roi = v
		case 1:
			p.scales = v
		default:
			p.sizes = v
		}
	}
	p.rows = resizeMap(a, in[2], out[2], sc[2])
	p.cols = resizeMap(a, in[3], out[3], sc[3])
	if a.Mode == resizeops.ModeLinear {
		p.r0, p.r1 = make([]int32, out[2]), make([]int32, out[2])
		for oy := range p.r0 {
			p.r0[oy], p.r1[oy] = int32(p.rows.i0[oy]*out[3]), int32(p.rows.i1[oy]*out[3])
		}
	}
	return p
}

// matches reports whether p was derived from this input shape and these
// roi, scales and sizes values (false for a nil p).
func (p *resizePlan) matches(in []int, roi, scales, sizes *graph.Tensor) bool {
	if p == nil || len(in) != 4 || [4]int(in) != p.in {
		return false
	}
	for i, t := range [3]*graph.Tensor{roi, scales, sizes} {
		v := p.roi
		if i == 1 {
			v = p.scales
		} else if i == 2 {
			v = p.sizes
		}
		if (t != nil) != p.has[i] || t != nil && !sameValues(t, v) {
			return false
		}
	}
	return true
}

// sameValues reports whether t holds exactly the values v.
func sameValues(t *graph.Tensor, v []float64) bool {
	if t.Len() != len(v) {
		return false
	}
	for k, w := range v {
		if t.Float64At(k) != w {
			return false
		}
	}
	return true
}

// resizeMap is one axis's source positions (ONNX's coordinate transform,
// in float64 like the reference, then clamped to the input).
func resizeMap(a resizeops.Attrs, in, out int, scale float64) resizeAxis {
	m := resizeAxis{i0: make([]int, out)}
	linear := a.Mode == resizeops.ModeLinear
	if linear {
		m.i1, m.w = make([]int, out), make([]float32, out)
	}
	for o := 0; o < out; o++ {
		xo := a.SourceCoord(o, in, out, scale)
		if !linear {
			m.i0[o] = a.NearestIndex(xo, in)
			continue
		}
		xo = min(max(xo, 0), float64(in-1))
		k := math.Floor(xo)
		m.i0[o] = int(k)
		m.i1[o] = min(int(k)+1, in-1)
		m.w[o] = float32(xo - k)
	}
	if linear {
		m.up2()
		m.j0, m.j1 = make([]int32, out), make([]int32, out)
		for o := range m.j0 {
			m.j0[o], m.j1[o] = int32(m.i0[o]), int32(m.i1[o])
		}
	}
	return m
}

// up2 finds the longest run of source columns whose two outputs follow
// the pattern of a linear resize by 2 (resizeAxis.ja), at least 16: the
// even output between columns j−1 and j (half-pixel centres) or j and
// j+1 (asymmetric), the odd one between j and j+1, each at one weight.
func (m *resizeAxis) up2() {
	n := len(m.i0)
	best := 0
	for _, e := range []int{-1, 0} {
		for j := 1; 2*j+1 < n; {
			w0, w1 := m.w[2*j], m.w[2*j+1]
			k := j
			for ; 2*k+1 < n && m.i0[2*k] == k+e && m.i1[2*k] == k+e+1 && m.i0[2*k+1] == k && m.i1[2*k+1] == k+1 &&
				m.w[2*k] == w0 && m.w[2*k+1] == w1; k++ {
			}
			if k-j > best && k-j >= 16 {
				best, m.ja, m.jb, m.e, m.w0, m.w1 = k-j, j, k, e, w0, w1
			}
			j = k + 1
		}
	}
}

// resizeRow computes output row r (plane r / oh, row r % oh); h caches
// the horizontally interpolated rows of a linear resize (the same
// arithmetic, in the same order, as interpolating each value on its own).
func resizeRow(t *resizeTask, r int, h *hrows) {
	plane, oy := r/t.oh, r%t.oh
	src := t.x[plane*t.ih*t.iw : (plane+1)*t.ih*t.iw]
	dst := t.y[r*t.ow : (r+1)*t.ow]
	c := t.cols
	if t.nearest {
		row := src[t.rows.i0[oy]*t.iw:][:t.iw]
		for ox := range dst {
			dst[ox] = row[c.i0[ox]]
		}
		return
	}
	r0 := src[t.rows.i0[oy]*t.iw:][:t.iw]
	r1 := src[t.rows.i1[oy]*t.iw:][:t.iw]
	wy := t.rows.w[oy]
	if h != nil {
		base := plane * t.ih
		top, bot := h.pair(t, base+t.rows.i0[oy], r0, base+t.rows.i1[oy], r1)
		lerp(dst, top, bot, wy)
		return
	}
	for ox := range dst {
		a0, a1 := c.i0[ox], c.i1[ox]
		wx := c.w[ox]
		top := r0[a0] + wx*(r0[a1]-r0[a0])
		bot := r1[a0] + wx*(r1[a1]-r1[a0])
		dst[ox] = top + wy*(bot-top)
	}
}
