package native

import (
	"fmt"

	"github.com/switchyard-hal/switchyard/core/ggml"

	"github.com/switchyard-hal/switchyard/hal"
)

// The integer path of BlockQuantMatMul, opt-in (hal.PrecisionInt8), as
// llama.cpp computes Q8_0 and Q4_0 products: each row of A is quantized
// to int8 in blocks of 32 (Q8_0's rule: d = max|a|/127, q = a·(1/d)
// rounded to nearest even, within ±127, d then rounded to float16 as
// Q8_0 stores it), and each block of a weight row
// contributes an exact integer dot product of its int8 values (Q8_0) or
// nibbles less 8 (Q4_0) with the block's int8 activations, times d_w·d_a.
//
// The arithmetic is fixed so that every kernel family (AVX-512 VNNI,
// AVX2, portable Go) gives the same bits: block b's 32 products are
// summed exactly in eight integer lanes, lane l holding elements
// 4l..4l+3; each lane is converted to float32, multiplied by
// float32(d_w[b]·d_a[b]) and added (no fused multiply-add) into a float32
// accumulator of its own, block after block; the eight accumulators are
// added at the end as ((l0+l4)+(l1+l5)) + ((l2+l6)+(l3+l7)).
//
// The error against the float path comes from the activations'
// rounding: each |a − d_a·q| ≤ d_a·(1/2 + 127·2⁻¹¹) (half a step, and
// the float16 rounding of the scale), so an output moves by at most
// Σ_b d_a[b]·(1/2 + 127·2⁻¹¹)·Σ_{k in b} |w(n,k)| (plus float32
// rounding of about (K/4+10)·2⁻²⁴·Σ|a·w|), the bound the tests check.
//
// Taken only where the weight's block_size is 32 and K a multiple of 32
// (GGUF's Q8_0 and Q4_0 always are); other BlockQuantMatMul nodes stay on
// the float path (bqIntReason says why) and the executable reports the
// float32 precision unless some node took the integer path.

// bqiBlock is the integer path's activation block.
const bqiBlock = 32

// bqIntReason says why w cannot take the integer path ("" when it can).
func bqIntReason(w *bqWeights) string {
	switch {
	case w.block != bqiBlock:
		return fmt.Sprintf("block_size %d: the int8 path takes blocks of %d", w.block, bqiBlock)
	case w.k%bqiBlock != 0:
		return fmt.Sprintf("K %d is not a multiple of %d (blocks span rows)", w.k, bqiBlock)
	}
	return ""
}

// bqAct is A quantized for the integer path: per row, K int8 values, K/32
// float32 scales and (for 4-bit weights) K/4 lane sums −8·Σ of 4 values.
type bqAct struct {
	q  []int8
	d  []float32
	ns []int32
}

// quantizeAct quantizes the m rows of x (K floats each) into a.
func quantizeAct(a *bqAct, x []float32, m, K int, sums bool) {
	nb := K / bqiBlock
	a.q = growT(a.q, m*K)
	a.d = growT(a.d, m*nb)
	if sums {
		a.ns = growT(a.ns, m*K/4)
	}
	for b := 0; b < m*nb; b++ {
		xs := x[b*bqiBlock : b*bqiBlock+bqiBlock]
		q := a.q[b*bqiBlock : b*bqiBlock+bqiBlock]
		// NaN (or ±Inf) in the block: d is NaN, the outputs are NaN
		d, bad := ggml.QuantizeBlock(xs, q)
		a.d[b] = d
		if !bad {
			// the scale as llama.cpp's Q8_0 stores it: float16 (the
			// values are quantized with the unrounded one)
			a.d[b] = ggml.F16Round(d)
		}
		if sums {
			ns := a.ns[b*8 : b*8+8]
			for l := range ns {
				ns[l] = -8 * (int32(q[4*l]) + int32(q[4*l+1]) + int32(q[4*l+2]) + int32(q[4*l+3]))
			}
		}
	}
}

