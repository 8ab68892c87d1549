package nn

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.RegisterKernel("", "LRN", lrnKernel)
}

// lrnKernel: y = x / (bias + alpha/size · Σ x²)^beta, the sum running over
// channels c-⌊(size-1)/2⌋ … c+⌈(size-1)/2⌉ clipped to the tensor.
func lrnKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	return stopped(ctx, n)(lrnRun(ctx, n, in))
}

func lrnRun(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if x == nil {
		return nil, kernels.Invalidf(n, "LRN needs input X")
	}
	if len(x.Shape) < 2 {
		return nil, kernels.Invalidf(n, "X must have rank >= 2, got shape %v", x.Shape)
	}
	size := n.AttrInt("size", 0)
	if !n.HasAttr("size") || size < 1 {
		return nil, kernels.Invalidf(n, "size must be a positive integer")
	}
	alpha := float64(n.AttrFloat("alpha", 1e-4))
	beta := float64(n.AttrFloat("beta", 0.75))
	bias := float64(n.AttrFloat("bias", 1))
	N, C := x.Shape[0], x.Shape[1]
	S := kernels.Prod(x.Shape[2:])
	before := int((size - 1) / 2)
	after := int(size-1) - before
	scale := alpha / float64(size)
	run := func(xs []float64, ys []float64) {
		parallelRange(stopOf(ctx), N*S, workers(), 256, func(lo, hi int) {
			for t := lo; t < hi; t++ {
				b, s := t/S, t%S
				base := b*C*S + s
				for c := 0; c < C; c++ {
					var sum float64
					for cc := max(0, c-before); cc <= min(C-1, c+after); cc++ {
						v := xs[base+cc*S]
						sum += v * v
					}
					ys[base+c*S] = xs[base+c*S] / math.Pow(bias+scale*sum, beta)
				}
			}
		})
	}
	if x.DType == graph.Float64 {
		out, err := ctx.New(graph.Float64, x.Shape)
		if err != nil {
			return nil, err
		}
		run(graph.Data[float64](x), graph.Data[float64](out))
		return ctx.Outputs(out), nil
	}
	if !x.DType.IsFloat() {
		return nil, kernels.Unsupportedf(n, "dtype %v", x.DType)
	}
	xf := graph.Data[float32](kernels.ToFloat32(x))
	xs := make([]float64, len(xf))
	for i, v := range xf {
		xs[i] = float64(v)
	}
	ys := make([]float64, len(xs))
	run(xs, ys)
	yf := make([]float32, len(ys))
	for i, v := range ys {
		yf[i] = float32(v)
	}
	out, err := kernels.FromFloat32(ctx, x.DType, x.Shape, yf)
	if err != nil {
		return nil, err
	}
	return ctx.Outputs(out), nil
}
