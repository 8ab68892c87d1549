package native

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"

	"github.com/switchyard-hal/switchyard/core/kernels/blockquant"
)

// rotateRowFMA is rotateRow in ggml's float32 arithmetic
// (contrib.RotaryFMAAttr: the reference kernel's rotation then, to the
// bit): x1·c − x2·s as fma(x1, c, −(x2·s)), x1·s + x2·c as fma(x1, s,
// x2·c), the inner products rounded.
func rotateRowFMA(x, c, s []float32, interleaved bool) {
	w := len(c)
	s = s[:w]
	i0 := rotateRowFMAFast(x, c, s, interleaved) // the pairs the assembly did (q4pre_rope_amd64.go)
	if interleaved {
		x = x[:2*w]
		for i := i0; i < w; i++ {
			ci := c[i]
			x1, x2, si := x[2*i], x[2*i+1], s[i]
			x[2*i], x[2*i+1] = fma32(x1, ci, -float32(x2*si)), fma32(x1, si, float32(x2*ci))
		}
		return
	}
	x1s, x2s := x[:w], x[w:2*w]
	for i := i0; i < w; i++ {
		x1, x2, ci, si := x1s[i], x2s[i], c[i], s[i]
		x1s[i], x2s[i] = fma32(x1, ci, -float32(x2*si)), fma32(x1, si, float32(x2*ci))
	}
}

// reduce16 adds sixteen lanes as _mm512_reduce_add_ps does: halves, then
// quarters, then pairs.
func reduce16(a *[16]float32) float32 {
	var b [8]float32
	for i := range b {
		b[i] = a[i+8] + a[i]
	}
	c0, c1, c2, c3 := b[4]+b[0], b[5]+b[1], b[6]+b[2], b[7]+b[3]
	return (c0 + c2) + (c1 + c3)
}

// dotGGML is ggml_vec_dot_f32 on AVX-512: four accumulators of sixteen
// lanes over each 64 elements (fused multiply-adds), added as (0+2)+(1+3)
// and reduced by reduce16; the elements past the last 64 added one by
// one (fused, as the compiler contracts it).
func dotGGML(x, y []float32) float32 {
	n := len(x)
	y = y[:n]
	var acc [4][16]float32
	np := n &^ 63
	if s, ok := dotGGMLFast(x[:np], y[:np]); ok {
		return fmaSeq(x[np:], y[np:], s)
	}
	for i := 0; i < np; i += 64 {
		for j := range acc {
			xs, ys := x[i+16*j:i+16*j+16], y[i+16*j:i+16*j+16]
			for l := range acc[j] {
				acc[j][l] = fma32(xs[l], ys[l], acc[j][l])
			}
		}
	}
	var t [16]float32
	for l := range t {
		t[l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l])
	}
	return fmaSeq(x[np:], y[np:], reduce16(&t))
}

// dot16 is llamafile's tinyBLAS dot product on AVX-512: one accumulator
// of sixteen lanes (fused multiply-adds, lane l taking the elements l,
// l+16, …), reduced by reduce16; len(x) a multiple of 16, else
// dotGGML's order.
func dot16(x, y []float32) float32 {
	n := len(x)
	if n%16 != 0 {
		return dotGGML(x, y)
	}
	y = y[:n]
	if s, ok := dot16Fast(x, y); ok {
		return s
	}
	var acc [16]float32
	for i := 0; i < n; i += 16 {
		for l := range acc {
			acc[l] = fma32(x[i+l], y[i+l], acc[l])
		}
	}
	return reduce16(&acc)
}

