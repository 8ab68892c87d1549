package nn

import (
	nnops "github.com/switchyard-hal/switchyard/core/ops/nn"

	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.RegisterKernel("", "MaxPool", maxPoolKernel)
	kernels.RegisterKernel("", "AveragePool", avgPoolKernel)
	kernels.RegisterKernel("", "GlobalAveragePool", globalPoolKernel(false))
	kernels.RegisterKernel("", "GlobalMaxPool", globalPoolKernel(true))
}

// poolPlan is a validated MaxPool/AveragePool node on a concrete input.
type poolPlan struct {
	planes   int // N*C
	nd       int
	g        nnops.Geom3
	outShape []int
}

func planPool(n *graph.Node, x *graph.Tensor) (*poolPlan, error) {
	if len(x.Shape) < 3 {
		return nil, nnops.ErrInvalid("X must have rank >= 3, got shape %v", x.Shape)
	}
	nd := len(x.Shape) - 2
	attrs, err := nnops.ReadWindowAttrs(n, nd, nil)
	if err != nil {
		return nil, err
	}
	ceil := n.AttrInt("ceil_mode", 0) != 0
	g, err := nnops.ForwardGeom(attrs, x.Shape[2:], ceil)
	if err != nil {
		return nil, err
	}
	p := &poolPlan{planes: x.Shape[0] * x.Shape[1], nd: nd, g: g}
	p.outShape = []int{x.Shape[0], x.Shape[1]}
	for i := 3 - nd; i < 3; i++ {
		p.outShape = append(p.outShape, g.Out[i])
	}
	return p, nil
}

// axisWindows precomputes, for each output index along one axis, the
// first input index of its window and the range [lo, hi) of kernel taps
// that land inside the input.
type axisWindows struct {
	start, lo, hi []int
}

func makeAxisWindows(g *nnops.Geom3, axis int) axisWindows {
	o := g.Out[axis]
	w := axisWindows{make([]int, o), make([]int, o), make([]int, o)}
	for i := 0; i < o; i++ {
		st := i*g.S[axis] - g.Pb[axis]
		w.start[i] = st
		// taps t with 0 <= st + t*d < in
		lo, hi := validRange(st, g.D[axis], g.In[axis], g.K[axis])
		w.lo[i], w.hi[i] = lo, hi
	}
	return w
}

func maxPoolKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if x == nil {
		return nil, kernels.Invalidf(n, "MaxPool needs input X")
	}
	p, err := planPool(n, x)
	if err != nil {
		return nil, kernels.Errorf(n, "%w", err)
	}
	wantIdx := len(n.Outputs) > 1 && n.Outputs[1] != ""
	colMajor := n.AttrInt("storage_order", 0) == 1
	var idx *graph.Tensor
	if wantIdx {
		if idx, err = ctx.New(graph.Int64, p.outShape); err != nil {
			return nil, err
		}
	}
	var idxData []int64
	if idx != nil {
		idxData = graph.Data[int64](idx)
	}
	var out *graph.Tensor
	switch x.DType {
	case graph.Float32:
		if out, err = ctx.New(x.DType, p.outShape); err != nil {
			return nil, err
		}
		maxPool(stopOf(ctx), p, graph.Data[float32](x), graph.Data[float32](out), idxData, colMajor)
	case graph.Float64:
		if out, err = ctx.New(x.DType, p.outShape); err != nil {
			return nil, err
		}
		maxPool(stopOf(ctx), p, graph.Data[float64](x), graph.Data[float64](out), idxData, colMajor)
	case graph.Int8:
		if out, err = ctx.New(x.DType, p.outShape); err != nil {
			return nil, err
		}
		maxPool(stopOf(ctx), p, graph.Data[int8](x), graph.Data[int8](out), idxData, colMajor)
	case graph.Uint8:
		if out, err = ctx.New(x.DType, p.outShape); err != nil {
			return nil, err
		}
		maxPool(stopOf(ctx), p, graph.Data[uint8](x), graph.Data[uint8](out), idxData, colMajor)
	case graph.Float16, graph.BFloat16:
		if _, err := graph.CheckAlloc(graph.Float32, p.outShape); err != nil {
			return nil, kernels.Errorf(n, "%w", err)
		}
		y := make([]float32, kernels.Prod(p.outShape))
		maxPool(stopOf(ctx), p, graph.Data[float32](kernels.ToFloat32(x)), y, idxData, colMajor)
		if out, err = kernels.FromFloat32(ctx, x.DType, p.outShape, y); err != nil {
			return nil, err
		}
	default:
		return nil, kernels.Unsupportedf(n, "dtype %v", x.DType)
	}
	if ctx.Stopped() {
		return nil, ctx.Stop(n)
	}
	res := []*graph.Tensor{out}
	if len(n.Outputs) > 1 {
		res = append(res, idx)
	}
	return res, nil
}

