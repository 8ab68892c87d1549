package native

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/hal"
)

// A 3×3 depthwise convolution (with what fuse gave it: a folded
// BatchNormalization, a clamp, an element-wise chain such as SiLU) whose
// only reader is a 1×1 convolution (with its own clamp and chain) runs as
// one node, a strip of output rows at a time: the depthwise row kernels
// (dw3.go) write the strip's rows of every channel into a scratch of
// about dwpwStripFloats floats, which the 1×1 convolution's GEMM then
// reads in place as its B while it is still in cache, writing the strip's
// columns of every output channel. The depthwise output, as large as
// 1.2 MiB in UltraFace's first block (16 channels of 120×160) and
// 2.6 MiB in YOLOX-nano's, is never written to memory and read back.

// dwpwStripFloats is about the floats of one strip (all channels): 256 KiB,
// in L2 between the depthwise rows writing it and the GEMM reading it.
// Smaller strips cost more than they save: each writes every output
// channel in short runs. BenchmarkDWPW (1 thread, load 17-19, fused/apart
// of the medians of least runs) on UltraFace 16→32 at 120×160, YOLOX-like
// 32→32 at 104×104 with SiLU: 16 Ki floats 0.95-1.01 / 1.13-1.14; 32 Ki
// 0.93 / 0.90; 64 Ki 0.96-0.97 / 0.98; 128 Ki 0.90 / 0.99; 4 Ki 1.35 / 2.2.
// A variable: the benchmark tries others (DWPW_STRIP).
var dwpwStripFloats = 64 << 10

// dwpwMinBytes is the smallest depthwise output fused with its 1×1
// convolution: a smaller one stays in cache between the two nodes anyway
// (BenchmarkDWPW, fused with no minimum: UltraFace's 128→128 at 15×20
// and 64→128 at 30×40, 150 KiB, 1.01-1.015 of the two apart).
var dwpwMinBytes = 256 << 10

// useDWPW: a variable, so that tests and benchmarks compare both ways.
var useDWPW = true

// dwpwFollow returns the 1×1 convolution pw that the depthwise
// convolution n (whose fusion so far is f, ending at node last) can take
// over, pw's own fusion, the nodes it absorbs after pw, and the last of
// them (pw itself when none); nil when it cannot.
func dwpwFollow(sg *hal.Subgraph, n *graph.Node, f *fusion, last *graph.Node, next func(*graph.Node) *graph.Node,
	readers map[string][]*graph.Node, isOut map[string]bool, free func(*graph.Node) bool) (*graph.Node, *fusion, []*graph.Node, *graph.Node) {
	if !useDWPW || !dwpwHead(sg, n, f) {
		return nil, nil, nil, nil
	}
	pw := next(last)
	if pw == nil || !dwpwTail(sg, pw, n) || pw.Inputs[0] != last.Outputs[0] {
		return nil, nil, nil, nil
	}
	pf := &fusion{lo: negInf, hi: posInf}
	end, absorbed := absorbBNClamp(sg, pw, true, pf, next)
	if steps, nodes, e := extendChain(sg, end.Outputs[0], readers, isOut, free); e != nil {
		for _, s := range steps {
			if s.kind == stepPRelu {
				return nil, nil, nil, nil // positional: not over strips
			}
		}
		pf.chain, end = steps, e
		absorbed = append(absorbed, nodes...)
	}
	for _, x := range absorbed {
		pf.nodes = append(pf.nodes, x.Label())
	}
	return pw, pf, absorbed, end
}

// dwpwHead: n is an undilated depthwise 3×3 Conv over a static 4-D
// float32 input that the row kernels compute (useDW3), with constant weights, an
// element-wise chain only, and an output of at least dwpwMinBytes.
func dwpwHead(sg *hal.Subgraph, n *graph.Node, f *fusion) bool {
	w := constInput(sg, n, 1)
	if n.OpType != "Conv" || n.Domain != "" || w == nil || w.DType != graph.Float32 || len(w.Shape) != 4 ||
		w.Shape[1] != 1 || w.Shape[2] != 3 || w.Shape[3] != 3 || len(n.Outputs) != 1 || check(sg, n) != "" {
		return false
	}
	if len(n.Inputs) > 2 && n.Inputs[2] != "" && constInput(sg, n, 2) == nil {
		return false
	}
	c := w.Shape[0]
	if c < 2 || int(n.AttrInt("group", 1)) != c {
		return false
	}
	for _, s := range f.chain {
		if s.kind == stepAddTensor || s.kind == stepPRelu {
			return false
		}
	}
	t, ok := sg.TypeOf(n.Inputs[0])
	if !ok || t.DType != graph.Float32 {
		return false
	}
	dims, ok := t.Shape.Ints()
	if !ok || len(dims) != 4 || dims[1] != c {
		return false
	}
	win, err := readWindow(n, 2, w.Shape[2:])
	if err != nil {
		return false
	}
	g, err := win.at(dims[2], dims[3])
	if err != nil || !dw3RowsTake(&g) || g.dh != 1 || g.dw != 1 {
		// dilated: DeepLab-v3's d2/d4 pairs (960 channels at 33×33)
		// measured 1.02-1.03× apart fused (BenchmarkDWPWZoo, two runs)
		return false
	}
	return dims[0]*c*g.oh*g.ow*4 >= dwpwMinBytes
}

