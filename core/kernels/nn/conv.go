package nn

import (
	nnops "github.com/switchyard-hal/switchyard/core/ops/nn"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.RegisterKernel("", "Conv", convKernel)
}

// convPlan is a validated Conv node applied to concrete input shapes.
type convPlan struct {
	n, c, m, group int
	cg, mg         int // input and output channels per group
	nd             int
	g              nnops.Geom3
	outShape       []int
}

func planConv(n *graph.Node, x, w, b *graph.Tensor) (*convPlan, error) {
	if len(x.Shape) < 3 {
		return nil, nnops.ErrInvalid("X must have rank >= 3, got shape %v", x.Shape)
	}
	if len(w.Shape) != len(x.Shape) {
		return nil, nnops.ErrInvalid("W has shape %v, X %v: ranks differ", w.Shape, x.Shape)
	}
	p := &convPlan{n: x.Shape[0], c: x.Shape[1], m: w.Shape[0], nd: len(x.Shape) - 2}
	group := n.AttrInt("group", 1)
	if group < 1 || group > 1<<31 {
		return nil, nnops.ErrInvalid("group %d must be positive", group)
	}
	p.group = int(group)
	if p.c != w.Shape[1]*p.group {
		return nil, nnops.ErrInvalid("X has %d channels, W %v with group %d expects %d", p.c, w.Shape, p.group, w.Shape[1]*p.group)
	}
	if p.m%p.group != 0 {
		return nil, nnops.ErrInvalid("W has %d output channels, not divisible by group %d", p.m, p.group)
	}
	p.cg, p.mg = w.Shape[1], p.m/p.group
	if b != nil && (len(b.Shape) != 1 || b.Shape[0] != p.m) {
		return nil, nnops.ErrInvalid("B has shape %v, expected [%d]", b.Shape, p.m)
	}
	attrs, err := nnops.ReadWindowAttrs(n, p.nd, w.Shape[2:])
	if err != nil {
		return nil, err
	}
	for _, k := range attrs.Kernel {
		if k < 1 {
			return nil, nnops.ErrInvalid("kernel shape %v has a zero dim", attrs.Kernel)
		}
	}
	if p.g, err = nnops.ForwardGeom(attrs, x.Shape[2:], false); err != nil {
		return nil, err
	}
	p.outShape = outShape(p.n, p.m, p.nd, p.g.Out)
	return p, nil
}

// outShape is a convolution's output shape: [N, M] and the nd spatial
// dims at the end of out (the geometry's three).
func outShape(N, M, nd int, out [3]int) []int {
	return append([]int{N, M}, out[3-nd:]...)
}

// convInputs are a Conv's or ConvTranspose's X, W and B (nil: none), of
// one dtype.
func convInputs(n *graph.Node, in []*graph.Tensor) (x, w, b *graph.Tensor, err error) {
	x, w, b = kernels.Input(in, 0), kernels.Input(in, 1), kernels.Input(in, 2)
	if x == nil || w == nil {
		return nil, nil, nil, kernels.Invalidf(n, "%s needs inputs X and W", n.OpType)
	}
	if w.DType != x.DType || (b != nil && b.DType != x.DType) {
		return nil, nil, nil, kernels.Invalidf(n, "input dtypes differ")
	}
	return x, w, b, nil
}

func convKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	return convLike(ctx, n, in, planConv, convRun[float32], convRun[float64])
}

// scratch is the im2col buffer: cg·|kernel| × |output plane|.
func (p *convPlan) scratch() []int { return []int{p.cg * p.g.KSize(), p.g.OutSize()} }

func (p *convPlan) shape() []int { return p.outShape }

// convLikePlan is a Conv or ConvTranspose plan: its scratch matrix and
// its output shape.
type convLikePlan interface {
	scratch() []int
	shape() []int
}

// convLike is the kernel of Conv and ConvTranspose: the inputs checked,
// the plan made and its scratch matrix checked against the tensor size
// limit, then run in the input's float type.
func convLike[P convLikePlan](ctx *kernels.Context, n *graph.Node, in []*graph.Tensor,
	plan func(n *graph.Node, x, w, b *graph.Tensor) (P, error),
	run32 func(st stop, p P, x, w, b, y []float32, gemm gemmFunc[float32]),
	run64 func(st stop, p P, x, w, b, y []float64, gemm gemmFunc[float64])) ([]*graph.Tensor, error) {
	x, w, b, err := convInputs(n, in)
	if err != nil {
		return nil, err
	}
	p, err := plan(n, x, w, b)
	if err != nil {
		return nil, kernels.Errorf(n, "%w", err)
	}
	if _, err := graph.CheckAlloc(x.DType, p.scratch()); err != nil {
		return nil, kernels.Errorf(n, "%w", err)
	}
	st := stopOf(ctx)
	return dispatchFloat(ctx, n, x, w, b, p.shape(),
		func(x, w, b, y []float32) { run32(st, p, x, w, b, y, sgemm) },
		func(x, w, b, y []float64) { run64(st, p, x, w, b, y, gemm64) })
}

