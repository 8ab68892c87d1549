package native

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/core/kernels/quant"
)

// qconvGeom is a Conv2D's window.
type qconvGeom struct {
	kh, kw, sh, sw, dh, dw, pt, pl, pb, pr int
}

// padU8 is an NHWC int8 input as u = x+128 with the padding of a window
// around each image (holding xz+128), so that every tap is in bounds.
func padU8(dst []uint8, x []int8, n, h, w, c int, gm qconvGeom, xz int32) []uint8 {
	hp, wp := h+gm.pt+gm.pb, w+gm.pl+gm.pr
	need := n * hp * wp * c
	if cap(dst) < need {
		dst = make([]uint8, need)
	}
	dst = dst[:need]
	pad := uint8(int8(xz)) ^ 0x80
	for i := range dst {
		dst[i] = pad
	}
	for b := 0; b < n; b++ {
		for iy := 0; iy < h; iy++ {
			src := x[(b*h+iy)*w*c:][:w*c]
			row := dst[((b*hp+iy+gm.pt)*wp+gm.pl)*c:][:w*c]
			i := 0
			for ; i+8 <= len(src); i += 8 {
				*(*uint64)(unsafe.Pointer(&row[i])) = *(*uint64)(unsafe.Pointer(&src[i])) ^ 0x8080808080808080
			}
			for ; i < len(src); i++ {
				row[i] = uint8(src[i]) ^ 0x80
			}
		}
	}
	return dst
}

// packIm2col packs the windows of output positions from a padded u8
// image (padU8; n×hp×wp×c) for a conv with output oh×ow: row r = (b, oy,
// ox), k = (ky, kx, ch) as OHWI filters order it.
// convFill is the GEMM operand of an int8 convolution over the NHWC x:
// its rows themselves for a 1×1, stride-1 kernel without padding, else
// the im2col of x padded with the zero point xz, in a buffer from imgs
// that done gives back once the GEMM has run.
// The buffer comes back as img (nil for the 1×1 case), for the caller to
// put back in imgs (the same pointer: no allocation per call).
func convFill(imgs *sync.Pool, x []int8, N, H, W, C int, gm qconvGeom, xz int32, oh, ow int) (fill qfill, img *[]uint8) {
	if gm.kh == 1 && gm.kw == 1 && gm.sh == 1 && gm.sw == 1 && gm.pt+gm.pl+gm.pb+gm.pr == 0 {
		return packRows(x, C), nil
	}
	img, _ = imgs.Get().(*[]uint8)
	if img == nil {
		img = new([]uint8)
	}
	*img = padU8(*img, x, N, H, W, C, gm, xz)
	return packIm2col(*img, H+gm.pt+gm.pb, W+gm.pl+gm.pr, C, oh, ow, gm), img
}

func packIm2col(img []uint8, hp, wp, c, oh, ow int, gm qconvGeom) qfill {
	return qfill{img: img, hp: hp, wp: wp, c: c, oh: oh, ow: ow, gm: gm, im2col: true}
}

func (f *qfill) fillIm2col(a []uint8, r0, rows, mr, k4 int) {
	img, hp, wp, c, oh, ow, gm := f.img, f.hp, f.wp, f.c, f.oh, f.ow, f.gm
	{
		tiles := (rows + mr - 1) / mr
		k := gm.kh * gm.kw * c
		var buf [4096]uint8
		var rb []uint8
		if k4 <= len(buf) {
			rb = buf[:k4]
		} else {
			rb = make([]uint8, k4)
		}
		clear(rb[k:])
		seg := gm.kw * c
		for ti := 0; ti < tiles; ti++ {
			at := a[ti*mr*k4 : (ti+1)*mr*k4]
			for i := 0; i < mr; i++ {
				r := ti*mr + i
				if r >= rows {
					for ks := 0; ks < k4/4; ks++ {
						*(*uint32)(unsafe.Pointer(&at[ks*mr*4+i*4])) = 0
					}
					continue
				}
				pos := r0 + r
				ox := pos % ow
				oy := (pos / ow) % oh
				b := pos / (ow * oh)
				for ky := 0; ky < gm.kh; ky++ {
					base := ((b*hp+oy*gm.sh+ky*gm.dh)*wp + ox*gm.sw) * c
					if gm.dw == 1 {
						copy(rb[ky*seg:(ky+1)*seg], img[base:base+seg])
						continue
					}
					for kx := 0; kx < gm.kw; kx++ {
						o := base + kx*gm.dw*c
						copy(rb[ky*seg+kx*c:ky*seg+(kx+1)*c], img[o:o+c])
					}
				}
				for ks := 0; ks < k4/4; ks++ {
					*(*uint32)(unsafe.Pointer(&at[ks*mr*4+i*4])) = *(*uint32)(unsafe.Pointer(&rb[ks*4]))
				}
			}
		}
	}
}

