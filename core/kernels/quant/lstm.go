package quant

import (
	"math"
	"sync"

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
	p, err := PrepareLSTM(n, in)
	if err != nil {
		return nil, err
	}
	return p.Run(ctx, n, in, nil)
}

// LSTMPlan is an integer LSTM node prepared from its weights, biases and
// quantisation parameters (Prepare's work: the multipliers and the
// zero-point-folded biases), so that a backend holding them constant
// prepares once and runs many times, bit-identical to the reference
// kernel (which prepares on every call).
type LSTMPlan struct {
	// N is the hidden size, I the input size; W is [4N, I] and R [4N, N]
	// (gate rows input, forget, cell, output), row-major.
	N, I int
	W, R []int8

	mx, mh    [4]int32
	sx, sh    [4]int
	bx, bh    []int32
	cellScale int
	clip      int16
	mHidden   int32
	sHidden   int
	hiddenZP  int32
	timeMajor bool

	// sigmoid, tanhG and tanhC, when set (UseTables), are logistic16 and
	// tanh16 of the gates (3 integer bits) and tanh16 of the cell state,
	// tabulated over every int16
	sigmoid, tanhG, tanhC []int16
}

// fn16Tables caches the tabulated 16-bit functions, by kind and integer
// bits.
var fn16Tables struct {
	sync.Mutex
	m map[[2]int][]int16
}

// fn16Table returns f(·, intBits) for every int16 x at index uint16(x),
// computed once per process.
func fn16Table(kind int, f func(int16, int) int16, intBits int) []int16 {
	fn16Tables.Lock()
	defer fn16Tables.Unlock()
	key := [2]int{kind, intBits}
	if t := fn16Tables.m[key]; t != nil {
		return t
	}
	t := make([]int16, 1<<16)
	for i := range t {
		t[i] = f(int16(uint16(i)), intBits)
	}
	if fn16Tables.m == nil {
		fn16Tables.m = map[[2]int][]int16{}
	}
	fn16Tables.m[key] = t
	return t
}

// UseTables makes Run look the gates' and the cell's logistic and tanh up
// in tables of every int16 value (128 KiB each, shared by all plans,
// computed once per process) instead of evaluating the fixed-point
// series: the same values, at a fraction of the time.
func (p *LSTMPlan) UseTables() {
	p.sigmoid = fn16Table(0, logistic16, 3)
	p.tanhG = fn16Table(1, tanh16, 3)
	p.tanhC = fn16Table(1, tanh16, 15+p.cellScale)
}

// LSTMMatVec adds M·v to acc, M being the plan's W (which 0, v of I
// values) or R (which 1, v of N values): acc[r] += Σ_j M[r,j]·v[j] for
// the 4N rows. The sums fit int32 for any int8 M and v of up to 2^17
// columns.
type LSTMMatVec func(which int, v []int8, acc []int32)

