package quant

import (
	"slices"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// linear is what a quantised convolution or fully connected layer derives
// from its quantisation inputs (the scales and zero points of x, w and y)
// and its attributes: the per-channel requantisation multipliers, the zero
// points and the activation's clamp. It is computed once per node and kept
// in the node's kernels.Memo, checked against the inputs on every call
// (they are constants in every model we import, but a graph may compute
// them), so a steady-state call derives nothing and allocates nothing
// here.
type linear struct {
	fc       bool // fullyConnected's per-tensor multiplier (see below)
	channels int
	// the quantisation inputs this was derived from: scales and zero
	// points of x, w and y (inputs 1–2, 4–5, 6–7)
	scales [3][]float32
	zps    [3][]int32
	// src are the scale and zero point tensors themselves (inputs 1, 2,
	// 4, 5, 6, 7): the same tensor again (a constant) skips its Check
	src [6]*graph.Tensor

	mq      []int32 // Q31 multiplier per output channel
	ms      []int   // its exponent
	ls, rs  []uint  // the exponent as left and right shifts (requantShifts)
	wz      []int32 // the weights' zero point per output channel
	xz, yz  int32
	lo, hi  int32 // the fused activation's clamp, in y's quantised values
	requant func(x, q int32, shift int) int32
	halfUp  bool  // requant is mulByQuantizedMultiplierHalfUp (else mulByQuantizedMultiplier)
	shape   []int // fullyConnected's output_shape attribute (nil: [rows, units])
	size    int   // the number of elements shape holds

	// fold is fullyConnected's zero points and bias folded into one
	// constant per unit (nil unless the weights and bias are constants of
	// the program when l is derived): see foldFC.
	fold *fcFold
}

// fcFold is what fullyConnected derives from constant weights w (units
// rows of depth) and bias: Σ (w−wz)(x−xz) + bias expands, in int32's
// wrapping arithmetic (a ring, so the sum is the same modulo 2³² as
// TFLite's), to Σ w·x + off − wz·Σx with off = bias − xz·Σw + depth·wz·xz
// per unit. A call then takes one product per weight instead of two
// subtractions and a product, and Σx once per row (only when a weight
// zero point is not 0).
type fcFold struct {
	w, b  *graph.Tensor // the constant weights and bias it was derived from (b nil: none)
	off   []int32
	anyWZ bool // some unit's weight zero point is not 0
	// wp is w transposed to depth rows of units, two units to an int64
	// (fcPairs; nil when units is above fcSmallUnits): a small layer's
	// call then accumulates every unit at once, one row of wp per input
	// value, two units a multiplication, instead of a dot product (and a
	// call) per unit
	wp []int64
	// wt is w transposed to depth rows of units, widened to int32, in
	// place of wp for depths below 4 (fcSmallT)
	wt []int32
	// offp is off padded to an even count (fcSmall)
	offp []int32
	// rq are the units' requantisation parameters, packed (requantUnits)
	rq []fcRequant
}

// fcSmallUnits is the most units fullyConnected accumulates all at once
// (in a stack array) on transposed weights.
const fcSmallUnits = 64

// foldFC folds w's and bias's zero point terms (see fcFold) for units
// rows of depth weights, nil when w or the bias is not a constant.
func foldFC(ctx *kernels.Context, in []*graph.Tensor, l *linear, units, depth int) *fcFold {
	wt, bt := kernels.Input(in, 3), kernels.Input(in, 8)
	if wt == nil || !ctx.IsConst(3) || bt != nil && !ctx.IsConst(8) {
		return nil
	}
	w, ok := wt.Data.([]int8)
	if !ok || len(w) != units*depth || len(l.wz) < units {
		return nil
	}
	var bias []int32
	if bt != nil {
		if bias, ok = bt.Data.([]int32); !ok || len(bias) != units {
			return nil
		}
	}
	f := &fcFold{w: wt, b: bt, off: make([]int32, units)}
	for u := range f.off {
		var sw int32
		for _, v := range w[u*depth : (u+1)*depth] {
			sw += int32(v)
		}
		o := -l.xz*sw + int32(depth)*l.wz[u]*l.xz
		if bias != nil {
			o += bias[u]
		}
		f.off[u] = o
		f.anyWZ = f.anyWZ || l.wz[u] != 0
	}
	for u := range units {
		if l.ls[u] > 31 || l.rs[u] > 31 {
			return nil // requantAway31's shifts
		}
	}
	if len(l.mq) >= units && len(l.rs) >= units {
		f.rq = make([]fcRequant, units)
		for u := range f.rq {
			f.rq[u] = newFCRequant(l.mq[u], l.ls[u], l.rs[u])
		}
	}
	if units >= 4 && units <= fcSmallUnits && units*depth <= 1<<16 {
		if depth >= 4 {
			f.wp = fcPairs(w, units, depth)
			f.offp = make([]int32, 2*((units+1)/2))
			copy(f.offp, f.off)
		} else {
			f.wt = make([]int32, units*depth)
			for u := 0; u < units; u++ {
				for k, v := range w[u*depth : (u+1)*depth] {
					f.wt[k*units+u] = int32(v)
				}
			}
		}
	}
	return f
}

// linearQuant returns n's linear parameters for channels output channels
// (fc: fullyConnected's multiplier rounding) and its int32 bias (nil when
// absent): the node's memo when it still matches in, else computed and
// memoised.
func linearQuant(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor, channels int, fc bool) (*linear, []int32, error) {
	if l, ok := ctx.Memoized().(*linear); ok && l.fc == fc && l.channels == channels && l.matches(ctx, in) {
		bias, err := linearBias(n, in, channels)
		return l, bias, err
	}
	xq, wq, yq, bias, err := linearParams(n, in, channels)
	if err != nil {
		return nil, nil, err
	}
	l := &linear{fc: fc, channels: channels, xz: xq.z(0), yz: yq.z(0)}
	for j, p := range [3]params{xq, wq, yq} {
		l.scales[j], l.zps[j] = slices.Clone(p.scale), slices.Clone(p.zp)
	}
	for j, i := range [6]int{1, 2, 4, 5, 6, 7} {
		l.src[j] = kernels.Input(in, i)
	}
	if l.lo, l.hi, err = actRange(n, yq); err != nil {
		return nil, nil, err
	}
	if l.requant, err = requantizer(n); err != nil {
		return nil, nil, err
	}
	l.halfUp = n.AttrString("rounding", "away") == "half_up"
	l.mq, l.ms, l.wz = make([]int32, channels), make([]int, channels), make([]int32, channels)
	for c := range l.mq {
		if fc && len(wq.scale) == 1 {
			// TFLite's per-tensor FullyConnected: the scales' product
			// in float32, then divided in float64
			l.mq[c], l.ms[c] = quantizeMultiplier(float64(xq.s(0)*wq.s(0)) / float64(yq.s(0)))
		} else {
			l.mq[c], l.ms[c] = quantizeMultiplier(float64(xq.s(0)) * float64(wq.s(c)) / float64(yq.s(0)))
		}
		l.wz[c] = wq.z(c)
	}
	l.ls, l.rs = make([]uint, channels), make([]uint, channels)
	for c, sh := range l.ms {
		l.ls[c], l.rs[c] = requantShifts(sh)
	}
	if fc {
		if s := n.AttrInts("output_shape", nil); len(s) > 0 {
			l.shape = make([]int, len(s))
			for i, d := range s {
				if d < 0 || d > 1<<40 {
					return nil, nil, kernels.Invalidf(n, "output_shape %v has a bad dimension", s)
				}
				l.shape[i] = int(d)
			}
			if l.size, err = graph.NumElements(l.shape); err != nil {
				return nil, nil, kernels.Invalidf(n, "output_shape %v: %v", s, err)
			}
		}
		if wt := kernels.Input(in, 3); wt != nil && len(wt.Shape) == 2 && wt.Shape[0] == channels {
			l.fold = foldFC(ctx, in, l, channels, wt.Shape[1])
		}
	}
	ctx.Memoize(l)
	return l, bias, nil
}

// matches reports whether in's quantisation inputs are the ones l was
// derived from (the same constant tensors, or the same values:
// readParams's checks hold for them; a tensor other than the one checked
// then is checked again).
func (l *linear) matches(ctx *kernels.Context, in []*graph.Tensor) bool {
	for j, i := range [3]int{1, 4, 6} {
		s, z := kernels.Input(in, i), kernels.Input(in, i+1)
		if s == l.src[2*j] && z == l.src[2*j+1] && ctx.IsConst(i) && ctx.IsConst(i+1) {
			continue // the very constants it was derived from
		}
		if s == nil || z == nil || s != l.src[2*j] && s.Check() != nil || z != l.src[2*j+1] && z.Check() != nil {
			return false
		}
		if sd, ok := s.Data.([]float32); !ok || !slices.Equal(sd, l.scales[j]) {
			return false
		}
		want := l.zps[j]
		switch zd := z.Data.(type) {
		case []int8:
			if len(zd) != len(want) {
				return false
			}
			for k, v := range zd {
				if int32(v) != want[k] {
					return false
				}
			}
		case []int32:
			if !slices.Equal(zd, want) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// linearBias is the int32 bias (input 8) of channels values, nil when
// absent.
func linearBias(n *graph.Node, in []*graph.Tensor, channels int) ([]int32, error) {
	b := kernels.Input(in, 8)
	if b == nil {
		return nil, nil
	}
	bd, ok := b.Data.([]int32)
	if !ok || len(bd) != channels {
		return nil, kernels.Invalidf(n, "bias must be int32[%d], got %v%v", channels, b.DType, b.Shape)
	}
	return bd, nil
}
