package contrib

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/core/ops/contrib"
)

func init() {
	kernels.RegisterKernel(contrib.Domain, "Attention", attentionKernel)
	kernels.RegisterKernel(contrib.Domain, "MultiHeadAttention", mhaKernel)
}

// core is scaled dot-product attention on per-head views, shared by
// Attention and MultiHeadAttention (and sized for grouped key/value heads):
//
//	scores[b,n,i,j] = scale·q[b,n,i]·k[b,n/g,j] + bias[b,n,i,j] + mask[b,i,j]
//	out[b,i,n]      = Σ_j softmax_j(scores[b,n,i,·]) · v[b,n/g,j]
//
// with g = N/KvN query heads per key/value head. Softmax subtracts the row
// maximum, so a row masked everywhere with the same finite value comes out
// uniform, as in ONNX Runtime.
type core struct {
	B, N, KvN, S, T, H, Hv int
	q                      []float64 // (B, N, S, H)
	k                      []float64 // (B, KvN, T, H)
	v                      []float64 // (B, KvN, T, Hv)
	scale                  float64
	mask                   []float64 // (B, S, T) additive, or nil
	bias                   []float64 // (B|1, N|1, S, T) additive, or nil
	biasB, biasN           bool      // whether bias has the full batch / head dim
}

// run returns the output (B, S, N·Hv) and, when keepQK, the scores before
// the softmax (B, N, S, T).
func (c *core) run(ctx *kernels.Context, n *graph.Node, keepQK bool) (out, qk []float64, err error) {
	out = make([]float64, c.B*c.S*c.N*c.Hv)
	if keepQK {
		qk = make([]float64, c.B*c.N*c.S*c.T)
	}
	row := make([]float64, c.T)
	g := c.N / c.KvN
	for b := 0; b < c.B; b++ {
		for h := 0; h < c.N; h++ {
			if ctx.Stopped() {
				return nil, nil, ctx.Stop(n)
			}
			kh := h / g
			kBase := (b*c.KvN + kh) * c.T
			for i := 0; i < c.S; i++ {
				q := c.q[((b*c.N+h)*c.S+i)*c.H:][:c.H]
				mx := math.Inf(-1)
				for j := 0; j < c.T; j++ {
					k := c.k[(kBase+j)*c.H:][:c.H]
					var dot float64
					for d, qv := range q {
						dot += qv * k[d]
					}
					s := dot * c.scale
					if c.bias != nil {
						bb, bh := 0, 0
						if c.biasB {
							bb = b
						}
						if c.biasN {
							bh = h
						}
						nh := 1
						if c.biasN {
							nh = c.N
						}
						s += c.bias[((bb*nh+bh)*c.S+i)*c.T+j]
					}
					if c.mask != nil {
						s += c.mask[(b*c.S+i)*c.T+j]
					}
					row[j] = s
					mx = math.Max(mx, s)
				}
				if qk != nil {
					copy(qk[((b*c.N+h)*c.S+i)*c.T:], row)
				}
				var sum float64
				for j, s := range row {
					e := math.Exp(s - mx)
					row[j] = e
					sum += e
				}
				o := out[((b*c.S+i)*c.N+h)*c.Hv:][:c.Hv]
				for j, p := range row {
					p /= sum
					v := c.v[(kBase+j)*c.Hv:][:c.Hv]
					for d := range o {
						o[d] += p * v[d]
					}
				}
			}
		}
	}
	return out, qk, nil
}

// setBias validates an additive attention bias (B|1, N|1, S, T).
func (c *core) setBias(n *graph.Node, t *graph.Tensor) error {
	if t == nil {
		return nil
	}
	if t.Rank() != 4 || (t.Shape[0] != 1 && t.Shape[0] != c.B) || (t.Shape[1] != 1 && t.Shape[1] != c.N) ||
		t.Shape[2] != c.S || t.Shape[3] != c.T {
		return kernels.Invalidf(n, "attention_bias has shape %v, want [%d|1 %d|1 %d %d]", t.Shape, c.B, c.N, c.S, c.T)
	}
	c.bias = t.Float64s()
	c.biasB, c.biasN = t.Shape[0] == c.B && c.B != 1, t.Shape[1] == c.N && c.N != 1
	if c.B == 1 {
		c.biasB = false
	}
	return nil
}