// buildQGemmOp builds Conv2D and FullyConnected.
func buildQGemmOp(bc *buildCtx, n *graph.Node) (kernels.Func, error) {
	w := constInput(bc.sg, n, 3)
	fc := n.OpType == "FullyConnected"
	cout := w.Shape[0]
	q, r := readQConst(bc.sg, n, cout)
	if r != "" {
		return nil, fmt.Errorf("%s", r)
	}
	wd := graph.Data[int8](w)
	k := w.Len() / cout
	mq, ms := multipliers(q, cout, fc)
	bias := qbias(bc, n, cout)
	ref := refKernel(n.OpType)
	var gm qconvGeom
	if !fc {
		st, dl, pd := n.AttrInts("strides", []int64{1, 1}), n.AttrInts("dilations", []int64{1, 1}), n.AttrInts("pads", []int64{0, 0, 0, 0})
		gm = qconvGeom{kh: w.Shape[1], kw: w.Shape[2], sh: int(st[0]), sw: int(st[1]), dh: int(dl[0]), dw: int(dl[1]),
			pt: int(pd[0]), pl: int(pd[1]), pb: int(pd[2]), pr: int(pd[3])}
	}
	// the tile kernel is chosen for the rows the inferred shape promises
	m := 64
	if xt, ok := bc.sg.TypeOf(n.Inputs[0]); ok {
		dims, _ := xt.Shape.Ints()
		if fc && dims != nil {
			m = max(kernels.Prod(dims)/k, 1)
		} else if len(dims) == 4 {
			oh := (dims[1]+gm.pt+gm.pb-((gm.kh-1)*gm.dh+1))/gm.sh + 1
			ow := (dims[2]+gm.pl+gm.pr-((gm.kw-1)*gm.dw+1))/gm.sw + 1
			m = max(dims[0]*oh*ow, 1)
		}
	}
	g := newQGemm(wd, cout, k, m, bias, q.xz, mq, ms, q.yz, q.lo, q.hi)
	var outShape []int
	if s := n.AttrInts("output_shape", nil); fc && len(s) > 0 {
		outShape = make([]int, len(s))
		for i, d := range s {
			outShape[i] = int(d)
		}
	}
	pool := bc.pool
	var imgPool sync.Pool
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		xt := in[0]
		x, ok := xt.Data.([]int8)
		if !ok || xt.Check() != nil {
			return ref(ctx, node, in)
		}
		if fc {
			if len(x)%k != 0 {
				return ref(ctx, node, in)
			}
			rows := len(x) / k
			shape := []int{rows, cout}
			if outShape != nil {
				if p, err := graph.NumElements(outShape); err != nil || p != rows*cout {
					return ref(ctx, node, in)
				}
				shape = outShape
			}
			out, err := ctx.NewUninit(graph.Int8, shape)
			if err != nil {
				return nil, err
			}
			g.run(pool, rows, packRows(x, k), out.Data.([]int8), cout)
			return ctx.Outputs(out), nil
		}
		if len(xt.Shape) != 4 || xt.Shape[3]*gm.kh*gm.kw != k {
			return ref(ctx, node, in)
		}
		N, H, W, C := xt.Shape[0], xt.Shape[1], xt.Shape[2], xt.Shape[3]
		oh := (H+gm.pt+gm.pb-((gm.kh-1)*gm.dh+1))/gm.sh + 1
		ow := (W+gm.pl+gm.pr-((gm.kw-1)*gm.dw+1))/gm.sw + 1
		if H+gm.pt+gm.pb < (gm.kh-1)*gm.dh+1 || W+gm.pl+gm.pr < (gm.kw-1)*gm.dw+1 || oh < 1 || ow < 1 {
			return ref(ctx, node, in)
		}
		out, err := ctx.NewUninit(graph.Int8, []int{N, oh, ow, cout})
		if err != nil {
			return nil, err
		}
		if ctx.Stopped() {
			return nil, ctx.Stop(node)
		}
		fill, img := convFill(&imgPool, x, N, H, W, C, gm, q.xz, oh, ow)
		g.run(pool, N*oh*ow, fill, out.Data.([]int8), cout)
		if img != nil {
			imgPool.Put(img)
		}
		return ctx.Outputs(out), nil
	}, nil
}

