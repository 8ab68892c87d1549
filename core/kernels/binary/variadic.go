package binary

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

const (
	varMax = iota
	varMin
	varSum
	varMean
)

// maxT/minT propagate NaN: if either operand is NaN the result is NaN.
func maxT[T graph.Numeric](a, b T) T {
	if a != a {
		return a
	}
	if b != b || b > a {
		return b
	}
	return a
}

func minT[T graph.Numeric](a, b T) T {
	if a != a {
		return a
	}
	if b != b || b < a {
		return b
	}
	return a
}

// fold broadcasts ins[0] into o (of shape out) and folds every further input
// into it with f.
func fold[T graph.Numeric](out []int, ins []*graph.Tensor, o []T, kind int) {
	spread(newPlan(out, ins[0].Shape), ins[0].Data.([]T), o)
	for _, t := range ins[1:] {
		p := newPlan(out, out, t.Shape)
		x := t.Data.([]T)
		switch kind {
		case varMax:
			loop2(p, o, x, o, maxT[T])
		case varMin:
			loop2(p, o, x, o, minT[T])
		default:
			if of, ok := any(o).([]float32); ok {
				fastF32(p, of, any(x).([]float32), of, Add32)
			} else {
				loop2(p, o, x, o, add[T])
			}
		}
	}
	if kind == varMean {
		k := T(len(ins))
		for i := range o {
			o[i] /= k
		}
	}
}

func variadicKernel(kind int) kernels.Func {
	return func(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		if len(in) == 0 {
			return nil, kernels.Invalidf(n, "needs at least one input")
		}
		if err := checkInputs(n, in, len(in)); err != nil {
			return nil, err
		}
		dt := in[0].DType
		shapes := make([][]int, len(in))
		for i, t := range in {
			if t.DType != dt {
				return nil, kernels.Invalidf(n, "input %d is %v, input 0 is %v", i, t.DType, dt)
			}
			shapes[i] = t.Shape
		}
		if !dt.IsNumeric() || (kind == varMean && !dt.IsFloat()) {
			return nil, kernels.Unsupportedf(n, "dtype %v", dt)
		}
		shape, err := kernels.BroadcastShapes(shapes...)
		if err != nil {
			return nil, kernels.Invalidf(n, "input shapes %v are not broadcast-compatible", shapes)
		}
		out, err := ctx.New(dt, shape)
		if err != nil {
			return nil, err
		}
		switch o := out.Data.(type) {
		case []float32:
			fold(shape, in, o, kind)
		case []float64:
			fold(shape, in, o, kind)
		case []graph.F16, []graph.BF16:
			f := make([]*graph.Tensor, len(in))
			for i, t := range in {
				f[i] = kernels.ToFloat32(t)
			}
			buf := make([]float32, out.Len())
			fold(shape, f, buf, kind)
			if d, ok := o.([]graph.F16); ok {
				for i, v := range buf {
					d[i] = graph.F16FromFloat32(v)
				}
			} else {
				d := o.([]graph.BF16)
				for i, v := range buf {
					d[i] = graph.BF16FromFloat32(v)
				}
			}
		case []int8:
			fold(shape, in, o, kind)
		case []int16:
			fold(shape, in, o, kind)
		case []int32:
			fold(shape, in, o, kind)
		case []int64:
			fold(shape, in, o, kind)
		case []uint8:
			fold(shape, in, o, kind)
		case []uint16:
			fold(shape, in, o, kind)
		case []uint32:
			fold(shape, in, o, kind)
		case []uint64:
			fold(shape, in, o, kind)
		default:
			return nil, kernels.Unsupportedf(n, "dtype %v", dt)
		}
		return ctx.Outputs(out), nil
	}
}

// ---- Where ----

func whereT[T any](p *plan, c []bool, x, y, o []T) {
	sc, sx, sy := p.inner[0], p.inner[1], p.inner[2]
	p.run(func(off []int, n int) {
		dst := o[off[0] : off[0]+n]
		ci, xi, yi := off[1], off[2], off[3]
		for i := range dst {
			if c[ci] {
				dst[i] = x[xi]
			} else {
				dst[i] = y[yi]
			}
			ci += sc
			xi += sx
			yi += sy
		}
	})
}

func whereKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	if err := checkInputs(n, in, 3); err != nil {
		return nil, err
	}
	c, x, y := in[0], in[1], in[2]
	if c.DType != graph.Bool {
		return nil, kernels.Invalidf(n, "condition must be bool, got %v", c.DType)
	}
	if x.DType != y.DType {
		return nil, kernels.Invalidf(n, "X is %v but Y is %v", x.DType, y.DType)
	}
	shape, err := kernels.BroadcastShapes(c.Shape, x.Shape, y.Shape)
	if err != nil {
		return nil, kernels.Invalidf(n, "shapes %v, %v, %v are not broadcast-compatible", c.Shape, x.Shape, y.Shape)
	}
	out, err := ctx.New(x.DType, shape)
	if err != nil {
		return nil, err
	}
	p := newPlan(shape, c.Shape, x.Shape, y.Shape)
	p.done = kernels.DoneOf(ctx)
	cd := c.Data.([]bool)
	switch o := out.Data.(type) {
	case []float32:
		whereT(p, cd, x.Data.([]float32), y.Data.([]float32), o)
	case []float64:
		whereT(p, cd, x.Data.([]float64), y.Data.([]float64), o)
	case []graph.F16:
		whereT(p, cd, x.Data.([]graph.F16), y.Data.([]graph.F16), o)
	case []graph.BF16:
		whereT(p, cd, x.Data.([]graph.BF16), y.Data.([]graph.BF16), o)
	case []int8:
		whereT(p, cd, x.Data.([]int8), y.Data.([]int8), o)
	case []int16:
		whereT(p, cd, x.Data.([]int16), y.Data.([]int16), o)
	case []int32:
		whereT(p, cd, x.Data.([]int32), y.Data.([]int32), o)
	case []int64:
		whereT(p, cd, x.Data.([]int64), y.Data.([]int64), o)
	case []uint8:
		whereT(p, cd, x.Data.([]uint8), y.Data.([]uint8), o)
	case []uint16:
		whereT(p, cd, x.Data.([]uint16), y.Data.([]uint16), o)
	case []uint32:
		whereT(p, cd, x.Data.([]uint32), y.Data.([]uint32), o)
	case []uint64:
		whereT(p, cd, x.Data.([]uint64), y.Data.([]uint64), o)
	case []bool:
		whereT(p, cd, x.Data.([]bool), y.Data.([]bool), o)
	case []string:
		whereT(p, cd, x.Data.([]string), y.Data.([]string), o)
	default:
		return nil, kernels.Unsupportedf(n, "dtype %v", x.DType)
	}
	return ctx.Outputs(out), nil
}

func init() {
	kernels.RegisterKernel("", "Max", variadicKernel(varMax))
	kernels.RegisterKernel("", "Min", variadicKernel(varMin))
	kernels.RegisterKernel("", "Sum", variadicKernel(varSum))
	kernels.RegisterKernel("", "Mean", variadicKernel(varMean))
	kernels.RegisterKernel("", "Where", whereKernel)
}
