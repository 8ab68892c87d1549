package native

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/hal"
)

func checkConv(sg *hal.Subgraph, n *graph.Node) string {
	if r := needF32(sg, n, 0, 1, 2); r != "" {
		return r
	}
	rw := rankOf(sg, n.Inputs[1])
	if rw != 3 && rw != 4 {
		return fmt.Sprintf("native: Conv with weights of rank %d (1-D and 2-D convolutions only)", rw)
	}
	if r := rankOf(sg, n.Inputs[0]); r != rw {
		return fmt.Sprintf("native: Conv input rank %d does not match the weights' %d", r, rw)
	}
	if g := n.AttrInt("group", 1); g < 1 {
		return fmt.Sprintf("native: Conv group %d", g)
	}
	w := constInput(sg, n, 1)
	if w == nil {
		return "" // weights computed at run time: checked per call
	}
	if g := int(n.AttrInt("group", 1)); w.Shape[0]%g != 0 {
		return fmt.Sprintf("native: Conv group %d does not divide %d output channels", g, w.Shape[0])
	}
	if _, err := readWindow(n, len(w.Shape)-2, w.Shape[2:]); err != nil {
		return "native: Conv: " + err.Error()
	}
	return ""
}

// convPlan is a Conv prepared at compile: weights (with any
// BatchNormalization folded in) as g row-major matrices of cout/g rows
// (A of the GEMM, read in place), a bias padded to whole mr tiles per
// group, and the clamp.
type convPlan struct {
	win              window
	cout, cin, group int
	kh, kw           int
	w                []float32 // [cout][cin/g·kh·kw]
	bias             []float32 // per group: padded to whole row tiles
	biasStride       int
	clamp            bool
	lo, hi           float32
	depthwise        bool
	ss               *scratchSet
	planeSS          *scratchSet               // the phase planes (apart from ss: two buffers of one size are two)
	wideSS           *scratchSet               // the wide output of useWide
	constW           bool                      // weights fixed at compile (wt may be packed once)
	shape            atomic.Pointer[convShape] // the last input shape's geometry
	chain            []chainStep
	segs             []chainSeg

	// for few output positions (see useTransposed): the weights as B of
	// Yᵀ = im2colᵀ · Wᵀ, packed on first use, with a column bias
	wtOnce sync.Once
	wt     []float32
	wtBias []float32

	// depthwise weights packed for the packed path (16 and 8 lanes),
	// packed on first use
	dwOnce [2]sync.Once
	dwW    [2][]float32

	// the weights a tap at a time (tapWeights)
	// the weights packed for the micro-kernel's packedA (packA, each
	// group's rows as whole tiles, gstride floats a group), constant
	// weights only, packed once on first use
	paOnce  sync.Once
	pw      []float32
	gstride int
	tapOnce sync.Once
	wTap    []float32

	// indirect: computed as an indirect GEMM where it has a window
	// (convIndirect), its weights packed on first use (igemmWeights)
	indirect bool
	igOnce   sync.Once
	igW      []float32
	igStride int
	igTiles  []igemmTile

	// sparse: a 1×1 over constant, mostly zero weights (tfl2_sparse1x1.go)
	sparse *sparse1x1

	// hand: a strided 3×3 over few input channels, direct (hand_conv3.go)
	hand handC3Slot
}

func buildConv(bc *buildCtx, n *graph.Node, f *fusion) (kernels.Func, error) {
	if f != nil && f.pw != nil {
		return buildDWPW(bc, n, f) // a depthwise 3×3 with its 1×1 (dwpw.go)
	}
	if wt := constInput(bc.sg, n, 1); wt != nil {
		p, err := newConvPlan(bc, n, wt, constInput(bc.sg, n, 2), f, true)
		if err != nil {
			return nil, err
		}
		p.ss, p.planeSS, p.wideSS = &scratchSet{}, &scratchSet{}, &scratchSet{}
		return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
			var extra []*graph.Tensor
			if len(in) > 3 {
				extra = in[3:]
			}
			y, err := p.run(bc, ctx, in[0], extra)
			return ctx.Outputs(y), err
		}, nil
	}
	// weights computed at run time: planned per call (no BatchNormalization
	// is folded into them, see fuse)
	ss, planeSS, wideSS := &scratchSet{}, &scratchSet{}, &scratchSet{}
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		w := in[1]
		if w.DType != graph.Float32 || len(w.Shape) < 3 || len(w.Shape) > 4 || w.Shape[0]%max(int(node.AttrInt("group", 1)), 1) != 0 {
			return nil, fmt.Errorf("%w: Conv weights %v %v", kernels.ErrInvalid, w.DType, w.Shape)
		}
		var b *graph.Tensor
		if len(in) > 2 {
			b = in[2]
		}
		p, err := newConvPlan(bc, node, w, b, f, false)
		if err != nil {
			return nil, err
		}
		p.ss, p.planeSS, p.wideSS = ss, planeSS, wideSS
		y, err := p.run(bc, ctx, in[0], nil)
		return ctx.Outputs(y), err
	}, nil
}