// dwpwTail: pw is a dense 1×1 Conv at stride 1 without padding over the
// c channels of dw's output, with constant float32 weights (and bias).
func dwpwTail(sg *hal.Subgraph, pw, dw *graph.Node) bool {
	if pw.OpType != "Conv" || pw.Domain != "" || len(pw.Inputs) < 2 || len(pw.Outputs) != 1 || check(sg, pw) != "" ||
		pw.AttrInt("group", 1) != 1 || pw.AttrString("auto_pad", "NOTSET") != "NOTSET" && pw.AttrString("auto_pad", "NOTSET") != "" {
		return false
	}
	w, wd := constInput(sg, pw, 1), constInput(sg, dw, 1)
	if w == nil || w.DType != graph.Float32 || len(w.Shape) != 4 || w.Shape[1] != wd.Shape[0] || w.Shape[2] != 1 || w.Shape[3] != 1 {
		return false
	}
	if len(pw.Inputs) > 2 && pw.Inputs[2] != "" && constInput(sg, pw, 2) == nil {
		return false
	}
	for _, a := range []string{"strides", "dilations"} {
		for _, v := range pw.AttrInts(a, nil) {
			if v != 1 {
				return false
			}
		}
	}
	for _, v := range pw.AttrInts("pads", nil) {
		if v != 0 {
			return false
		}
	}
	// a pruned 1×1 runs on its own, sparse (tfl2_sparse1x1.go)
	return sparse1x1Share(sg, pw) == 1
}

// dwpwInputs are the fused node's inputs: the depthwise Conv's X, W and B,
// then the 1×1 Conv's W and B ("" where absent), then the tensors the 1×1
// Conv's chain adds.
func dwpwInputs(n *graph.Node, f *fusion) []string {
	in := make([]string, 5)
	copy(in[:3], n.Inputs)
	copy(in[3:], f.pw.Inputs[1:])
	for _, s := range f.pwf.chain {
		if s.kind == stepAddTensor {
			in = append(in, s.input)
		}
	}
	return in
}

// dwpwCost prices a fused pair as its two convolutions apart (what the
// strips save in memory traffic is left as margin).
func dwpwCost(sg *hal.Subgraph, f *fusion, threads int) float64 {
	df := *f
	df.pw, df.pwf, df.dw = nil, nil, nil
	return fusedCost(sg, f.dw, &df, threads) + fusedCost(sg, f.pw, f.pwf, threads)
}

// dwpwPlan is a fused pair prepared at compile.
type dwpwPlan struct {
	dw, pw *convPlan
	out    atomic.Pointer[[]int] // the last output shape, shared by the runs that make it (RunInto allocates nothing)
}

// outShape is [batch, m, oh, ow], the slice of an earlier run when the
// same (tensors' shapes are never written).
func (d *dwpwPlan) outShape(batch, m, oh, ow int) []int {
	if p := d.out.Load(); p != nil {
		if s := *p; s[0] == batch && s[1] == m && s[2] == oh && s[3] == ow {
			return s
		}
	}
	s := []int{batch, m, oh, ow}
	d.out.Store(&s)
	return s
}

// firstErrs recycles the runs' error holders (RunInto allocates nothing).
var firstErrs = sync.Pool{New: func() any { return new(firstErr) }}

// dwpwStrips are the strips' scratch buffers, shared by every fused pair
// (most take dwpwStrip floats, so one buffer a thread serves them all).
var dwpwStrips scratchSet

// dwpwStrip is the floats of a strip's scratch for c channels of n
// columns: dwpwStripFloats (and a panel of slack), or more for one row
// of many channels.
func dwpwStrip(c, n int) int { return max(c*n, dwpwStripFloats) + maxNR }