// --- depthwise ---

type qdw struct {
	// the assembly path: weights [c/16][taps][16] int32, requantisation
	// blocks per 16 channels, a padded copy of the input (xz around, cp
	// channels); a kernel taking taps in pairs (pairs) has the weights
	// [c/16][⌈taps/2⌉][16] int32, each the int16 weights of two taps
	// (the first in the low half, an odd count padded with 0), and two
	// offsets per pair
	fn      func(nt, taps int, offs *int, w *int32, x *int8, xstep int, rq *int32, y *int8, ystep int, mask uint64)
	pairs   bool
	cp      int
	wv      []int32
	rq      []int32
	masks   []uint64
	scratch sync.Pool

	kh, kw, c int
	gm        qconvGeom
	w         []int32 // kh·kw·c
	bias      []int32
	mq        []int32
	ms        []int
	xz, yz    int32
	lo, hi    int32
	// rqst is the stride of rq's blocks; fm (non-nil: ONNX's float
	// requantisation, prepareASMF), flo and fhi as in qgemm
	rqst     int
	fm       []float64
	flo, fhi float64
}

type qdwRun struct {
	d            *qdw
	x            []int8
	y            []int8
	h, w, oh, ow int
}

func buildQDepthwise(bc *buildCtx, n *graph.Node) (kernels.Func, error) {
	w := constInput(bc.sg, n, 3)
	c := w.Shape[3]
	q, r := readQConst(bc.sg, n, c)
	if r != "" {
		return nil, fmt.Errorf("%s", r)
	}
	st, dl, pd := n.AttrInts("strides", []int64{1, 1}), n.AttrInts("dilations", []int64{1, 1}), n.AttrInts("pads", []int64{0, 0, 0, 0})
	d := &qdw{kh: w.Shape[1], kw: w.Shape[2], c: c, xz: q.xz, yz: q.yz, lo: q.lo, hi: q.hi, bias: qbias(bc, n, c)}
	d.gm = qconvGeom{kh: d.kh, kw: d.kw, sh: int(st[0]), sw: int(st[1]), dh: int(dl[0]), dw: int(dl[1]),
		pt: int(pd[0]), pl: int(pd[1]), pb: int(pd[2]), pr: int(pd[3])}
	d.w = make([]int32, w.Len())
	for i, v := range graph.Data[int8](w) {
		d.w[i] = int32(v)
	}
	d.mq, d.ms = multipliers(q, c, false)
	d.fn, d.pairs = archDWQ()
	if d.fn != nil {
		d.prepareASM()
	}
	ref := refKernel(n.OpType)
	pool := bc.pool
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		xt := in[0]
		x, ok := xt.Data.([]int8)
		if !ok || xt.Check() != nil || len(xt.Shape) != 4 || xt.Shape[3] != c {
			return ref(ctx, node, in)
		}
		gm := d.gm
		N, H, W := xt.Shape[0], xt.Shape[1], xt.Shape[2]
		if H+gm.pt+gm.pb < (gm.kh-1)*gm.dh+1 || W+gm.pl+gm.pr < (gm.kw-1)*gm.dw+1 {
			return ref(ctx, node, in)
		}
		oh := (H+gm.pt+gm.pb-((gm.kh-1)*gm.dh+1))/gm.sh + 1
		ow := (W+gm.pl+gm.pr-((gm.kw-1)*gm.dw+1))/gm.sw + 1
		out, err := ctx.NewUninit(graph.Int8, []int{N, oh, ow, c})
		if err != nil {
			return nil, err
		}
		if ctx.Stopped() {
			return nil, ctx.Stop(node)
		}
		run := &qdwRun{d: d, x: x, y: out.Data.([]int8), h: H, w: W, oh: oh, ow: ow}
		if d.fn != nil {
			d.runASM(pool, run, N)
			return ctx.Outputs(out), nil
		}
		parallelFor(pool, N*oh, run, func(r *qdwRun, t int) {
			r.d.row(r, t)
		})
		return ctx.Outputs(out), nil
	}, nil
}