// newConvPlan prepares a Conv for weights wt and bias b (nil: none); copy
// copies the weights (constant ones are folded with a BatchNormalization).
func newConvPlan(bc *buildCtx, n *graph.Node, wt, b *graph.Tensor, f *fusion, copyW bool) (*convPlan, error) {
	nd := len(wt.Shape) - 2
	win, err := readWindow(n, nd, wt.Shape[2:])
	if err != nil {
		return nil, err
	}
	p := &convPlan{win: win, cout: wt.Shape[0], group: int(n.AttrInt("group", 1)), kh: win.kh, kw: win.kw, lo: negInf, hi: posInf}
	p.cin = wt.Shape[1] * p.group
	kk := wt.Shape[1] * p.kh * p.kw
	p.w = f32(wt)
	if copyW {
		p.w = append([]float32{}, p.w...)
	}
	bias := make([]float32, p.cout)
	if b != nil {
		if b.DType != graph.Float32 || b.Len() != p.cout {
			return nil, fmt.Errorf("%w: bias has %d values for %d output channels", kernels.ErrInvalid, b.Len(), p.cout)
		}
		copy(bias, f32(b))
	}
	if f != nil {
		if f.bn != nil && copyW {
			sc, sh := f32(constInput(bc.sg, f.bn, 1)), f32(constInput(bc.sg, f.bn, 2))
			mean, vr := f32(constInput(bc.sg, f.bn, 3)), f32(constInput(bc.sg, f.bn, 4))
			eps := float64(f.bn.AttrFloat("epsilon", 1e-5))
			for o := 0; o < p.cout; o++ {
				s := float64(sc[o]) / math.Sqrt(float64(vr[o])+eps)
				row := p.w[o*kk : (o+1)*kk]
				for i := range row {
					row[i] = float32(float64(row[i]) * s)
				}
				bias[o] = float32((float64(bias[o])-float64(mean[o]))*s + float64(sh[o]))
			}
		}
		p.clamp, p.lo, p.hi = f.clamp, f.lo, f.hi
		if copyW {
			p.chain, p.segs = f.chain, compileChain(f.chain)
		}
	}
	p.depthwise = p.group == p.cin && p.cout == p.cin && p.group > 1
	p.constW = copyW
	p.indirect = useIndirect && copyW && !p.depthwise && igemmKernels != nil && bc.kern.mr == igemmMR &&
		bc.kern.nr == igemmNR && bc.kern.packedA != nil && usePackedA
	mr := bc.kern.mr
	per := p.cout / p.group
	p.biasStride = (per + mr - 1) / mr * mr
	if p.depthwise {
		p.bias, p.biasStride = bias, 1
	} else {
		p.bias = make([]float32, p.biasStride*p.group)
		for g := 0; g < p.group; g++ {
			copy(p.bias[g*p.biasStride:], bias[g*per:(g+1)*per])
		}
	}
	if copyW && p.kh == 1 && p.kw == 1 && p.group == 1 && nd <= 2 && sparse1x1With(bc.kern) {
		p.sparse = newSparse1x1(p.w, bias, p.cout, p.cin, p.clamp, p.lo, p.hi)
	}
	return p, nil
}

// run computes the Conv of x and its chain; extra are the tensors the
// chain adds (the fused node's inputs after X, W and B).
func (p *convPlan) run(bc *buildCtx, ctx *kernels.Context, x *graph.Tensor, extra []*graph.Tensor) (*graph.Tensor, error) {
	y, err := p.compute(bc, ctx, x)
	if err != nil || len(p.chain) == 0 {
		return y, err
	}
	var ex [maxChainExtra][]float32
	if len(extra) > maxChainExtra {
		return nil, fmt.Errorf("%w: Conv chain adds %d tensors", kernels.ErrInvalid, len(extra))
	}
	for i, t := range extra {
		if t == nil || t.DType != graph.Float32 || !graph.SameShape(t.Shape, y.Shape) {
			return nil, fmt.Errorf("%w: Conv output %v and the residual it is added to differ", kernels.ErrInvalid, y.Shape)
		}
		ex[i] = f32(t)
	}
	return y, applyChain(bc.pool, p.chain, p.segs, f32(y), y.Shape, ex)
}

// convShape is what a Conv plan derives from one input shape: the
// geometry, the output shape (handed to the allocator as is), and the
// depthwise tiling or the phase-plane layout it reads.
type convShape struct {
	batch, ih, iw int
	g             geom
	out           []int
	direct        *dwDirect     // depthwise, column stride 1
	packed        *dwPacked     // depthwise on small planes
	layout        *dwLayout     // depthwise otherwise, and strided or padded im2col
	ind           *convIndirect // a window over constant weights: the indirect GEMM
	zero          []float32     // depthwise 3×3 by the row kernels (useDW3): a row of zeros
}

