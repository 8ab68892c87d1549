package native

import (
	"math"
	"sync"
	"sync/atomic"

	"github.com/switchyard-hal/switchyard/core/exec"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/core/kernels/contrib"
)

// gqaKernel is com.microsoft GroupQueryAttention (core/kernels/contrib's
// semantics: read its doc) for float32 query, key, value, pasts and
// rotary caches and int32 seqlens_k and total_sequence_length, query
// packed or not, with or without do_rotary (halves or interleaved pairs),
// scale, softcap and a sliding window (local_window_size). It follows
// the reference kernel's rule for the presents (contrib.PresentInto): a
// present bound to its past's own memory (the share-buffer form, P ≥
// total) gets only the new rows p..p+S-1 written, the past is not
// copied; otherwise the present is
// filled (the past's used rows copied, the tail zeroed). Only the used
// rows 0..p+S-1 of the pasts are read. The keys and values attend from
// the present, in float32 (dot products and sums of exponentials in the
// assembly kernels where the CPU has them), the queries scaled once; the
// rotations are computed in float64 and rounded once, as the reference
// does. After the first call a call allocates nothing but its outputs
// (from the run's arena): the scratch is reused. Anything else (other
// dtypes, refused inputs and attributes, the errors) runs the reference
// kernel.
func gqaKernel() kernels.Func { return gqaKernelOn(nil) }

// gqaKernelOn is gqaKernel whose float16 and Q8_0 cache attention splits
// its heads over pool p's threads (gqa_cache.go).
func gqaKernelOn(p *pool) kernels.Func {
	ref, _ := kernels.Lookup("com.microsoft", "GroupQueryAttention")
	g := &gqaNative{ref: ref.Kernel, pool: p}
	return func(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		return g.run(ctx, n, in, exec.Into)
	}
}

// gqaNative is one node's kernel: the reference kernel it falls back to
// and its scratch, shared by concurrent calls through a pool.
type gqaNative struct {
	ref     kernels.Func
	scratch sync.Pool // *gqaScratch
	pool    *pool     // nil: one thread
	// attrs are the node's attributes, read at its first call (a decode
	// step's 24 calls looked up fifteen by name each, on a map the
	// streamed weights had pushed out of the caches)
	attrs atomic.Pointer[gqaAttrs]
}

// gqaAttrs are the attributes of a GroupQueryAttention node that a call
// reads, read once (attrsOf).
type gqaAttrs struct {
	n                                 *graph.Node
	window, smooth, numHeads, kvHeads int64
	doRotary, interleaved, rotFMA     bool
	ggmlAttn                          int64
	scale, softcap                    float32
	kvType                            string
}

// readGQAAttrs reads n's attributes.
func readGQAAttrs(n *graph.Node) *gqaAttrs {
	return &gqaAttrs{n: n,
		window: n.AttrInt("local_window_size", -1), smooth: n.AttrInt("smooth_softmax", 0),
		numHeads: n.AttrInt("num_heads", 0), kvHeads: n.AttrInt("kv_num_heads", 0),
		doRotary: n.AttrInt("do_rotary", 0) != 0, interleaved: n.AttrInt("rotary_interleaved", 0) != 0,
		rotFMA: n.AttrInt(contrib.RotaryFMAAttr, 0) != 0, ggmlAttn: n.AttrInt(contrib.GGMLAttentionAttr, 0),
		scale: n.AttrFloat("scale", 0), softcap: n.AttrFloat("softcap", 0),
		kvType: n.AttrString(contrib.KVTypeAttr, "")}
}

// attrsOf is n's attributes, read at the first call of n (a kernel is
// one node's; another node's are read anew and kept instead).
func (gn *gqaNative) attrsOf(n *graph.Node) *gqaAttrs {
	if a := gn.attrs.Load(); a != nil && a.n == n {
		return a
	}
	a := readGQAAttrs(n)
	gn.attrs.Store(a)
	return a
}

// gqaScratch holds the scaled (and rotated) queries and a row's scores
// and weights.
type gqaScratch struct {
	q, sc, e, k, v []float32
	acc            []float32    // attendRowGGMLF16's (bw70_gqaf16_amd64.go)
	gv             ggmlValues   // gqa_ggml.go
	heads          gqaHeads     // runCache's call (gqa_cache.go)
	f32            attnF32Split // attnSplitF32's call (attn_split.go)
}

func grow(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}