// PrepareLSTM checks the node's inputs (in, as the kernel gets them) and
// prepares the plan from W, R, the weight scales, the bias and the
// scales and zero points of x and h0.
func PrepareLSTM(n *graph.Node, in []*graph.Tensor) (*LSTMPlan, error) {
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
	if len(wt.Shape) != 3 || wt.Shape[0] != 4 || len(rt.Shape) != 3 || rt.Shape[0] != 4 {
		return nil, kernels.Invalidf(n, "W %v, R %v: need [4,N,·] weights", wt.Shape, rt.Shape)
	}
	N, I := wt.Shape[1], wt.Shape[2]
	if rt.Shape[1] != N || rt.Shape[2] != N {
		return nil, kernels.Invalidf(n, "W %v, R %v do not fit together", wt.Shape, rt.Shape)
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
	hq, err := readParams(n, in, 8, 0, "h0")
	if err != nil {
		return nil, err
	}
	p := &LSTMPlan{N: N, I: I, W: W, R: R, timeMajor: n.AttrInt("time_major", 0) != 0}
	p.cellScale = int(n.AttrInt("cell_scale", 0))
	if p.cellScale < -15 || p.cellScale > -9 {
		return nil, kernels.Unsupportedf(n, "cell_scale 2^%d (TFLite's integer LSTM needs −15..−9)", p.cellScale)
	}
	hiddenScale := n.AttrFloat("hidden_scale", 0)
	if !(hiddenScale > 0) || math.IsInf(float64(hiddenScale), 0) {
		return nil, kernels.Invalidf(n, "hidden_scale %g must be positive and finite", hiddenScale)
	}
	p.hiddenZP = int32(n.AttrInt("hidden_zero_point", 0))
	if cc := n.AttrFloat("cell_clip", 0); cc > 0 {
		p.clip = int16(min(max(cc/float32(math.Ldexp(1, p.cellScale)), -32768), 32767))
	}

	// Prepare: multipliers and zero-point-folded biases.
	const gateScale = float32(1.0 / 4096) // Q3.12
	p.bx = make([]int32, 4*N)
	p.bh = make([]int32, 4*N)
	xz, hz := xq.z(0), hq.z(0)
	for g := 0; g < 4; g++ {
		p.mx[g], p.sx[g] = quantizeMultiplier(float64(float32(ws[g]*xq.s(0)) / gateScale))
		p.mh[g], p.sh[g] = quantizeMultiplier(float64(float32(ws[4+g]*hq.s(0)) / gateScale))
		for r := 0; r < N; r++ {
			row := g*N + r
			sw, sr := int32(0), int32(0)
			for _, v := range W[row*I : (row+1)*I] {
				sw += int32(v)
			}
			for _, v := range R[row*N : (row+1)*N] {
				sr += int32(v)
			}
			p.bx[row] = bias[row] - xz*sw
			p.bh[row] = -hz * sr
		}
	}
	p.mHidden, p.sHidden = quantizeMultiplier(float64(float32(math.Ldexp(1, -15) / float64(hiddenScale) * math.Ldexp(1, -15))))
	return p, nil
}

// matVec is LSTMMatVec in plain Go.
func (p *LSTMPlan) matVec(which int, v []int8, acc []int32) {
	m, k := p.W, p.I
	if which == 1 {
		m, k = p.R, p.N
	}
	for r := range acc {
		s := acc[r]
		for j, w := range m[r*k : (r+1)*k] {
			s += int32(w) * int32(v[j])
		}
		acc[r] = s
	}
}

// Run computes the node's output from in (x, h0 and c0 are read from it;
// the other inputs are those the plan was prepared from), with mv for
// the matrix-vector products (nil: plain Go).
func (p *LSTMPlan) Run(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor, mv LSTMMatVec) ([]*graph.Tensor, error) {
	if mv == nil {
		mv = p.matVec
	}
	N, I := p.N, p.I
	x, xt, err := int8Input(n, in, 0, "x")
	if err != nil {
		return nil, err
	}
	if len(xt.Shape) != 3 || xt.Shape[2] != I {
		return nil, kernels.Invalidf(n, "x %v: need 3-D x of %d features", xt.Shape, I)
	}
	batch, T := xt.Shape[0], xt.Shape[1]
	if p.timeMajor {
		batch, T = T, batch
	}
	h0, h0t, err := int8Input(n, in, 7, "h0")
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
	out, err := ctx.New(graph.Int8, []int{xt.Shape[0], xt.Shape[1], N})
	if err != nil {
		return nil, err
	}
	y := out.Data.([]int8)
	h := append([]int8(nil), h0...)
	c := append([]int16(nil), c0...)
	gates := make([]int16, 4*N)
	ax, ah := make([]int32, 4*N), make([]int32, 4*N)
	for t := 0; t < T; t++ {
		if ctx.Stopped() {
			return nil, ctx.Stop(n)
		}
		for b := 0; b < batch; b++ {
			xo := (b*T + t) * I // batch-major
			yo := (b*T + t) * N
			if p.timeMajor {
				xo, yo = (t*batch+b)*I, (t*batch+b)*N
			}
			xr, hr, cr := x[xo:xo+I], h[b*N:(b+1)*N], c[b*N:(b+1)*N]
			copy(ax, p.bx)
			copy(ah, p.bh)
			mv(0, xr, ax)
			mv(1, hr, ah)
			for g := 0; g < 4; g++ {
				for r := 0; r < N; r++ {
					row := g*N + r
					v := min(max(mulByQuantizedMultiplier(ax[row], p.mx[g], p.sx[g]), math.MinInt16), math.MaxInt16)
					v = min(max(mulByQuantizedMultiplier(ah[row], p.mh[g], p.sh[g])+v, math.MinInt16), math.MaxInt16)
					switch {
					case p.sigmoid != nil && g == 2:
						gates[row] = p.tanhG[uint16(int16(v))]
					case p.sigmoid != nil:
						gates[row] = p.sigmoid[uint16(int16(v))]
					case g == 2:
						gates[row] = tanh16(int16(v), 3)
					default:
						gates[row] = logistic16(int16(v), 3)
					}
				}
			}
			for r := 0; r < N; r++ {
				ig, fg, gg, og := gates[r], gates[N+r], gates[2*N+r], gates[3*N+r]
				fc := int16(rdbypot(int32(fg)*int32(cr[r]), 15))
				ic := int16(rdbypot(int32(ig)*int32(gg), 30+p.cellScale))
				cv := int16(min(max(int32(fc)+int32(ic), math.MinInt16), math.MaxInt16))
				if p.clip > 0 {
					cv = max(min(cv, p.clip), -p.clip)
				}
				cr[r] = cv
				var th int16
				if p.tanhC != nil {
					th = p.tanhC[uint16(cv)]
				} else {
					th = tanh16(cv, 15+p.cellScale)
				}
				hv := mulByQuantizedMultiplier(int32(og)*int32(th), p.mHidden, p.sHidden) + p.hiddenZP
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