// shapeFor returns the plan's convShape for x, derived once per input
// shape (the last one is kept).
func (p *convPlan) shapeFor(x *graph.Tensor) (*convShape, error) {
	nd := p.win.nd
	ih, iw := 1, x.Shape[2]
	if nd == 2 {
		ih, iw = x.Shape[2], x.Shape[3]
	}
	if cs := p.shape.Load(); cs != nil && cs.batch == x.Shape[0] && cs.ih == ih && cs.iw == iw {
		return cs, nil
	}
	g, err := p.win.at(ih, iw)
	if err != nil {
		return nil, err
	}
	cs := &convShape{batch: x.Shape[0], ih: ih, iw: iw, g: g}
	cs.out = []int{x.Shape[0], p.cout, g.ow}
	if nd == 2 {
		cs.out = []int{x.Shape[0], p.cout, g.oh, g.ow}
	}
	pointwise := p.kh == 1 && p.kw == 1 && g.sh == 1 && g.sw == 1 && g.pt == 0 && g.pl == 0 && g.pb == 0 && g.pr == 0
	L := 0
	if p.depthwise && nd == 2 {
		L = usePacked(&cs.g, p.cin)
	}
	switch {
	case p.indirect && !pointwise && nd == 2:
		// (few output positions still go the transposed way: compute)
		cs.ind = newConvIndirect(&cs.g, p.cin/p.group)
	case p.depthwise && nd == 2 && useDW3(&cs.g):
		cs.zero = make([]float32, g.iw)
	case L > 0:
		cs.packed = newDWPacked(&cs.g, L)
	case p.depthwise && g.sw == 1 && hasDWMask:
		cs.direct = newDWDirect(&cs.g)
	case p.depthwise || !pointwise && (g.sw > 1 || g.pt+g.pb+g.pl+g.pr > 0):
		cs.layout = newDWLayout(&cs.g)
	}
	p.shape.Store(cs)
	return cs, nil
}