// gqaShape is a call's sizes and where its rows are: row r (= b·S + s)
// of head h of x starts at x.data[r·x.stride + x.off + h·H].
type gqaShape struct {
	B, S, N, KV, H, P, T int
	q, k, v              rows
	seqlens              []int32
	cache                gqaCache // the presents' form
}

type rows struct {
	data        []float32
	stride, off int
}

func (x rows) at(r, h, H int) []float32 {
	i := r*x.stride + x.off + h*H
	return x.data[i : i+H]
}

// past is batch b's past length.
func (g *gqaShape) past(b int) int { return int(g.seqlens[b]) + 1 - g.S }

// plan reads the call's shapes; false where the reference kernel is to
// run (what this kernel does not handle, and every error).
func gqaPlan(n *graph.Node, in []*graph.Tensor) (gqaShape, bool) {
	return gqaPlanWith(n, readGQAAttrs(n), in)
}

// gqaPlanWith is gqaPlan with n's attributes read (a).
func gqaPlanWith(n *graph.Node, a *gqaAttrs, in []*graph.Tensor) (gqaShape, bool) {
	var g gqaShape
	input := func(i int) *graph.Tensor {
		if i < len(in) {
			return in[i]
		}
		return nil
	}
	if input(9) != nil || input(10) != nil || input(11) != nil || len(n.Outputs) > 3 && n.Outputs[3] != "" ||
		a.window < -1 || a.smooth != 0 {
		return g, false
	}
	N, KV := int(a.numHeads), int(a.kvHeads)
	q, k, v := input(0), input(1), input(2)
	if N <= 0 || KV <= 0 || N%KV != 0 || q == nil || q.DType != graph.Float32 || q.Rank() != 3 {
		return g, false
	}
	B, S, W := q.Shape[0], q.Shape[1], q.Shape[2]
	var H int
	switch {
	case k == nil && v == nil:
		if W%(N+2*KV) != 0 {
			return g, false
		}
		H = W / (N + 2*KV)
		qd := f32(q)
		g.q, g.k, g.v = rows{qd, W, 0}, rows{qd, W, N * H}, rows{qd, W, (N + KV) * H}
	case k != nil && v != nil && k.DType == graph.Float32 && v.DType == graph.Float32:
		if W%N != 0 {
			return g, false
		}
		H = W / N
		if want := [3]int{B, S, KV * H}; !graph.SameShape(k.Shape, want[:]) || !graph.SameShape(v.Shape, want[:]) {
			return g, false
		}
		g.q, g.k, g.v = rows{f32(q), W, 0}, rows{f32(k), KV * H, 0}, rows{f32(v), KV * H, 0}
	default:
		return g, false
	}
	if H == 0 {
		return g, false
	}
	pk, pv := input(3), input(4)
	P := 0
	cache, ok := gqaCacheOfType(a.kvType, pk, H)
	if !ok {
		return g, false
	}
	g.cache = cache
	switch {
	case pk == nil && pv == nil:
	case pk != nil && pv != nil && pk.DType == cache.dt && pv.DType == cache.dt:
		if pk.Rank() != 4 || pk.Shape[0] != B || pk.Shape[1] != KV || pk.Shape[3] != cache.width || !graph.SameShape(pk.Shape, pv.Shape) {
			return g, false
		}
		P = pk.Shape[2]
	default:
		return g, false
	}
	sl, tot := input(5), input(6)
	if sl == nil || tot == nil || sl.DType != graph.Int32 || tot.DType != graph.Int32 || sl.Len() != B || tot.Len() != 1 {
		return g, false
	}
	total := int(graph.Data[int32](tot)[0])
	g.B, g.S, g.N, g.KV, g.H, g.P, g.T = B, S, N, KV, H, P, max(P, total)
	g.seqlens = graph.Data[int32](sl)
	maxEnd := 0
	for b := 0; b < B; b++ {
		p := g.past(b)
		if p < 0 || p+S > g.T || p > P && P > 0 || P == 0 && p != 0 {
			return g, false
		}
		maxEnd = max(maxEnd, p+S)
	}
	if a.doRotary {
		c, s := input(7), input(8)
		if c == nil || s == nil || c.DType != graph.Float32 || s.DType != graph.Float32 || c.Rank() != 2 ||
			!graph.SameShape(c.Shape, s.Shape) || c.Shape[1] == 0 || 2*c.Shape[1] > H || maxEnd > c.Shape[0] {
			return g, false
		}
	}
	return g, true
}

