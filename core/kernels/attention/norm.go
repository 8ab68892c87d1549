package attention

import (
	attentionops "github.com/switchyard-hal/switchyard/core/ops/attention"

	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/core/kernels/reduce"
)

func init() {
	kernels.RegisterKernel("", "RMSNormalization", rmsNormKernel)
	kernels.RegisterKernel("", "LpNormalization", lpNormKernel)
	kernels.RegisterKernel("", "MeanVarianceNormalization", mvnKernel)
}

// ---- RMSNormalization (opset 23) ----
//
// Y = X / sqrt(mean(X², axes axis..rank-1) + epsilon) * scale, with scale
// broadcast to X. The statistics are computed in float64 (at least the
// precision stash_type asks for).

func rmsNormKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x, scaleT := kernels.Input(in, 0), kernels.Input(in, 1)
	if err := kernels.CheckFloatInput(n, x, "X"); err != nil {
		return nil, err
	}
	if err := kernels.CheckFloatInput(n, scaleT, "scale"); err != nil {
		return nil, err
	}
	if st := graph.DType(n.AttrInt("stash_type", int64(graph.Float32))); !st.IsFloat() {
		return nil, kernels.Invalidf(n, "stash_type %d is not a float type", int64(st))
	}
	y, _, _, _, err := reduce.NormLastAxes(n, x, scaleT, nil, "scale", true)
	if err != nil {
		return nil, err
	}
	out, err := kernels.NewFromFloat64(ctx, n, x.DType, x.Shape, y)
	if err != nil {
		return nil, err
	}
	return ctx.Outputs(out), nil
}

// ---- LpNormalization (opsets 1, 22) ----
//
// y = x / ||x||_p along axis, p ∈ {1, 2}. A zero vector stays zero (as in
// ONNX Runtime) instead of becoming 0/0.

func lpNormKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := kernels.CheckFloatInput(n, x, "input"); err != nil {
		return nil, err
	}
	p := n.AttrInt("p", 2)
	if p != 1 && p != 2 {
		return nil, kernels.Invalidf(n, "p must be 1 or 2, got %d", p)
	}
	if x.Rank() == 0 {
		return nil, kernels.Invalidf(n, "input must have rank >= 1")
	}
	axis, err := kernels.NormAxis(n.AttrInt("axis", -1), x.Rank())
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	outer := kernels.Prod(x.Shape[:axis])
	m := x.Shape[axis]
	inner := kernels.Prod(x.Shape[axis+1:])
	xv := x.Float64s()
	y := make([]float64, len(xv))
	for o := 0; o < outer; o++ {
		for in := 0; in < inner; in++ {
			base := o*m*inner + in
			var norm float64
			for j := 0; j < m; j++ {
				v := xv[base+j*inner]
				if p == 1 {
					norm += math.Abs(v)
				} else {
					norm += v * v
				}
			}
			if p == 2 {
				norm = math.Sqrt(norm)
			}
			for j := 0; j < m; j++ {
				i := base + j*inner
				if norm == 0 {
					y[i] = 0
				} else {
					y[i] = xv[i] / norm
				}
			}
		}
	}
	out, err := kernels.NewFromFloat64(ctx, n, x.DType, x.Shape, y)
	if err != nil {
		return nil, err
	}
	return ctx.Outputs(out), nil
}

// ---- MeanVarianceNormalization (opsets 9, 13) ----
//
// Y = (X - E[X]) / (sqrt(E[(X - E[X])²]) + 1e-9), statistics over axes
// (default [0, 2, 3]). The variance is computed in two passes (the function
// body's E[X²] - E[X]² is the same quantity, less stable).

// mvnEpsilon is the function body's float32 constant 1e-9.
var mvnEpsilon = float64(float32(1e-9))

func mvnKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := kernels.CheckFloatInput(n, x, "X"); err != nil {
		return nil, err
	}
	red, err := attentionops.MvnAxes(n, x.Rank())
	if err != nil {
		return nil, err
	}
	// key[i] is the flat index of element i's group (its kept coordinates).
	rank := x.Rank()
	keptStride := make([]int, rank)
	groups := 1
	for d := rank - 1; d >= 0; d-- {
		if !red[d] {
			keptStride[d] = groups
			groups *= x.Shape[d]
		}
	}
	xv := x.Float64s()
	key := make([]int, len(xv))
	coord := make([]int, rank)
	cur := 0
	for i := range xv {
		key[i] = cur
		for d := rank - 1; d >= 0; d-- {
			coord[d]++
			cur += keptStride[d]
			if coord[d] < x.Shape[d] {
				break
			}
			cur -= keptStride[d] * coord[d]
			coord[d] = 0
		}
	}
	cnt := make([]float64, groups)
	mean := make([]float64, groups)
	for i, v := range xv {
		mean[key[i]] += v
		cnt[key[i]]++
	}
	for g := range mean {
		mean[g] /= cnt[g]
	}
	vr := make([]float64, groups)
	for i, v := range xv {
		d := v - mean[key[i]]
		vr[key[i]] += d * d
	}
	for g := range vr {
		vr[g] = math.Sqrt(vr[g]/cnt[g]) + mvnEpsilon
	}
	y := make([]float64, len(xv))
	for i, v := range xv {
		y[i] = (v - mean[key[i]]) / vr[key[i]]
	}
	out, err := kernels.NewFromFloat64(ctx, n, x.DType, x.Shape, y)
	if err != nil {
		return nil, err
	}
	return ctx.Outputs(out), nil
}