func (p *convPlan) compute(bc *buildCtx, ctx *kernels.Context, x *graph.Tensor) (*graph.Tensor, error) {
	nd := p.win.nd
	if x.DType != graph.Float32 || len(x.Shape) != nd+2 || x.Shape[1] != p.cin {
		return nil, fmt.Errorf("%w: Conv input %v %v, weights want %d channels and rank %d", kernels.ErrInvalid, x.DType, x.Shape, p.cin, nd+2)
	}
	cs, err := p.shapeFor(x)
	if err != nil {
		return nil, err
	}
	g := &cs.g
	y, err := ctx.NewUninit(graph.Float32, cs.out)
	if err != nil {
		return nil, err
	}
	X, Y := f32(x), f32(y)
	batch := x.Shape[0]
	if p.depthwise {
		depthwise(bc.pool, p, cs, X, Y, batch)
		return y, nil
	}
	if handConv3(bc.pool, p, g, X, Y, batch) {
		return y, nil
	}
	kern := bc.kern
	cg, per := p.cin/p.group, p.cout/p.group
	kk := cg * p.kh * p.kw
	hw, ohw := cs.ih*cs.iw, g.oh*g.ow
	pointwise := p.kh == 1 && p.kw == 1 && g.sh == 1 && g.sw == 1 && g.pt == 0 && g.pl == 0 && g.pb == 0 && g.pr == 0
	if pointwise && p.sparse != nil && p.sparse.run(bc.pool, X, Y, batch, hw) {
		return y, nil
	}
	if p.useTransposed(kern, ohw) && (cs.ind == nil || !cs.ind.beatsTransposed(kern, per, p.cout, ohw)) {
		p.runTransposed(bc, g, X, Y, batch)
		return y, nil
	}
	if cs.ind != nil {
		p.runIndirect(bc, cs, X, Y, batch)
		return y, nil
	}
	if pointwise && p.constW && p.group == 1 && pointwiseTWins(kern, p.cout, p.cin, hw) {
		p.runPointwiseT(bc, X, Y, batch, hw) // positions on the rows (conv1x1t.go)
		return y, nil
	}
	// A: the weights, group gi's rows at wa[gi·gs:], packed where they
	// are constant and the kernel reads packed A
	wa, gs, apk := p.w, per*kk, false
	if pw, st := p.wPackedA(kern, per, kk); pw != nil {
		wa, gs, apk = pw, st, true
	}
	if pointwise && inPlaceB && (kk <= 32 || kk*hw <= inPlaceBMax) {
		// a 1×1 convolution's B is the input itself (cin rows of hw):
		// the micro-kernel reads its panels in place, nothing is packed.
		// Packing B per call cost more than the strided reads it saves
		// at every size measured (BenchmarkYoloNodes, in-model shapes
		// and weights, least CPU time at one thread, load 28, packed →
		// in place µs): YOLOX-nano 256→64 at 26×26 199 → 120, 128→32
		// at 52×52 160 → 131, 64→64 at 52×52 156 → 140; DeepLabV3
		// 512→256 at 33×33 2126 → 1524, 480→160 1433 → 1052; UltraFace
		// 64→64 at 30×40 70 → 63 (only 80→480 at 33×33 within noise,
		// 432 → 445: 30 row tiles reuse each packed panel)
		for b := 0; b < batch; b++ {
			for gi := 0; gi < p.group; gi++ {
				gemm(kern, bc.pool, &gemmOp{m: per, n: ohw, k: kk, a: wa[gi*gs:], lda: kk, apacked: apk,
					b: X[(b*p.cin+gi*cg)*hw:], ldb: hw, c: Y[(b*p.cout+gi*per)*ohw:], ldc: ohw,
					bias: p.bias[gi*p.biasStride:], biasMode: initRowBias, clamp: p.clamp, lo: p.lo, hi: p.hi})
			}
		}
		return y, nil
	}
	// strided or padded windows: each channel copied once into zero-padded
	// column-phase planes (as the depthwise kernel does), every im2col row
	// then a run of contiguous copies
	l := cs.layout
	// wide: at row stride 1 the output is computed as oh rows of the
	// planes' full width wq (the columns past ow are discarded), so that
	// every im2col row is one contiguous run of the planes and every
	// panel row one fixed-size copy, whatever the output width
	wide := useWide(l, g)
	ncols := ohw
	if wide {
		ncols = g.oh * l.wq
	}
	// tapped: a wide window over few input channels is computed as one
	// GEMM per tap (W_t · the planes from the tap's offset, B read in
	// place, ps floats between channels), summed in C a block of columns
	// at a time: nothing is packed (its im2col would be kk rows of the
	// whole output for few FMAs a float). BenchmarkZooNodesVsXNNPACK
	// (load 27, packed → tapped µs): UltraFace 16→16 3×3 at 30×40 143 →
	// 60, 8→16 53 → 38, 12→16 71 → 59; YOLOX 12→16 at 208×208 2317 → 2143
	tapped := wide && cg <= tappedMaxCin && inPlaceB
	// B is packed a block of panels at a time (about 256 KiB: it stays in
	// L2 between its packing and the GEMM reading it)
	np := panelsOf(ncols, kern.nr)
	block := min(np, max(1, (256<<10)/4/(kk*kern.nr)))
	// more than one thread: the columns split into tasks that each pack
	// and multiply their own panels (colTasks)
	cols := 1
	if !tapped {
		cols = colTasks(bc.pool.threads(), (per+kern.mr-1)/kern.mr, np, kk)
	}
	if t := bc.pool.threads(); t > 1 {
		block = min(np, max(block, (np+t-1)/t))
	}
	var packed []float32
	if !tapped && cols == 1 {
		sc := p.ss.of(packedLen(kk, block*kern.nr, kern.nr))
		buf := sc.get()
		defer sc.put(buf)
		packed = *buf
	}
	var planes, cw []float32
	ps := 0
	if l != nil {
		ps = g.sw * l.hp * l.wq
		// wide panels read up to the largest tap offset past the last
		// plane (into discarded columns)
		psc := p.planeSS.of(cg*ps + l.hiOff + kern.nr)
		pbuf := psc.get()
		defer psc.put(pbuf)
		planes = *pbuf
	}
	if wide {
		wsc := p.wideSS.of(per * ncols)
		wbuf := wsc.get()
		defer wsc.put(wbuf)
		cw = *wbuf
	}
	for b := 0; b < batch; b++ {
		for gi := 0; gi < p.group; gi++ {
			xs := X[(b*p.cin+gi*cg)*hw : (b*p.cin+(gi+1)*cg)*hw]
			if l != nil {
				chunks := splitTasks(bc.pool.threads(), cg, 0.3*float64(ps))
				parallelFor(bc.pool, chunks, fillTask{l, g, xs, planes, hw, ps, cg, chunks}, func(a fillTask, t int) {
					for ci := a.cg * t / a.chunks; ci < a.cg*(t+1)/a.chunks; ci++ {
						a.l.fill(a.g, a.xs[ci*a.hw:(ci+1)*a.hw], a.planes[ci*a.ps:(ci+1)*a.ps])
					}
				})
			}
			if tapped {
				// blocks of columns (about 64 KiB of C, in cache across
				// the taps), one task each
				cb := max(1, (16<<10)/per/kern.nr) * kern.nr
				nblk := (ncols + cb - 1) / cb
				parallelFor(bc.pool, nblk, tapTask{p, kern, l, p.tapWeights()[gi*per*kk:], planes, cw, p.bias[gi*p.biasStride:], per, cg, ps, ncols, cb},
					func(a tapTask, blk int) {
						j0 := blk * a.cb
						n := min(a.cb, a.ncols-j0)
						for t, off := range a.l.offs {
							op := gemmOp{m: a.per, n: n, k: a.cg, a: a.wt[t*a.per*a.cg:], lda: a.cg, b: a.planes[off+j0:], ldb: a.ps,
								c: a.cw[j0:], ldc: a.ncols, biasMode: initC, lo: a.p.lo, hi: a.p.hi}
							if t == 0 {
								op.bias, op.biasMode = a.bias, initRowBias
							}
							op.clamp = a.p.clamp && t == len(a.l.offs)-1
							gemm(a.kern, nil, &op)
						}
					})
			}
			if cols > 1 {
				c, ldc := Y[(b*p.cout+gi*per)*ohw:], ohw
				if wide {
					c, ldc = cw, ncols
				}
				sub := min((np+cols-1)/cols, max(1, (256<<10)/4/(kk*kern.nr)))
				parallelFor(bc.pool, cols, &colTask{
					pack: packTask{pointwise, wide, l, g, nil, planes, xs, kk, ohw, ncols, hw, ps, cg, 0, 0, 1, kern.nr},
					sc:   p.ss.of(packedLen(kk, sub*kern.nr, kern.nr)), kern: kern, np: np, tasks: cols, sub: sub,
					op: gemmOp{m: per, k: kk, a: wa[gi*gs:], lda: kk, apacked: apk, c: c, ldc: ldc,
						bias: p.bias[gi*p.biasStride:], biasMode: initRowBias, clamp: p.clamp, lo: p.lo, hi: p.hi},
				}, func(a *colTask, t int) { a.run(t) })
			}
			for c0 := 0; c0 < np && !tapped && cols == 1; c0 += block {
				c1 := min(c0+block, np)
				chunks := min(c1-c0, 4*bc.pool.threads())
				parallelFor(bc.pool, chunks, packTask{pointwise, wide, l, g, packed, planes, xs, kk, ohw, ncols, hw, ps, cg, c0, c1, chunks, kern.nr}, func(a packTask, t int) {
					p0, p1 := a.c0+(a.c1-a.c0)*t/a.chunks, a.c0+(a.c1-a.c0)*(t+1)/a.chunks
					a.packPanels(a.packed[(p0-a.c0)*a.kk*a.nr:], p0, p1)
				})
				j0 := c0 * kern.nr
				op := gemmOp{m: per, n: min(c1*kern.nr, ncols) - j0, k: kk, a: wa[gi*gs:], lda: kk, apacked: apk, b: packed,
					c: Y[(b*p.cout+gi*per)*ohw+j0:], ldc: ohw, bias: p.bias[gi*p.biasStride:], biasMode: initRowBias,
					clamp: p.clamp, lo: p.lo, hi: p.hi}
				if wide {
					op.c, op.ldc = cw[j0:], ncols
				}
				gemm(kern, bc.pool, &op)
			}
			if wide {
				// the output's columns out of the wide rows
				yg := Y[(b*p.cout+gi*per)*ohw : (b*p.cout+(gi+1)*per)*ohw]
				for r := 0; r < per*g.oh; r++ {
					copy(yg[r*g.ow:(r+1)*g.ow], cw[r*l.wq:r*l.wq+g.ow])
				}
			}
		}
	}
	return y, nil
}