// layoutWeights lays out the weights for the assembly, in blocks of 16
// channels (pairs of taps interleaved where the kernel takes them so),
// sizes the requantisation blocks (rqst int32s each) and the channel
// masks, and returns corr[c] = bias[c] − xz·Σ_t w[t][c] (the padding
// holds xz).
func (d *qdw) layoutWeights(rqst int) (corr []int32) {
	taps := d.kh * d.kw
	d.cp = (d.c + 15) &^ 15
	blocks := d.cp / 16
	d.wv = make([]int32, blocks*d.steps()*16)
	d.rqst = rqst
	d.rq = make([]int32, blocks*rqst)
	d.masks = make([]uint64, blocks)
	corr = make([]int32, d.c)
	for c := 0; c < d.c; c++ {
		cb, j := c/16, c%16
		s := int32(0)
		for t := 0; t < taps; t++ {
			v := d.w[t*d.c+c]
			s += v
			if d.pairs {
				d.wv[(cb*d.steps()+t/2)*16+j] |= int32(uint32(uint16(int16(v))) << (16 * uint(t%2)))
				continue
			}
			d.wv[(cb*taps+t)*16+j] = v
		}
		corr[c] = d.bias[c] - d.xz*s
		d.masks[cb] |= 1 << uint(j)
	}
	return corr
}

// prepareASM lays out the weights and the fixed-point requantisation
// blocks for the assembly.
func (d *qdw) prepareASM() {
	st := rqStride(1)
	corr := d.layoutWeights(st)
	for c := 0; c < d.c; c++ {
		cb, j := c/16, c%16
		blk := d.rq[cb*st:]
		left, right := max(d.ms[c], 0), max(-d.ms[c], 0)
		mask := int32(1)<<right - 1
		blk[j], blk[16+j], blk[32+j], blk[48+j], blk[64+j], blk[80+j] = corr[c], d.mq[c], int32(left), int32(right), mask, mask>>1
	}
	for cb := 0; cb < d.cp/16; cb++ {
		t := d.rq[cb*st+96:]
		t[0], t[1], t[2], t[3], t[4], t[5] = d.yz, d.lo, d.hi, 1, 1<<30, 0
	}
}

type qdwASM struct {
	r      *qdwRun
	pad    []int8
	hp, wp int
	offs   []int
}

// runASM copies x into the padded buffer and runs the rows on the pool.
func (d *qdw) runASM(p *pool, r *qdwRun, n int) {
	gm := d.gm
	hp, wp := r.h+gm.pt+gm.pb, r.w+gm.pl+gm.pr
	need := n * hp * wp * d.cp
	pp, _ := d.scratch.Get().(*[]int8) // the same pointer goes back
	if pp == nil || cap(*pp) < need {
		b := make([]int8, need)
		pp = &b
	}
	pad := (*pp)[:need]
	z := int8(d.xz)
	fill := func(s []int8) {
		for i := range s {
			s[i] = z
		}
	}
	rowBytes := wp * d.cp
	for b := 0; b < n; b++ {
		img := pad[b*hp*rowBytes : (b+1)*hp*rowBytes]
		fill(img[:gm.pt*rowBytes])
		fill(img[(gm.pt+r.h)*rowBytes:])
		for iy := 0; iy < r.h; iy++ {
			row := img[(gm.pt+iy)*rowBytes : (gm.pt+iy+1)*rowBytes]
			fill(row[:gm.pl*d.cp])
			fill(row[(gm.pl+r.w)*d.cp:])
			src := r.x[(b*r.h+iy)*r.w*d.c:][:r.w*d.c]
			if d.cp == d.c {
				copy(row[gm.pl*d.cp:], src)
				continue
			}
			for ix := 0; ix < r.w; ix++ {
				px := row[(gm.pl+ix)*d.cp:][:d.cp]
				copy(px, src[ix*d.c:(ix+1)*d.c])
				fill(px[d.c:])
			}
		}
	}
	offs := make([]int, 0, d.kh*d.kw)
	for ky := 0; ky < d.kh; ky++ {
		for kx := 0; kx < d.kw; kx++ {
			offs = append(offs, (ky*gm.dh*wp+kx*gm.dw)*d.cp)
		}
	}
	if d.pairs && len(offs)%2 == 1 {
		offs = append(offs, offs[len(offs)-1]) // the zero weight's tap
	}
	parallelFor(p, n*r.oh, &qdwASM{r: r, pad: pad, hp: hp, wp: wp, offs: offs}, func(a *qdwASM, t int) {
		a.r.d.rowASM(a, t)
	})
	d.scratch.Put(pp)
}

