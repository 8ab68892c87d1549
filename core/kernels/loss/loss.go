package loss

import (
	lossops "github.com/switchyard-hal/switchyard/core/ops/loss"

	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// NegativeLogLikelihoodLoss (opset 12, 13, 22) and SoftmaxCrossEntropyLoss
// (opset 12, 13) share the same semantics across their versions; later
// versions only widened the accepted types. Both take an input of shape
// [N, C, d1..dk] (k >= 0), a target/labels tensor of shape [N, d1..dk] with
// int32/int64 class indices, an optional weight of shape [C], and the
// attributes reduction ("none" | "sum" | "mean", default "mean") and
// ignore_index (optional).
//
// For every position j of the target, with class c = target[j]:
//
//	loss[j] = -input[n, c, d] * w[c]      (w[c] = 1 without weight)
//	loss[j] = 0 and w = 0                  when c == ignore_index
//
// reduction "none" returns loss with the target's shape; "sum" returns the
// scalar sum; "mean" returns sum(loss) / sum(w over non-ignored positions)
// (0/0 = NaN when every position is ignored or there are none).
// SoftmaxCrossEntropyLoss applies this to log_prob = LogSoftmax(scores,
// axis=1) and optionally also returns log_prob.

func init() {
	kernels.RegisterKernel("", "NegativeLogLikelihoodLoss", nllKernel)
	kernels.RegisterKernel("", "SoftmaxCrossEntropyLoss", sceKernel)
}

// params is the validated layout of a loss node's inputs.
type params struct {
	red       lossops.Reduction
	hasIgnore bool
	ignore    int64
	n, c, d   int // input viewed as [n, c, d] with d = d1*...*dk
	target    []int64
	weight    []float64 // nil when absent
}

func validate(n *graph.Node, in []*graph.Tensor) (*params, error) {
	p := &params{}
	var err error
	if p.red, err = lossops.ParseReduction(n); err != nil {
		return nil, err
	}
	if a := n.Attr("ignore_index"); a != nil {
		if a.Type != graph.AttrInt {
			return nil, kernels.Invalidf(n, "ignore_index must be an int attribute, got %v", a.Type)
		}
		p.hasIgnore, p.ignore = true, a.I
	}
	x := kernels.Input(in, 0)
	t := kernels.Input(in, 1)
	if x == nil || t == nil {
		return nil, kernels.Invalidf(n, "input and target are required")
	}
	if !x.DType.IsFloat() {
		return nil, kernels.Invalidf(n, "input must be a float tensor, got %v", x.DType)
	}
	if t.DType != graph.Int32 && t.DType != graph.Int64 {
		return nil, kernels.Invalidf(n, "target must be int32 or int64, got %v", t.DType)
	}
	if len(x.Shape) < 2 {
		return nil, kernels.Invalidf(n, "input must have rank >= 2 ([N, C, d1..dk]), got shape %v", x.Shape)
	}
	if len(t.Shape) != len(x.Shape)-1 || t.Shape[0] != x.Shape[0] || !graph.SameShape(t.Shape[1:], x.Shape[2:]) {
		return nil, kernels.Invalidf(n, "target shape %v does not match input shape %v (want [N, d1..dk])", t.Shape, x.Shape)
	}
	p.n, p.c, p.d = x.Shape[0], x.Shape[1], kernels.Prod(x.Shape[2:])
	p.target = t.Int64s()
	if w := kernels.Input(in, 2); w != nil {
		if w.DType != x.DType {
			return nil, kernels.Invalidf(n, "weight dtype %v differs from input dtype %v", w.DType, x.DType)
		}
		if len(w.Shape) != 1 || w.Shape[0] != p.c {
			return nil, kernels.Invalidf(n, "weight shape %v, want [%d]", w.Shape, p.c)
		}
		p.weight = w.Float64s()
	}
	for i, c := range p.target {
		if p.hasIgnore && c == p.ignore {
			continue
		}
		if c < 0 || c >= int64(p.c) {
			return nil, kernels.Invalidf(n, "target[%d] = %d is out of range [0, %d)", i, c, p.c)
		}
	}
	return p, nil
}

// compute applies the NLL formula to logp (input data as float64, layout
// [n, c, d]) and returns the output values and shape.
func (p *params) compute(logp []float64, targetShape []int) ([]float64, []int) {
	m := p.n * p.d
	loss := make([]float64, m)
	var sum, wsum float64
	for i := 0; i < p.n; i++ {
		for j := 0; j < p.d; j++ {
			k := i*p.d + j
			c := p.target[k]
			if p.hasIgnore && c == p.ignore {
				continue // loss 0, weight 0
			}
			w := 1.0
			if p.weight != nil {
				w = p.weight[c]
			}
			l := -logp[(i*p.c+int(c))*p.d+j] * w
			loss[k] = l
			sum += l
			wsum += w
		}
	}
	switch p.red {
	case lossops.RedSum:
		return []float64{sum}, []int{}
	case lossops.RedMean:
		return []float64{sum / wsum}, []int{}
	}
	return loss, append([]int{}, targetShape...)
}

func nllKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	p, err := validate(n, in)
	if err != nil {
		return nil, err
	}
	x, t := in[0], in[1]
	vals, shape := p.compute(x.Float64s(), t.Shape)
	out, err := kernels.NewFromFloat64(ctx, n, x.DType, shape, vals)
	if err != nil {
		return nil, err
	}
	return ctx.Outputs(out), nil
}

func sceKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	p, err := validate(n, in)
	if err != nil {
		return nil, err
	}
	x, t := in[0], in[1]
	logp := logSoftmaxAxis1(x.Float64s(), p.n, p.c, p.d)
	vals, shape := p.compute(logp, t.Shape)
	out, err := kernels.NewFromFloat64(ctx, n, x.DType, shape, vals)
	if err != nil {
		return nil, err
	}
	res := []*graph.Tensor{out}
	if len(n.Outputs) > 1 && n.Outputs[1] != "" {
		lp, err := kernels.NewFromFloat64(ctx, n, x.DType, x.Shape, logp)
		if err != nil {
			return nil, err
		}
		res = append(res, lp)
	} else if len(n.Outputs) > 1 {
		res = append(res, nil)
	}
	return res, nil
}

// logSoftmaxAxis1 computes log_softmax over the c axis of x laid out as
// [n, c, d], shifting by the slice maximum for stability. As in the ONNX
// reference (numpy), a NaN anywhere in a slice, a +Inf, or a slice of all
// -Inf makes the whole slice NaN (through exp(NaN) or exp(Inf-Inf)).
func logSoftmaxAxis1(x []float64, n, c, d int) []float64 {
	y := make([]float64, len(x))
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			base := i*c*d + j
			m := math.Inf(-1)
			for k := 0; k < c; k++ {
				if v := x[base+k*d]; v > m {
					m = v
				}
			}
			var s float64
			for k := 0; k < c; k++ {
				s += math.Exp(x[base+k*d] - m)
			}
			ls := math.Log(s)
			for k := 0; k < c; k++ {
				y[base+k*d] = x[base+k*d] - m - ls
			}
		}
	}
	return y
}
