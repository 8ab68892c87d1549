package attention

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.RegisterKernel("", "Attention", attentionKernel)
}

// ---- Attention (opsets 23, 24) ----
//
// Inputs: Q, K, V, attn_mask?, past_key?, past_value?, nonpad_kv_seqlen?
// (the last from opset 24). Outputs: Y, present_key?, present_value?,
// qk_matmul_output?.
//
// Q is (B, q_heads, S, D) or (B, S, q_heads*D); K (B, kv_heads, L, D) or
// (B, L, kv_heads*D); V likewise with head size Dv. 3-D inputs need the
// q_num_heads and kv_num_heads attributes; past_key/past_value are always
// 4-D (B, kv_heads, P, D|Dv) and are concatenated in front of K/V (the
// result, T = P+L long, is present_key/present_value). Query head h uses
// key/value head h / (q_heads/kv_heads) (grouped-query attention).
//
// For query row i of batch b and head h, over keys j < T:
//
//	qk[j]    = scale · Q[i]·K[j]          (scale defaults to 1/sqrt(D))
//	capped[j] = softcap·tanh(qk[j]/softcap) when softcap > 0, else qk[j]
//	bias[j]  = attn_mask (bool: 0 / -inf; float: added; columns past the
//	           mask's width count as masked), + -inf where causal masking
//	           forbids j, + -inf where j >= nonpad_kv_seqlen[b]
//	p        = softmax(capped + bias), or all zeros when every bias[j] is
//	           -inf (a fully masked row yields zeros, not NaN)
//	Y[i]     = Σ p[j]·V[j]
//
// Causal masking is offset-aligned: key j is allowed iff j <= i + offset,
// with offset = P when past_key is given, nonpad_kv_seqlen[b] - S when only
// nonpad_kv_seqlen is, else 0. qk_matmul_output is qk (mode 0), capped
// (1), capped+bias (2) or p (3). Everything is computed in float64 and
// rounded once to the output type (at least the precision that
// softmax_precision requests).

type attnDims struct {
	B, qH, kvH, S, L, P, T, D, Dv int
	rank3                         bool
}

func attentionKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	q, k, v := kernels.Input(in, 0), kernels.Input(in, 1), kernels.Input(in, 2)
	mask, pastK, pastV, nonpad := kernels.Input(in, 3), kernels.Input(in, 4), kernels.Input(in, 5), kernels.Input(in, 6)
	for i, nm := range []string{"Q", "K", "V"} {
		if err := kernels.CheckFloatInput(n, in[i], nm); err != nil {
			return nil, err
		}
	}
	for i, nm := range []string{"attn_mask", "past_key", "past_value", "nonpad_kv_seqlen"} {
		if err := checkOptional(n, kernels.Input(in, 3+i), nm); err != nil {
			return nil, err
		}
	}
	if k.DType != q.DType || v.DType != q.DType {
		return nil, kernels.Invalidf(n, "Q, K and V must share a dtype, got %v, %v, %v", q.DType, k.DType, v.DType)
	}
	if (pastK == nil) != (pastV == nil) {
		return nil, kernels.Invalidf(n, "past_key and past_value must be given together")
	}
	if pastK != nil && (pastK.DType != q.DType || pastV.DType != q.DType) {
		return nil, kernels.Invalidf(n, "past_key/past_value must have Q's dtype %v", q.DType)
	}
	if mask != nil && mask.DType != graph.Bool && !mask.DType.IsFloat() {
		return nil, kernels.Invalidf(n, "attn_mask has dtype %v, want bool or a float type", mask.DType)
	}
	if nonpad != nil {
		if ctx.Opset < 24 {
			return nil, kernels.Invalidf(n, "nonpad_kv_seqlen needs opset 24 (model imports %d)", ctx.Opset)
		}
		if !nonpad.DType.IsInteger() {
			return nil, kernels.Invalidf(n, "nonpad_kv_seqlen has dtype %v, want int64", nonpad.DType)
		}
	}
	mode := n.AttrInt("qk_matmul_output_mode", 0)
	if mode < 0 || mode > 3 {
		return nil, kernels.Invalidf(n, "qk_matmul_output_mode %d must be 0..3", mode)
	}
	if n.HasAttr("softmax_precision") {
		if sp := graph.DType(n.AttrInt("softmax_precision", 0)); !sp.IsFloat() {
			return nil, kernels.Invalidf(n, "softmax_precision %d is not a float type", int64(sp))
		}
	}

	dm, err := attentionDims(n, q, k, v, pastK, pastV)
	if err != nil {
		return nil, err
	}
	B, qH, kvH, S, L, P, T, D, Dv := dm.B, dm.qH, dm.kvH, dm.S, dm.L, dm.P, dm.T, dm.D, dm.Dv

	scale := 1 / math.Sqrt(float64(D))
	if n.HasAttr("scale") {
		scale = float64(n.AttrFloat("scale", 0))
	}
	softcap := float64(n.AttrFloat("softcap", 0))
	causal := n.AttrInt("is_causal", 0) != 0

	// Working copies: Q as (B, qH, S, D); K and V (with the past in front)
	// as (B, kvH, T, D|Dv), which are also present_key/present_value.
	qv := toBHSD(q.Float64s(), dm.rank3, B, qH, S, D)
	kAll := concatKV(pastK, k, dm.rank3, B, kvH, P, L, D)
	vAll := concatKV(pastV, v, dm.rank3, B, kvH, P, L, Dv)

	// attention mask: broadcast (numpy-aligned) to (B, qH, S, Tm), Tm <= T
	var maskV []float64
	var maskSt [4]int
	Tm := 0
	if mask != nil {
		r := mask.Rank()
		if r < 1 || r > 4 {
			return nil, kernels.Invalidf(n, "attn_mask must have rank 1..4, got %v", mask.Shape)
		}
		Tm = mask.Shape[r-1]
		if Tm > T {
			return nil, kernels.Invalidf(n, "attn_mask %v is wider than the total sequence length %d", mask.Shape, T)
		}
		full := []int{B, qH, S, Tm}
		if bs, err := kernels.BroadcastShapes(full, mask.Shape); err != nil || !graph.SameShape(bs, full) {
			return nil, kernels.Invalidf(n, "attn_mask %v does not broadcast to %v", mask.Shape, full)
		}
		st := kernels.Strides(mask.Shape)
		for i := 0; i < r; i++ {
			if mask.Shape[i] != 1 {
				maskSt[4-r+i] = st[i]
			}
		}
		if mask.DType == graph.Bool {
			mb := mask.Data.([]bool)
			maskV = make([]float64, len(mb))
			for i, ok := range mb {
				if !ok {
					maskV[i] = negInf
				}
			}
		} else {
			maskV = mask.Float64s()
		}
	}

	var lens []int64 // nonpad_kv_seqlen, clamped to a range where it cannot overflow
	if nonpad != nil {
		if nonpad.Len() != B || nonpad.Rank() != 1 {
			return nil, kernels.Invalidf(n, "nonpad_kv_seqlen has shape %v, want [%d]", nonpad.Shape, B)
		}
		lens = nonpad.Int64s()
		for i, l := range lens {
			lens[i] = min(max(l, -1), int64(T)+1)
		}
	}

	y := make([]float64, B*qH*S*Dv)
	var qkOut []float64
	if wants(n, 3) {
		qkOut = make([]float64, B*qH*S*T)
	}
	group := qH / kvH
	qk := make([]float64, T)
	capped := make([]float64, T)
	bias := make([]float64, T)
	prob := make([]float64, T)
	for b := 0; b < B; b++ {
		offset := int64(0)
		switch {
		case pastK != nil:
			offset = int64(P)
		case lens != nil:
			offset = lens[b] - int64(S)
		}
		for h := 0; h < qH; h++ {
			kh := h / group
			kBase := (b*kvH + kh) * T
			for i := 0; i < S; i++ {
				if ctx.Stopped() {
					return nil, ctx.Stop(n)
				}
				qRow := qv[((b*qH+h)*S+i)*D:][:D]
				allMasked := true
				for j := 0; j < T; j++ {
					kRow := kAll[(kBase+j)*D:][:D]
					var dot float64
					for d, qd := range qRow {
						dot += qd * kRow[d]
					}
					s := dot * scale
					qk[j] = s
					if softcap > 0 {
						s = softcap * math.Tanh(s/softcap)
					}
					capped[j] = s
					var bj float64
					if mask != nil {
						if j < Tm {
							bj = maskV[b*maskSt[0]+h*maskSt[1]+i*maskSt[2]+j*maskSt[3]]
						} else {
							bj = negInf
						}
					}
					if causal && int64(j) > int64(i)+offset {
						bj += negInf
					}
					if lens != nil && int64(j) >= lens[b] {
						bj += negInf
					}
					bias[j] = bj
					if !math.IsInf(bj, -1) {
						allMasked = false
					}
				}
				// softmax over capped + bias
				mx := negInf
				for j := 0; j < T; j++ {
					prob[j] = capped[j] + bias[j]
					if prob[j] > mx || prob[j] != prob[j] {
						mx = prob[j]
					}
				}
				if allMasked {
					clear(prob)
				} else {
					var sum float64
					for j := 0; j < T; j++ {
						prob[j] = math.Exp(prob[j] - mx)
						sum += prob[j]
					}
					for j := 0; j < T; j++ {
						prob[j] /= sum
					}
				}
				yRow := y[((b*qH+h)*S+i)*Dv:][:Dv]
				vBase := (b*kvH + kh) * T
				for j := 0; j < T; j++ {
					p := prob[j]
					if p == 0 {
						continue
					}
					vRow := vAll[(vBase+j)*Dv:][:Dv]
					for d := range yRow {
						yRow[d] += p * vRow[d]
					}
				}
				if qkOut != nil {
					row := qkOut[((b*qH+h)*S+i)*T:][:T]
					for j := range row {
						switch mode {
						case 0:
							row[j] = qk[j]
						case 1:
							row[j] = capped[j]
						case 2:
							row[j] = capped[j] + bias[j]
						case 3:
							row[j] = prob[j]
						}
					}
				}
			}
		}
	}

	outs := make([]*graph.Tensor, len(n.Outputs))
	if dm.rank3 {
		y = fromBHSD(y, B, qH, S, Dv)
		outs[0], err = kernels.NewFromFloat64(ctx, n, q.DType, []int{B, S, qH * Dv}, y)
	} else {
		outs[0], err = kernels.NewFromFloat64(ctx, n, q.DType, []int{B, qH, S, Dv}, y)
	}
	if err != nil {
		return nil, err
	}
	if wants(n, 1) {
		if outs[1], err = kernels.NewFromFloat64(ctx, n, q.DType, []int{B, kvH, T, D}, kAll); err != nil {
			return nil, err
		}
	}
	if wants(n, 2) {
		if outs[2], err = kernels.NewFromFloat64(ctx, n, q.DType, []int{B, kvH, T, Dv}, vAll); err != nil {
			return nil, err
		}
	}
	if qkOut != nil {
		if outs[3], err = kernels.NewFromFloat64(ctx, n, q.DType, []int{B, qH, S, T}, qkOut); err != nil {
			return nil, err
		}
	}
	return outs, nil
}