func f32Data(t *graph.Tensor) []float32 {
	if t == nil {
		return nil
	}
	return graph.Data[float32](t)
}

// gemm64 adapts gemmGeneric to sgemm's signature (alpha is always 1 here).
func gemm64(st stop, m, n, k int, _ float64, a, b mat[float64], c []float64, ldc int, par int) {
	gemmGeneric(st, m, n, k, a, b, c, ldc, par)
}

type gemmFunc[T float32 | float64] func(st stop, m, n, k int, alpha T, a, b mat[T], c []T, ldc int, par int)

// convRun computes a convolution: y[n, m] = bias[m] + Σ W[m]·X[n] over each
// group, as a GEMM of the group's weights with the im2col matrix of its
// input (or with the input itself for 1×1 unpadded, unstrided kernels);
// depthwise convolutions (one input channel per group) run directly.
func convRun[T float32 | float64](st stop, p *convPlan, x, w, bias, y []T, gemm gemmFunc[T]) {
	g := &p.g
	is, os, ks := g.InSize(), g.OutSize(), g.KSize()
	par := workers()
	if len(y) == 0 {
		return
	}
	// Start from the bias (or zero: the output may be a recycled buffer).
	for i := 0; i < p.n*p.m; i++ {
		var v T
		if bias != nil {
			v = bias[i%p.m]
		}
		row := y[i*os : (i+1)*os]
		for j := range row {
			row[j] = v
		}
	}
	if p.cg == 1 && p.group > 1 {
		parallelTasks(st, p.n*p.m, par, func(t int) {
			nIdx, oc := t/p.m, t%p.m
			ic := oc / p.mg
			depthwisePlane(g, x[(nIdx*p.c+ic)*is:(nIdx*p.c+ic+1)*is], w[oc*ks:(oc+1)*ks], y[t*os:(t+1)*os])
		})
		return
	}
	k := p.cg * ks
	direct := ks == 1 && g.S == [3]int{1, 1, 1} && g.Pb == [3]int{} && g.Pe == [3]int{}
	if xf, ok := any(x).([]float32); ok {
		convTiledF32(st, p, xf, any(w).([]float32), any(y).([]float32), direct)
		return
	}
	var col []T
	if !direct {
		col = make([]T, k*os)
	}
	for nIdx := 0; nIdx < p.n && !st.done(); nIdx++ {
		for gi := 0; gi < p.group && !st.done(); gi++ {
			xg := x[(nIdx*p.c+gi*p.cg)*is : (nIdx*p.c+(gi+1)*p.cg)*is]
			b := xg
			if !direct {
				im2col(st, xg, p.cg, g, col, par)
				b = col
			}
			yg := y[(nIdx*p.m+gi*p.mg)*os : (nIdx*p.m+(gi+1)*p.mg)*os]
			gemm(st, p.mg, os, k, 1, mat[T]{w[gi*p.mg*k:], k, 1}, mat[T]{b, os, 1}, yg, os, par)
		}
	}
}