// steps are the kernel's tap steps: the taps, or their pairs.
func (d *qdw) steps() int {
	if d.pairs {
		return (d.kh*d.kw + 1) / 2
	}
	return d.kh * d.kw
}

// rowASM computes output row t (= b·oh + oy) with the assembly.
func (d *qdw) rowASM(a *qdwASM, t int) {
	r, gm := a.r, d.gm
	b, oy := t/r.oh, t%r.oh
	taps := d.steps()
	st := d.rqst
	xrow := ((b*a.hp + oy*gm.sh) * a.wp) * d.cp
	yrow := t * r.ow * d.c
	for cb := 0; cb < d.cp/16; cb++ {
		d.fn(r.ow, taps, &a.offs[0], &d.wv[cb*taps*16], &a.pad[xrow+cb*16], gm.sw*d.cp, &d.rq[cb*st], &r.y[yrow+cb*16], d.c, d.masks[cb])
	}
}

// row computes output row t (= b·oh + oy) of a depthwise convolution.
func (d *qdw) row(r *qdwRun, t int) {
	b, oy := t/r.oh, t%r.oh
	c, gm := d.c, d.gm
	acc := make([]int32, c)
	xv := make([]int32, c)
	for ox := 0; ox < r.ow; ox++ {
		copy(acc, d.bias)
		for ky := 0; ky < gm.kh; ky++ {
			iy := oy*gm.sh - gm.pt + ky*gm.dh
			if iy < 0 || iy >= r.h {
				continue
			}
			for kx := 0; kx < gm.kw; kx++ {
				ix := ox*gm.sw - gm.pl + kx*gm.dw
				if ix < 0 || ix >= r.w {
					continue
				}
				xs := r.x[((b*r.h+iy)*r.w+ix)*c:][:c]
				ws := d.w[(ky*gm.kw+kx)*c:][:c]
				xv = xv[:c]
				for j, v := range xs {
					xv[j] = int32(v) - d.xz
				}
				a := acc[:c]
				for j, wv := range ws {
					a[j] += wv * xv[j]
				}
			}
		}
		y := r.y[(t*r.ow+ox)*c:][:c]
		if d.fm != nil {
			for j, v := range acc {
				y[j] = requantF(v, d.fm[j], d.flo, d.fhi, d.yz)
			}
			continue
		}
		for j, v := range acc {
			q := quant.MulByQuantizedMultiplier(v, d.mq[j], d.ms[j]) + d.yz
			y[j] = int8(min(max(q, d.lo), d.hi))
		}
	}
}

// --- Add ---