// attentionDims validates the shapes of Q, K, V and the past and returns
// the problem sizes.
func attentionDims(n *graph.Node, q, k, v, pastK, pastV *graph.Tensor) (attnDims, error) {
	var dm attnDims
	if q.Rank() != k.Rank() || q.Rank() != v.Rank() || (q.Rank() != 3 && q.Rank() != 4) {
		return dm, kernels.Invalidf(n, "Q %v, K %v and V %v must all be 3-D or all 4-D", q.Shape, k.Shape, v.Shape)
	}
	qAttr, kvAttr := n.AttrInt("q_num_heads", 0), n.AttrInt("kv_num_heads", 0)
	if qAttr < 0 || kvAttr < 0 {
		return dm, kernels.Invalidf(n, "q_num_heads %d and kv_num_heads %d must be positive", qAttr, kvAttr)
	}
	if q.Rank() == 3 {
		dm.rank3 = true
		if qAttr == 0 || kvAttr == 0 {
			return dm, kernels.Invalidf(n, "3-D inputs need the q_num_heads and kv_num_heads attributes")
		}
		dm.qH, dm.kvH = int(qAttr), int(kvAttr)
		dm.B, dm.S, dm.L = q.Shape[0], q.Shape[1], k.Shape[1]
		if q.Shape[2]%dm.qH != 0 || k.Shape[2]%dm.kvH != 0 || v.Shape[2]%dm.kvH != 0 {
			return dm, kernels.Invalidf(n, "hidden sizes of Q %v, K %v, V %v must be multiples of q_num_heads %d / kv_num_heads %d", q.Shape, k.Shape, v.Shape, dm.qH, dm.kvH)
		}
		dm.D, dm.Dv = q.Shape[2]/dm.qH, v.Shape[2]/dm.kvH
		if k.Shape[2]/dm.kvH != dm.D {
			return dm, kernels.Invalidf(n, "K head size %d differs from Q head size %d", k.Shape[2]/dm.kvH, dm.D)
		}
		if k.Shape[0] != dm.B || v.Shape[0] != dm.B || v.Shape[1] != dm.L {
			return dm, kernels.Invalidf(n, "Q %v, K %v and V %v disagree on batch or sequence sizes", q.Shape, k.Shape, v.Shape)
		}
	} else {
		dm.B, dm.qH, dm.S, dm.D = q.Shape[0], q.Shape[1], q.Shape[2], q.Shape[3]
		dm.kvH, dm.L, dm.Dv = k.Shape[1], k.Shape[2], v.Shape[3]
		if k.Shape[0] != dm.B || v.Shape[0] != dm.B || k.Shape[3] != dm.D || v.Shape[1] != dm.kvH || v.Shape[2] != dm.L {
			return dm, kernels.Invalidf(n, "Q %v, K %v and V %v have inconsistent shapes", q.Shape, k.Shape, v.Shape)
		}
		if (qAttr != 0 && int(qAttr) != dm.qH) || (kvAttr != 0 && int(kvAttr) != dm.kvH) {
			return dm, kernels.Invalidf(n, "q_num_heads %d / kv_num_heads %d disagree with Q %v, K %v", qAttr, kvAttr, q.Shape, k.Shape)
		}
	}
	if dm.kvH == 0 || dm.qH%dm.kvH != 0 {
		if dm.qH == 0 && dm.kvH == 0 {
			dm.kvH = 1 // empty problem; avoid dividing by zero
		} else {
			return dm, kernels.Invalidf(n, "q_num_heads %d must be a multiple of kv_num_heads %d", dm.qH, dm.kvH)
		}
	}
	if pastK != nil {
		if pastK.Rank() != 4 || pastV.Rank() != 4 {
			return dm, kernels.Invalidf(n, "past_key %v and past_value %v must be 4-D", pastK.Shape, pastV.Shape)
		}
		dm.P = pastK.Shape[2]
		if !graph.SameShape(pastK.Shape, []int{dm.B, dm.kvH, dm.P, dm.D}) || !graph.SameShape(pastV.Shape, []int{dm.B, dm.kvH, dm.P, dm.Dv}) {
			return dm, kernels.Invalidf(n, "past_key %v / past_value %v do not match (batch %d, kv heads %d, head sizes %d/%d)", pastK.Shape, pastV.Shape, dm.B, dm.kvH, dm.D, dm.Dv)
		}
	}
	dm.T = dm.P + dm.L
	// refuse work that could not have been allocated anyway
	for _, sh := range [][]int{{dm.B, dm.qH, dm.S, dm.T}, {dm.B, dm.qH, dm.S, dm.Dv}} {
		if _, err := graph.CheckAlloc(graph.Float64, sh); err != nil {
			return dm, kernels.Invalidf(n, "%v", err)
		}
	}
	return dm, nil
}