// maxPool takes the maximum over each window, ignoring padding and NaN
// (a window of only NaN gives NaN). idx, when not nil, receives the flat
// index of the chosen element in the input (row-major, or with the
// spatial dims column-major when colMajor).
func maxPool[T graph.Numeric](st stop, p *poolPlan, x, y []T, idx []int64, colMajor bool) {
	g := &p.g
	is, os := g.InSize(), g.OutSize()
	wd, wh, ww := makeAxisWindows(g, 0), makeAxisWindows(g, 1), makeAxisWindows(g, 2)
	OD, OH, OW := g.Out[0], g.Out[1], g.Out[2]
	IH, IW := g.In[1], g.In[2]
	// Column-major strides of the real spatial dims (the embedded leading
	// dims have size 1, so their stride does not matter).
	var cm [3]int
	if colMajor {
		st := 1
		for a := 3 - p.nd; a < 3; a++ {
			cm[a] = st
			st *= g.In[a]
		}
	}
	parallelRange(st, p.planes, workers(), max(1, 4096/max(1, os*g.KSize())), func(lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			xp := x[pl*is : (pl+1)*is]
			yp := y[pl*os : (pl+1)*os]
			oi := 0
			for od := 0; od < OD; od++ {
				for oh := 0; oh < OH; oh++ {
					for ow := 0; ow < OW; ow++ {
						var best T
						bestAt, found, sawNaN := 0, false, false
						for kd := wd.lo[od]; kd < wd.hi[od]; kd++ {
							id := wd.start[od] + kd*g.D[0]
							for kh := wh.lo[oh]; kh < wh.hi[oh]; kh++ {
								ih := wh.start[oh] + kh*g.D[1]
								base := (id*IH + ih) * IW
								for kw := ww.lo[ow]; kw < ww.hi[ow]; kw++ {
									at := base + ww.start[ow] + kw*g.D[2]
									v := xp[at]
									if v != v {
										sawNaN = true
										continue
									}
									if !found || v > best {
										best, bestAt, found = v, at, true
									}
								}
							}
						}
						if !found {
							best = emptyMax[T](sawNaN)
						}
						yp[oi] = best
						if idx != nil {
							flat := bestAt
							if colMajor {
								d, h, w := bestAt/(IH*IW), (bestAt/IW)%IH, bestAt%IW
								flat = d*cm[0] + h*cm[1] + w*cm[2]
							}
							idx[pl*os+oi] = int64(pl*is + flat)
						}
						oi++
					}
				}
			}
		}
	})
}

// emptyMax is the result of a window without any usable element: NaN when
// it held only NaN, else the lowest value of T.
func emptyMax[T graph.Numeric](sawNaN bool) T {
	var z T
	switch any(z).(type) {
	case float32:
		if sawNaN {
			return T(float32(math.NaN()))
		}
		return T(float32(math.Inf(-1)))
	case float64:
		if sawNaN {
			return T(math.NaN())
		}
		return T(math.Inf(-1))
	case int8:
		lowest := int8(math.MinInt8)
		return T(lowest)
	}
	return z // unsigned: 0 is the lowest
}

func avgPoolKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	return stopped(ctx, n)(avgPoolRun(ctx, n, in))
}

func avgPoolRun(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if x == nil {
		return nil, kernels.Invalidf(n, "AveragePool needs input X")
	}
	p, err := planPool(n, x)
	if err != nil {
		return nil, kernels.Errorf(n, "%w", err)
	}
	includePad := n.AttrInt("count_include_pad", 0) != 0
	switch x.DType {
	case graph.Float32:
		out, err := ctx.New(x.DType, p.outShape)
		if err != nil {
			return nil, err
		}
		avgPool(stopOf(ctx), p, graph.Data[float32](x), graph.Data[float32](out), includePad)
		return ctx.Outputs(out), nil
	case graph.Float64:
		out, err := ctx.New(x.DType, p.outShape)
		if err != nil {
			return nil, err
		}
		avgPool(stopOf(ctx), p, graph.Data[float64](x), graph.Data[float64](out), includePad)
		return ctx.Outputs(out), nil
	case graph.Float16, graph.BFloat16:
		if _, err := graph.CheckAlloc(graph.Float32, p.outShape); err != nil {
			return nil, kernels.Errorf(n, "%w", err)
		}
		y := make([]float32, kernels.Prod(p.outShape))
		avgPool(stopOf(ctx), p, graph.Data[float32](kernels.ToFloat32(x)), y, includePad)
		out, err := kernels.FromFloat32(ctx, x.DType, p.outShape, y)
		if err != nil {
			return nil, err
		}
		return ctx.Outputs(out), nil
	}
	return nil, kernels.Unsupportedf(n, "dtype %v", x.DType)
}

