package binary

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

const (
	cmpEq = iota
	cmpLt
	cmpLe
	cmpGt
	cmpGe
)

type ordered interface {
	graph.Numeric | ~string
}

// cmpT compares elementwise; NaN compares unequal and unordered (IEEE).
func cmpT[T ordered](p *plan, a, b []T, o []bool, k int) {
	switch k {
	case cmpEq:
		loop2(p, a, b, o, func(x, y T) bool { return x == y })
	case cmpLt:
		loop2(p, a, b, o, func(x, y T) bool { return x < y })
	case cmpLe:
		loop2(p, a, b, o, func(x, y T) bool { return x <= y })
	case cmpGt:
		loop2(p, a, b, o, func(x, y T) bool { return x > y })
	case cmpGe:
		loop2(p, a, b, o, func(x, y T) bool { return x >= y })
	}
}

func compareKernel(k int, legacy bool) kernels.Func {
	return func(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		if err := checkInputs(n, in, 2); err != nil {
			return nil, err
		}
		a, b := in[0], in[1]
		if a.DType != b.DType {
			return nil, kernels.Invalidf(n, "input dtypes differ: %v and %v", a.DType, b.DType)
		}
		if (a.DType == graph.Bool || a.DType == graph.String) && k != cmpEq {
			return nil, kernels.Unsupportedf(n, "dtype %v", a.DType)
		}
		shape, p, err := binaryShapes(ctx, n, a.Shape, b.Shape, legacy)
		if err != nil {
			return nil, err
		}
		out, err := ctx.New(graph.Bool, shape)
		if err != nil {
			return nil, err
		}
		o := out.Data.([]bool)
		switch x := a.Data.(type) {
		case []float32:
			cmpT(p, x, b.Data.([]float32), o, k)
		case []float64:
			cmpT(p, x, b.Data.([]float64), o, k)
		case []graph.F16, []graph.BF16:
			cmpT(p, kernels.ToFloat32(a).Data.([]float32), kernels.ToFloat32(b).Data.([]float32), o, k)
		case []int8:
			cmpT(p, x, b.Data.([]int8), o, k)
		case []int16:
			cmpT(p, x, b.Data.([]int16), o, k)
		case []int32:
			cmpT(p, x, b.Data.([]int32), o, k)
		case []int64:
			cmpT(p, x, b.Data.([]int64), o, k)
		case []uint8:
			cmpT(p, x, b.Data.([]uint8), o, k)
		case []uint16:
			cmpT(p, x, b.Data.([]uint16), o, k)
		case []uint32:
			cmpT(p, x, b.Data.([]uint32), o, k)
		case []uint64:
			cmpT(p, x, b.Data.([]uint64), o, k)
		case []string:
			cmpT(p, x, b.Data.([]string), o, k)
		case []bool:
			loop2(p, x, b.Data.([]bool), o, func(u, v bool) bool { return u == v })
		default:
			return nil, kernels.Unsupportedf(n, "dtype %v", a.DType)
		}
		return ctx.Outputs(out), nil
	}
}

func logicKernel(f func(a, b bool) bool) kernels.Func {
	return func(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		if err := checkInputs(n, in, 2); err != nil {
			return nil, err
		}
		a, b := in[0], in[1]
		if a.DType != graph.Bool || b.DType != graph.Bool {
			return nil, kernels.Invalidf(n, "inputs must be bool, got %v and %v", a.DType, b.DType)
		}
		shape, p, err := binaryShapes(ctx, n, a.Shape, b.Shape, true)
		if err != nil {
			return nil, err
		}
		out, err := ctx.New(graph.Bool, shape)
		if err != nil {
			return nil, err
		}
		loop2(p, a.Data.([]bool), b.Data.([]bool), out.Data.([]bool), f)
		return ctx.Outputs(out), nil
	}
}

func init() {
	kernels.RegisterKernel("", "Equal", compareKernel(cmpEq, true))
	kernels.RegisterKernel("", "Less", compareKernel(cmpLt, true))
	kernels.RegisterKernel("", "Greater", compareKernel(cmpGt, true))
	kernels.RegisterKernel("", "LessOrEqual", compareKernel(cmpLe, false))
	kernels.RegisterKernel("", "GreaterOrEqual", compareKernel(cmpGe, false))
	kernels.RegisterKernel("", "And", logicKernel(func(a, b bool) bool { return a && b }))
	kernels.RegisterKernel("", "Or", logicKernel(func(a, b bool) bool { return a || b }))
	kernels.RegisterKernel("", "Xor", logicKernel(func(a, b bool) bool { return a != b }))
}
