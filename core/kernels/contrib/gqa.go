package contrib

import (
	"math"
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/exec"
	"github.com/switchyard-hal/switchyard/core/ggml"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/core/kernels/attention"
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
// causally to keys 0..p+s — with local_window_size w > 0, only to the
// last w of them, max(0, p+s-w+1)..p+s, its own included (ONNX Runtime's
// sliding window since 1.23; Hugging Face's sliding_window) —: softmax(scale·q·k (softcap·tanh(x/softcap)
// when softcap > 0)) · v, scale defaulting to 1/√H.
//
// In place: where the tensor bound to present_key (exec.Into, output 1)
// is past_key itself — the same memory, the same shape [B, KV, P, H] with
// P ≥ total_sequence_length, the "share buffer" form of ONNX Runtime —
// only the new rows p..p+S-1 are written into it and the others are left
// as they are (no copy of the past); the same for present_value (output
// 2) and past_value. A bound tensor of the present's shape that shares
// no memory with an input is filled like a new present; any other
// bound tensor is not written (the kernel returns its own present, which
// the executor copies). Only the rows 0..p+S-1 of a past are read.
//
// Not implemented (refused): position_ids, attention_bias, head_sink,
// smooth_softmax, the output_qk output, and a first
// prompt with padding (seqlens_k + 1 < S).

func gqaKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	return gqaKernelInto(ctx, n, in, exec.Into)
}

