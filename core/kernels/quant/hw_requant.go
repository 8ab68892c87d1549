package quant

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// fcRequant is one unit's requantisation for fcFolded, packed so that the
// loop over a layer's units reads one record a unit (requantAway's
// multiplier, shifts and rounding mask, precomputed by foldFC).
type fcRequant struct {
	q           int64  // the Q31 multiplier
	left, right uint32 // requantShifts, both below 32
	mask, half  int32  // 1<<right − 1 and mask>>1
}

// newFCRequant packs requantAway's parameters (shifts below 32).
func newFCRequant(q int32, left, right uint) fcRequant {
	mask := int32(1)<<(right&31) - 1
	return fcRequant{q: int64(q), left: uint32(left & 31), right: uint32(right & 31), mask: mask, half: mask >> 1}
}

// requantUnits writes y[u] = clamp(requantAway(acc[u], …) + yz) for each
// unit, with the same bits as requantAway31: its rounding doubling high
// multiply, trunc((ab ± nudge) / 2³¹) with the nudge 2³⁰ for ab ≥ 0 and
// 1 − 2³⁰ below, is ⌊(ab + 2³⁰) / 2³¹⌋ for either sign (below zero the
// truncation adds 2³¹ − 1 before the floor), one add and one shift.
func requantUnits(y []int8, acc []int32, rq []fcRequant, yz, lo, hi int32) {
	rq = rq[:len(acc)]
	y = y[:len(acc)]
	for u, a := range acc {
		p := &rq[u]
		ab := int64(a<<p.left) * p.q
		v := int32((ab + 1<<30) >> 31)
		r := v >> p.right
		if v&p.mask > p.half-v>>31 { // the threshold is one more below zero
			r++
		}
		y[u] = int8(min(max(r+yz, lo), hi))
	}
}

// fcWeights is fullyConnected's weights (input 3): int8Input, except that
// the constant tensor the node's memo folded (foldFC, which it passed
// int8Input once) is taken without checking it again on every call (a
// constant of the program does not change).
func fcWeights(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]int8, *graph.Tensor, error) {
	if l, ok := ctx.Memoized().(*linear); ok && l.fold != nil {
		if wt := kernels.Input(in, 3); wt != nil && wt == l.fold.w && ctx.IsConst(3) {
			if w, ok := wt.Data.([]int8); ok {
				return w, wt, nil
			}
		}
	}
	return int8Input(n, in, 3, "w")
}