// wPackedA returns the constant weights packed for kern's packedA
// kernels (per rows of kk a group, each group's rows as whole tiles) and
// the floats between groups there; nil where the weights are not
// constant or the kernel reads A in place only. Packed once: the kernel
// then reads one sequential stream of A (mr floats a step of k) instead
// of mr rows kk floats apart.
func (p *convPlan) wPackedA(kern *microKernel, per, kk int) ([]float32, int) {
	if !p.constW || kern.packedA == nil || !usePackedA {
		return nil, 0
	}
	p.paOnce.Do(func() {
		p.gstride = packedALen(per, kk, kern.mr)
		p.pw = make([]float32, p.gstride*p.group)
		for gi := 0; gi < p.group; gi++ {
			packA(p.pw[gi*p.gstride:], p.w[gi*per*kk:], per, kk, kk, kern.mr)
		}
	})
	return p.pw, p.gstride
}

// usePackedA: constant convolution weights are packed for the packedA
// kernels (a variable: benchmarks compare both).
var usePackedA = true

// inPlaceB: 1×1 convolutions (and tapped ones) read their input as B in
// place (a variable: tests and benchmarks run both paths).
var inPlaceB = true

// inPlaceBMax is the most floats (input channels times positions) of a
// 1×1 convolution's B read in place over more than 32 channels (a
// variable: benchmarks compare the packed B).
var inPlaceBMax = math.MaxInt

// tapTask is a tapped convolution's loop over column blocks
// (parallelFor).
type tapTask struct {
	p                      *convPlan
	kern                   *microKernel
	l                      *dwLayout
	wt, planes, cw, bias   []float32
	per, cg, ps, ncols, cb int
}

// tappedMaxCin is the most input channels a group may have for a wide
// convolution to be computed a tap at a time (useWide, tapped).
var tappedMaxCin = 32