// gqaKernelInto is gqaKernel with the caller-bound outputs of the node
// from into (exec.Into; tests pass their own).
func gqaKernelInto(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor, into func(*kernels.Context, int) *graph.Tensor) ([]*graph.Tensor, error) {
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
	window := n.AttrInt("local_window_size", -1)
	if window < -1 {
		return nil, kernels.Invalidf(n, "local_window_size %d (want -1, or the keys a query sees)", window)
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
	form, err := gqaCacheForm(n, q, pk, H)
	if err != nil {
		return nil, err
	}
	if pk != nil {
		if form.q8 {
			if pk.DType != graph.Uint8 || pv.DType != graph.Uint8 {
				return nil, kernels.Invalidf(n, "a q8_0 cache is uint8, not %v and %v", pk.DType, pv.DType)
			}
		} else if err := checkOptFloat(n, pk, "past_key"); err != nil {
			return nil, err
		}
		if pv.DType != pk.DType {
			return nil, kernels.Invalidf(n, "past_key is %v and past_value %v", pk.DType, pv.DType)
		}
		if pk.Rank() != 4 || pk.Shape[0] != B || pk.Shape[1] != KV || pk.Shape[3] != form.width || !graph.SameShape(pk.Shape, pv.Shape) {
			return nil, kernels.Invalidf(n, "past_key %v and past_value %v must be [%d %d P %d]", pk.Shape, pv.Shape, B, KV, form.width)
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
		inter := n.AttrInt("rotary_interleaved", 0) != 0
		fmaRot := n.AttrInt(RotaryFMAAttr, 0) != 0
		c, sn := make([]float64, width), make([]float64, width) // the row of a position (not the whole caches)
		rotate := func(x []float64, heads int) error {
			for b := 0; b < B; b++ {
				for s := 0; s < S; s++ {
					p := past[b] + s
					if p >= cosT.Shape[0] {
						return kernels.Invalidf(n, "position %d is past the rotary cache (%d)", p, cosT.Shape[0])
					}
					for i := range c {
						c[i], sn[i] = cosT.Float64At(p*width+i), sinT.Float64At(p*width+i)
					}
					for h := 0; h < heads; h++ {
						base := ((b*S+s)*heads + h) * H
						if fmaRot {
							rotateFMA32(x[base:], c, sn, width, inter)
							continue
						}
						attention.Rotate(x[base:], x[base:], c, sn, width, inter)
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
	if form.round || form.q8 {
		qv = append([]float64(nil), qv...)
		form.roundQueries(qv, H)
	}
	scale := float64(n.AttrFloat("scale", 0))
	if scale == 0 {
		scale = 1 / math.Sqrt(float64(H))
	}
	a := gqaArgs{B: B, S: S, N: N, KV: KV, H: H, T: T, past: past, q: qv, k: kv, v: vv,
		scale: scale, softcap: float64(n.AttrFloat("softcap", 0)), window: int(window), form: form}
	// the present caches: the caller's tensors where bound (the past
	// itself: written in place), else new ones
	shape := []int{B, KV, T, form.width}
	// both bound tensors are taken before anything is allocated: an
	// allocation of the presents' shape would be handed the other one
	dk, dv := into(ctx, 1), into(ctx, 2)
	presK, inplaceK, err := present(ctx, n, dk, pk, form.dt, shape, in)
	if err != nil {
		return nil, err
	}
	presV, inplaceV, err := present(ctx, n, dv, pv, form.dt, shape, in)
	if err != nil {
		return nil, err
	}
	out, err := gqaAttend(ctx, n, &a, pk, pv, presK, presV, inplaceK, inplaceV)
	if err != nil {
		return nil, err
	}
	res := make([]*graph.Tensor, len(n.Outputs)) // output_qk, if listed unnamed, stays nil
	if res[0], err = kernels.NewFromFloat64(ctx, n, q.DType, []int{B, S, N * H}, out); err != nil {
		return nil, err
	}
	res[1], res[2] = presK, presV
	return res, nil
}

// gqaArgs are a GroupQueryAttention call's sizes and (rotated) new rows,
// in float64: q (B, S, N, H), k and v (B, S, KV, H).
type gqaArgs struct {
	B, S, N, KV, H int
	T              int   // present length, max(P, total)
	past           []int // by batch: the past length p
	q, k, v        []float64
	scale, softcap float64
	window         int       // local_window_size (≤ 0: none)
	form           cacheForm // the presents' dtype and row width
}

// PresentInto decides what to do with dst, the caller's tensor bound to a
// present output of shape [B, KV, T, H] and dtype dt (nil: none): write
// into it in place (inPlace: dst is past, the same memory and shape: only
// the new rows are written), fill it as a new present (it shares no
// memory with any of inputs), or leave it (nil: the kernel makes its own
// present). Native kernels apply the same rule.
func PresentInto(dst, past *graph.Tensor, dt graph.DType, shape []int, inputs []*graph.Tensor) (t *graph.Tensor, inPlace bool) {
	if dst == nil || dst.DType != dt || !graph.SameShape(dst.Shape, shape) {
		return nil, false
	}
	if past != nil && past.DType == dt && graph.SameShape(past.Shape, shape) && SameData(dst, past) {
		return dst, true
	}
	for _, in := range inputs {
		if in != nil && overlaps(dst, in) {
			return nil, false
		}
	}
	return dst, false
}

// present is the tensor a present output is written into (PresentInto):
// dst in place, dst cleared, or a new zeroed tensor.
func present(ctx *kernels.Context, n *graph.Node, dst, past *graph.Tensor, dt graph.DType, shape []int, in []*graph.Tensor) (*graph.Tensor, bool, error) {
	t, inPlace := PresentInto(dst, past, dt, shape, in)
	switch {
	case t == nil:
		t, err := ctx.New(dt, shape)
		if err != nil {
			return nil, false, kernels.Invalidf(n, "%v", err)
		}
		return t, false, nil
	case !inPlace:
		clearData(t)
	}
	return t, inPlace, nil
}

// SameData reports whether a and b are views of one buffer from the same
// first element (both non-empty).
func SameData(a, b *graph.Tensor) bool {
	x, y := span(a), span(b)
	return x.n > 0 && y.n > 0 && x.p == y.p
}

type byteSpan struct{ p, n uintptr }

func span(t *graph.Tensor) byteSpan {
	b, ok := graph.RawBytes(t)
	if !ok || len(b) == 0 {
		return byteSpan{}
	}
	return byteSpan{uintptr(unsafe.Pointer(&b[0])), uintptr(len(b))}
}

// overlaps reports whether a and b share any byte of storage.
func overlaps(a, b *graph.Tensor) bool {
	x, y := span(a), span(b)
	return x.n > 0 && y.n > 0 && x.p < y.p+y.n && y.p < x.p+x.n
}

// clearData zeroes t's elements.
func clearData(t *graph.Tensor) {
	if b, ok := graph.RawBytes(t); ok {
		clear(b)
	}
}

// gqaAttend writes the rows of the presents (all of 0..p+S-1 for a new
// present, only the new ones p..p+S-1 in place) and returns the attention
// output (B, S, N·H). The past rows are read from pk and pv (nil: no past)
// before any row is written, the new ones from a.k and a.v (unrounded).
func gqaAttend(ctx *kernels.Context, n *graph.Node, a *gqaArgs, pk, pv, presK, presV *graph.Tensor, inplaceK, inplaceV bool) ([]float64, error) {
	B, S, N, KV, H, T := a.B, a.S, a.N, a.KV, a.H, a.T
	P := 0
	if pk != nil {
		P = pk.Shape[2]
	}
	maxL := 0
	for _, p := range a.past {
		maxL = max(maxL, p+S)
	}
	kc, vc, sc := make([]float64, maxL*H), make([]float64, maxL*H), make([]float64, maxL)
	out := make([]float64, B*S*N*H)
	group := N / KV
	for b := 0; b < B; b++ {
		p := a.past[b]
		L := p + S
		for kh := 0; kh < KV; kh++ {
			if ctx.Stopped() {
				return nil, ctx.Stop(n)
			}
			W := a.form.width
			src := (b*KV + kh) * P * W
			if p > 0 {
				a.form.readRows(kc, pk, src, p, H)
				a.form.readRows(vc, pv, src, p, H)
			}
			for s := 0; s < S; s++ {
				at := ((b*S+s)*KV + kh) * H
				copy(kc[(p+s)*H:(p+s+1)*H], a.k[at:at+H])
				copy(vc[(p+s)*H:(p+s+1)*H], a.v[at:at+H])
			}
			dst := (b*KV + kh) * T * W
			a.form.storeRows(presK, dst, pk, src, kc, p, L, H, inplaceK)
			a.form.storeRows(presV, dst, pv, src, vc, p, L, H, inplaceV)
			for h := kh * group; h < (kh+1)*group; h++ {
				for s := 0; s < S; s++ {
					qrow := a.q[((b*S+s)*N+h)*H:][:H]
					j0 := 0 // the first key the query sees
					if a.window > 0 {
						j0 = max(0, p+s+1-a.window)
					}
					sc := sc[j0 : p+s+1]
					mx := math.Inf(-1)
					for j := range sc {
						krow := kc[(j0+j)*H : (j0+j+1)*H]
						d := 0.0
						for i := range qrow {
							d += qrow[i] * krow[i]
						}
						d *= a.scale
						if a.softcap > 0 {
							d = a.softcap * math.Tanh(d/a.softcap)
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
						if a.form.round {
							w = float64(graph.F16FromFloat64(w).Float32())
						}
						vrow := vc[(j0+j)*H : (j0+j+1)*H]
						for i := range o {
							o[i] += w * vrow[i]
						}
					}
				}
			}
		}
	}
	return out, nil
}

// RotaryFMAAttr is GroupQueryAttention's attribute (our extension, an
// int) asking for the rotation of the queries and keys in float32 as
// ggml's CPU backend computes it (rotate_pairs, its products contracted
// by the compiler): x1·c − x2·s as fma(x1, c, −(x2·s)) and x1·s + x2·c as
// fma(x1, s, x2·c), the inner product rounded to float32, the fused one
// rounded once. 0 (the default) rotates in float64, rounded once.
const RotaryFMAAttr = "rotary_fma"

// rotateFMA32 rotates x (float32 values) by the half pairs (or the
// interleaved ones) of c and sn as RotaryFMAAttr says, in place.
func rotateFMA32(x, c, sn []float64, half int, interleaved bool) {
	for i := 0; i < half; i++ {
		i1, i2 := i, half+i
		if interleaved {
			i1, i2 = 2*i, 2*i+1
		}
		x1, x2 := float32(x[i1]), float32(x[i2])
		ci, si := float32(c[i]), float32(sn[i])
		x[i1] = float64(ggml.FMA32(x1, ci, -float32(x2*si)))
		x[i2] = float64(ggml.FMA32(x1, si, float32(x2*ci)))
	}
}

// GGMLAttentionAttr is GroupQueryAttention's attribute (our extension, an
// int) asking a backend that can for attention over a float32 cache in
// the order of llama.cpp's CPU backend without flash attention (native:
// its dot products, exponential, sums and weighted sums, see its
// gqa_ggml.go): 1 scales the scores q·k (llama.cpp's soft_max scale:
// Llama, Qwen, Mistral), 2 the rotated queries (Phi-3, Gemma scale Q
// first). This kernel computes in float64 whatever it says; the
// difference is float32 rounding.
const GGMLAttentionAttr = "ggml_attention"