func (gn *gqaNative) run(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor, into func(*kernels.Context, int) *graph.Tensor) ([]*graph.Tensor, error) {
	at := gn.attrsOf(n)
	g, ok := gqaPlanWith(n, at, in)
	if !ok {
		return gn.ref(ctx, n, in)
	}
	B, S, N, KV, H, P, T := g.B, g.S, g.N, g.KV, g.H, g.P, g.T
	shape := [4]int{B, KV, T, g.cache.width}
	var pk, pv *graph.Tensor
	if P > 0 {
		pk, pv = in[3], in[4]
	}
	// both bound tensors are taken before anything is allocated: an
	// allocation of the presents' shape would be handed the other one
	dk, dv := into(ctx, 1), into(ctx, 2)
	presK, inK, err := gqaPresent(ctx, dk, pk, g.cache.dt, shape[:], in)
	if err != nil {
		return nil, err
	}
	presV, inV, err := gqaPresent(ctx, dv, pv, g.cache.dt, shape[:], in)
	if err != nil {
		return nil, err
	}
	y, err := ctx.NewUninit(graph.Float32, []int{B, S, N * H})
	if err != nil {
		return nil, err
	}
	sc, _ := gn.scratch.Get().(*gqaScratch)
	if sc == nil {
		sc = &gqaScratch{}
	}
	defer gn.scratch.Put(sc)

	var cosC, sinC []float32
	width := 0
	rotary := at.doRotary
	if rotary {
		cosC, sinC, width = f32(in[7]), f32(in[8]), in[7].Shape[1]
	}
	interleaved := at.interleaved
	rotFMA := at.rotFMA     // ggml's rotation (gqa_ggml.go)
	ggmlAttn := at.ggmlAttn // ggml's attention (gqa_ggml.go)
	scale := at.scale
	if scale == 0 {
		scale = float32(1 / math.Sqrt(float64(H)))
	}
	softcap := at.softcap
	window := int(at.window) // the keys a query sees, its own included (≤ 0: all)

	// the queries: rotated, scaled
	sc.q = grow(sc.q, B*S*N*H)
	if done, ys, err := gn.runCacheSplit(ctx, n, &g, sc, presK, presV, y, inK, inV, cosC, sinC, width, interleaved, rotFMA, ggmlAttn, scale, softcap, window); done {
		return ys, err // srvh_gqa.go: the rows prepared in the attention's loop
	}
	if done, ys, err := gn.attnSplitF32(ctx, n, &g, sc, presK, presV, y, inK, inV, cosC, sinC, width, interleaved, rotFMA, ggmlAttn, scale, softcap, window); done {
		return ys, err // attn_split.go: a float32 cache's, likewise
	}
	for b := 0; b < B; b++ {
		for s := 0; s < S; s++ {
			r := b*S + s
			for h := 0; h < N; h++ {
				dst := sc.q[(r*N+h)*H : (r*N+h+1)*H]
				copy(dst, g.q.at(r, h, H))
				if rotary {
					pos := g.past(b) + s
					rotateRow(dst, cosC[pos*width:(pos+1)*width], sinC[pos*width:(pos+1)*width], interleaved, rotFMA)
				}
				if g.cache.dt != graph.Float32 {
					if ggmlAttn == 2 && !g.cache.q8 { // scaled first (gqa_ggml.go)
						for i := range dst {
							dst[i] *= scale
						}
					}
					g.cache.roundQuery(dst) // scaled after the products
					continue
				}
				if ggmlAttn == 1 {
					continue // the scores scaled
				}
				for i := range dst {
					dst[i] *= scale
				}
			}
		}
	}
	if g.cache.dt != graph.Float32 {
		return gn.runCache(ctx, n, &g, sc, pk, pv, presK, presV, inK, inV, y, cosC, sinC, width, interleaved, rotFMA, ggmlAttn, scale, softcap, window)
	}
	// the presents: the past rows (unless in place), the new rows (keys
	// rotated), the tail zeroed (unless in place)
	PK, PV := f32(presK), f32(presV)
	var pkd, pvd []float32
	if P > 0 {
		pkd, pvd = f32(pk), f32(pv)
	}
	for b := 0; b < B; b++ {
		p := g.past(b)
		for kh := 0; kh < KV; kh++ {
			dst, src := (b*KV+kh)*T*H, (b*KV+kh)*P*H
			if !inK {
				copy(PK[dst:dst+p*H], pkd[src:src+p*H])
				clear(PK[dst+(p+S)*H : dst+T*H])
			}
			if !inV {
				copy(PV[dst:dst+p*H], pvd[src:src+p*H])
				clear(PV[dst+(p+S)*H : dst+T*H])
			}
			for s := 0; s < S; s++ {
				at := dst + (p+s)*H
				kr := PK[at : at+H]
				copy(kr, g.k.at(b*S+s, kh, H))
				copy(PV[at:at+H], g.v.at(b*S+s, kh, H))
				if rotary {
					pos := p + s
					rotateRow(kr, cosC[pos*width:(pos+1)*width], sinC[pos*width:(pos+1)*width], interleaved, rotFMA)
				}
			}
		}
	}
	// attention
	maxL := 0
	for b := 0; b < B; b++ {
		maxL = max(maxL, g.past(b)+S)
	}
	sc.sc, sc.e = grow(sc.sc, maxL), grow(sc.e, maxL)
	Y := f32(y)
	group := N / KV
	for b := 0; b < B; b++ {
		p := g.past(b)
		for kh := 0; kh < KV; kh++ {
			if ctx.Stopped() {
				return nil, ctx.Stop(n)
			}
			base := (b*KV + kh) * T * H
			K, V := PK[base:base+(p+S)*H], PV[base:base+(p+S)*H]
			direct := ggmlAttn != 0 && S == 1 && attnF32Rows && H%64 == 0 // attn_split.go: no transposed values
			if direct {
				sc.acc = grow(sc.acc, 64*64)
			} else if ggmlAttn != 0 {
				sc.gv.set(V, H, p+S, S == 1)
			}
			for h := kh * group; h < (kh+1)*group; h++ {
				for s := 0; s < S; s++ {
					r := b*S + s
					q := sc.q[(r*N+h)*H : (r*N+h+1)*H]
					L := p + s + 1
					j0 := 0 // the first key the query sees (sliding window)
					if window > 0 {
						j0 = max(0, L-window)
					}
					o := Y[(r*N+h)*H : (r*N+h+1)*H]
					if direct {
						if !attendRowGGMLF32(q, K[:L*H], V[:L*H], sc.sc[:L], sc.e[:L], sc.acc, o, j0, scoreScale(ggmlAttn, scale), softcap) {
							panic("native: attendRowGGMLF32 without its kernel")
						}
						continue
					}
					if ggmlAttn != 0 {
						attendRowGGML(q, K, &sc.gv, sc.sc[:L], sc.e[:L], o, j0, scoreScale(ggmlAttn, scale), softcap, S == 1, false)
						continue
					}
					scores, e := sc.sc[:L-j0], sc.e[:L-j0]
					attendRow(q, K[j0*H:], V[j0*H:], scores, e, o, softcap)
				}
			}
		}
	}
	return ctx.Outputs(y, presK, presV), nil
}