func buildDWPW(bc *buildCtx, n *graph.Node, f *fusion) (kernels.Func, error) {
	df := *f
	df.pw, df.pwf, df.dw = nil, nil, nil
	dp, err := newConvPlan(bc, n, constInput(bc.sg, n, 1), constInput(bc.sg, n, 2), &df, true)
	if err != nil {
		return nil, err
	}
	pp, err := newConvPlan(bc, f.pw, constInput(bc.sg, f.pw, 1), constInput(bc.sg, f.pw, 2), f.pwf, true)
	if err != nil {
		return nil, err
	}
	for _, p := range []*convPlan{dp, pp} {
		p.ss, p.planeSS, p.wideSS = &scratchSet{}, &scratchSet{}, &scratchSet{}
	}
	d := &dwpwPlan{dw: dp, pw: pp}
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		var extra []*graph.Tensor
		if len(in) > 5 {
			extra = in[5:]
		}
		y, err := d.run(bc, ctx, in[0], extra)
		return ctx.Outputs(y), err
	}, nil
}

// dwpwTask is the loop over strips (parallelFor).
type dwpwTask struct {
	d      *dwpwPlan
	kern   *microKernel
	cs     *convShape
	x, y   []float32
	wa     []float32
	apk    bool
	rows   int // output rows a strip
	strips int // strips an image
	extra  [maxChainExtra][]float32
	sc     *scratch
	err    *firstErr
}

// firstErr keeps the first error of parallel tasks.
type firstErr struct {
	mu  sync.Mutex
	err error
}

func (e *firstErr) set(err error) {
	e.mu.Lock()
	if e.err == nil {
		e.err = err
	}
	e.mu.Unlock()
}

func (d *dwpwPlan) run(bc *buildCtx, ctx *kernels.Context, x *graph.Tensor, extra []*graph.Tensor) (*graph.Tensor, error) {
	dp, pp := d.dw, d.pw
	if x.DType != graph.Float32 || len(x.Shape) != 4 || x.Shape[1] != dp.cin {
		return nil, fmt.Errorf("%w: Conv input %v %v, weights want %d channels and rank 4", kernels.ErrInvalid, x.DType, x.Shape, dp.cin)
	}
	cs, err := dp.shapeFor(x)
	if err != nil {
		return nil, err
	}
	if len(extra) > maxChainExtra {
		return nil, fmt.Errorf("%w: Conv chain adds %d tensors", kernels.ErrInvalid, len(extra))
	}
	if cs.zero == nil {
		// a shape the row kernels do not take: the two nodes one after
		// the other
		t, err := dp.run(bc, ctx, x, nil)
		if err != nil {
			return nil, err
		}
		y, err := pp.run(bc, ctx, t, extra)
		ctx.Release(t)
		return y, err
	}
	g := &cs.g
	batch, c, m := x.Shape[0], dp.cin, pp.cout
	out := d.outShape(batch, m, g.oh, g.ow)
	var ex [maxChainExtra][]float32
	for i, t := range extra {
		if t == nil || t.DType != graph.Float32 || !graph.SameShape(t.Shape, out) {
			return nil, fmt.Errorf("%w: Conv output %v and the residual it is added to differ", kernels.ErrInvalid, out)
		}
		ex[i] = f32(t)
	}
	y, err := ctx.NewUninit(graph.Float32, out)
	if err != nil {
		return nil, err
	}
	rows := dwpwRows(c, g.oh, g.ow)
	if t := bc.pool.threads(); t > 1 {
		// a few strips a thread, so that none waits long on the last
		rows = max(1, min(rows, (batch*g.oh+3*t-1)/(3*t)))
	}
	strips := (g.oh + rows - 1) / rows
	kern := bc.kern
	wa, apk := pp.w, false
	if pw, _ := pp.wPackedA(kern, m, c); pw != nil {
		wa, apk = pw, true
	}
	fe := firstErrs.Get().(*firstErr)
	fe.err = nil
	defer firstErrs.Put(fe)
	a := dwpwTask{d: d, kern: kern, cs: cs, x: f32(x), y: f32(y), wa: wa, apk: apk, rows: rows, strips: strips, extra: ex,
		sc: dwpwStrips.of(dwpwStrip(c, rows*g.ow)), err: fe}
	tasks := batch * strips
	if bc.pool.threads() == 1 {
		for t := 0; t < tasks; t++ {
			a.strip(t)
		}
	} else {
		parallelFor(bc.pool, tasks, a, func(a dwpwTask, t int) { a.strip(t) })
	}
	if fe.err != nil {
		return nil, fe.err
	}
	return y, nil
}

// dwpwRows is the output rows of a strip: about dwpwStripFloats floats
// of c channels, a whole number of 32-column panels where a row count
// no less than half of that gives one.
func dwpwRows(c, oh, ow int) int {
	r := max(1, min(oh, dwpwStripFloats/(c*ow)))
	for q := r; q >= 1 && 2*q >= r; q-- {
		if q*ow%maxNR == 0 {
			return q
		}
	}
	return r
}