// toBHSD returns x as (B, H, S, D): a copy of x when it is 4-D, or x
// (B, S, H*D) transposed.
func toBHSD(x []float64, rank3 bool, B, H, S, D int) []float64 {
	if !rank3 {
		return x
	}
	out := make([]float64, len(x))
	for b := 0; b < B; b++ {
		for s := 0; s < S; s++ {
			for h := 0; h < H; h++ {
				copy(out[((b*H+h)*S+s)*D:][:D], x[((b*S+s)*H+h)*D:][:D])
			}
		}
	}
	return out
}

// fromBHSD transposes (B, H, S, D) to (B, S, H*D).
func fromBHSD(x []float64, B, H, S, D int) []float64 {
	out := make([]float64, len(x))
	for b := 0; b < B; b++ {
		for h := 0; h < H; h++ {
			for s := 0; s < S; s++ {
				copy(out[((b*S+s)*H+h)*D:][:D], x[((b*H+h)*S+s)*D:][:D])
			}
		}
	}
	return out
}

// concatKV returns past (B, H, P, D) followed by cur (B, H, L, D, or
// (B, L, H*D) when rank3) along the sequence axis.
func concatKV(past, cur *graph.Tensor, rank3 bool, B, H, P, L, D int) []float64 {
	c := toBHSD(cur.Float64s(), rank3, B, H, L, D)
	if past == nil {
		return c
	}
	p := past.Float64s()
	T := P + L
	out := make([]float64, B*H*T*D)
	for bh := 0; bh < B*H; bh++ {
		copy(out[bh*T*D:][:P*D], p[bh*P*D:][:P*D])
		copy(out[(bh*T+P)*D:][:L*D], c[bh*L*D:][:L*D])
	}
	return out
}
