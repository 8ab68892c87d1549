package native

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// attendF16Group is attendF16 for the G = len(o)/H query heads of one
// KV head at a decode step (one query row each, all over the same
// float16 rows K and V: len(K)/H keys), with each head's arithmetic
// unchanged (its bits): the scores (f16DotRows), the softmax
// (cachedWeights: scaled, soft-capped, exponentials, their float64 sum,
// the weights rounded to float16) and the weighted sum of V
// (f16WeighRows). What differs is the order of work across heads: the
// float64 sums of the exponentials, a chain of dependent additions each
// (its order is its bits), run for several heads side by side, where
// attendF16 ran one head's chain after the other's. q and o hold the
// heads' rows one after the other; scores and e are scratch of at least
// G·len(K)/H values. False (nothing done): not with these kernels here
// (f16Attn), or more than 16 heads.
func attendF16Group(q []float32, K, V []graph.F16, scores, e, o []float32, H int, scale, softcap float32) bool {
	G, L := len(o)/H, len(K)/H
	if !f16Attn || H%32 != 0 || G > 16 || L == 0 || len(q) < G*H || len(scores) < G*L || len(e) < G*L {
		return false
	}
	for h := range G {
		sc := scores[h*L : (h+1)*L]
		if !f16DotRows(sc, K, q[h*H:(h+1)*H]) {
			panic("native: attendF16Group without its kernels")
		}
		expSum(sc, e[h*L:(h+1)*L], scaleMax(sc, scale, softcap))
	}
	var sums [16]float64
	sumRowsF64(e[:G*L], L, sums[:G])
	for h := range G {
		eh := e[h*L : (h+1)*L]
		inv := float32(1 / sums[h])
		for i, w := range eh {
			eh[i] = w * inv
		}
		f16RoundAll(eh)
		f16WeighRows(eh, V, o[h*H:(h+1)*H])
	}
	return true
}

// scaleMax is cachedWeights' first pass: each score times scale, then
// soft-capped (softcap > 0), written back; it returns their largest.
func scaleMax(scores []float32, scale, softcap float32) float32 {
	mx := float32(math.Inf(-1))
	for j, d := range scores {
		d *= scale
		if softcap > 0 {
			d = softcap * float32(math.Tanh(float64(d/softcap)))
		}
		scores[j] = d
		if d > mx {
			mx = d
		}
	}
	return mx
}

// sumRowsF64 sets sums[r] to the float64 sum, in order, of row r of the
// len(sums) rows of n values of e: four rows' chains side by side, then
// two, then one (each row's additions those of a loop over it alone).
func sumRowsF64(e []float32, n int, sums []float64) {
	r := 0
	for ; r+4 <= len(sums); r += 4 {
		e0, e1, e2, e3 := e[r*n:(r+1)*n], e[(r+1)*n:(r+2)*n], e[(r+2)*n:(r+3)*n], e[(r+3)*n:(r+4)*n]
		e1, e2, e3 = e1[:len(e0)], e2[:len(e0)], e3[:len(e0)]
		var s0, s1, s2, s3 float64
		for i, w := range e0 {
			s0 += float64(w)
			s1 += float64(e1[i])
			s2 += float64(e2[i])
			s3 += float64(e3[i])
		}
		sums[r], sums[r+1], sums[r+2], sums[r+3] = s0, s1, s2, s3
	}
	if r+2 <= len(sums) {
		e0, e1 := e[r*n:(r+1)*n], e[(r+1)*n:(r+2)*n]
		e1 = e1[:len(e0)]
		var s0, s1 float64
		for i, w := range e0 {
			s0 += float64(w)
			s1 += float64(e1[i])
		}
		sums[r], sums[r+1] = s0, s1
		r += 2
	}
	if r < len(sums) {
		s := 0.0
		for _, w := range e[r*n : (r+1)*n] {
			s += float64(w)
		}
		sums[r] = s
	}
}

// srvhAttendGroup is head's float16 decode step (one query row, S 1) of
// batch entry b's heads that share KV head kh, p keys cached before it,
// through attendF16Group (K16 and V16 the pair's rows 0..p); false: not
// done.
func (j *gqaHeads) srvhAttendGroup(sc *gqaScratch, b, kh, p int, K16, V16 []graph.F16) bool {
	g := &j.g
	N, KV, H := g.N, g.KV, g.H
	group := N / KV
	L := p + 1
	j0 := 0
	if j.window > 0 {
		j0 = max(0, L-j.window)
	}
	n := L - j0
	sc.sc, sc.e = growRows(sc.sc, group*n), growRows(sc.e, group*n)
	rows := j.q[(b*N+kh*group)*H : (b*N+(kh+1)*group)*H]
	out := j.Y[(b*N+kh*group)*H : (b*N+(kh+1)*group)*H]
	return attendF16Group(rows, K16[j0*H:L*H], V16[j0*H:L*H], sc.sc, sc.e, out, H, j.scale, j.softcap)
}