// buildMask turns a key padding mask into an additive (B, S, T) mask:
// masked keys get filter, and with causal every key j > i + (T - S) of
// query i gets float32's lowest value. Accepted masks: 1-D (B) end
// positions, 1-D (2B) end then start positions, 2-D (B, T) and 3-D (B, S,
// T) raw 0/1 masks. Returns nil when nothing is masked.
func buildMask(n *graph.Node, m *graph.Tensor, B, S, T int, causal bool, filter float64) ([]float64, error) {
	if m == nil && !causal {
		return nil, nil
	}
	mask := make([]float64, B*S*T)
	if m != nil {
		switch {
		case m.Rank() == 1 && (m.Shape[0] == B || m.Shape[0] == 2*B):
			for b := 0; b < B; b++ {
				end, start := m.Int64At(b), int64(0)
				if m.Shape[0] == 2*B {
					start = m.Int64At(B + b)
				}
				for i := 0; i < S; i++ {
					for j := 0; j < T; j++ {
						if int64(j) >= end || int64(j) < start {
							mask[(b*S+i)*T+j] = filter
						}
					}
				}
			}
		case m.Rank() == 2 && m.Shape[0] == B && m.Shape[1] == T:
			for b := 0; b < B; b++ {
				for i := 0; i < S; i++ {
					for j := 0; j < T; j++ {
						if m.Int64At(b*T+j) == 0 {
							mask[(b*S+i)*T+j] = filter
						}
					}
				}
			}
		case m.Rank() == 3 && m.Shape[0] == B && m.Shape[1] == S && m.Shape[2] == T:
			for i := range mask {
				if m.Int64At(i) == 0 {
					mask[i] = filter
				}
			}
		case m.Rank() == 4:
			return nil, kernels.Unsupportedf(n, "4-D mask %v (Megatron layout) is not supported", m.Shape)
		default:
			return nil, kernels.Invalidf(n, "mask has shape %v; want [%d], [%d], [%d %d] or [%d %d %d]", m.Shape, B, 2*B, B, T, B, S, T)
		}
	}
	if causal {
		off := T - S
		for b := 0; b < B; b++ {
			for i := 0; i < S; i++ {
				for j := max(i+off+1, 0); j < T; j++ {
					mask[(b*S+i)*T+j] = lowest
				}
			}
		}
	}
	return mask, nil
}

// headsOf reorders (B, L, N·H) rows starting at column off of a row of
// width stride into (B, N, L, H), adding bias[off:] when given.
func headsOf(src []float64, B, L, N, H, stride, off int, bias []float64) []float64 {
	dst := make([]float64, B*N*L*H)
	for b := 0; b < B; b++ {
		for l := 0; l < L; l++ {
			r := src[(b*L+l)*stride+off:]
			for h := 0; h < N; h++ {
				d := dst[((b*N+h)*L+l)*H:][:H]
				for x := range d {
					d[x] = r[h*H+x]
					if bias != nil {
						d[x] += bias[off+h*H+x]
					}
				}
			}
		}
	}
	return dst
}

// concatPast joins past (B, N, P, H) and cur (B, N, L, H) along the
// sequence axis.
func concatPast(past, cur []float64, B, N, P, L, H int) []float64 {
	if P == 0 {
		return cur
	}
	T := P + L
	dst := make([]float64, B*N*T*H)
	for bh := 0; bh < B*N; bh++ {
		copy(dst[bh*T*H:], past[bh*P*H:(bh+1)*P*H])
		copy(dst[(bh*T+P)*H:], cur[bh*L*H:(bh+1)*L*H])
	}
	return dst
}

