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

// fcPairs packs w (units rows of depth) for fcSmall: depth rows of
// ⌈units/2⌉ int64, unit 2j in the low half and unit 2j+1 (0 past the
// last unit) times 2³² above it. A row times an input value then
// multiplies two units at once: (a + b·2³²)·x = a·x + b·x·2³², exact in
// int64, and so are the sums over depth while |Σ a·x| < 2³¹ (depth up to
// 2¹⁷: |a·x| ≤ 2¹⁴), so the low 32 bits hold unit 2j's sum and the rest
// unit 2j+1's.
func fcPairs(w []int8, units, depth int) []int64 {
	h := (units + 1) / 2
	wp := make([]int64, depth*h)
	for u := 0; u < units; u++ {
		for k, v := range w[u*depth : (u+1)*depth] {
			if u%2 == 0 {
				wp[k*h+u/2] += int64(v)
			} else {
				wp[k*h+u/2] += int64(v) << 32
			}
		}
	}
	return wp
}

// fcSmall is fcFolded for a small layer (f.wp, f.rq): every unit's
// Σ w·x accumulated at once on the packed pairs, then off − wz·Σx added
// in int32's wrapping arithmetic (the same sum modulo 2³² as fcFolded's
// int32 accumulators), then requantised.
func fcSmall(f *fcFold, x, y []int8, units, depth int, wz []int32, yz, lo, hi int32) {
	h := (units + 1) / 2
	var pairs [fcSmallUnits / 2]int64
	var accs [fcSmallUnits]int32
	ps, acc2 := pairs[:h], accs[:2*h]
	acc := acc2[:units]
	wp := f.wp[:depth*h]
	wz = wz[:units]
	for r := 0; r*depth < len(x); r++ {
		xr := x[r*depth : (r+1)*depth]
		yr := y[r*units : (r+1)*units]
		clear(ps)
		addWeightedRows(ps, wp, xr, h)
		offp := f.offp[:2*len(ps)]
		for j, p := range ps {
			a := int32(p) // unit 2j: the low half, exact
			acc2[2*j] = a + offp[2*j]
			acc2[2*j+1] = int32((p-int64(a))>>32) + offp[2*j+1]
		}
		if f.anyWZ {
			var sx int32
			for _, v := range xr {
				sx += int32(v)
			}
			for u := range acc {
				acc[u] -= wz[u] * sx
			}
		}
		requantUnits(yr, acc, f.rq, yz, lo, hi)
	}
}

// fcSmallT is fcSmall on w transposed and widened to int32 (f.wt), for
// layers of depth below 4, where unpacking pairs costs more than it
// saves: the same sums in int32's wrapping arithmetic.
func fcSmallT(f *fcFold, wtt []int32, x, y []int8, units, depth int, wz []int32, yz, lo, hi int32) {
	off := f.off[:units]
	var accs [fcSmallUnits]int32
	acc := accs[:units]
	wt := wtt[:units*depth]
	for r := 0; r*depth < len(x); r++ {
		xr := x[r*depth : (r+1)*depth]
		yr := y[r*units : (r+1)*units]
		copy(acc, off)
		if f.anyWZ {
			var sx int32
			for _, v := range xr {
				sx += int32(v)
			}
			for u := range acc {
				acc[u] -= wz[u] * sx
			}
		}
		addWeightedRows(acc, wt, xr, units)
		requantUnits(yr, acc, f.rq, yz, lo, hi)
	}
}

// addWeightedRows adds to acc Σₖ xr[k]·(row k of w), the rows stride
// apart (each read for len(acc) values), four rows a pass: fcSmall's
// packed pairs in int64 and fcSmallT's units in int32's wrapping
// arithmetic.
func addWeightedRows[T int32 | int64](acc, w []T, xr []int8, stride int) {
	depth := len(xr)
	k := 0
	for ; k+4 <= depth; k += 4 {
		x0, x1, x2, x3 := T(xr[k]), T(xr[k+1]), T(xr[k+2]), T(xr[k+3])
		r0 := w[k*stride : k*stride+len(acc)]
		r1 := w[(k+1)*stride : (k+1)*stride+len(acc)]
		r2 := w[(k+2)*stride : (k+2)*stride+len(acc)]
		r3 := w[(k+3)*stride : (k+3)*stride+len(acc)]
		for j := range acc {
			acc[j] += r0[j]*x0 + r1[j]*x1 + r2[j]*x2 + r3[j]*x3
		}
	}
	for ; k < depth; k++ {
		xv := T(xr[k])
		row := w[k*stride : k*stride+len(acc)]
		for j := range acc {
			acc[j] += row[j] * xv
		}
	}
}