// tapWeights returns the weights as per group and tap a matrix of
// cout/group rows of cin/group (tapped), arranged on first use.
func (p *convPlan) tapWeights() []float32 {
	p.tapOnce.Do(func() {
		taps := p.kh * p.kw
		cg, per := p.cin/p.group, p.cout/p.group
		kk := cg * taps
		p.wTap = make([]float32, len(p.w))
		for gi := 0; gi < p.group; gi++ {
			for o := 0; o < per; o++ {
				for ci := 0; ci < cg; ci++ {
					for t := 0; t < taps; t++ {
						p.wTap[gi*per*kk+(t*per+o)*cg+ci] = p.w[(gi*per+o)*kk+ci*taps+t]
					}
				}
			}
		}
	})
	return p.wTap
}

// fillTask and packTask are a Conv's parallel loops (parallelFor): the
// phase planes of each channel, and the packing of B's panels.
type fillTask struct {
	l                  *dwLayout
	g                  *geom
	xs, planes         []float32
	hw, ps, cg, chunks int
}

type packTask struct {
	pointwise, wide            bool
	l                          *dwLayout
	g                          *geom
	packed, planes, xs         []float32
	kk, ohw, ncols, hw, ps, cg int
	c0, c1, chunks, nr         int
}

// packPanels packs B's panels [p0, p1) into dst.
func (a *packTask) packPanels(dst []float32, p0, p1 int) {
	switch {
	case a.wide:
		im2colWide(dst, a.planes, a.ps, a.l, a.cg, a.ncols, a.nr, p0, p1)
	case a.pointwise:
		packBRows(dst, a.xs, a.kk, a.ohw, a.nr, a.hw, p0, p1)
	case a.l != nil:
		im2colPhased(dst, a.planes, a.ps, a.l, a.cg, a.g, a.nr, p0, p1)
	default:
		im2colPack(dst, a.xs, a.cg, a.g, a.nr, p0, p1)
	}
}

// colTasks is how many tasks a packed convolution's columns (np panels
// of kk rows, mt row tiles) split into at threads: each task packs its
// panels a block at a time and multiplies them at once (colTask), one
// loop for the whole GEMM. Packing a block over the pool and then
// multiplying it over the pool took two loops a block, the second
// block often a few panels (UltraFace's 64→64 1×1 at 30×40: pack 8
// tasks, GEMM 2, pack 6, GEMM on one thread). 1: the blocks' way (one
// thread, or too few panels or too little work to split).
func colTasks(threads, mt, np, kk int) int {
	if threads <= 1 || np < 2*threads {
		return 1
	}
	return max(1, min(np, 4*threads, mt*np*kk/igemmTaskWork))
}

// colTask is one task of a packed convolution split by columns
// (colTasks): panels [np·t/tasks, np·(t+1)/tasks), packed sub panels at
// a time into a scratch of its own and multiplied by all rows of A.
type colTask struct {
	pack           packTask
	sc             *scratch
	kern           *microKernel
	np, tasks, sub int
	op             gemmOp // all of C; b and n set per block
}

func (a *colTask) run(t int) {
	p0, p1 := a.np*t/a.tasks, a.np*(t+1)/a.tasks
	buf := a.sc.get()
	defer a.sc.put(buf)
	nr := a.kern.nr
	for s0 := p0; s0 < p1; s0 += a.sub {
		s1 := min(s0+a.sub, p1)
		a.pack.packPanels(*buf, s0, s1)
		op := a.op
		j0 := s0 * nr
		op.b, op.n, op.c = *buf, min(s1*nr, a.pack.ncols)-j0, a.op.c[j0:]
		gemmBlock(a.kern, &op, 0, op.m, 0, s1-s0)
	}
}

// useWide: a convolution read through phase planes at row stride 1
// computes wide rows (see compute) when the discarded columns cost less
// than an eighth more work and its rows are not whole panels already.
func useWide(l *dwLayout, g *geom) bool {
	return l != nil && g.sh == 1 && g.ow%maxNR != 0 && 8*l.wq <= 9*g.ow
}

// im2colWide writes panels [p0, p1) of the wide im2col matrix (ncols =
// oh·wq columns: output row oy's windows at columns oy·wq + ox) of the c
// channels' phase planes (ps floats apart) in the packed B layout into
// dst: row (ci, tap) is the planes' run from the tap's offset, so each
// panel row is one copy of nr floats.
func im2colWide(dst, planes []float32, ps int, l *dwLayout, c, ncols, nr, p0, p1 int) {
	kk := c * len(l.offs)
	for p := p0; p < p1; p++ {
		o0 := p * nr
		w := min(nr, ncols-o0)
		panel := dst[(p-p0)*kk*nr : (p-p0+1)*kk*nr]
		r := 0
		for ci := 0; ci < c; ci++ {
			base := planes[ci*ps+o0:]
			for _, off := range l.offs {
				row := panel[r*nr : r*nr+nr]
				r++
				switch {
				case w == 32 && nr == 32:
					*(*[32]float32)(row) = *(*[32]float32)(base[off:])
				case w == 16 && nr == 16:
					*(*[16]float32)(row) = *(*[16]float32)(base[off:])
				default:
					copy(row[:w], base[off:off+w])
					clear(row[w:])
				}
			}
		}
	}
}

