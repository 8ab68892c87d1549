package rnn

import (
	"math"
	"strings"
)

// actKind enumerates the activation functions RNN, GRU and LSTM accept.
type actKind int

const (
	actSigmoid actKind = iota
	actTanh
	actRelu
	actAffine
	actLeakyRelu
	actThresholdedRelu
	actScaledTanh
	actHardSigmoid
	actElu
	actSoftsign
	actSoftplus
)

// activation is one resolved activation function with its parameters.
type activation struct {
	kind        actKind
	alpha, beta float64
}

// actInfo describes an activation: how many of activation_alpha and
// activation_beta it consumes, and their defaults (those of the
// corresponding ONNX operators).
type actInfo struct {
	kind             actKind
	nAlpha, nBeta    int
	defAlpha, defBet float64
}

var actTable = map[string]actInfo{
	"sigmoid":         {kind: actSigmoid},
	"tanh":            {kind: actTanh},
	"relu":            {kind: actRelu},
	"affine":          {kind: actAffine, nAlpha: 1, nBeta: 1, defAlpha: 1, defBet: 0},
	"leakyrelu":       {kind: actLeakyRelu, nAlpha: 1, defAlpha: 0.01},
	"thresholdedrelu": {kind: actThresholdedRelu, nAlpha: 1, defAlpha: 1},
	"scaledtanh":      {kind: actScaledTanh, nAlpha: 1, nBeta: 1, defAlpha: 1, defBet: 1},
	"hardsigmoid":     {kind: actHardSigmoid, nAlpha: 1, nBeta: 1, defAlpha: 0.2, defBet: 0.5},
	"elu":             {kind: actElu, nAlpha: 1, defAlpha: 1},
	"softsign":        {kind: actSoftsign},
	"softplus":        {kind: actSoftplus},
}

// resolveActivations maps activation names to functions. activation_alpha
// and activation_beta values are consumed, in order, by the functions that
// take them (the others take none); missing values use the defaults.
func resolveActivations(names []string, alphas, betas []float32) ([]activation, string) {
	out := make([]activation, len(names))
	ai, bi := 0, 0
	for i, name := range names {
		info, ok := actTable[strings.ToLower(name)]
		if !ok {
			return nil, name
		}
		a := activation{kind: info.kind, alpha: info.defAlpha, beta: info.defBet}
		if info.nAlpha > 0 && ai < len(alphas) {
			a.alpha = float64(alphas[ai])
			ai++
		}
		if info.nBeta > 0 && bi < len(betas) {
			a.beta = float64(betas[bi])
			bi++
		}
		out[i] = a
	}
	return out, ""
}

type float interface{ ~float32 | ~float64 }

// apply evaluates the activation in place over v.
func apply[T float](a activation, v []T) {
	switch a.kind {
	case actSigmoid:
		for i, x := range v {
			v[i] = T(sigmoid(float64(x)))
		}
	case actTanh:
		for i, x := range v {
			v[i] = T(math.Tanh(float64(x)))
		}
	case actRelu:
		for i, x := range v {
			if x < 0 {
				v[i] = 0
			}
		}
	case actAffine:
		for i, x := range v {
			v[i] = T(a.alpha*float64(x) + a.beta)
		}
	case actLeakyRelu:
		for i, x := range v {
			if x < 0 {
				v[i] = T(a.alpha * float64(x))
			}
		}
	case actThresholdedRelu:
		for i, x := range v {
			if !(float64(x) > a.alpha) && x == x {
				v[i] = 0
			}
		}
	case actScaledTanh:
		for i, x := range v {
			v[i] = T(a.alpha * math.Tanh(a.beta*float64(x)))
		}
	case actHardSigmoid:
		for i, x := range v {
			y := a.alpha*float64(x) + a.beta
			if y == y {
				y = math.Max(0, math.Min(1, y))
			}
			v[i] = T(y)
		}
	case actElu:
		for i, x := range v {
			if x < 0 {
				v[i] = T(a.alpha * math.Expm1(float64(x)))
			}
		}
	case actSoftsign:
		for i, x := range v {
			v[i] = T(float64(x) / (1 + math.Abs(float64(x))))
		}
	case actSoftplus:
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