// scaleOf is the scale attribute, or 1/√head_size when it is 0.
func scaleOf(n *graph.Node, headSize int) float64 {
	if s := n.AttrFloat("scale", 0); s != 0 {
		return float64(s)
	}
	return 1 / math.Sqrt(float64(headSize))
}

// ---- Attention (com.microsoft) ----
//
// input (B, S, D_in) · weights (D_in, Dq+Dk+Dv) + bias gives Q, K and V
// (Dq = Dk; qkv_hidden_sizes, else three equal parts), split into
// num_heads heads. past (2, B, N, P, H) is prepended to K and V and
// present (2, B, N, P+S, H) returned. mask_index is a key padding mask
// (see buildMask, masked keys get mask_filter_value, default -10000);
// unidirectional adds the causal mask; attention_bias (B|1, N|1, S, T) is
// added to the scaled scores.

func attentionKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x, w, bias, mask, past, abias := kernels.Input(in, 0), kernels.Input(in, 1), kernels.Input(in, 2),
		kernels.Input(in, 3), kernels.Input(in, 4), kernels.Input(in, 5)
	if err := kernels.CheckFloatInput(n, x, "input"); err != nil {
		return nil, err
	}
	if err := kernels.CheckFloatInput(n, w, "weights"); err != nil {
		return nil, err
	}
	for i, what := range []string{2: "bias", 4: "past", 5: "attention_bias"} {
		if what != "" {
			if err := checkOptFloat(n, kernels.Input(in, i), what); err != nil {
				return nil, err
			}
		}
	}
	if err := checkInts(n, mask, "mask_index"); err != nil {
		return nil, err
	}
	if n.AttrInt("past_present_share_buffer", 0) != 0 || kernels.Input(in, 6) != nil {
		return nil, kernels.Unsupportedf(n, "past_present_share_buffer / past_sequence_length are not supported")
	}
	if n.AttrInt("do_rotary", 0) != 0 {
		return nil, kernels.Unsupportedf(n, "do_rotary is not supported")
	}
	N := int(n.AttrInt("num_heads", 0))
	if N <= 0 {
		return nil, kernels.Invalidf(n, "num_heads must be positive, got %d", N)
	}
	if x.Rank() != 3 {
		return nil, kernels.Invalidf(n, "input must be 3-D (batch, sequence, hidden), got %v", x.Shape)
	}
	B, S, Din := x.Shape[0], x.Shape[1], x.Shape[2]
	if w.Rank() != 2 || w.Shape[0] != Din {
		return nil, kernels.Invalidf(n, "weights have shape %v, want [%d, 3·hidden]", w.Shape, Din)
	}
	W := w.Shape[1]
	dq, dk, dv := W/3, W/3, W-2*(W/3)
	if sz := n.AttrInts("qkv_hidden_sizes", nil); sz != nil {
		if len(sz) != 3 || sz[0] <= 0 || sz[1] <= 0 || sz[2] <= 0 || int(sz[0]+sz[1]+sz[2]) != W {
			return nil, kernels.Invalidf(n, "qkv_hidden_sizes %v must be 3 positive sizes summing to %d", sz, W)
		}
		dq, dk, dv = int(sz[0]), int(sz[1]), int(sz[2])
	} else if W%3 != 0 {
		return nil, kernels.Invalidf(n, "weights width %d is not a multiple of 3", W)
	}
	if dq != dk || dq%N != 0 || dv%N != 0 {
		return nil, kernels.Invalidf(n, "Q, K, V hidden sizes %d, %d, %d must have Q = K and be multiples of num_heads %d", dq, dk, dv, N)
	}
	H, Hv := dq/N, dv/N
	bv, err := vec1(n, bias, W, "bias")
	if err != nil {
		return nil, err
	}
	P := 0
	if past != nil {
		if H != Hv {
			return nil, kernels.Invalidf(n, "past needs equal Q/K and V head sizes, got %d and %d", H, Hv)
		}
		if past.Rank() != 5 || past.Shape[0] != 2 || past.Shape[1] != B || past.Shape[2] != N || past.Shape[4] != H {
			return nil, kernels.Invalidf(n, "past has shape %v, want [2 %d %d past %d]", past.Shape, B, N, H)
		}
		P = past.Shape[3]
	}
	T := P + S
	// projection (B·S, W)
	xv, wv := x.Float64s(), w.Float64s()
	proj := make([]float64, B*S*W)
	for r := 0; r < B*S; r++ {
		if r%64 == 0 && ctx.Stopped() {
			return nil, ctx.Stop(n)
		}
		xr, pr := xv[r*Din:(r+1)*Din], proj[r*W:(r+1)*W]
		for d, a := range xr {
			if a == 0 {
				continue
			}
			wr := wv[d*W : (d+1)*W]
			for c := range pr {
				pr[c] += a * wr[c]
			}
		}
	}
	q := headsOf(proj, B, S, N, H, W, 0, bv)
	k := headsOf(proj, B, S, N, H, W, dq, bv)
	v := headsOf(proj, B, S, N, Hv, W, dq+dk, bv)
	if past != nil {
		pv := past.Float64s()
		half := len(pv) / 2
		k = concatPast(pv[:half], k, B, N, P, S, H)
		v = concatPast(pv[half:], v, B, N, P, S, H)
	}
	c := &core{B: B, N: N, KvN: N, S: S, T: T, H: H, Hv: Hv, q: q, k: k, v: v, scale: scaleOf(n, H)}
	if c.mask, err = attentionMask(n, mask, B, S, T, n.AttrInt("unidirectional", 0) != 0); err != nil {
		return nil, err
	}
	if err := c.setBias(n, abias); err != nil {
		return nil, err
	}
	o, _, err := c.run(ctx, n, false)
	if err != nil {
		return nil, err
	}
	res := make([]*graph.Tensor, len(n.Outputs))
	if res[0], err = kernels.NewFromFloat64(ctx, n, x.DType, []int{B, S, N * Hv}, o); err != nil {
		return nil, err
	}
	if wants(n, 1) {
		pres := append(append(make([]float64, 0, len(k)+len(v)), k...), v...)
		if res[1], err = kernels.NewFromFloat64(ctx, n, x.DType, []int{2, B, N, T, H}, pres); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// attentionMask is buildMask for Attention: a 2-D mask of shape (1, 1) or
// (B, 1) while T > 1 is a dummy ONNX Runtime ignores.
func attentionMask(n *graph.Node, m *graph.Tensor, B, S, T int, causal bool) ([]float64, error) {
	if m != nil && m.Rank() == 2 && m.Shape[1] == 1 && T != 1 && (m.Shape[0] == 1 || m.Shape[0] == B) {
		m = nil
	}
	return buildMask(n, m, B, S, T, causal, float64(n.AttrFloat("mask_filter_value", -10000)))
}

// ---- MultiHeadAttention (com.microsoft) ----
//
// query (B, S, N·H), or packed (B, S, N, 3, H) with key and value
// omitted; key (B, L, N·H), (B, N, L, H) or packed (B, L, N, 2, H) with
// value omitted; value (B, L, N·Hv) or (B, N, L, Hv). bias (Dq+Dk+Dv) is
// added to the 3-D / packed projections; past_key / past_value (B, N, P,
// H) are prepended and present_key / present_value (B, N, P+L, H)
// returned; key_padding_mask and unidirectional as for Attention,
// attention_bias (B|1, N|1, S, T) added; output 3 is the scores before
// the softmax (B, N, S, T).

func mhaKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	q, k, v, bias, kpm, abias, pk, pv := kernels.Input(in, 0), kernels.Input(in, 1), kernels.Input(in, 2), kernels.Input(in, 3),
		kernels.Input(in, 4), kernels.Input(in, 5), kernels.Input(in, 6), kernels.Input(in, 7)
	if err := kernels.CheckFloatInput(n, q, "query"); err != nil {
		return nil, err
	}
	for i, what := range []string{1: "key", 2: "value", 3: "bias", 5: "attention_bias", 6: "past_key", 7: "past_value"} {
		if what != "" {
			if err := checkOptFloat(n, kernels.Input(in, i), what); err != nil {
				return nil, err
			}
		}
	}
	if err := checkInts(n, kpm, "key_padding_mask"); err != nil {
		return nil, err
	}
	N := int(n.AttrInt("num_heads", 0))
	if N <= 0 {
		return nil, kernels.Invalidf(n, "num_heads must be positive, got %d", N)
	}
	if (pk == nil) != (pv == nil) {
		return nil, kernels.Invalidf(n, "past_key and past_value must be given together")
	}
	var B, S, L, H, Hv int
	var qh, kh, vh []float64
	kvBNSH := false
	switch q.Rank() {
	case 5:
		if k != nil || v != nil {
			return nil, kernels.Invalidf(n, "packed query %v takes no key or value", q.Shape)
		}
		B, S, H = q.Shape[0], q.Shape[1], q.Shape[4]
		if q.Shape[2] != N || q.Shape[3] != 3 {
			return nil, kernels.Invalidf(n, "packed query has shape %v, want [B S %d 3 H]", q.Shape, N)
		}
		L, Hv = S, H
		bv, err := vec1(n, bias, 3*N*H, "bias")
		if err != nil {
			return nil, err
		}
		qh, kh, vh = unpack(q.Float64s(), B, S, N, 3, H, bv)
	case 3:
		B, S = q.Shape[0], q.Shape[1]
		if q.Shape[2]%N != 0 {
			return nil, kernels.Invalidf(n, "query hidden size %d is not a multiple of num_heads %d", q.Shape[2], N)
		}
		H = q.Shape[2] / N
		if k == nil {
			return nil, kernels.Invalidf(n, "3-D query needs key and value")
		}
		switch k.Rank() {
		case 5:
			if v != nil || k.Shape[0] != B || k.Shape[2] != N || k.Shape[3] != 2 || k.Shape[4] != H {
				return nil, kernels.Invalidf(n, "packed key has shape %v, want [%d L %d 2 %d] and no value", k.Shape, B, N, H)
			}
			L, Hv = k.Shape[1], H
			bv, err := vec1(n, bias, 3*N*H, "bias")
			if err != nil {
				return nil, err
			}
			qh = headsOf(q.Float64s(), B, S, N, H, N*H, 0, bv)
			var kb []float64
			if bv != nil {
				kb = bv[N*H:]
			}
			kh, vh, _ = unpack(k.Float64s(), B, L, N, 2, H, kb)
		case 3, 4:
			if v == nil || v.Rank() != k.Rank() {
				return nil, kernels.Invalidf(n, "key %v and value %v must both be 3-D or both 4-D", k.Shape, shapeOf(v))
			}
			if k.Rank() == 3 {
				if k.Shape[0] != B || k.Shape[2] != N*H || v.Shape[0] != B || v.Shape[1] != k.Shape[1] || v.Shape[2]%N != 0 {
					return nil, kernels.Invalidf(n, "key %v / value %v do not match query %v with %d heads", k.Shape, v.Shape, q.Shape, N)
				}
				L, Hv = k.Shape[1], v.Shape[2]/N
				bv, err := vec1(n, bias, 2*N*H+N*Hv, "bias")
				if err != nil {
					return nil, err
				}
				qh = headsOf(q.Float64s(), B, S, N, H, N*H, 0, bv)
				var kb, vb []float64
				if bv != nil {
					kb, vb = bv[N*H:], bv[2*N*H:]
				}
				kh = headsOf(k.Float64s(), B, L, N, H, N*H, 0, kb)
				vh = headsOf(v.Float64s(), B, L, N, Hv, N*Hv, 0, vb)
			} else {
				if k.Shape[0] != B || k.Shape[1] != N || k.Shape[3] != H || v.Shape[0] != B || v.Shape[1] != N || v.Shape[2] != k.Shape[2] {
					return nil, kernels.Invalidf(n, "key %v / value %v must be [%d %d L %d] / [%d %d L Hv]", k.Shape, v.Shape, B, N, H, B, N)
				}
				if bias != nil || pk != nil {
					return nil, kernels.Unsupportedf(n, "4-D key/value with bias or past is not supported")
				}
				L, Hv = k.Shape[2], v.Shape[3]
				qh = headsOf(q.Float64s(), B, S, N, H, N*H, 0, nil)
				kh, vh = k.Float64s(), v.Float64s()
				kvBNSH = true
			}
		default:
			return nil, kernels.Invalidf(n, "key must be 3-D, 4-D or packed 5-D, got %v", k.Shape)
		}
	default:
		return nil, kernels.Invalidf(n, "query must be 3-D or packed 5-D, got %v", q.Shape)
	}
	P := 0
	if pk != nil && !kvBNSH {
		if pk.Rank() != 4 || pk.Shape[0] != B || pk.Shape[1] != N || pk.Shape[3] != H {
			return nil, kernels.Invalidf(n, "past_key has shape %v, want [%d %d P %d]", pk.Shape, B, N, H)
		}
		P = pk.Shape[2]
		if pv.Rank() != 4 || pv.Shape[0] != B || pv.Shape[1] != N || pv.Shape[2] != P || pv.Shape[3] != Hv {
			return nil, kernels.Invalidf(n, "past_value has shape %v, want [%d %d %d %d]", pv.Shape, B, N, P, Hv)
		}
		kh = concatPast(pk.Float64s(), kh, B, N, P, L, H)
		vh = concatPast(pv.Float64s(), vh, B, N, P, L, Hv)
	}
	T := P + L
	c := &core{B: B, N: N, KvN: N, S: S, T: T, H: H, Hv: Hv, q: qh, k: kh, v: vh, scale: scaleOf(n, H)}
	var err error
	if c.mask, err = buildMask(n, kpm, B, S, T, n.AttrInt("unidirectional", 0) != 0, float64(n.AttrFloat("mask_filter_value", -10000))); err != nil {
		return nil, err
	}
	if err := c.setBias(n, abias); err != nil {
		return nil, err
	}
	o, qk, err := c.run(ctx, n, wants(n, 3))
	if err != nil {
		return nil, err
	}
	res := make([]*graph.Tensor, len(n.Outputs))
	if res[0], err = kernels.NewFromFloat64(ctx, n, q.DType, []int{B, S, N * Hv}, o); err != nil {
		return nil, err
	}
	if wants(n, 1) {
		if res[1], err = kernels.NewFromFloat64(ctx, n, q.DType, []int{B, N, T, H}, kh); err != nil {
			return nil, err
		}
	}
	if wants(n, 2) {
		if res[2], err = kernels.NewFromFloat64(ctx, n, q.DType, []int{B, N, T, Hv}, vh); err != nil {
			return nil, err
		}
	}
	if wants(n, 3) {
		if res[3], err = kernels.NewFromFloat64(ctx, n, q.DType, []int{B, N, S, T}, qk); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// unpack splits a packed (B, L, N, m, H) tensor (m = 2 or 3) into m
// per-head (B, N, L, H) views, adding bias (m·N·H, laid out part by part)
// when given.
func unpack(src []float64, B, L, N, m, H int, bias []float64) (a, b, c []float64) {
	parts := make([][]float64, 3)
	for p := 0; p < m; p++ {
		dst := make([]float64, B*N*L*H)
		for bb := 0; bb < B; bb++ {
			for l := 0; l < L; l++ {
				for h := 0; h < N; h++ {
					s := src[(((bb*L+l)*N+h)*m+p)*H:][:H]
					d := dst[((bb*N+h)*L+l)*H:][:H]
					for x := range d {
						d[x] = s[x]
						if bias != nil {
							d[x] += bias[(p*N+h)*H+x]
						}
					}
				}
			}
		}
		parts[p] = dst
	}
	return parts[0], parts[1], parts[2]
}

func shapeOf(t *graph.Tensor) []int {
	if t == nil {
		return nil
	}
	return t.Shape
}