// useTransposed: with few output positions (ohw columns of B) most of
// each nr-wide panel would be padding; computing Yᵀ = im2colᵀ · Wᵀ puts
// them on the rows instead (mr ≤ nr), the output channels on the columns.
// Constant weights, one group only. A window of more than one tap always
// goes this way below nr positions: its im2colᵀ is a copy per tap, where
// the planar path fills padded planes and packs kk rows of whole panels
// (UltraFace's 256→12 3×3 heads at 4×5: 85-113 µs → 22, ONNX Runtime 27;
// BenchmarkZooNodesVsXNNPACK, load 17); a 1×1 window keeps the choice by
// tile efficiency (its B is read in place).
func (p *convPlan) useTransposed(kern *microKernel, ohw int) bool {
	if !p.constW || p.group != 1 || ohw >= kern.nr {
		return false
	}
	if p.kh*p.kw > 1 {
		return true
	}
	colEff := float64(ohw) / float64(panelsOf(ohw, kern.nr)*kern.nr)
	rowEff := float64(ohw) / float64((ohw+kern.mr-1)/kern.mr*kern.mr)
	return rowEff > 1.5*colEff
}

// runTransposed computes the convolution as Yᵀ = im2colᵀ · Wᵀ (one
// group), through a scratch Yᵀ transposed into y. The rows of im2colᵀ
// are in (ky, kx, ci) order: the input is transposed channels-last into a
// zero-padded plane once, and each tap of an output position is then one
// contiguous run of cin floats (a copy per tap, not per element).
func (p *convPlan) runTransposed(bc *buildCtx, g *geom, X, Y []float32, batch int) {
	kern := bc.kern
	taps := p.kh * p.kw
	kk := p.cin * taps
	p.wtOnce.Do(func() {
		// Wᵀ with its rows in (tap, ci) order: element (t·cin + ci, o)
		wr := make([]float32, p.cout*kk)
		for o := 0; o < p.cout; o++ {
			for ci := 0; ci < p.cin; ci++ {
				for t := 0; t < taps; t++ {
					wr[o*kk+t*p.cin+ci] = p.w[o*kk+ci*taps+t]
				}
			}
		}
		p.wt = make([]float32, packedLen(kk, p.cout, kern.nr))
		packB(p.wt, wr, kk, p.cout, kern.nr, 1, kk) // element (k, o) at wr[o·kk + k]
		p.wtBias = make([]float32, panelsOf(p.cout, kern.nr)*kern.nr)
		copy(p.wtBias, p.bias[:p.cout])
	})
	hw, ohw := g.ih*g.iw, g.oh*g.ow
	hp, wp := (g.oh-1)*g.sh+(g.kh-1)*g.dh+1, (g.ow-1)*g.sw+(g.kw-1)*g.dw+1
	sc := p.ss.of(ohw*kk + ohw*p.cout + hw*p.cin + hp*wp*p.cin)
	buf := sc.get()
	defer sc.put(buf)
	a, ct := (*buf)[:ohw*kk], (*buf)[ohw*kk:ohw*kk+ohw*p.cout]
	rest := (*buf)[ohw*kk+ohw*p.cout:]
	t, xp := rest[:hw*p.cin], rest[hw*p.cin:hw*p.cin+hp*wp*p.cin]
	for b := 0; b < batch; b++ {
		im2colRows(a, X[b*p.cin*hw:(b+1)*p.cin*hw], p.cin, g, t, xp)
		gemm(kern, bc.pool, &gemmOp{m: ohw, n: p.cout, k: kk, a: a, lda: kk, b: p.wt, c: ct, ldc: p.cout,
			bias: p.wtBias, biasMode: initColBias, clamp: p.clamp, lo: p.lo, hi: p.hi})
		yb := Y[b*p.cout*ohw : (b+1)*p.cout*ohw]
		for o := 0; o < ohw; o++ {
			row := ct[o*p.cout : (o+1)*p.cout]
			for co, v := range row {
				yb[co*ohw+o] = v
			}
		}
	}
}

