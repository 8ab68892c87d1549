package elementwise

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// builder returns the element functions for one node (reading its
// attributes), or an error for invalid attributes.
type builder func(n *graph.Node, opset int64) (fns, error)

func unaryKernel(b builder) kernels.Func {
	return func(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		var opset int64 = kernels.MaxKnownOpset
		if ctx != nil && ctx.Opset > 0 {
			opset = ctx.Opset
		}
		fs, err := b(n, opset)
		if err != nil {
			return nil, err
		}
		out, err := apply(ctx, n, kernels.Input(in, 0), fs)
		if err != nil {
			return nil, err
		}
		return ctx.Outputs(out), nil
	}
}

// float-only op with a fixed function
func fixed(f func(float64) float64) builder {
	return func(*graph.Node, int64) (fns, error) { return fns{f: f}, nil }
}

func absI(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

func signF(v float64) float64 {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return v // ±0 and NaN
}

func signI(v int64) int64 {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

func reluF(v float64) float64 {
	if v < 0 {
		return 0
	}
	return v
}

func sigmoid(v float64) float64 {
	if v >= 0 {
		return 1 / (1 + math.Exp(-v))
	}
	e := math.Exp(v)
	return e / (1 + e)
}

// softplus is log(1+exp(x)) computed without overflow.
func softplus(v float64) float64 {
	return math.Max(v, 0) + math.Log1p(math.Exp(-math.Abs(v)))
}

func softsign(v float64) float64 {
	if math.IsInf(v, 0) {
		return math.Copysign(1, v)
	}
	return v / (1 + math.Abs(v))
}

func mish(v float64) float64 {
	if math.IsInf(v, -1) {
		return 0 // limit of x*tanh(softplus(x)); the formula gives -Inf*0
	}
	return v * math.Tanh(softplus(v))
}

// clamp01 limits v to [0,1]; NaN stays NaN.
func clamp01(v float64) float64 {
	if v < 0 {
		return 0
	}
	if v > 1 {
		return 1
	}
	return v
}

func attrF(n *graph.Node, name string, def float32) float64 {
	return float64(n.AttrFloat(name, def))
}

func init() {
	kernels.RegisterKernel("", "Abs", unaryKernel(func(*graph.Node, int64) (fns, error) {
		return fns{f: math.Abs, i: absI, u: func(v uint64) uint64 { return v }}, nil
	}))
	kernels.RegisterKernel("", "Neg", unaryKernel(func(*graph.Node, int64) (fns, error) {
		return fns{f: func(v float64) float64 { return -v }, i: func(v int64) int64 { return -v }}, nil
	}))
	kernels.RegisterKernel("", "Sign", unaryKernel(func(*graph.Node, int64) (fns, error) {
		return fns{f: signF, i: signI, u: func(v uint64) uint64 {
			if v > 0 {
				return 1
			}
			return 0
		}}, nil
	}))
	kernels.RegisterKernel("", "Exp", unaryKernel(fixed(math.Exp)))
	kernels.RegisterKernel("", "Log", unaryKernel(fixed(math.Log)))
	kernels.RegisterKernel("", "Sqrt", unaryKernel(fixed(math.Sqrt)))
	kernels.RegisterKernel("", "Reciprocal", unaryKernel(fixed(func(v float64) float64 { return 1 / v })))
	kernels.RegisterKernel("", "Floor", unaryKernel(fixed(math.Floor)))
	kernels.RegisterKernel("", "Ceil", unaryKernel(fixed(math.Ceil)))
	kernels.RegisterKernel("", "Round", unaryKernel(fixed(math.RoundToEven)))
	kernels.RegisterKernel("", "Sin", unaryKernel(fixed(math.Sin)))
	kernels.RegisterKernel("", "Cos", unaryKernel(fixed(math.Cos)))
	kernels.RegisterKernel("", "Tan", unaryKernel(fixed(math.Tan)))
	kernels.RegisterKernel("", "Asin", unaryKernel(fixed(math.Asin)))
	kernels.RegisterKernel("", "Acos", unaryKernel(fixed(math.Acos)))
	kernels.RegisterKernel("", "Atan", unaryKernel(fixed(math.Atan)))
	kernels.RegisterKernel("", "Sinh", unaryKernel(fixed(math.Sinh)))
	kernels.RegisterKernel("", "Cosh", unaryKernel(fixed(math.Cosh)))
	kernels.RegisterKernel("", "Asinh", unaryKernel(fixed(math.Asinh)))
	kernels.RegisterKernel("", "Acosh", unaryKernel(fixed(math.Acosh)))
	kernels.RegisterKernel("", "Atanh", unaryKernel(fixed(math.Atanh)))
	kernels.RegisterKernel("", "Tanh", unaryKernel(fixed(math.Tanh)))
	kernels.RegisterKernel("", "Sigmoid", unaryKernel(fixed(sigmoid)))
	kernels.RegisterKernel("", "Softplus", unaryKernel(fixed(softplus)))
	kernels.RegisterKernel("", "Softsign", unaryKernel(fixed(softsign)))
	kernels.RegisterKernel("", "Mish", unaryKernel(fixed(mish)))
	kernels.RegisterKernel("", "Erf", unaryKernel(func(*graph.Node, int64) (fns, error) {
		return fns{
			f: math.Erf,
			i: func(v int64) int64 { return int64(math.Erf(float64(v))) },
			u: func(v uint64) uint64 { return uint64(math.Erf(float64(v))) },
		}, nil
	}))
	kernels.RegisterKernel("", "Not", unaryKernel(func(*graph.Node, int64) (fns, error) {
		return fns{b: func(v bool) bool { return !v }}, nil
	}))
	kernels.RegisterKernel("", "Relu", unaryKernel(func(*graph.Node, int64) (fns, error) {
		return fns{f: reluF, i: func(v int64) int64 { return max(v, 0) }}, nil
	}))
	kernels.RegisterKernel("", "LeakyRelu", unaryKernel(func(n *graph.Node, _ int64) (fns, error) {
		alpha := attrF(n, "alpha", 0.01)
		return fns{f: func(v float64) float64 {
			if v < 0 {
				return alpha * v
			}
			return v
		}}, nil
	}))
	kernels.RegisterKernel("", "Elu", unaryKernel(func(n *graph.Node, _ int64) (fns, error) {
		alpha := attrF(n, "alpha", 1)
		return fns{f: func(v float64) float64 {
			if v < 0 {
				return alpha * math.Expm1(v)
			}
			return v
		}}, nil
	}))
	kernels.RegisterKernel("", "Selu", unaryKernel(func(n *graph.Node, opset int64) (fns, error) {
		da, dg := float32(1.67326319217681884765625), float32(1.05070102214813232421875)
		if opset < 6 {
			da, dg = 1.6732, 1.0507
		}
		alpha, gamma := attrF(n, "alpha", da), attrF(n, "gamma", dg)
		return fns{f: func(v float64) float64 {
			if v > 0 {
				return gamma * v
			}
			return gamma * alpha * math.Expm1(v)
		}}, nil
	}))
	kernels.RegisterKernel("", "Celu", unaryKernel(func(n *graph.Node, _ int64) (fns, error) {
		alpha := attrF(n, "alpha", 1)
		if alpha == 0 {
			return fns{}, kernels.Invalidf(n, "alpha must be non-zero")
		}
		return fns{f: func(v float64) float64 {
			return math.Max(0, v) + math.Min(0, alpha*math.Expm1(v/alpha))
		}}, nil
	}))
	kernels.RegisterKernel("", "HardSigmoid", unaryKernel(func(n *graph.Node, _ int64) (fns, error) {
		alpha, beta := attrF(n, "alpha", 0.2), attrF(n, "beta", 0.5)
		return fns{f: func(v float64) float64 { return clamp01(alpha*v + beta) }}, nil
	}))
	kernels.RegisterKernel("", "HardSwish", unaryKernel(func(*graph.Node, int64) (fns, error) {
		return fns{f: func(v float64) float64 {
			h := clamp01(v/6 + 0.5)
			if h == 0 {
				return 0 // also the limit at -Inf, where v*h is NaN
			}
			return v * h
		}}, nil
	}))
	kernels.RegisterKernel("", "ThresholdedRelu", unaryKernel(func(n *graph.Node, _ int64) (fns, error) {
		alpha := attrF(n, "alpha", 1)
		return fns{f: func(v float64) float64 {
			if v > alpha {
				return v
			}
			return 0
		}}, nil
	}))
	kernels.RegisterKernel("", "Gelu", unaryKernel(func(n *graph.Node, _ int64) (fns, error) {
		switch a := n.AttrString("approximate", "none"); a {
		case "none":
			return fns{f: func(v float64) float64 {
				if math.IsInf(v, -1) {
					return 0
				}
				// 0.5*x*(1+erf(x/√2)), with erfc avoiding cancellation for x<0
				return 0.5 * v * math.Erfc(-v/math.Sqrt2)
			}}, nil
		case "tanh":
			k := math.Sqrt(2 / math.Pi)
			return fns{f: func(v float64) float64 {
				if math.IsInf(v, -1) {
					return 0
				}
				return 0.5 * v * (1 + math.Tanh(k*(v+0.044715*v*v*v)))
			}}, nil
		default:
			return fns{}, kernels.Invalidf(n, "approximate must be \"none\" or \"tanh\", got %q", a)
		}
	}))
	kernels.RegisterKernel("", "IsNaN", unaryKernel(func(*graph.Node, int64) (fns, error) {
		return fns{pred: math.IsNaN}, nil
	}))
	kernels.RegisterKernel("", "IsInf", unaryKernel(func(n *graph.Node, _ int64) (fns, error) {
		pos, neg := n.AttrInt("detect_positive", 1) != 0, n.AttrInt("detect_negative", 1) != 0
		return fns{pred: func(v float64) bool {
			return (pos && math.IsInf(v, 1)) || (neg && math.IsInf(v, -1))
		}}, nil
	}))
}
