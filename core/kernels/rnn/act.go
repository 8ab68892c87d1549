package rnn

import (
	rnnops "github.com/switchyard-hal/switchyard/core/ops/rnn"

	"math"
)

type float interface{ ~float32 | ~float64 }

// apply evaluates the activation in place over v.
func apply[T float](a rnnops.Activation, v []T) {
	switch a.Kind {
	case rnnops.ActSigmoid:
		for i, x := range v {
			v[i] = T(sigmoid(float64(x)))
		}
	case rnnops.ActTanh:
		for i, x := range v {
			v[i] = T(math.Tanh(float64(x)))
		}
	case rnnops.ActRelu:
		for i, x := range v {
			if x < 0 {
				v[i] = 0
			}
		}
	case rnnops.ActAffine:
		for i, x := range v {
			v[i] = T(a.Alpha*float64(x) + a.Beta)
		}
	case rnnops.ActLeakyRelu:
		for i, x := range v {
			if x < 0 {
				v[i] = T(a.Alpha * float64(x))
			}
		}
	case rnnops.ActThresholdedRelu:
		for i, x := range v {
			if !(float64(x) > a.Alpha) && x == x {
				v[i] = 0
			}
		}
	case rnnops.ActScaledTanh:
		for i, x := range v {
			v[i] = T(a.Alpha * math.Tanh(a.Beta*float64(x)))
		}
	case rnnops.ActHardSigmoid:
		for i, x := range v {
			y := a.Alpha*float64(x) + a.Beta
			if y == y {
				y = math.Max(0, math.Min(1, y))
			}
			v[i] = T(y)
		}
	case rnnops.ActElu:
		for i, x := range v {
			if x < 0 {
				v[i] = T(a.Alpha * math.Expm1(float64(x)))
			}
		}
	case rnnops.ActSoftsign:
		for i, x := range v {
			v[i] = T(float64(x) / (1 + math.Abs(float64(x))))
		}
	case rnnops.ActSoftplus:
		for i, x := range v {
			v[i] = T(softplus(float64(x)))
		}
	}
}

func sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// softplus is log(1+e^x), computed without overflow for large x.
func softplus(x float64) float64 {
	if x > 30 {
		return x + math.Log1p(math.Exp(-x))
	}
	return math.Log1p(math.Exp(x))
}
