package contrib

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/core/ops/contrib"
)

func init() {
	kernels.RegisterKernel(contrib.Domain, "FastGelu", geluKernel(true))
	kernels.RegisterKernel(contrib.Domain, "BiasGelu", geluKernel(false))
	kernels.RegisterKernel(contrib.Domain, "Gelu", geluKernel(false))
}

// ---- FastGelu, BiasGelu, Gelu (com.microsoft) ----
//
// x = X + bias (bias 1-D, the size of X's last dim, optional for FastGelu,
// absent for Gelu), then
//
//	Gelu, BiasGelu: y = x·(1 + erf(x/√2))/2
//	FastGelu:       y = x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))/2

func geluKernel(tanhForm bool) kernels.Func {
	return func(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		x, bias := kernels.Input(in, 0), kernels.Input(in, 1)
		if err := kernels.CheckFloatInput(n, x, "X"); err != nil {
			return nil, err
		}
		if err := checkOptFloat(n, bias, "bias"); err != nil {
			return nil, err
		}
		if n.OpType == "BiasGelu" && bias == nil {
			return nil, kernels.Invalidf(n, "missing input bias")
		}
		xv := x.Float64s()
		if bias != nil {
			if x.Rank() == 0 || bias.Rank() != 1 || bias.Shape[0] != x.Shape[x.Rank()-1] {
				return nil, kernels.Invalidf(n, "bias has shape %v, want [%d] (X's last dim)", bias.Shape, lastDim(x))
			}
			bv := bias.Float64s()
			for i := range xv {
				xv[i] += bv[i%len(bv)]
			}
		}
		const c = 0.7978845608028654 // √(2/π)
		for i, v := range xv {
			if tanhForm {
				xv[i] = 0.5 * v * (1 + math.Tanh(c*(v+0.044715*v*v*v)))
			} else {
				xv[i] = 0.5 * v * (1 + math.Erf(v/math.Sqrt2))
			}
		}
		out, err := kernels.NewFromFloat64(ctx, n, x.DType, x.Shape, xv)
		if err != nil {
			return nil, err
		}
		return ctx.Outputs(out), nil
	}
}

func lastDim(t *graph.Tensor) int {
	if t.Rank() == 0 {
		return 1
	}
	return t.Shape[t.Rank()-1]
}
