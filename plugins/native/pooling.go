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
		y, err := ctx.New(graph.Float32, out)
		if err != nil {
			return nil, err
		}
		X, Y := f32(x), f32(y)
		planes := x.Shape[0] * x.Shape[1]
		chunks := min(planes, 4*bc.pool.threads())
		bc.pool.parallel(chunks, func(t int) {
			for pi := planes * t / chunks; pi < planes*(t+1)/chunks; pi++ {
				poolPlane(&g, X[pi*ih*iw:(pi+1)*ih*iw], Y[pi*g.oh*g.ow:(pi+1)*g.oh*g.ow], isMax, includePad)
			}
		})
		return []*graph.Tensor{y}, nil
	}, nil
}

func poolPlane(g *geom, x, y []float32, isMax, includePad bool) {
	for oy := 0; oy < g.oh; oy++ {
		iy0 := oy*g.sh - g.pt
		for ox := 0; ox < g.ow; ox++ {
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
			y[oy*g.ow+ox] = s
		}
	}
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
		out := []int{x.Shape[0], x.Shape[1]}
		for range x.Shape[2:] {
			out = append(out, 1)
		}
		y, err := ctx.New(graph.Float32, out)
		if err != nil {
			return nil, err
		}
		hw := kernels.Prod(x.Shape[2:])
		X, Y := f32(x), f32(y)
		for p := range Y {
			var s float32
			for _, v := range X[p*hw : (p+1)*hw] {
				s += v
			}
			Y[p] = s / float32(hw)
		}
		return []*graph.Tensor{y}, nil
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
		y, err := ctx.New(graph.Float32, x.Shape)
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
		parallelChunks(bc.pool, rows*mid, func(e0, e1 int) {
			for row := e0 / mid; row < min(rows, (e1+mid-1)/mid); row++ {
				if row*mid < e0 {
					continue
				}
				o, i := row/inner, row%inner
				base := o*mid*inner + i
				softmaxRow(X, Y, base, mid, inner)
			}
		})
		return []*graph.Tensor{y}, nil
	}, nil
}

func softmaxRow(x, y []float32, base, n, stride int) {
	m := negInf
	for k := 0; k < n; k++ {
		if v := x[base+k*stride]; v > m || v != v {
			m = v
		}
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
		y, err := ctx.New(graph.Float32, x.Shape)
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
		return []*graph.Tensor{y}, nil
	}, nil
}
