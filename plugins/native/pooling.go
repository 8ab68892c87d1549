package native

import (
	"fmt"
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/hal"
)

func checkPool(sg *hal.Subgraph, n *graph.Node) string {
	if r := needF32(sg, n, 0); r != "" {
		return r
	}
	r := rankOf(sg, n.Inputs[0])
	if r != 3 && r != 4 {
		return fmt.Sprintf("native: %s of rank %d (1-D and 2-D pooling only)", n.OpType, r)
	}
	if len(n.Outputs) > 1 && n.Outputs[1] != "" {
		return "native: MaxPool with the Indices output not implemented"
	}
	if n.AttrInt("storage_order", 0) != 0 {
		return "native: MaxPool storage_order=1 not implemented"
	}
	if n.OpType == "AveragePool" && n.AttrInt("count_include_pad", 0) != 0 && n.AttrInt("ceil_mode", 0) != 0 {
		return "native: AveragePool with count_include_pad=1 and ceil_mode=1 not implemented"
	}
	if _, err := readWindow(n, r-2, nil); err != nil {
		return fmt.Sprintf("native: %s: %v", n.OpType, err)
	}
	return ""
}

func buildPool(bc *buildCtx, n *graph.Node, _ *fusion) (kernels.Func, error) {
	nd := rankOf(bc.sg, n.Inputs[0]) - 2
	win, err := readWindow(n, nd, nil)
	if err != nil {
		return nil, err
	}
	isMax := n.OpType == "MaxPool"
	includePad := n.AttrInt("count_include_pad", 0) != 0
	op := n.OpType
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		x := in[0]
		if x.DType != graph.Float32 || len(x.Shape) != nd+2 {
			return nil, fmt.Errorf("%w: %s input %v %v", kernels.ErrInvalid, op, x.DType, x.Shape)
		}
		ih, iw := 1, x.Shape[2]
		if nd == 2 {
			ih, iw = x.Shape[2], x.Shape[3]
		}
		g, err := win.at(ih, iw)
		if err != nil {
			return nil, err
		}
		out := []int{x.Shape[0], x.Shape[1], g.ow}
		if nd == 2 {
			out = []int{x.Shape[0], x.Shape[1], g.oh, g.ow}
		}
		y, err := ctx.NewUninit(graph.Float32, out)
		if err != nil {
			return nil, err
		}
		X, Y := f32(x), f32(y)
		planes := x.Shape[0] * x.Shape[1]
		if isMax && nd == 2 && isPool2x2(&g) {
			// every row pair of the tensor alike (layout.go): the rows in
			// chunks, whatever the planes' width
			rows := planes * g.oh
			chunks := min(rows, bc.pool.threads())
			if rows*g.ow < 1<<14 {
				chunks = 1
			}
			parallelFor(bc.pool, chunks, poolTask{g, X, Y, rows, chunks, true, false}, func(a poolTask, t int) {
				r0, r1 := a.planes*t/a.chunks, a.planes*(t+1)/a.chunks
				maxPool2x2Rows(r1-r0, a.g.ow, a.x[4*r0*a.g.ow:4*r1*a.g.ow], a.y[r0*a.g.ow:r1*a.g.ow])
			})
			return ctx.Outputs(y), nil
		}
		chunks := splitTasks(bc.pool.threads(), planes, 0.25*float64(g.oh*g.ow*max(1, g.kh*g.kw)))
		parallelFor(bc.pool, chunks, poolTask{g, X, Y, planes, chunks, isMax, includePad}, func(a poolTask, t int) {
			poolPlanes(&a.g, a.x, a.y, a.planes*t/a.chunks, a.planes*(t+1)/a.chunks, a.isMax, a.includePad) // maxpool_sep.go
		})
		return ctx.Outputs(y), nil
	}, nil
}

// softmaxTask is Softmax's loop over rows (chunksFor).
type softmaxTask struct {
	x, y             []float32
	rows, mid, inner int
}

// poolTask is a pooling's loop over planes (parallelFor).
type poolTask struct {
	g                 geom
	x, y              []float32
	planes, chunks    int
	isMax, includePad bool
}