// attendRowGGML is attendRow as llama.cpp's CPU backend computes
// attention over an F32 cache without flash attention
// (contrib.GGMLAttentionAttr): the scores q·kⱼ by ggml_vec_dot_f32, times
// scale when scale ≠ 0 (ggml_soft_max's scale; the query is otherwise
// already scaled), soft-capped as x·(1/c), tanh, ·c; the exponentials
// of score − max by ggml's exponential (blockquant.ExpGGML), summed in
// float64 sixteen at a time by key position (each sixteen reduced by
// reduce16), the weights eⱼ·float32(1/sum); then the weighted sum of the
// values: for a prompt (rows ≥ 2, llamafile's tinyBLAS) one accumulator
// of sixteen lanes by key position, for one row (ggml_vec_dot_f32) four.
// K holds keys 0..L−1 (H = len(q) each), vals the values (set for at
// least L keys); keys before j0 are masked
// (sliding window); scores and e have room for L.
//
// With half (a float16 cache, keys and values decoded, the query rounded
// to float16 already): a prompt's scores come from llamafile's tinyBLAS
// too (sixteen lanes by element, dot16), and each weight is rounded to
// float16 before it weighs the values (ggml's vec_dot_type of F16).
func attendRowGGML(q, K []float32, vals *ggmlValues, scores, e, o []float32, j0 int, scale, softcap float32, oneRow, half bool) {
	H, L := len(q), len(scores)
	lanes16 := half && !oneRow && H%16 == 0 // dot16's sums
	// all keys in one call (pattn.go); heads under 64 values: dotGGML is
	// one fused multiply-add chain a key, all keys' chains in one call
	// (gqa_seq.go)
	switch {
	case lanes16:
		dots16(scores[j0:L], K[j0*H:L*H], q)
	case H >= 64 || !seqDots(scores[j0:L], K[j0*H:L*H], q):
		dotsGGML(scores[j0:L], K[j0*H:L*H], q)
	}
	ggmlWeights(scores, e, j0, scale, softcap, half)
	// the values by dimension (vals: V transposed, keys padded with
	// zeros to whole lanes), the weights padded likewise, added as
	// dotGGML or dot16 add
	w := vals.w[:vals.lp]
	clear(w)
	copy(w[j0:L], e[j0:L])
	// every dimension in one call (pattn.go)
	if !oneRow {
		dots16(o, vals.vt, w)
	} else {
		dotsGGML(o, vals.vt, w)
	}
}

// ggmlWeights is attendRowGGML's softmax: from the scores of keys j0..L−1
// (L = len(scores); scaled by scale ≠ 0, soft-capped) the weights in
// e[:L], zero before j0, rounded to float16 with half.
func ggmlWeights(scores, e []float32, j0 int, scale, softcap float32, half bool) {
	L := len(scores)
	if scale != 0 {
		for j := j0; j < L; j++ {
			scores[j] *= scale
		}
	}
	if softcap > 0 {
		for j := j0; j < L; j++ {
			d := float32(scores[j] * float32(1/softcap))
			scores[j] = float32(math.Tanh(float64(d))) * softcap
		}
	}
	mx := maxOf(scores[j0:L])
	j := expSub16(e[j0:L], scores[j0:L], mx) + j0
	if r := L - j; r > 0 {
		// the last keys through the same lanes, padded to sixteen
		var x, y [16]float32
		copy(x[:], scores[j:L])
		for i := r; i < len(x); i++ {
			x[i] = mx
		}
		if expSub16(y[:], x[:], mx) == len(y) {
			copy(e[j:L], y[:r])
			j = L
		}
	}
	for ; j < L; j++ {
		e[j] = blockquant.ExpGGML(scores[j] - mx)
	}
	clear(e[:j0])
	sum, ok := ggmlExpSum(e[:L])
	if !ok {
		var t [16]float32
		for g := 0; g < L; g += 16 {
			clear(t[:])
			copy(t[:], e[g:min(g+16, L)])
			sum += float64(reduce16(&t))
		}
	}
	inv := float32(1 / sum)
	if half && ggmlScaleF16(e[j0:L], inv) {
		return
	}
	for j := j0; j < L; j++ {
		e[j] *= inv
	}
	if half {
		f16RoundAll(e[j0:L])
	}
}

