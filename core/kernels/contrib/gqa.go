package contrib

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/core/ops/contrib"
)

func init() {
	kernels.RegisterKernel(contrib.Domain, "GroupQueryAttention", gqaKernel)
}

// ---- GroupQueryAttention (com.microsoft) ----
//
// Inputs: query (B, S, N·H), key and value (B, S, KV·H) — or query packed
// (B, S, (N+2·KV)·H) with key and value omitted —, past_key and
// past_value (B, KV, P, H) (P may exceed what is used: a cache buffer),
// seqlens_k int32 (B): the total length of each sequence minus 1,
// total_sequence_length int32 scalar, and with do_rotary cos_cache and
// sin_cache (max_position, H/2). Query heads share key/value heads in
// groups of N/KV (head h uses key/value head h/(N/KV)).
//
// For batch b, the past length is p = seqlens_k[b] + 1 - S; the new keys
// and values (rotated at positions p..p+S-1 with do_rotary, halves or
// interleaved pairs; the queries too) go to positions p..p+S-1 of the
// present outputs (B, KV, max(P, total_sequence_length), H) after the
// first p positions of the past; the rest is zero. Query s attends
// causally to keys 0..p+s: softmax(scale·q·k (softcap·tanh(x/softcap)
// when softcap > 0)) · v, scale defaulting to 1/√H.
//
// Not implemented (refused): position_ids, attention_bias, head_sink,
// local_window_size, smooth_softmax, the output_qk output, and a first
// prompt with padding (seqlens_k + 1 < S).

func gqaKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	q := kernels.Input(in, 0)
	if err := kernels.CheckFloatInput(n, q, "query"); err != nil {
		return nil, err
	}
	for i, what := range map[int]string{9: "position_ids", 10: "attention_bias", 11: "head_sink"} {
		if kernels.Input(in, i) != nil {
			return nil, kernels.Unsupportedf(n, "input %s is not supported", what)
		}
	}
	if wants(n, 3) {
		return nil, kernels.Unsupportedf(n, "the output_qk output is not supported")
	}
	if w := n.AttrInt("local_window_size", -1); w != -1 {
		return nil, kernels.Unsupportedf(n, "local_window_size %d is not supported (only -1)", w)
	}
	if n.AttrInt("smooth_softmax", 0) != 0 {
		return nil, kernels.Unsupportedf(n, "smooth_softmax is not supported")
	}
	N, KV := int(n.AttrInt("num_heads", 0)), int(n.AttrInt("kv_num_heads", 0))
	if N <= 0 || KV <= 0 || N%KV != 0 {
		return nil, kernels.Invalidf(n, "num_heads %d and kv_num_heads %d must be positive, num_heads a multiple", N, KV)
	}
	if q.Rank() != 3 {
		return nil, kernels.Invalidf(n, "query must be 3-D, got %v", q.Shape)
	}
	B, S := q.Shape[0], q.Shape[1]
	k, v := kernels.Input(in, 1), kernels.Input(in, 2)
	var H int
	var qv, kv, vv []float64
	qs := q.Float64s()
	if k == nil && v == nil {
		if q.Shape[2]%(N+2*KV) != 0 {
			return nil, kernels.Invalidf(n, "packed query width %d is not a multiple of %d heads", q.Shape[2], N+2*KV)
		}
		H = q.Shape[2] / (N + 2*KV)
		qv, kv, vv = make([]float64, B*S*N*H), make([]float64, B*S*KV*H), make([]float64, B*S*KV*H)
		for r := 0; r < B*S; r++ {
			row := qs[r*(N+2*KV)*H:]
			copy(qv[r*N*H:(r+1)*N*H], row[:N*H])
			copy(kv[r*KV*H:(r+1)*KV*H], row[N*H:(N+KV)*H])
			copy(vv[r*KV*H:(r+1)*KV*H], row[(N+KV)*H:(N+2*KV)*H])
		}
	} else {
		if err := kernels.CheckFloatInput(n, k, "key"); err != nil {
			return nil, err
		}
		if err := kernels.CheckFloatInput(n, v, "value"); err != nil {
			return nil, err
		}
		if q.Shape[2]%N != 0 {
			return nil, kernels.Invalidf(n, "query width %d is not a multiple of %d heads", q.Shape[2], N)
		}
		H = q.Shape[2] / N
		want := []int{B, S, KV * H}
		if !graph.SameShape(k.Shape, want) || !graph.SameShape(v.Shape, want) {
			return nil, kernels.Invalidf(n, "key %v and value %v must be %v", k.Shape, v.Shape, want)
		}
		qv, kv, vv = qs, k.Float64s(), v.Float64s()
	}
	pk, pv := kernels.Input(in, 3), kernels.Input(in, 4)
	P := 0
	if (pk == nil) != (pv == nil) {
		return nil, kernels.Invalidf(n, "past_key and past_value must be given together")
	}
	if pk != nil {
		if err := checkOptFloat(n, pk, "past_key"); err != nil {
			return nil, err
		}
		if pk.Rank() != 4 || pk.Shape[0] != B || pk.Shape[1] != KV || pk.Shape[3] != H || !graph.SameShape(pk.Shape, pv.Shape) {
			return nil, kernels.Invalidf(n, "past_key %v and past_value %v must be [%d %d P %d]", pk.Shape, pv.Shape, B, KV, H)
		}
		P = pk.Shape[2]
	}
	sl, tot := kernels.Input(in, 5), kernels.Input(in, 6)
	if err := checkInts(n, sl, "seqlens_k"); err != nil {
		return nil, err
	}
	if err := checkInts(n, tot, "total_sequence_length"); err != nil {
		return nil, err
	}
	if sl == nil || tot == nil || sl.Len() != B || tot.Len() != 1 {
		return nil, kernels.Invalidf(n, "seqlens_k must have %d values and total_sequence_length one", B)
	}
	total := int(tot.Int64At(0))
	T := max(P, total)
	past := make([]int, B)
	for b := range past {
		past[b] = int(sl.Int64At(b)) + 1 - S
		if past[b] < 0 {
			return nil, kernels.Unsupportedf(n, "seqlens_k[%d] = %d: a padded first prompt is not supported", b, sl.Int64At(b))
		}
		if past[b]+S > T || past[b] > P && P > 0 || P == 0 && past[b] != 0 {
			return nil, kernels.Invalidf(n, "seqlens_k[%d] = %d does not fit a past of %d and a total of %d", b, sl.Int64At(b), P, total)
		}
	}
	if n.AttrInt("do_rotary", 0) != 0 {
		cosT, sinT := kernels.Input(in, 7), kernels.Input(in, 8)
		if err := kernels.CheckFloatInput(n, cosT, "cos_cache"); err != nil {
			return nil, err
		}
		if err := kernels.CheckFloatInput(n, sinT, "sin_cache"); err != nil {
			return nil, err
		}
		if cosT.Rank() != 2 || !graph.SameShape(cosT.Shape, sinT.Shape) || 2*cosT.Shape[1] > H || cosT.Shape[1] == 0 {
			return nil, kernels.Invalidf(n, "cos_cache %v and sin_cache %v must be [max_position, ≤ %d]", cosT.Shape, sinT.Shape, H/2)
		}
		width := cosT.Shape[1]
		cv, sv := cosT.Float64s(), sinT.Float64s()
		inter := n.AttrInt("rotary_interleaved", 0) != 0
		rotate := func(x []float64, heads int) error {
			for b := 0; b < B; b++ {
				for s := 0; s < S; s++ {
					p := past[b] + s
					if p >= cosT.Shape[0] {
						return kernels.Invalidf(n, "position %d is past the rotary cache (%d)", p, cosT.Shape[0])
					}
					c, sn := cv[p*width:(p+1)*width], sv[p*width:(p+1)*width]
					for h := 0; h < heads; h++ {
						base := ((b*S+s)*heads + h) * H
						for i := 0; i < width; i++ {
							i1, i2 := base+i, base+width+i
							if inter {
								i1, i2 = base+2*i, base+2*i+1
							}
							x1, x2 := x[i1], x[i2]
							x[i1], x[i2] = c[i]*x1-sn[i]*x2, sn[i]*x1+c[i]*x2
						}
					}
				}
			}
			return nil
		}
		qv, kv = append([]float64(nil), qv...), append([]float64(nil), kv...)
		if err := rotate(qv, N); err != nil {
			return nil, err
		}
		if err := rotate(kv, KV); err != nil {
			return nil, err
		}
	}
	// the present caches
	presK, presV := make([]float64, B*KV*T*H), make([]float64, B*KV*T*H)
	var pkv, pvv []float64
	if pk != nil {
		pkv, pvv = pk.Float64s(), pv.Float64s()
	}
	for b := 0; b < B; b++ {
		for h := 0; h < KV; h++ {
			dst := (b*KV + h) * T * H
			if pk != nil {
				src := (b*KV + h) * P * H
				copy(presK[dst:dst+past[b]*H], pkv[src:src+past[b]*H])
				copy(presV[dst:dst+past[b]*H], pvv[src:src+past[b]*H])
			}
			for s := 0; s < S; s++ {
				src := ((b*S+s)*KV + h) * H
				at := dst + (past[b]+s)*H
				copy(presK[at:at+H], kv[src:src+H])
				copy(presV[at:at+H], vv[src:src+H])
			}
		}
	}
	scale := float64(n.AttrFloat("scale", 0))
	if scale == 0 {
		scale = 1 / math.Sqrt(float64(H))
	}
	softcap := float64(n.AttrFloat("softcap", 0))
	out := make([]float64, B*S*N*H)
	group := N / KV
	for b := 0; b < B; b++ {
		for h := 0; h < N; h++ {
			cache := (b*KV + h/group) * T * H
			for s := 0; s < S; s++ {
				if ctx.Stopped() {
					return nil, ctx.Stop(n)
				}
				qrow := qv[((b*S+s)*N+h)*H:][:H]
				L := past[b] + s + 1
				sc := make([]float64, L)
				mx := math.Inf(-1)
				for j := 0; j < L; j++ {
					krow := presK[cache+j*H:][:H]
					d := 0.0
					for i := range qrow {
						d += qrow[i] * krow[i]
					}
					d *= scale
					if softcap > 0 {
						d = softcap * math.Tanh(d/softcap)
					}
					sc[j] = d
					mx = math.Max(mx, d)
				}
				sum := 0.0
				for j := range sc {
					sc[j] = math.Exp(sc[j] - mx)
					sum += sc[j]
				}
				o := out[((b*S+s)*N+h)*H:][:H]
				for j := range sc {
					w := sc[j] / sum
					vrow := presV[cache+j*H:][:H]
					for i := range o {
						o[i] += w * vrow[i]
					}
				}
			}
		}
	}
	res := make([]*graph.Tensor, len(n.Outputs)) // output_qk, if listed unnamed, stays nil
	var err error
	if res[0], err = kernels.NewFromFloat64(ctx, n, q.DType, []int{B, S, N * H}, out); err != nil {
		return nil, err
	}
	if res[1], err = kernels.NewFromFloat64(ctx, n, q.DType, []int{B, KV, T, H}, presK); err != nil {
		return nil, err
	}
	if res[2], err = kernels.NewFromFloat64(ctx, n, q.DType, []int{B, KV, T, H}, presV); err != nil {
		return nil, err
	}
	return res, nil
}