// im2colRows writes the transposed im2col matrix of x (c channels of
// ih×iw): row o (an output position) holds its window in (ky, kx, ci)
// order, zero where the window reads padding. t (ih·iw·c floats) and xp
// (the padded plane's rows × columns × c) are scratch.
func im2colRows(dst, x []float32, c int, g *geom, t, xp []float32) {
	taps := g.kh * g.kw
	kk := c * taps
	hp, wp := (g.oh-1)*g.sh+(g.kh-1)*g.dh+1, (g.ow-1)*g.sw+(g.kw-1)*g.dw+1
	toChannelsLast(t, x, c, g.ih*g.iw, g.ih*g.iw, c)
	ncol := max(0, min(g.iw, wp-g.pl))
	for r := 0; r < hp; r++ {
		row := xp[r*wp*c : (r+1)*wp*c]
		iy := r - g.pt
		if iy < 0 || iy >= g.ih || ncol == 0 {
			clear(row)
			continue
		}
		clear(row[:g.pl*c])
		copy(row[g.pl*c:(g.pl+ncol)*c], t[iy*g.iw*c:])
		clear(row[(g.pl+ncol)*c:])
	}
	for o := 0; o < g.oh*g.ow; o++ {
		oy, ox := o/g.ow, o%g.ow
		row := dst[o*kk : (o+1)*kk]
		for ky := 0; ky < g.kh; ky++ {
			for kx := 0; kx < g.kw; kx++ {
				src := ((oy*g.sh+ky*g.dh)*wp + ox*g.sw + kx*g.dw) * c
				tp := ky*g.kw + kx
				copy(row[tp*c:(tp+1)*c], xp[src:src+c])
			}
		}
	}
}

// im2colPhased is im2colPack reading the zero-padded phase planes of the
// c channels (dwLayout.fill, ps floats apart): each window row of a panel
// is one contiguous copy per output row it spans.
func im2colPhased(dst, planes []float32, ps int, l *dwLayout, c int, g *geom, nr, p0, p1 int) {
	ohw := g.oh * g.ow
	kk := c * len(l.offs)
	for p := p0; p < p1; p++ {
		o0 := p * nr
		w := min(nr, ohw-o0)
		panel := dst[(p-p0)*kk*nr : (p-p0+1)*kk*nr]
		// a full panel inside one output row: each of its rows is one
		// fixed-size copy
		oy0, ox0 := o0/g.ow, o0%g.ow
		oneRow := ox0+w <= g.ow
		r := 0
		for ci := 0; ci < c; ci++ {
			base := planes[ci*ps : (ci+1)*ps]
			for _, off := range l.offs {
				row := panel[r*nr : r*nr+nr]
				r++
				if w == nr && oneRow {
					s := off + oy0*l.ldx + ox0
					switch nr {
					case 32:
						*(*[32]float32)(row) = *(*[32]float32)(base[s:])
						continue
					case 16:
						*(*[16]float32)(row) = *(*[16]float32)(base[s:])
						continue
					}
				}
				for j := 0; j < w; {
					o := o0 + j
					oy, ox := o/g.ow, o%g.ow
					run := min(w-j, g.ow-ox)
					s := off + oy*l.ldx + ox
					copy(row[j:j+run], base[s:s+run])
					j += run
				}
				clear(row[w:])
			}
		}
	}
}

// im2colPack writes panels [p0, p1) of the im2col matrix of x (c
// channels of ih×iw) — row (ci, ky, kx), column the output position — in
// the packed B layout into dst, panel p0 at its start, zero where the
// window reads padding.
func im2colPack(dst, x []float32, c int, g *geom, nr, p0, p1 int) {
	ohw := g.oh * g.ow
	kk := c * g.kh * g.kw
	var iy0, ix0 [maxNR]int
	for p := p0; p < p1; p++ {
		o0 := p * nr
		w := min(nr, ohw-o0)
		for j := 0; j < w; j++ {
			o := o0 + j
			iy0[j] = (o/g.ow)*g.sh - g.pt
			ix0[j] = (o%g.ow)*g.sw - g.pl
		}
		panel := dst[(p-p0)*kk*nr : (p-p0+1)*kk*nr]
		// a panel inside one output row: each of its rows reads one input
		// row at a stride, bounds checked once
		oneRow := w > 0 && o0/g.ow == (o0+w-1)/g.ow
		r := 0
		for ci := 0; ci < c; ci++ {
			plane := x[ci*g.ih*g.iw : (ci+1)*g.ih*g.iw]
			for ky := 0; ky < g.kh; ky++ {
				for kx := 0; kx < g.kw; kx++ {
					row := panel[r*nr : r*nr+nr]
					r++
					dy, dx := ky*g.dh, kx*g.dw
					if oneRow {
						iy, ixa := iy0[0]+dy, ix0[0]+dx
						ixb := ixa + (w-1)*g.sw
						if uint(iy) >= uint(g.ih) {
							clear(row)
							continue
						}
						if ixa >= 0 && ixb < g.iw {
							src := plane[iy*g.iw+ixa : iy*g.iw+ixb+1]
							if g.sw == 1 {
								copy(row, src)
							} else {
								for j := range row[:w] {
									row[j] = src[j*g.sw]
								}
							}
							clear(row[w:])
							continue
						}
					}
					for j := 0; j < w; j++ {
						iy, ix := iy0[j]+dy, ix0[j]+dx
						if uint(iy) < uint(g.ih) && uint(ix) < uint(g.iw) {
							row[j] = plane[iy*g.iw+ix]
						} else {
							row[j] = 0
						}
					}
					clear(row[w:])
				}
			}
		}
	}
}