// poolPlane pools one plane: the interior (windows inside the input)
// without bounds checks or padding counts, the border point by point.
func poolPlane(g *geom, x, y []float32, isMax, includePad bool) {
	y0, y1 := interior(g.oh, g.ih, g.kh, g.sh, g.dh, g.pt)
	x0, x1 := interior(g.ow, g.iw, g.kw, g.sw, g.dw, g.pl)
	area := float32(g.kh * g.kw)
	for oy := 0; oy < g.oh; oy++ {
		yrow := y[oy*g.ow : (oy+1)*g.ow]
		if oy < y0 || oy >= y1 || x1 <= x0 {
			for ox := range yrow {
				yrow[ox] = poolPoint(g, x, oy, ox, isMax, includePad)
			}
			continue
		}
		for ox := 0; ox < x0; ox++ {
			yrow[ox] = poolPoint(g, x, oy, ox, isMax, includePad)
		}
		iy0 := oy*g.sh - g.pt
		if isMax && g.kh == 2 && g.kw == 2 && g.dh == 1 && g.dw == 1 && g.sw == 2 {
			// the common 2×2 window with column stride 2
			ix := x0*2 - g.pl
			maxPool2x2(yrow[x0:x1], x[iy0*g.iw+ix:(iy0+1)*g.iw], x[(iy0+1)*g.iw+ix:(iy0+2)*g.iw])
		} else {
			for ox := x0; ox < x1; ox++ {
				ix0 := ox*g.sw - g.pl
				var s float32
				if isMax {
					s = negInf
				}
				for ky := 0; ky < g.kh; ky++ {
					row := x[(iy0+ky*g.dh)*g.iw+ix0:]
					for kx := 0; kx < g.kw; kx++ {
						v := row[kx*g.dw]
						if isMax {
							if v > s {
								s = v
							}
						} else {
							s += v
						}
					}
				}
				if !isMax {
					s /= area
				}
				yrow[ox] = s
			}
		}
		for ox := x1; ox < g.ow; ox++ {
			yrow[ox] = poolPoint(g, x, oy, ox, isMax, includePad)
		}
	}
}

// maxPool2x2Go is y[j] = the largest of r0[2j], r0[2j+1], r1[2j],
// r1[2j+1], a NaN never winning (all NaN: -Inf), as the reference.
func maxPool2x2Go(y, r0, r1 []float32) {
	r0, r1 = r0[:2*len(y)], r1[:2*len(y)]
	for j := range y {
		// unrolled: the tails of narrow planes run here
		s := negInf
		if v := r0[2*j]; v > s {
			s = v
		}
		if v := r0[2*j+1]; v > s {
			s = v
		}
		if v := r1[2*j]; v > s {
			s = v
		}
		if v := r1[2*j+1]; v > s {
			s = v
		}
		y[j] = s
	}
}

// poolPoint is one output of a window that may read padding.
func poolPoint(g *geom, x []float32, oy, ox int, isMax, includePad bool) float32 {
	iy0 := oy*g.sh - g.pt
	ix0 := ox*g.sw - g.pl
	var s float32
	if isMax {
		s = negInf
	}
	cnt, padded := 0, 0
	for ky := 0; ky < g.kh; ky++ {
		iy := iy0 + ky*g.dh
		inY := uint(iy) < uint(g.ih)
		for kx := 0; kx < g.kw; kx++ {
			ix := ix0 + kx*g.dw
			if !inY || uint(ix) >= uint(g.iw) {
				if iy >= -g.pt && iy < g.ih+g.pb && ix >= -g.pl && ix < g.iw+g.pr {
					padded++
				}
				continue
			}
			v := x[iy*g.iw+ix]
			cnt++
			if isMax {
				if v > s { // as the reference: NaN never wins
					s = v
				}
			} else {
				s += v
			}
		}
	}
	if !isMax {
		d := cnt
		if includePad {
			d += padded
		}
		if d > 0 {
			s /= float32(d)
		}
	}
	return s
}

// interior is the range [o0, o1) of output positions whose whole window
// (k taps, stride s, dilation d, begin pad pb) lies inside [0, in).
func interior(out, in, k, s, d, pb int) (o0, o1 int) {
	o0 = (pb + s - 1) / s
	ext := (k - 1) * d
	o1 = out
	for o1 > o0 && (o1-1)*s-pb+ext >= in {
		o1--
	}
	return min(o0, out), o1
}

func checkGlobalPool(sg *hal.Subgraph, n *graph.Node) string {
	if r := needF32(sg, n, 0); r != "" {
		return r
	}
	if rankOf(sg, n.Inputs[0]) < 3 {
		return "native: GlobalAveragePool needs a known rank ≥ 3"
	}
	return ""
}