// strip computes strip t (of batch·strips): the depthwise rows of every
// channel into the scratch, its chain there, then the 1×1 convolution of
// those columns into the output and its chain on them.
func (a dwpwTask) strip(t int) {
	dp, pp := a.d.dw, a.d.pw
	g := &a.cs.g
	b, s := t/a.strips, t%a.strips
	oy0 := s * a.rows
	oy1 := min(oy0+a.rows, g.oh)
	n := (oy1 - oy0) * g.ow
	c, m := dp.cin, pp.cout
	hw, ohw := g.ih*g.iw, g.oh*g.ow
	buf := a.sc.get()
	defer a.sc.put(buf)
	sb := (*buf)[:c*n]
	for ci := 0; ci < c; ci++ {
		dw3Rows(g, a.x[(b*c+ci)*hw:(b*c+ci+1)*hw], dp.w[ci*9:(ci+1)*9], sb[ci*n:(ci+1)*n], a.cs.zero, dp.bias[ci], dp.clamp, dp.lo, dp.hi, oy0, oy1)
	}
	var none [maxChainExtra][]float32
	if len(dp.chain) > 0 {
		if err := applyChain(nil, dp.chain, dp.segs, sb, []int{len(sb)}, none); err != nil {
			a.err.set(err)
			return
		}
	}
	y := a.y[b*m*ohw:]
	gemm(a.kern, nil, &gemmOp{m: m, n: n, k: c, a: a.wa, lda: c, apacked: a.apk, b: sb, ldb: n,
		c: y[oy0*g.ow:], ldc: ohw, bias: pp.bias, biasMode: initRowBias, clamp: pp.clamp, lo: pp.lo, hi: pp.hi})
	if len(pp.chain) == 0 {
		return
	}
	for co := 0; co < m; co++ {
		o := co*ohw + oy0*g.ow
		var ex [maxChainExtra][]float32
		for i, e := range a.extra {
			if e != nil {
				ex[i] = e[b*m*ohw+o : b*m*ohw+o+n]
			}
		}
		if pp.segs == nil {
			if err := applyChain(nil, pp.chain, pp.segs, y[o:o+n], []int{n}, ex); err != nil {
				a.err.set(err)
				return
			}
			continue
		}
		segsOn(pp.segs, y[o:o+n], &ex)
	}
}

// segsOn runs a compiled chain without PRelu steps (dwpwFollow refuses
// them) in place over y, a block at a time: applyChain's loop without its
// set-up, which a strip's many short runs (one per output channel) would
// pay each time.
func segsOn(segs []chainSeg, y []float32, ex *[maxChainExtra][]float32) {
	for b0 := 0; b0 < len(y); b0 += chainBlock {
		blk := y[b0:min(b0+chainBlock, len(y))]
		for _, s := range segs {
			switch {
			case s.extra >= 0:
				binaryVec(opAdd, blk, blk, ex[s.extra][b0:b0+len(blk)])
			case s.fn != nil:
				s.fn(blk, blk)
			default:
				runChain(blk, s.ops)
			}
		}
	}
}

// dw3Rows computes output rows [oy0, oy1) of dw3Plane's plane into y
// (row oy at (oy−oy0)·ow).
func dw3Rows(g *geom, x, w, y, zero []float32, bias float32, clampOn bool, lo, hi float32, oy0, oy1 int) {
	fn := dw3Kernel(g)
	flags := 0
	if clampOn {
		flags = flagClamp
	}
	_ = x[g.ih*g.iw-1]
	_ = y[(oy1-oy0)*g.ow-1]
	_ = w[8]
	_ = zero[g.iw-1]
	d := g.dh
	inside := func(oy int) bool { iy := oy*g.sh - g.pt; return iy >= 0 && iy+2*d < g.ih }
	for oy := oy0; oy < oy1; {
		if inside(oy) {
			n := 1
			for oy+n < oy1 && inside(oy+n) {
				n++
			}
			r := (oy*g.sh - g.pt) * g.iw
			fn(&x[r], &x[r+d*g.iw], &x[r+2*d*g.iw], g.sh*g.iw, n, &y[(oy-oy0)*g.ow], g.ow, g.iw, g.ow, &w[0], bias, flags, lo, hi)
			oy += n
			continue
		}
		var rows [3]*float32
		for k := range rows {
			rows[k] = &zero[0]
			if iy := oy*g.sh - g.pt + k*d; iy >= 0 && iy < g.ih {
				rows[k] = &x[iy*g.iw]
			}
		}
		fn(rows[0], rows[1], rows[2], 0, 1, &y[(oy-oy0)*g.ow], g.ow, g.iw, g.ow, &w[0], bias, flags, lo, hi)
		oy++
	}
}