// attendRowGGMLF16 is attendRowGGML for one query row (decode) over a
// float16 cache with half set, reading the keys K16 and the values V16
// (L = len(scores) rows of len(q) each) as they are, no decoded or
// transposed copy: the same bits (bw70_gqaf16_amd64.s); acc is
// ggmlF16Weigh's scratch. False: no kernels for this head size (nothing
// written).
func attendRowGGMLF16(q []float32, K16, V16 []graph.F16, scores, e, acc, o []float32, j0 int, scale, softcap float32) bool {
	L := len(scores)
	if !ggmlF16Rows || len(q)%64 != 0 || !ggmlF16Scores(scores[j0:L], K16[j0*len(q):], q) {
		return false
	}
	ggmlWeights(scores, e, j0, scale, softcap, true)
	return ggmlF16Weigh(e[:L], V16, acc, o)
}

// attendGroupGGMLF16 is attendRowGGMLF16 for the queries of a KV head's
// group (q: len(q)/64 rows of 64 values; o likewise), the scores of all
// of them first, each key row widened once (ggmlF16ScoresG); scores has
// room for a row of L = len(e) a query. False: no kernels for this head
// size (nothing written).
func attendGroupGGMLF16(q []float32, K16, V16 []graph.F16, scores, e, acc, o []float32, j0 int, scale, softcap float32) bool {
	const H = 64
	L, g := len(e), len(q)/H
	if !ggmlF16Rows || len(q)%H != 0 || len(o) != len(q) || len(scores) < g*L {
		return false
	}
	if !ggmlF16ScoresG(scores[j0:], L, K16[j0*H:L*H], q) {
		return false
	}
	for i := 0; i < g; i++ {
		ggmlWeights(scores[i*L:(i+1)*L], e, j0, scale, softcap, true)
		if !ggmlF16Weigh(e, V16, acc, o[i*H:(i+1)*H]) {
			panic("native: ggmlF16Weigh declined a head of 64")
		}
	}
	return true
}

// maxOf is the largest of x (−Inf for none; NaN where one is NaN, +0
// over −0: Go's max) in four running maxima, which give the one maximum
// in any order.
func maxOf(x []float32) float32 {
	inf := float32(math.Inf(-1))
	m0, m1, m2, m3 := inf, inf, inf, inf
	j := 0
	for ; j+4 <= len(x); j += 4 {
		s := x[j : j+4 : j+4]
		m0, m1, m2, m3 = max(m0, s[0]), max(m1, s[1]), max(m2, s[2]), max(m3, s[3])
	}
	for ; j < len(x); j++ {
		m0 = max(m0, x[j])
	}
	return max(max(m0, m1), max(m2, m3))
}

// ggmlValues are the values of one key/value head transposed for
// attendRowGGML: vt [H][lp] holds value dimension d of key j at d·lp+j,
// lp the keys rounded up to 16 (a prompt: tinyBLAS's lanes) or 64 (one
// row: ggml_vec_dot_f32's four accumulators, llama.cpp's cache being
// that long), zeros past the keys; w is the weights' scratch.
type ggmlValues struct {
	vt, w []float32
	lp    int
}

// set transposes the L rows of V (H values each) into g.
func (g *ggmlValues) set(V []float32, H, L int, oneRow bool) {
	g.lp = (L + 15) &^ 15
	if oneRow {
		g.lp = (L + 63) &^ 63
	}
	g.vt, g.w = grow(g.vt, H*g.lp), grow(g.w, g.lp)
	V = V[:L*H]
	for d := 0; d < H; d++ {
		row := g.vt[d*g.lp : (d+1)*g.lp]
		for j := range row[:L] {
			row[j] = V[j*H+d]
		}
		clear(row[L:])
	}
}

// scoreScale is attendRowGGML's scale: the node's for
// contrib.GGMLAttentionAttr 1 (the scores scaled), none for 2 (the
// queries were).
func scoreScale(mode int64, scale float32) float32 {
	if mode == 1 {
		return scale
	}
	return 0
}