func buildGlobalPool(bc *buildCtx, n *graph.Node, _ *fusion) (kernels.Func, error) {
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		x := in[0]
		if x.DType != graph.Float32 || len(x.Shape) < 3 {
			return nil, fmt.Errorf("%w: GlobalAveragePool input %v %v", kernels.ErrInvalid, x.DType, x.Shape)
		}
		var ob [8]int
		out := append(ob[:0], x.Shape[0], x.Shape[1])
		for range x.Shape[2:] {
			out = append(out, 1)
		}
		y, err := ctx.NewUninit(graph.Float32, out)
		if err != nil {
			return nil, err
		}
		hw := kernels.Prod(x.Shape[2:])
		X, Y := f32(x), f32(y)
		for p := range Y {
			Y[p] = sum(X[p*hw:(p+1)*hw]) / float32(hw)
		}
		return ctx.Outputs(y), nil
	}, nil
}

func checkSoftmax(sg *hal.Subgraph, n *graph.Node) string {
	if r := needF32(sg, n, 0); r != "" {
		return r
	}
	if rankOf(sg, n.Inputs[0]) < 0 {
		return "native: Softmax of unknown rank"
	}
	return ""
}

func buildSoftmax(bc *buildCtx, n *graph.Node, _ *fusion) (kernels.Func, error) {
	opset := bc.sg.OpsetVersion("")
	def := int64(-1)
	if opset < 13 {
		def = 1
	}
	axis := n.AttrInt("axis", def)
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		x := in[0]
		if x.DType != graph.Float32 {
			return nil, fmt.Errorf("%w: Softmax of %v", kernels.ErrInvalid, x.DType)
		}
		r := len(x.Shape)
		ax := int(axis)
		if ax < 0 {
			ax += r
		}
		if ax < 0 || ax >= max(r, 1) {
			return nil, fmt.Errorf("%w: Softmax axis %d for rank %d", kernels.ErrInvalid, axis, r)
		}
		y, err := ctx.NewUninit(graph.Float32, x.Shape)
		if err != nil {
			return nil, err
		}
		var outer, mid, inner int
		if r == 0 {
			outer, mid, inner = 1, 1, 1
		} else if opset < 13 {
			outer, mid, inner = kernels.Prod(x.Shape[:ax]), kernels.Prod(x.Shape[ax:]), 1
		} else {
			outer, mid, inner = kernels.Prod(x.Shape[:ax]), x.Shape[ax], kernels.Prod(x.Shape[ax+1:])
		}
		X, Y := f32(x), f32(y)
		rows := outer * inner
		if inner == 1 && mid <= softmaxShortMax {
			// short rows: a block of them at a time (softmax_short.go)
			chunksFor(bc.pool, rows*mid, softmaxTask{X, Y, rows, mid, inner}, func(a softmaxTask, e0, e1 int) {
				softmaxShort(a.x, a.y, (e0+a.mid-1)/a.mid, min(a.rows, (e1+a.mid-1)/a.mid), a.mid)
			})
			return ctx.Outputs(y), nil
		}
		chunksFor(bc.pool, rows*mid, softmaxTask{X, Y, rows, mid, inner}, func(a softmaxTask, e0, e1 int) {
			for row := e0 / a.mid; row < min(a.rows, (e1+a.mid-1)/a.mid); row++ {
				if row*a.mid < e0 {
					continue
				}
				o, i := row/a.inner, row%a.inner
				base := o*a.mid*a.inner + i
				softmaxRow(a.x, a.y, base, a.mid, a.inner)
			}
		})
		return ctx.Outputs(y), nil
	}, nil
}

func softmaxRow(x, y []float32, base, n, stride int) {
	m := negInf
	for k := 0; k < n; k++ {
		if v := x[base+k*stride]; v > m || v != v {
			m = v
		}
	}
	if stride == 1 && !math.IsInf(float64(m), 0) && m == m {
		// a contiguous row: exp in float32 (within 2 ulp), vectorised
		ys := y[base : base+n]
		inv := 1 / expSum(x[base:base+n], ys, m)
		for k := range ys {
			ys[k] *= inv
		}
		return
	}
	var sum float64
	for k := 0; k < n; k++ {
		e := math.Exp(float64(x[base+k*stride] - m))
		y[base+k*stride] = float32(e)
		sum += e
	}
	inv := 1 / sum
	for k := 0; k < n; k++ {
		y[base+k*stride] = float32(float64(y[base+k*stride]) * inv)
	}
}