// gqaPresent is the tensor (of the cache's dtype) a present is written into
// (contrib.PresentInto's rule): dst in place, dst, or a new one (its
// contents unspecified: every element is written).
func gqaPresent(ctx *kernels.Context, dst, past *graph.Tensor, dt graph.DType, shape []int, in []*graph.Tensor) (*graph.Tensor, bool, error) {
	t, inPlace := contrib.PresentInto(dst, past, dt, shape, in)
	if t != nil {
		return t, inPlace, nil
	}
	t, err := ctx.NewUninit(dt, shape)
	return t, false, err
}

// rotateRow rotates x (a head's row) by the cos and sin of its position:
// pairs (x[i], x[width+i]), or (x[2i], x[2i+1]) interleaved, for i <
// width = len(c), in float64 rounded once.
func rotateRow(x, c, s []float32, interleaved, fma bool) {
	if fma {
		rotateRowFMA(x, c, s, interleaved)
		return
	}
	w := len(c)
	s = s[:w]
	if interleaved {
		x = x[:2*w]
		for i := range c {
			x1, x2 := float64(x[2*i]), float64(x[2*i+1])
			ci, si := float64(c[i]), float64(s[i])
			x[2*i], x[2*i+1] = float32(ci*x1-si*x2), float32(si*x1+ci*x2)
		}
		return
	}
	x1s, x2s := x[:w], x[w:2*w]
	for i := range c {
		x1, x2 := float64(x1s[i]), float64(x2s[i])
		ci, si := float64(c[i]), float64(s[i])
		x1s[i], x2s[i] = float32(ci*x1-si*x2), float32(si*x1+ci*x2)
	}
}

