package elementwise

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// Clip is Min(max, Max(input, min)); NaN in the input or a bound propagates,
// and a bound that is not given does not clip (as the ONNX reference
// implementation and Clip's function body do).
func init() {
	kernels.RegisterKernel("", "Clip", clipKernel)
}

func fmaxNaN(a, b float64) float64 {
	if a != a || b != b {
		return math.NaN()
	}
	return math.Max(a, b)
}

func fminNaN(a, b float64) float64 {
	if a != a || b != b {
		return math.NaN()
	}
	return math.Min(a, b)
}

func clipKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	var opset int64 = kernels.MaxKnownOpset
	if ctx != nil && ctx.Opset > 0 {
		opset = ctx.Opset
	}
	x := kernels.Input(in, 0)
	if x == nil {
		return nil, kernels.Invalidf(n, "missing input 0")
	}
	lo, hi := math.Inf(-1), math.Inf(1)
	if opset < 11 {
		for i := 1; i < len(in); i++ {
			if in[i] != nil {
				return nil, kernels.Invalidf(n, "Clip-%d takes min/max as attributes, not inputs", opset)
			}
		}
		if !x.DType.IsFloat() {
			return nil, kernels.Unsupportedf(n, "dtype %v needs opset >= 12", x.DType)
		}
		if opset >= 6 {
			// Clip-6 documents these float32 defaults.
			lo, hi = float64(float32(-3.402823e+38)), float64(float32(3.402823e+38))
		}
		lo, hi = attrF(n, "min", float32(lo)), attrF(n, "max", float32(hi))
		out, err := apply(ctx, n, x, fns{f: func(v float64) float64 { return fminNaN(fmaxNaN(v, lo), hi) }})
		if err != nil {
			return nil, err
		}
		return ctx.Outputs(out), nil
	}
	bounds := [2]*graph.Tensor{kernels.Input(in, 1), kernels.Input(in, 2)}
	for i, b := range bounds {
		if b == nil {
			continue
		}
		if b.DType != x.DType {
			return nil, kernels.Invalidf(n, "input %d has dtype %v, input 0 has %v", i+1, b.DType, x.DType)
		}
		if err := b.Check(); err != nil {
			return nil, kernels.Invalidf(n, "input %d: %v", i+1, err)
		}
		if b.Len() != 1 {
			return nil, kernels.Invalidf(n, "input %d must be a scalar, got shape %v", i+1, b.Shape)
		}
	}
	var fs fns
	switch {
	case x.DType.IsFloat():
		if bounds[0] != nil {
			lo = bounds[0].Float64At(0)
		}
		if bounds[1] != nil {
			hi = bounds[1].Float64At(0)
		}
		fs.f = func(v float64) float64 { return fminNaN(fmaxNaN(v, lo), hi) }
	case x.DType.IsInteger() && x.DType.IsSigned():
		ilo, ihi := int64(math.MinInt64), int64(math.MaxInt64)
		if bounds[0] != nil {
			ilo = bounds[0].Int64At(0)
		}
		if bounds[1] != nil {
			ihi = bounds[1].Int64At(0)
		}
		fs.i = func(v int64) int64 { return min(max(v, ilo), ihi) }
	case x.DType.IsInteger():
		ulo, uhi := uint64(0), uint64(math.MaxUint64)
		if bounds[0] != nil {
			ulo = uint64(bounds[0].Int64At(0)) // uint64 bounds round-trip through int64 bits
		}
		if bounds[1] != nil {
			uhi = uint64(bounds[1].Int64At(0))
		}
		fs.u = func(v uint64) uint64 { return min(max(v, ulo), uhi) }
	default:
		return nil, kernels.Unsupportedf(n, "dtype %v", x.DType)
	}
	out, err := apply(ctx, n, x, fs)
	if err != nil {
		return nil, err
	}
	return ctx.Outputs(out), nil
}