func checkBatchNorm(sg *hal.Subgraph, n *graph.Node) string {
	if r := needF32(sg, n, 0, 1, 2, 3, 4); r != "" {
		return r
	}
	if len(n.Outputs) > 1 || n.AttrInt("training_mode", 0) != 0 {
		return "native: BatchNormalization in training mode not implemented"
	}
	for i := 1; i < 5; i++ {
		if constInput(sg, n, i) == nil {
			return fmt.Sprintf("native: BatchNormalization with a non-constant input %d not implemented", i)
		}
	}
	if rankOf(sg, n.Inputs[0]) < 2 {
		return "native: BatchNormalization needs a known rank ≥ 2"
	}
	return ""
}

func buildBatchNorm(bc *buildCtx, n *graph.Node, _ *fusion) (kernels.Func, error) {
	sc, sh := f32(constInput(bc.sg, n, 1)), f32(constInput(bc.sg, n, 2))
	mean, vr := f32(constInput(bc.sg, n, 3)), f32(constInput(bc.sg, n, 4))
	eps := float64(n.AttrFloat("epsilon", 1e-5))
	c := len(sc)
	if len(sh) != c || len(mean) != c || len(vr) != c {
		return nil, fmt.Errorf("%w: BatchNormalization parameters of different lengths", kernels.ErrInvalid)
	}
	mul, add := make([]float32, c), make([]float32, c)
	for i := range mul {
		s := float64(sc[i]) / math.Sqrt(float64(vr[i])+eps)
		mul[i], add[i] = float32(s), float32(float64(sh[i])-float64(mean[i])*s)
	}
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		x := in[0]
		if x.DType != graph.Float32 || len(x.Shape) < 2 || x.Shape[1] != c {
			return nil, fmt.Errorf("%w: BatchNormalization input %v %v for %d channels", kernels.ErrInvalid, x.DType, x.Shape, c)
		}
		y, err := ctx.NewUninit(graph.Float32, x.Shape)
		if err != nil {
			return nil, err
		}
		inner := kernels.Prod(x.Shape[2:])
		X, Y := f32(x), f32(y)
		for p := 0; p < x.Shape[0]*c; p++ {
			ch := p % c
			m, a := mul[ch], add[ch]
			xs, ys := X[p*inner:(p+1)*inner], Y[p*inner:(p+1)*inner]
			for i, v := range xs {
				ys[i] = v*m + a
			}
		}
		return ctx.Outputs(y), nil
	}, nil
}

// sum adds x with four running sums (instruction-level parallelism; the
// order differs from one running sum by rounding only).
func sum(x []float32) float32 {
	var s0, s1, s2, s3 float32
	for len(x) >= 4 {
		s0 += x[0]
		s1 += x[1]
		s2 += x[2]
		s3 += x[3]
		x = x[4:]
	}
	for _, v := range x {
		s0 += v
	}
	return (s0 + s1) + (s2 + s3)
}

// expSumGo is y[i] = expf(x[i] - m) and their sum.
func expSumGo(x, y []float32, m float32) float32 {
	var s float32
	x = x[:len(y)]
	for i, v := range x {
		e := expf(v - m)
		y[i] = e
		s += e
	}
	return s
}

// expf is Cephes' float32 exp, the one expSumAVX2 computes lane by lane
// (see the package asmgen): within 2 ulp, the argument clamped to
// [-87.34, 88.38].
func expf(v float32) float32 {
	v = min(max(v, -87.3365478515625), 88.3762626647949)
	fx := float32(math.Floor(float64(v*1.44269504088896341 + 0.5)))
	v = v - fx*0.693359375
	v = v - fx*-2.12194440e-4
	z := v * v
	p := float32(1.9875691500e-4)
	p = p*v + 1.3981999507e-3
	p = p*v + 8.3334519073e-3
	p = p*v + 4.1665795894e-2
	p = p*v + 1.6666665459e-1
	p = p*v + 5.0000001201e-1
	p = p*z + v + 1
	return p * math.Float32frombits(uint32(int32(fx)+127)<<23)
}