// growT returns s with length n, reallocated only when too short.
func growT[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// bqiKernel is one family's assembly for the integer path: dot4 computes
// outputs j..j+3 of one activation row, dot1 one output (see the package
// asmgenbqi).
type bqiKernel struct {
	name string
	dot4 func(w *bqWeights, j int, a *bqAct, r int, y []float32)
	dot1 func(w *bqWeights, j int, a *bqAct, r int) float32
}

// bqiGo is the portable family.
var bqiGo = &bqiKernel{name: "generic", dot1: bqiDotGo}

// bqiKernelFor is the family the integer path of a node compiled now
// takes (SWITCHYARD_NATIVE_QKERNEL forces a lesser one).
func bqiKernelFor() *bqiKernel {
	if k := archBQIKernel(qkernelFamily()); k != nil {
		return k
	}
	return bqiGo
}

// bqiDotGo is output j of activation row r in Go, in the arithmetic
// every family shares.
func bqiDotGo(w *bqWeights, j int, a *bqAct, r int) float32 {
	K := w.k
	nb := K / bqiBlock
	x := a.q[r*K : r*K+K]
	xd := a.d[r*nb : r*nb+nb]
	ws := w.s[j*nb : j*nb+nb]
	var acc [8]float32
	for b := 0; b < nb; b++ {
		sc := ws[b] * xd[b]
		xb := x[b*bqiBlock : b*bqiBlock+bqiBlock]
		e0 := j*K + b*bqiBlock
		for l := 0; l < 8; l++ {
			var p int32
			if w.bits == 8 {
				q := w.q8[e0+4*l : e0+4*l+4]
				for i, v := range q {
					p += int32(v) * int32(xb[4*l+i])
				}
			} else {
				for i := 0; i < 4; i++ {
					f := e0 + 4*l + i
					p += (int32(w.q4[f>>1]>>(4*(f&1))&15) - 8) * int32(xb[4*l+i])
				}
			}
			acc[l] = acc[l] + float32(float32(p)*sc)
		}
	}
	return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]))
}

// rowsInt computes outputs n0..n1-1 of every row of the quantized A.
func (w *bqWeights) rowsInt(a *bqAct, y []float32, m, n0, n1 int) {
	k, N := w.ik, w.n
	j := n0
	if k.dot4 != nil {
		// four weight rows against every activation row while they are in
		// cache
		for ; j+4 <= n1; j += 4 {
			for r := 0; r < m; r++ {
				k.dot4(w, j, a, r, y[r*N+j:r*N+j+4])
			}
		}
	}
	for ; j < n1; j++ {
		for r := 0; r < m; r++ {
			y[r*N+j] = k.dot1(w, j, a, r)
		}
	}
}

// bqiJob is one integer-path call's arguments for parallelFor.
type bqiJob struct {
	w      *bqWeights
	a      *bqAct
	y      []float32
	m, per int
}

// runInt is run on the integer path.
func (w *bqWeights) runInt(p *pool, x, y []float32, m int) {
	a := w.acts.Get().(*bqAct)
	defer w.acts.Put(a)
	quantizeAct(a, x, m, w.k, w.bits == 4)
	j := bqiJob{w: w, a: a, y: y, m: m, per: w.n}
	if t := p.threads(); t > 1 && m*w.n*w.k >= 1<<16 {
		// multiples of 4 outputs (dot4)
		j.per = ((w.n+2*t-1)/(2*t) + 3) &^ 3
	}
	parallelFor(p, (w.n+j.per-1)/j.per, j, func(j bqiJob, t int) {
		j.w.rowsInt(j.a, j.y, j.m, t*j.per, min(j.w.n, (t+1)*j.per))
	})
}

// precisionOf is the precision an executable of these nodes reports:
// int8 when one of them took the integer path.
func precisionOf(int8Nodes int) hal.Precision {
	if int8Nodes > 0 {
		return hal.PrecisionInt8
	}
	return hal.PrecisionFloat32
}
