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
