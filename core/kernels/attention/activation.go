package attention

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.RegisterKernel("", "Shrink", shrinkKernel)
	kernels.RegisterKernel("", "Swish", swishKernel)
	kernels.RegisterKernel("", "SwiGLU", swigluKernel)
}

// sigmoid is 1/(1+e^-x), computed without overflow for large |x|.
func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// swish is x·sigmoid(alpha·x).
func swish(x, alpha float64) float64 { return x * sigmoid(alpha*x) }

// ---- Swish (opset 24) ----

func swishKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := kernels.CheckFloatInput(n, x, "X"); err != nil {
		return nil, err
	}
	alpha := float64(n.AttrFloat("alpha", 1))
	xv := x.Float64s()
	for i, v := range xv {
		xv[i] = swish(v, alpha)
	}
	out, err := kernels.NewFromFloat64(ctx, n, x.DType, x.Shape, xv)
	if err != nil {
		return nil, err
	}
	return ctx.Outputs(out), nil
}

// ---- SwiGLU (opset 28): Y = Swish_alpha(A) * B, no broadcasting ----

func swigluKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	a, b := kernels.Input(in, 0), kernels.Input(in, 1)
	if err := kernels.CheckFloatInput(n, a, "A"); err != nil {
		return nil, err
	}
	if err := kernels.CheckFloatInput(n, b, "B"); err != nil {
		return nil, err
	}
	if a.DType != b.DType {
		return nil, kernels.Invalidf(n, "A is %v but B is %v", a.DType, b.DType)
	}
	if !graph.SameShape(a.Shape, b.Shape) {
		return nil, kernels.Invalidf(n, "A %v and B %v must have identical shapes", a.Shape, b.Shape)
	}
	alpha := float64(n.AttrFloat("alpha", 1))
	av, bv := a.Float64s(), b.Float64s()
	for i := range av {
		// The gate is rounded to the input type before the product, as the
		// function body (Swish then Mul) does.
		av[i] = roundTo(a.DType, swish(av[i], alpha)) * bv[i]
	}
	out, err := kernels.NewFromFloat64(ctx, n, a.DType, a.Shape, av)
	if err != nil {
		return nil, err
	}
	return ctx.Outputs(out), nil
}

// ---- Shrink (opset 9) ----

// shrinkKernel: y = x+bias if x < -lambd, x-bias if x > lambd, else 0.
// Comparisons are made in float64; integer results are truncated toward
// zero (exact integer arithmetic when bias is integral).
func shrinkKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := kernels.CheckInput(n, x, "input"); err != nil {
		return nil, err
	}
	if !x.DType.IsNumeric() {
		return nil, kernels.Unsupportedf(n, "dtype %v", x.DType)
	}
	lambd := float64(n.AttrFloat("lambd", 0.5))
	bias := float64(n.AttrFloat("bias", 0))
	out, err := ctx.New(x.DType, x.Shape)
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	if x.DType.IsFloat() {
		xv := x.Float64s()
		for i, v := range xv {
			xv[i] = shrinkF(v, lambd, bias)
		}
		kernels.StoreFloat64(out, xv)
		return ctx.Outputs(out), nil
	}
	switch d := x.Data.(type) {
	case []int8:
		shrinkInt(d, out.Data.([]int8), lambd, bias)
	case []int16:
		shrinkInt(d, out.Data.([]int16), lambd, bias)
	case []int32:
		shrinkInt(d, out.Data.([]int32), lambd, bias)
	case []int64:
		shrinkInt(d, out.Data.([]int64), lambd, bias)
	case []uint8:
		shrinkInt(d, out.Data.([]uint8), lambd, bias)
	case []uint16:
		shrinkInt(d, out.Data.([]uint16), lambd, bias)
	case []uint32:
		shrinkInt(d, out.Data.([]uint32), lambd, bias)
	case []uint64:
		shrinkInt(d, out.Data.([]uint64), lambd, bias)
	default:
		return nil, kernels.Unsupportedf(n, "dtype %v", x.DType)
	}
	return ctx.Outputs(out), nil
}

func shrinkF(v, lambd, bias float64) float64 {
	switch {
	case v < -lambd:
		return v + bias
	case v > lambd:
		return v - bias
	}
	if v != v {
		return v // NaN compares false both ways; propagate it
	}
	return 0
}

type intElem interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

func shrinkInt[T intElem](x, y []T, lambd, bias float64) {
	integral := bias == math.Trunc(bias) && math.Abs(bias) < 1<<53
	ib := int64(bias)
	for i, v := range x {
		fv := float64(v)
		var s float64 // sign of the shift: +1 adds bias, -1 subtracts it
		switch {
		case fv < -lambd:
			s = 1
		case fv > lambd:
			s = -1
		default:
			y[i] = 0
			continue
		}
		if integral {
			// two's-complement wrap, like numpy/ONNX Runtime integer math
			y[i] = v + T(int64(s)*ib)
			continue
		}
		r := math.Trunc(fv + s*bias)
		if r >= -(1<<63) && r < 1<<63 {
			y[i] = T(int64(r))
		} else {
			y[i] = 0
		}
	}
}
