package rnn

import (
	"strings"
)

// actKind enumerates the activation functions RNN, GRU and LSTM accept.
type actKind int

const (
	ActSigmoid actKind = iota
	ActTanh
	ActRelu
	ActAffine
	ActLeakyRelu
	ActThresholdedRelu
	ActScaledTanh
	ActHardSigmoid
	ActElu
	ActSoftsign
	ActSoftplus
)

// Activation is one resolved activation function with its parameters.
type Activation struct {
	Kind        actKind
	Alpha, Beta float64
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
	"sigmoid":         {kind: ActSigmoid},
	"tanh":            {kind: ActTanh},
	"relu":            {kind: ActRelu},
	"affine":          {kind: ActAffine, nAlpha: 1, nBeta: 1, defAlpha: 1, defBet: 0},
	"leakyrelu":       {kind: ActLeakyRelu, nAlpha: 1, defAlpha: 0.01},
	"thresholdedrelu": {kind: ActThresholdedRelu, nAlpha: 1, defAlpha: 1},
	"scaledtanh":      {kind: ActScaledTanh, nAlpha: 1, nBeta: 1, defAlpha: 1, defBet: 1},
	"hardsigmoid":     {kind: ActHardSigmoid, nAlpha: 1, nBeta: 1, defAlpha: 0.2, defBet: 0.5},
	"elu":             {kind: ActElu, nAlpha: 1, defAlpha: 1},
	"softsign":        {kind: ActSoftsign},
	"softplus":        {kind: ActSoftplus},
}

// resolveActivations maps activation names to functions. activation_alpha
// and activation_beta values are consumed, in order, by the functions that
// take them (the others take none); missing values use the defaults.
func resolveActivations(names []string, alphas, betas []float32) ([]Activation, string) {
	out := make([]Activation, len(names))
	ai, bi := 0, 0
	for i, name := range names {
		info, ok := actTable[strings.ToLower(name)]
		if !ok {
			return nil, name
		}
		a := Activation{Kind: info.kind, Alpha: info.defAlpha, Beta: info.defBet}
		if info.nAlpha > 0 && ai < len(alphas) {
			a.Alpha = float64(alphas[ai])
			ai++
		}
		if info.nBeta > 0 && bi < len(betas) {
			a.Beta = float64(betas[bi])
			bi++
		}
		out[i] = a
	}
	return out, ""
}
