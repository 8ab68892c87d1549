package quant

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	quantops "github.com/switchyard-hal/switchyard/core/ops/quant"
)

// lstm is TFLite's integer 8x8→16 LSTM (lstm_eval's EvalInteger8x8_16,
// written from its formulas): per step and gate g, with x and h the int8
// input and output state,
//
//	gate_g = sat16(sat16(rq(bx_g + W_g·x, mx_g)) + rq(bh_g + R_g·h, mh_g))
//
// where rq is MultiplyByQuantizedMultiplier with the multiplier of
// input scale × weight scale / 2^−12 (so gates are Q3.12), bx_g = bias_g −
// x_zp·ΣW_g and bh_g = −h_zp·ΣR_g fold the zero points into the biases,
// then i, f, o = logistic16(gate) and g = tanh16(gate) (Q0.15);
//
//	c = sat16(rdbypot(f·c, 15) + rdbypot(i·g, 30+cell_scale)), clipped
//	h = clamp8(rq(o · tanh16(c in Q(15+cell_scale)), m_h) + hidden_zp)
//
// with m_h = 2^−15·2^−15/hidden_scale. rdbypot results are truncated to
// int16 as TFLite's CwiseMul does. The hidden zero point is added, as
// TFLite and TFLite Micro do since 2022 (tensorflow PR 56493); TFLite 2.9
// and older subtracted it (the importer's TFLite29HiddenZeroPoint test
// hook reproduces that). The multipliers are computed in float32 as
// TFLite's Prepare does, then split by quantizeMultiplier.
func lstm(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x, xt, err := int8Input(n, in, 0, "x")
	if err != nil {
		return nil, err
	}
	xq, err := readParams(n, in, 1, 0, "x")
	if err != nil {
		return nil, err
	}
	W, wt, err := int8Input(n, in, 3, "W")
	if err != nil {
		return nil, err
	}
	R, rt, err := int8Input(n, in, 4, "R")
	if err != nil {
		return nil, err
	}
	if len(xt.Shape) != 3 || len(wt.Shape) != 3 || wt.Shape[0] != 4 || len(rt.Shape) != 3 || rt.Shape[0] != 4 {
		return nil, kernels.Invalidf(n, "x %v, W %v, R %v: need 3-D x and [4,N,·] weights", xt.Shape, wt.Shape, rt.Shape)
	}
	N, I := wt.Shape[1], wt.Shape[2]
	if rt.Shape[1] != N || rt.Shape[2] != N || xt.Shape[2] != I {
		return nil, kernels.Invalidf(n, "x %v, W %v, R %v do not fit together", xt.Shape, wt.Shape, rt.Shape)
	}
	wsT := kernels.Input(in, 5)
	ws, ok := []float32(nil), false
	if wsT != nil {
		ws, ok = wsT.Data.([]float32)
	}
	if !ok || len(ws) != 8 {
		return nil, kernels.Invalidf(n, "ws must be 8 float32 weight scales")
	}
	for _, s := range ws {
		if !(s > 0) || math.IsInf(float64(s), 0) {
			return nil, kernels.Invalidf(n, "weight scale %g must be positive and finite", s)
		}
	}
	bT := kernels.Input(in, 6)
	var bias []int32
	if bT != nil {
		bias, _ = bT.Data.([]int32)
	}
	if len(bias) != 4*N {
		return nil, kernels.Invalidf(n, "B must be int32 [4,%d]", N)
	}
	timeMajor := n.AttrInt("time_major", 0) != 0
	batch, T := xt.Shape[0], xt.Shape[1]
	if timeMajor {
		batch, T = T, batch
	}
	h0, h0t, err := int8Input(n, in, 7, "h0")
	if err != nil {
		return nil, err
	}
	hq, err := readParams(n, in, 8, 0, "h0")
	if err != nil {
		return nil, err
	}
	c0T := kernels.Input(in, 10)
	var c0 []int16
	if c0T != nil {
		c0, _ = c0T.Data.([]int16)
	}
	if len(h0) != batch*N || len(c0) != batch*N || h0t.Len() != batch*N {
		return nil, kernels.Invalidf(n, "h0 int8 and c0 int16 must hold [%d,%d]", batch, N)
	}
	cellScale := int(n.AttrInt("cell_scale", 0))
	if cellScale < -15 || cellScale > -9 {
		return nil, kernels.Unsupportedf(n, "cell_scale 2^%d (TFLite's integer LSTM needs −15..−9)", cellScale)
	}
	hiddenScale := n.AttrFloat("hidden_scale", 0)
	if !(hiddenScale > 0) || math.IsInf(float64(hiddenScale), 0) {
		return nil, kernels.Invalidf(n, "hidden_scale %g must be positive and finite", hiddenScale)
	}
	hiddenZP := int32(n.AttrInt("hidden_zero_point", 0))
	clip := int16(0)
	if cc := n.AttrFloat("cell_clip", 0); cc > 0 {
		clip = int16(min(max(cc/float32(math.Ldexp(1, cellScale)), -32768), 32767))
	}

	// Prepare: multipliers and zero-point-folded biases.
	const gateScale = float32(1.0 / 4096) // Q3.12
	var mx, mh [4]int32
	var sx, sh [4]int
	bx := make([]int32, 4*N)
	bh := make([]int32, 4*N)
	xz, hz := xq.z(0), hq.z(0)
	for g := 0; g < 4; g++ {
		mx[g], sx[g] = quantizeMultiplier(float64(float32(ws[g]*xq.s(0)) / gateScale))
		mh[g], sh[g] = quantizeMultiplier(float64(float32(ws[4+g]*hq.s(0)) / gateScale))
		for r := 0; r < N; r++ {
			row := g*N + r
			sw, sr := int32(0), int32(0)
			for _, v := range W[row*I : (row+1)*I] {
				sw += int32(v)
			}
			for _, v := range R[row*N : (row+1)*N] {
				sr += int32(v)
			}
			bx[row] = bias[row] - xz*sw
			bh[row] = -hz * sr
		}
	}
	mHidden, sHidden := quantizeMultiplier(float64(float32(math.Ldexp(1, -15) / float64(hiddenScale) * math.Ldexp(1, -15))))

	out, err := ctx.New(graph.Int8, []int{xt.Shape[0], xt.Shape[1], N})
	if err != nil {
		return nil, err
	}
	y := out.Data.([]int8)
	h := append([]int8(nil), h0...)
	c := append([]int16(nil), c0...)
	gates := make([]int16, 4*N)
	for t := 0; t < T; t++ {
		if ctx.Stopped() {
			return nil, ctx.Stop(n)
		}
		for b := 0; b < batch; b++ {
			xo := (b*T + t) * I // batch-major
			yo := (b*T + t) * N
			if timeMajor {
				xo, yo = (t*batch+b)*I, (t*batch+b)*N
			}
			xr, hr, cr := x[xo:xo+I], h[b*N:(b+1)*N], c[b*N:(b+1)*N]
			for g := 0; g < 4; g++ {
				for r := 0; r < N; r++ {
					row := g*N + r
					acc := bx[row]
					for k, w := range W[row*I : (row+1)*I] {
						acc += int32(w) * int32(xr[k])
					}
					v := min(max(mulByQuantizedMultiplier(acc, mx[g], sx[g]), math.MinInt16), math.MaxInt16)
					acc = bh[row]
					for k, w := range R[row*N : (row+1)*N] {
						acc += int32(w) * int32(hr[k])
					}
					v = min(max(mulByQuantizedMultiplier(acc, mh[g], sh[g])+v, math.MinInt16), math.MaxInt16)
					if g == 2 {
						gates[row] = tanh16(int16(v), 3)
					} else {
						gates[row] = logistic16(int16(v), 3)
					}
				}
			}
			for r := 0; r < N; r++ {
				ig, fg, gg, og := gates[r], gates[N+r], gates[2*N+r], gates[3*N+r]
				fc := int16(rdbypot(int32(fg)*int32(cr[r]), 15))
				ic := int16(rdbypot(int32(ig)*int32(gg), 30+cellScale))
				cv := int16(min(max(int32(fc)+int32(ic), math.MinInt16), math.MaxInt16))
				if clip > 0 {
					cv = max(min(cv, clip), -clip)
				}
				cr[r] = cv
				th := tanh16(cv, 15+cellScale)
				hv := mulByQuantizedMultiplier(int32(og)*int32(th), mHidden, sHidden) + hiddenZP
				hr[r] = int8(min(max(hv, -128), 127))
			}
			copy(y[yo:yo+N], hr)
		}
	}
	return ctx.Outputs(out), nil
}

func init() {
	kernels.RegisterKernel(quantops.Domain, "LSTM", lstm)
}