// convTiledF32 is the float32 GEMM convolution. The output plane is cut
// into column tiles; each task builds the im2col matrix of one tile (small
// enough to stay in L2) and multiplies it by the group's packed weights, so
// tasks (image × group × tile) run in parallel without a full-size patch
// matrix.
func convTiledF32(st stop, p *convPlan, x, w, y []float32, direct bool) {
	g := &p.g
	is, os, ks := g.InSize(), g.OutSize(), g.KSize()
	k := p.cg * ks
	if os == 0 || k == 0 || p.mg == 0 {
		return
	}
	par := workers()
	// Tile width: the patch tile (k × nt floats) should fit in ~512 KiB,
	// and there should be a few tasks per worker.
	nt := max(32, (512<<10)/(4*k))
	if par > 1 {
		if per := nnops.CeilDiv(os*p.n*p.group, 3*par); per < nt {
			nt = max(32, per)
		}
	}
	nt = min(nt, os)
	tiles := nnops.CeilDiv(os, nt)
	packed := make([][]float32, p.group)
	parallelTasks(st, p.group, par, func(gi int) {
		packed[gi] = packA(st, p.mg, k, 1, mat[float32]{w[gi*p.mg*k:], k, 1}, 1)
	})
	var cols [][]float32
	if !direct {
		cols = make([][]float32, min(par, p.n*p.group*tiles))
	}
	parallelTasksW(st, p.n*p.group*tiles, par, func(wk, t int) {
		tile := t % tiles
		gi := (t / tiles) % p.group
		nIdx := t / (tiles * p.group)
		o0 := tile * nt
		o1 := min(o0+nt, os)
		xg := x[(nIdx*p.c+gi*p.cg)*is : (nIdx*p.c+(gi+1)*p.cg)*is]
		yg := y[(nIdx*p.m+gi*p.mg)*os : (nIdx*p.m+(gi+1)*p.mg)*os]
		if direct {
			sgemmPacked(st, p.mg, o1-o0, k, packed[gi], xg[o0:], is, yg[o0:], os, 1)
			return
		}
		if cols[wk] == nil {
			cols[wk] = make([]float32, k*nt)
		}
		col := cols[wk][:k*(o1-o0)]
		im2colTile(xg, p.cg, g, o0, o1, col)
		sgemmPacked(st, p.mg, o1-o0, k, packed[gi], col, o1-o0, yg[o0:], os, 1)
	})
}

// im2colTile writes the patch matrix of output positions [o0, o1) (flat
// over the output plane) into col, one row of o1-o0 values per kernel tap
// and input channel, 0 in the padding.
func im2colTile(x []float32, cg int, g *nnops.Geom3, o0, o1 int, col []float32) {
	is, ks := g.InSize(), g.KSize()
	OH, OW := g.Out[1], g.Out[2]
	ID, IH, IW := g.In[0], g.In[1], g.In[2]
	nt := o1 - o0
	for r := 0; r < cg*ks; r++ {
		c, kk := r/ks, r%ks
		kd, kh, kw := kk/(g.K[1]*g.K[2]), (kk/g.K[2])%g.K[1], kk%g.K[2]
		xc := x[c*is : (c+1)*is]
		dst := col[r*nt : (r+1)*nt]
		offW := kw*g.D[2] - g.Pb[2]
		wlo, whi := validRange(offW, g.S[2], IW, OW)
		for o := o0; o < o1; {
			ow0 := o % OW
			oh := (o / OW) % OH
			od := o / (OW * OH)
			ow1 := min(OW, ow0+(o1-o))
			seg := dst[o-o0 : o-o0+(ow1-ow0)]
			o += ow1 - ow0
			id := od*g.S[0] - g.Pb[0] + kd*g.D[0]
			ih := oh*g.S[1] - g.Pb[1] + kh*g.D[1]
			if id < 0 || id >= ID || ih < 0 || ih >= IH {
				clear(seg)
				continue
			}
			src := xc[(id*IH+ih)*IW : (id*IH+ih+1)*IW]
			lo, hi := max(wlo, ow0), min(whi, ow1)
			if lo >= hi {
				clear(seg)
				continue
			}
			clear(seg[:lo-ow0])
			clear(seg[hi-ow0:])
			if g.S[2] == 1 {
				copy(seg[lo-ow0:hi-ow0], src[lo+offW:hi+offW])
			} else {
				for ow := lo; ow < hi; ow++ {
					seg[ow-ow0] = src[ow*g.S[2]+offW]
				}
			}
		}
	}
}

// im2col writes the patch matrix of x (cg channels of g.in) into col:
// row ((c*KD+kd)*KH+kh)*KW+kw holds, for every output position, the input
// value under that kernel tap, or 0 in the padding.
func im2col[T float32 | float64](st stop, x []T, cg int, g *nnops.Geom3, col []T, par int) {
	is, os, ks := g.InSize(), g.OutSize(), g.KSize()
	OD, OH, OW := g.Out[0], g.Out[1], g.Out[2]
	ID, IH, IW := g.In[0], g.In[1], g.In[2]
	parallelRange(st, cg*ks, par, 4, func(lo, hi int) {
		for r := lo; r < hi; r++ {
			c, kk := r/ks, r%ks
			kd, kh, kw := kk/(g.K[1]*g.K[2]), (kk/g.K[2])%g.K[1], kk%g.K[2]
			xc := x[c*is : (c+1)*is]
			dst := col[r*os : (r+1)*os]
			offW := kw*g.D[2] - g.Pb[2]
			wlo, whi := validRange(offW, g.S[2], IW, OW)
			for od := 0; od < OD; od++ {
				id := od*g.S[0] - g.Pb[0] + kd*g.D[0]
				for oh := 0; oh < OH; oh++ {
					ih := oh*g.S[1] - g.Pb[1] + kh*g.D[1]
					row := dst[(od*OH+oh)*OW : (od*OH+oh+1)*OW]
					if id < 0 || id >= ID || ih < 0 || ih >= IH {
						clear(row)
						continue
					}
					src := xc[(id*IH+ih)*IW : (id*IH+ih+1)*IW]
					clear(row[:wlo])
					clear(row[whi:])
					if wlo >= whi {
						continue
					}
					if g.S[2] == 1 {
						copy(row[wlo:whi], src[wlo+offW:whi+offW])
					} else {
						for ow := wlo; ow < whi; ow++ {
							row[ow] = src[ow*g.S[2]+offW]
						}
					}
				}
			}
		}
	})
}