// buildQAdd is int8 Add of equal shapes: TFLite's rescale of both inputs
// to 2^20 × twice the larger scale, as the reference does it, with each
// input's rescaled value looked up (it depends on the int8 alone), then
// the sum requantised.
func buildQAdd(bc *buildCtx, n *graph.Node) (kernels.Func, error) {
	as, az, _ := scalarParam(bc.sg, n, 1, 0, "a")
	bs, bz, _ := scalarParam(bc.sg, n, 4, 0, "b")
	q, r := readQConst(bc.sg, n, 0)
	if r != "" {
		return nil, fmt.Errorf("%s", r)
	}
	const leftShift = 20
	twiceMax := 2 * float64(max(as[0], bs[0]))
	am, ash := quant.QuantizeMultiplier(float64(as[0]) / twiceMax)
	bm, bsh := quant.QuantizeMultiplier(float64(bs[0]) / twiceMax)
	ym, ysh := quant.QuantizeMultiplier(twiceMax / (float64(int64(1)<<leftShift) * float64(q.ys)))
	var ta, tb [256]int32
	for v := -128; v < 128; v++ {
		ta[uint8(int8(v))] = quant.MulByQuantizedMultiplier((int32(v)-az[0])*(1<<leftShift), am, ash)
		tb[uint8(int8(v))] = quant.MulByQuantizedMultiplier((int32(v)-bz[0])*(1<<leftShift), bm, bsh)
	}
	// the assembly's three requantisation blocks (16 equal lanes each)
	fn := archQAdd()
	st := rqStride(1)
	blocks := make([]int32, 3*st)
	for i, bp := range []struct {
		corr, mult int32
		shift, pre int
	}{{-az[0], am, ash, leftShift}, {-bz[0], bm, bsh, leftShift}, {0, ym, ysh, 0}} {
		blk := blocks[i*st:]
		left, right := bp.pre+max(bp.shift, 0), max(-bp.shift, 0)
		mask := int32(1)<<right - 1
		for j := 0; j < 16; j++ {
			blk[j], blk[16+j], blk[32+j], blk[48+j], blk[64+j], blk[80+j] = bp.corr, bp.mult, int32(left), int32(right), mask, mask>>1
		}
		t := blk[96:]
		t[0], t[1], t[2], t[3], t[4], t[5] = q.yz, q.lo, q.hi, 1, 1<<30, 0
	}
	ref := refKernel("Add")
	pool := bc.pool
	type addArg struct {
		a, b, y []int8
		ta, tb  *[256]int32
	}
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		at, bt := in[0], kernels.Input(in, 3)
		a, ok1 := at.Data.([]int8)
		b, ok2 := bt.Data.([]int8)
		if !ok1 || !ok2 || at.Check() != nil || bt.Check() != nil || !sameShape(at.Shape, bt.Shape) {
			return ref(ctx, node, in)
		}
		out, err := ctx.NewUninit(graph.Int8, at.Shape)
		if err != nil {
			return nil, err
		}
		chunksFor(pool, len(a), &addArg{a: a, b: b, y: out.Data.([]int8), ta: &ta, tb: &tb}, func(p *addArg, i0, i1 int) {
			if fn != nil && i1-i0 >= 16 {
				fn(i1-i0, &p.a[i0], &p.b[i0], &blocks[0], &p.y[i0])
				i0 += (i1 - i0) &^ 15
			}
			for i := i0; i < i1; i++ {
				s := p.ta[uint8(p.a[i])] + p.tb[uint8(p.b[i])]
				v := quant.MulByQuantizedMultiplier(s, ym, ysh) + q.yz
				p.y[i] = int8(min(max(v, q.lo), q.hi))
			}
		})
		return ctx.Outputs(out), nil
	}, nil
}

func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// --- Mean ---

// buildQMean is int8 Mean over the spatial axes {1, 2} of an NHWC
// tensor, the reference's integer form (Σ(x−xz) requantised by xs/ys,
// divided by the count rounding half away from zero); every other case
// (other axes, non-constant parameters) runs the reference kernel.
func buildQMean(bc *buildCtx, n *graph.Node) kernels.Func {
	ref := refKernel("Mean")
	xs, xz, r1 := scalarParam(bc.sg, n, 1, 0, "x")
	ys, yz, r2 := scalarParam(bc.sg, n, 3, 0, "y")
	axes := n.AttrInts("axes", nil)
	spatial := len(axes) == 2 && ((axes[0] == 1 && axes[1] == 2) || (axes[0] == 2 && axes[1] == 1))
	if r1 != "" || r2 != "" || !spatial {
		return nil
	}
	m, sh := quant.QuantizeMultiplier(float64(xs[0]) / float64(ys[0]))
	keep := n.AttrInt("keepdims", 0) != 0
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		xt := in[0]
		x, ok := xt.Data.([]int8)
		if !ok || xt.Check() != nil || len(xt.Shape) != 4 || xt.Shape[1]*xt.Shape[2] == 0 {
			return ref(ctx, node, in)
		}
		N, H, W, C := xt.Shape[0], xt.Shape[1], xt.Shape[2], xt.Shape[3]
		shape := []int{N, C}
		if keep {
			shape = []int{N, 1, 1, C}
		}
		out, err := ctx.NewUninit(graph.Int8, shape)
		if err != nil {
			return nil, err
		}
		y := out.Data.([]int8)
		sums := make([]int32, C)
		cnt := int32(H * W)
		for b := 0; b < N; b++ {
			clear(sums)
			for p := 0; p < H*W; p++ {
				row := x[(b*H*W+p)*C:][:C]
				for c, v := range row {
					sums[c] += int32(v)
				}
			}
			for c, s := range sums {
				acc := quant.MulByQuantizedMultiplier(s-cnt*xz[0], m, sh)
				if acc > 0 {
					acc = (acc + cnt/2) / cnt
				} else {
					acc = (acc - cnt/2) / cnt
				}
				y[b*C+c] = int8(min(max(acc+yz[0], -128), 127))
			}
		}
		return ctx.Outputs(out), nil
	}
}