// avgPool averages each window. The divisor counts the taps inside the
// input, or with includePad also those in the explicit (or auto) padding —
// never the taps past the end padding that ceil_mode adds.
func avgPool[T float32 | float64](st stop, p *poolPlan, x, y []T, includePad bool) {
	g := &p.g
	is, os := g.InSize(), g.OutSize()
	wd, wh, ww := makeAxisWindows(g, 0), makeAxisWindows(g, 1), makeAxisWindows(g, 2)
	// Taps inside [-pb, in+pe) per axis and output index.
	padCount := func(a int, w axisWindows) []int {
		c := make([]int, len(w.start))
		for i, st := range w.start {
			lo, hi := validRange(st+g.Pb[a], g.D[a], g.In[a]+g.Pb[a]+g.Pe[a], g.K[a])
			c[i] = hi - lo
		}
		return c
	}
	var pd, ph, pw []int
	if includePad {
		pd, ph, pw = padCount(0, wd), padCount(1, wh), padCount(2, ww)
	}
	OD, OH, OW := g.Out[0], g.Out[1], g.Out[2]
	IH, IW := g.In[1], g.In[2]
	parallelRange(st, p.planes, workers(), max(1, 4096/max(1, os*g.KSize())), func(lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			xp := x[pl*is : (pl+1)*is]
			yp := y[pl*os : (pl+1)*os]
			oi := 0
			for od := 0; od < OD; od++ {
				for oh := 0; oh < OH; oh++ {
					for ow := 0; ow < OW; ow++ {
						var sum T
						for kd := wd.lo[od]; kd < wd.hi[od]; kd++ {
							id := wd.start[od] + kd*g.D[0]
							for kh := wh.lo[oh]; kh < wh.hi[oh]; kh++ {
								ih := wh.start[oh] + kh*g.D[1]
								row := xp[(id*IH+ih)*IW:]
								for kw := ww.lo[ow]; kw < ww.hi[ow]; kw++ {
									sum += row[ww.start[ow]+kw*g.D[2]]
								}
							}
						}
						var cnt int
						if includePad {
							cnt = pd[od] * ph[oh] * pw[ow]
						} else {
							cnt = (wd.hi[od] - wd.lo[od]) * (wh.hi[oh] - wh.lo[oh]) * (ww.hi[ow] - ww.lo[ow])
						}
						if cnt == 0 {
							yp[oi] = T(math.NaN())
						} else {
							yp[oi] = sum / T(cnt)
						}
						oi++
					}
				}
			}
		}
	})
}

func globalPoolKernel(isMax bool) kernels.Func {
	run := globalPoolRun(isMax)
	return func(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		return stopped(ctx, n)(run(ctx, n, in))
	}
}

func globalPoolRun(isMax bool) kernels.Func {
	return func(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		x := kernels.Input(in, 0)
		if x == nil {
			return nil, kernels.Invalidf(n, "%s needs input X", n.OpType)
		}
		if len(x.Shape) < 2 {
			return nil, kernels.Invalidf(n, "X must have rank >= 2, got shape %v", x.Shape)
		}
		outShape := append([]int{}, x.Shape...)
		for i := 2; i < len(outShape); i++ {
			outShape[i] = 1
		}
		planes := x.Shape[0] * x.Shape[1]
		size := kernels.Prod(x.Shape[2:])
		if size == 0 && planes > 0 && isMax {
			return nil, kernels.Invalidf(n, "GlobalMaxPool over an empty spatial extent %v", x.Shape[2:])
		}
		switch x.DType {
		case graph.Float32:
			out, err := ctx.New(x.DType, outShape)
			if err != nil {
				return nil, err
			}
			globalPool(stopOf(ctx), graph.Data[float32](x), graph.Data[float32](out), planes, size, isMax)
			return ctx.Outputs(out), nil
		case graph.Float64:
			out, err := ctx.New(x.DType, outShape)
			if err != nil {
				return nil, err
			}
			globalPool(stopOf(ctx), graph.Data[float64](x), graph.Data[float64](out), planes, size, isMax)
			return ctx.Outputs(out), nil
		case graph.Float16, graph.BFloat16:
			y := make([]float32, planes)
			globalPool(stopOf(ctx), graph.Data[float32](kernels.ToFloat32(x)), y, planes, size, isMax)
			out, err := kernels.FromFloat32(ctx, x.DType, outShape, y)
			if err != nil {
				return nil, err
			}
			return ctx.Outputs(out), nil
		}
		return nil, kernels.Unsupportedf(n, "dtype %v", x.DType)
	}
}

// globalPool reduces each plane to its mean or its maximum (NaN propagates
// in both).
func globalPool[T float32 | float64](st stop, x, y []T, planes, size int, isMax bool) {
	parallelRange(st, planes, workers(), max(1, 16384/max(1, size)), func(lo, hi int) {
		for pl := lo; pl < hi; pl++ {
			xp := x[pl*size : (pl+1)*size]
			if isMax {
				m := xp[0]
				for _, v := range xp {
					if v > m || v != v {
						m = v
						if v != v {
							break
						}
					}
				}
				y[pl] = m
				continue
			}
			var s T
			for _, v := range xp {
				s += v
			}
			y[pl] = s / T(size)
		}
	})
}