// depthwisePlane adds to y (one output plane) the convolution of one input
// plane x with one kernel w.
func depthwisePlane[T float32 | float64](g *nnops.Geom3, x, w, y []T) {
	OD, OH, OW := g.Out[0], g.Out[1], g.Out[2]
	ID, IH, IW := g.In[0], g.In[1], g.In[2]
	sw := g.S[2]
	for kd := 0; kd < g.K[0]; kd++ {
		for kh := 0; kh < g.K[1]; kh++ {
			for kw := 0; kw < g.K[2]; kw++ {
				wv := w[(kd*g.K[1]+kh)*g.K[2]+kw]
				offW := kw*g.D[2] - g.Pb[2]
				wlo, whi := validRange(offW, sw, IW, OW)
				if wlo >= whi {
					continue
				}
				for od := 0; od < OD; od++ {
					id := od*g.S[0] - g.Pb[0] + kd*g.D[0]
					if id < 0 || id >= ID {
						continue
					}
					for oh := 0; oh < OH; oh++ {
						ih := oh*g.S[1] - g.Pb[1] + kh*g.D[1]
						if ih < 0 || ih >= IH {
							continue
						}
						src := x[(id*IH+ih)*IW : (id*IH+ih+1)*IW]
						row := y[(od*OH+oh)*OW+wlo : (od*OH+oh)*OW+whi]
						if sw == 1 {
							src = src[wlo+offW : whi+offW]
							for j, v := range src {
								row[j] += wv * v
							}
						} else {
							for j := range row {
								row[j] += wv * src[(wlo+j)*sw+offW]
							}
						}
					}
				}
			}
		}
	}
}

// dispatchFloat allocates a convolution-like op's output of outShape and
// runs the float32 body (also for float16/bfloat16, widened to float32 and
// rounded back once) or the float64 body. b may be nil.
func dispatchFloat(ctx *kernels.Context, n *graph.Node, x, w, b *graph.Tensor, outShape []int,
	f32 func(x, w, b, y []float32), f64 func(x, w, b, y []float64)) ([]*graph.Tensor, error) {
	switch x.DType {
	case graph.Float32:
		out, err := ctx.New(graph.Float32, outShape)
		if err != nil {
			return nil, err
		}
		f32(graph.Data[float32](x), graph.Data[float32](w), f32Data(b), graph.Data[float32](out))
		if ctx.Stopped() {
			return nil, ctx.Stop(n)
		}
		return ctx.Outputs(out), nil
	case graph.Float16, graph.BFloat16:
		if _, err := graph.CheckAlloc(graph.Float32, outShape); err != nil {
			return nil, kernels.Errorf(n, "%w", err)
		}
		var bf []float32
		if b != nil {
			bf = graph.Data[float32](kernels.ToFloat32(b))
		}
		y := make([]float32, kernels.Prod(outShape))
		f32(graph.Data[float32](kernels.ToFloat32(x)), graph.Data[float32](kernels.ToFloat32(w)), bf, y)
		if ctx.Stopped() {
			return nil, ctx.Stop(n)
		}
		out, err := kernels.FromFloat32(ctx, x.DType, outShape, y)
		if err != nil {
			return nil, err
		}
		return ctx.Outputs(out), nil
	case graph.Float64:
		out, err := ctx.New(graph.Float64, outShape)
		if err != nil {
			return nil, err
		}
		var bd []float64
		if b != nil {
			bd = graph.Data[float64](b)
		}
		f64(graph.Data[float64](x), graph.Data[float64](w), bd, graph.Data[float64](out))
		if ctx.Stopped() {
			return nil, ctx.Stop(n)
		}
		return ctx.Outputs(out), nil
	}
	return nil, kernels.Unsupportedf(n, "dtype %v", x.DType)
}