// smallHead is the head size below which attendRow's loops are Go's own:
// a call of the assembly kernels costs more than a short row (H 8:
// 18 µs against 30 µs for BenchmarkGQA/small; even at 16, ahead at 32).
const smallHead = 16

// attendRow is one query row's attention over the L = len(scores) rows
// of K and V (H = len(q) each): o = softmax(q·kⱼ, softcapped) · V, e the
// exponentials' scratch.
func attendRow(q, K, V, scores, e, o []float32, softcap float32) {
	scoreRows(q, K, scores)
	mx := float32(math.Inf(-1))
	for j, d := range scores {
		if softcap > 0 {
			d = softcap * float32(math.Tanh(float64(d/softcap)))
			scores[j] = d
		}
		if d > mx { // not max: its NaN and zero rules cost a third of a short row
			mx = d
		}
	}
	inv := 1 / expSum(scores, e, mx)
	weighRows(e, V, o, inv)
}

// scoreRows writes q·kⱼ for the len(scores) rows kⱼ of K (H = len(q)
// each) into scores.
func scoreRows(q, K, scores []float32) {
	H := len(q)
	switch {
	case H < smallHead && H%8 == 0:
		// eight columns of q at a time, in registers over all rows
		clear(scores)
		for c := 0; c < H; c += 8 {
			qc := q[c : c+8]
			q0, q1, q2, q3, q4, q5, q6, q7 := qc[0], qc[1], qc[2], qc[3], qc[4], qc[5], qc[6], qc[7]
			for j := range scores {
				k := K[j*H+c : j*H+c+8]
				scores[j] += ((q0*k[0] + q1*k[1]) + (q2*k[2] + q3*k[3])) + ((q4*k[4] + q5*k[5]) + (q6*k[6] + q7*k[7]))
			}
		}
	case H < smallHead:
		for j := range scores {
			scores[j] = dotShort(q, K[j*H:j*H+H])
		}
	default:
		for j := range scores {
			scores[j] = dot(q, K[j*H:j*H+H])
		}
	}
}

// weighRows is o = inv · Σⱼ e[j]·vⱼ over the len(e) rows vⱼ of V (H =
// len(o) each).
func weighRows(e, V, o []float32, inv float32) {
	H := len(o)
	clear(o)
	if H < smallHead && H%8 == 0 {
		// eight columns of o at a time, in registers over all rows
		for c := 0; c < H; c += 8 {
			var a0, a1, a2, a3, a4, a5, a6, a7 float32
			for j, w := range e {
				v := V[j*H+c : j*H+c+8]
				a0 += w * v[0]
				a1 += w * v[1]
				a2 += w * v[2]
				a3 += w * v[3]
				a4 += w * v[4]
				a5 += w * v[5]
				a6 += w * v[6]
				a7 += w * v[7]
			}
			oc := o[c : c+8]
			oc[0], oc[1], oc[2], oc[3] = a0*inv, a1*inv, a2*inv, a3*inv
			oc[4], oc[5], oc[6], oc[7] = a4*inv, a5*inv, a6*inv, a7*inv
		}
		return
	}
	if H < smallHead {
		// two rows a step: half the updates of o
		j := 0
		for ; j+1 < len(e); j += 2 {
			w0, w1 := e[j], e[j+1]
			v0, v1 := V[j*H:j*H+H], V[j*H+H:j*H+2*H]
			for i := range o {
				o[i] += w0*v0[i] + w1*v1[i]
			}
		}
		if j < len(e) {
			w, v := e[j], V[j*H:j*H+H]
			for i := range o {
				o[i] += w * v[i]
			}
		}
		for i := range o {
			o[i] *= inv
		}
		return
	}
	for j, w := range e {
		axpy(w*inv, V[j*H:j*H+H], o)
	}
}

// dotShort is the sum of x[i]·y[i] over len(x) (y as long), in four
// independent sums where len(x) is a multiple of 4 (a short row: the
// sums' latency, not their count, bounds it).
func dotShort(x, y []float32) float32 {
	y = y[:len(x)]
	if len(x)%4 != 0 {
		var d float32
		for i, v := range x {
			d += v * y[i]
		}
		return d
	}
	var d0, d1, d2, d3 float32
	for i := 0; i+3 < len(x); i += 4 {
		d0 += x[i] * y[i]
		d1 += x[i+1] * y[i+1]
		d2 += x[i+2] * y[i+2]
		d3 += x[i+3] * y[i+3]
	}
	return (d0 + d1) + (d2 + d3)
}
