package native

import (
	"sync"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/core/kernels/contrib"
)

// gqaCache is the form of a GroupQueryAttention call's key/value cache
// (core/kernels/contrib's rule): float32, float16, or Q8_0 blocks in
// uint8 rows (contrib.KVTypeAttr "q8_0"); width is a head's row in
// elements of dt.
type gqaCache struct {
	dt    graph.DType
	q8    bool
	width int
}

// gqaCacheOfType reads the cache form of a node whose contrib.KVTypeAttr
// is kvType, with past pk (nil: none) and head size H; false where the
// reference kernel is to run.
func gqaCacheOfType(kvType string, pk *graph.Tensor, H int) (gqaCache, bool) {
	switch kvType {
	case "":
	case "q8_0":
		if H%contrib.Q8Block != 0 {
			return gqaCache{}, false
		}
		return gqaCache{dt: graph.Uint8, q8: true, width: H / contrib.Q8Block * contrib.Q8BlockBytes}, true
	default:
		return gqaCache{}, false
	}
	if pk != nil && pk.DType == graph.Float16 {
		return gqaCache{dt: graph.Float16, width: H}, true
	}
	return gqaCache{dt: graph.Float32, width: H}, true
}

// f16Table is every float16's float32 value (256 KiB, made once): a
// cache row decodes a lookup a value.
var f16Table = sync.OnceValue(func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for i := range t {
		t[i] = graph.F16(uint16(i)).Float32()
	}
	return &t
})

// f16Round is x rounded to float16, nearest even (the float16 value, as
// a float32).
func f16Round(x float32) float32 { return f16Table()[graph.F16FromFloat32(x)] }

// f16RoundAll rounds every value of x as f16Round does (F16C where the
// CPU has it, the last values through a 16-value buffer).
func f16RoundAll(x []float32) {
	i := archF16Round(x)
	if r := x[i:]; f16Asm && len(r) > 0 {
		var t [16]float32
		copy(t[:], r)
		archF16Round(t[:])
		copy(r, t[:])
		return
	}
	for ; i < len(x); i++ {
		x[i] = f16Round(x[i])
	}
}

// decode writes rows 0..L-1 of a head's rows (from element base of the
// cache data, width elements each) into dst as float32 (H a row).
func (c gqaCache) decode(dst []float32, data any, base, L, H int) {
	switch d := data.(type) {
	case []graph.F16:
		src := d[base : base+L*H]
		dst = dst[:len(src)]
		i := archF16Widen(dst, src) // F16C where the CPU has it
		if i < len(src) {
			tab := f16Table()
			for ; i < len(src); i++ {
				dst[i] = tab[src[i]]
			}
		}
	case []uint8:
		for r := 0; r < L; r++ {
			contrib.DequantizeQ8Row(dst[r*H:(r+1)*H], d[base+r*c.width:])
		}
	}
}

// encode writes one row x (H values) at element at of the cache data.
func (c gqaCache) encode(data any, at int, x []float32) {
	switch d := data.(type) {
	case []graph.F16:
		d = d[at : at+len(x)]
		for i := archF16Narrow(d, x); i < len(x); i++ {
			d[i] = graph.F16FromFloat32(x[i])
		}
	case []uint8:
		contrib.QuantizeQ8Row(d[at:at+c.width], x)
	}
}

// cacheCopy copies n elements of src from s to dst from d (any cache
// data of one type).
func cacheCopy(dst, src any, d, s, n int) {
	switch x := dst.(type) {
	case []graph.F16:
		copy(x[d:d+n], src.([]graph.F16)[s:s+n])
	case []uint8:
		copy(x[d:d+n], src.([]uint8)[s:s+n])
	}
}

// cacheClear zeroes n elements of data from d.
func cacheClear(data any, d, n int) {
	switch x := data.(type) {
	case []graph.F16:
		clear(x[d : d+n])
	case []uint8:
		clear(x[d : d+n])
	}
}

// runCache is run's second half for a float16 or Q8_0 cache: the new
// keys (rotated) and values are stored in the cache's form, and each
// key/value head's rows 0..p+S-1 are decoded to float32 once and
// attended (attendCached) from the values the cache holds, the new rows
// as stored, as llama.cpp does. The queries in sc.q are rotated and
// rounded as the cache's type rounds them (roundQuery), not scaled.
func (gn *gqaNative) runCache(ctx *kernels.Context, n *graph.Node, g *gqaShape, sc *gqaScratch, pk, pv, presK, presV *graph.Tensor,
	inK, inV bool, y *graph.Tensor, cosC, sinC []float32, width int, interleaved, rotFMA bool, ggmlAttn int64, scale, softcap float32, window int) ([]*graph.Tensor, error) {
	B, S, N, KV, H, P, T, W := g.B, g.S, g.N, g.KV, g.H, g.P, g.T, g.cache.width
	PK, PV := presK.Data, presV.Data
	var pkd, pvd any
	if P > 0 {
		pkd, pvd = pk.Data, pv.Data
	}
	maxL := 0
	for b := 0; b < B; b++ {
		maxL = max(maxL, g.past(b)+S)
	}
	sc.k = growRows(sc.k, H)
	row := sc.k[:H] // the new rows are staged here before encoding
	for b := 0; b < B; b++ {
		p := g.past(b)
		for kh := 0; kh < KV; kh++ {
			dst, src := (b*KV+kh)*T*W, (b*KV+kh)*P*W
			if !inK {
				cacheCopy(PK, pkd, dst, src, p*W)
				cacheClear(PK, dst+(p+S)*W, (T-p-S)*W)
			}
			if !inV {
				cacheCopy(PV, pvd, dst, src, p*W)
				cacheClear(PV, dst+(p+S)*W, (T-p-S)*W)
			}
			for s := 0; s < S; s++ {
				at := dst + (p+s)*W
				copy(row, g.k.at(b*S+s, kh, H))
				if rotary := cosC != nil; rotary {
					pos := p + s
					rotateRow(row, cosC[pos*width:(pos+1)*width], sinC[pos*width:(pos+1)*width], interleaved, rotFMA)
				}
				g.cache.encode(PK, at, row)
				g.cache.encode(PV, at, g.v.at(b*S+s, kh, H))
			}
		}
	}
	j := &sc.heads // in the scratch: nothing allocated a call
	*j = gqaHeads{ctx: ctx, gn: gn, n: n, g: *g, q: sc.q, PK: PK, PV: PV, Y: f32(y), scale: scale, softcap: softcap, window: window,
		mode: ggmlAttn}
	defer func() { *j = gqaHeads{} }()
	if p := gn.pool; p.threads() > 1 && B*KV > 1 && maxL*H*N >= gqaSplitWork {
		// the (batch, KV head) pairs split over the threads, each task
		// with its own scratch (the queries' rows are read only)
		parallelFor(p, B*KV, j, func(j *gqaHeads, t int) {
			if j.ctx.Stopped() {
				return
			}
			hs, _ := j.gn.scratch.Get().(*gqaScratch)
			if hs == nil {
				hs = &gqaScratch{}
			}
			j.head(hs, t/j.g.KV, t%j.g.KV)
			j.gn.scratch.Put(hs)
		})
		if ctx.Stopped() {
			return nil, ctx.Stop(n)
		}
		return ctx.Outputs(y, presK, presV), nil
	}
	for b := 0; b < B; b++ {
		for kh := 0; kh < KV; kh++ {
			if ctx.Stopped() {
				return nil, ctx.Stop(n)
			}
			j.head(sc, b, kh)
		}
	}
	return ctx.Outputs(y, presK, presV), nil
}

// growRows is grow for scratch that grows with the sequence (a row
// more each decode step): what it allocates has room for a quarter more
// (a step's exact size was allocated, and cleared, again at the next).
func growRows(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n, n+n/4+64)
	}
	return b[:n]
}

// gqaSplitWork (a variable for the tests) is the least product of the longest sequence, the head
// size and the query heads (about the multiply-adds of one query
// position) for which runCache splits its heads over the threads: a
// decode step's attention at a few dozen positions is some tens of µs a
// layer, which a 2-thread step would otherwise spend on one thread while
// the other waits.
var gqaSplitWork = 1 << 14

// gqaHeads is one runCache call's attention, head by head.
type gqaHeads struct {
	ctx            *kernels.Context
	gn             *gqaNative
	n              *graph.Node
	g              gqaShape
	q              []float32 // the rotated (rounded) queries
	PK, PV         any       // the presents' data
	Y              []float32
	scale, softcap float32
	window         int
	mode           int64 // contrib.GGMLAttentionAttr
}

// head attends the queries of batch entry b's heads that share KV head
// kh, with the scratch sc.
func (j *gqaHeads) head(sc *gqaScratch, b, kh int) {
	g := &j.g
	S, N, KV, H, T, W := g.S, g.N, g.KV, g.H, g.T, g.cache.width
	p := g.past(b)
	sc.sc, sc.e = growRows(sc.sc, p+S), growRows(sc.e, p+S)
	group := N / KV
	base := (b*KV + kh) * T * W
	if K16, ok := j.PK.([]graph.F16); ok && j.mode == 0 && f16Attn && H%32 == 0 {
		// the float16 rows attended as they are (no decoded copy)
		V16 := j.PV.([]graph.F16)
		K16, V16 = K16[base:base+(p+S)*H], V16[base:base+(p+S)*H]
		if S == 1 && j.srvhAttendGroup(sc, b, kh, p, K16, V16) {
			return // srvh_attend.go: the group's heads side by side
		}
		for h := kh * group; h < (kh+1)*group; h++ {
			for s := 0; s < S; s++ {
				r := b*S + s
				L := p + s + 1
				j0 := 0
				if j.window > 0 {
					j0 = max(0, L-j.window)
				}
				attendF16(j.q[(r*N+h)*H:(r*N+h+1)*H], K16[j0*H:L*H], V16[j0*H:L*H], sc.sc[:L-j0], sc.e[:L-j0], j.Y[(r*N+h)*H:(r*N+h+1)*H], j.scale, j.softcap)
			}
		}
		return
	}
	if K16, ok := j.PK.([]graph.F16); ok && j.mode != 0 && S == 1 && ggmlF16Rows && H%64 == 0 {
		// one query row in llama.cpp's order over the float16 rows as
		// they are (no decoded copy, no transposed values)
		V16 := j.PV.([]graph.F16)
		K16, V16 = K16[base:base+(p+S)*H], V16[base:base+(p+S)*H]
		sc.acc = grow(sc.acc, 64*64)
		L := p + 1
		j0 := 0
		if j.window > 0 {
			j0 = max(0, L-j.window)
		}
		if H == 64 {
			// the group's queries together: each key widened once
			sc.sc = growRows(sc.sc, group*L)
			qs, os := j.q[(b*N+kh*group)*H:(b*N+(kh+1)*group)*H], j.Y[(b*N+kh*group)*H:(b*N+(kh+1)*group)*H]
			if attendGroupGGMLF16(qs, K16, V16, sc.sc, sc.e[:L], sc.acc, os, j0, scoreScale(j.mode, j.scale), j.softcap) {
				return
			}
		}
		for h := kh * group; h < (kh+1)*group; h++ {
			r := b
			if !attendRowGGMLF16(j.q[(r*N+h)*H:(r*N+h+1)*H], K16, V16, sc.sc[:L], sc.e[:L], sc.acc, j.Y[(r*N+h)*H:(r*N+h+1)*H], j0, scoreScale(j.mode, j.scale), j.softcap) {
				panic("native: attendRowGGMLF16 without its kernels")
			}
		}
		return
	}
	sc.k, sc.v = growRows(sc.k, (p+S)*H), growRows(sc.v, (p+S)*H)
	K, V := sc.k[:(p+S)*H], sc.v[:(p+S)*H]
	g.cache.decode(K, j.PK, base, p+S, H)
	g.cache.decode(V, j.PV, base, p+S, H)
	ggmlAttn := j.mode != 0 && !g.cache.q8 // gqa_ggml.go
	if ggmlAttn {
		sc.gv.set(V, H, p+S, S == 1)
	}
	for h := kh * group; h < (kh+1)*group; h++ {
		for s := 0; s < S; s++ {
			r := b*S + s
			q := j.q[(r*N+h)*H : (r*N+h+1)*H]
			L := p + s + 1
			j0 := 0
			if j.window > 0 {
				j0 = max(0, L-j.window)
			}
			o := j.Y[(r*N+h)*H : (r*N+h+1)*H]
			if ggmlAttn {
				attendRowGGML(q, K, &sc.gv, sc.sc[:L], sc.e[:L], o, j0, scoreScale(j.mode, j.scale), j.softcap, S == 1, true)
				continue
			}
			attendCached(q, K[j0*H:], V[j0*H:], sc.sc[:L-j0], sc.e[:L-j0], o, j.scale, j.softcap, !g.cache.q8)
		}
	}
}

// roundQuery rounds a query row (rotated, not scaled) as llama.cpp does
// before its products with a cache of this type: to float16 for a
// float16 cache (ggml's vec_dot_type of F16), through Q8_0 blocks for a
// q8_0 one (its vec_dot_type: the query quantized as activations are).
func (c gqaCache) roundQuery(q []float32) {
	if !c.q8 {
		f16RoundAll(q)
		return
	}
	var blk [contrib.Q8BlockBytes]byte
	for b := 0; b+contrib.Q8Block <= len(q); b += contrib.Q8Block {
		contrib.QuantizeQ8Row(blk[:], q[b:b+contrib.Q8Block])
		contrib.DequantizeQ8Row(q[b:b+contrib.Q8Block], blk[:])
	}
}

// attendCached is attendRow over a decoded cache in llama.cpp's order:
// the score is the product with the (rounded) query times scale, then
// soft-capped; the softmax's sum of exponentials in float64; with half
// set (a float16 cache: llama.cpp's attention without flash attention,
// which multiplies the weights into the float16 values in float16) each
// weight e_j/Σe is rounded to float16 before it weighs its row of V.
func attendCached(q, K, V, scores, e, o []float32, scale, softcap float32, half bool) {
	scoreRows(q, K, scores)
	inv := cachedWeights(scores, e, scale, softcap, half)
	weighRows(e, V, o, inv)
}

// attendF16 is attendCached over float16 rows K and V (len(scores) rows
// of len(q) values each) read as they are, with its bits (the rows
// widened are exact): gqa_cache_amd64.s's kernels where f16Attn (the
// caller checks), one pass for the scores, one for the weighted sum.
func attendF16(q []float32, K, V []graph.F16, scores, e, o []float32, scale, softcap float32) {
	if !f16DotRows(scores, K, q) {
		panic("native: attendF16 without its kernels")
	}
	cachedWeights(scores, e, scale, softcap, true)
	f16WeighRows(e, V, o)
}

// cachedWeights is attendCached's softmax: the scores (the products)
// scaled and soft-capped, their exponentials in e, and the factor
// weighRows multiplies them by (1 with half: e holds the weights
// rounded to float16).
func cachedWeights(scores, e []float32, scale, softcap float32, half bool) float32 {
	expSum(scores, e, scaleMax(scores, scale, softcap)) // srvh_attend.go
	sum := 0.0
	for _, w := range e {
		sum += float64(w)
	}
	inv := float32(1 / sum)
	if half {
		for j, w := range e {
			e[j] = w * inv
		}
		f16RoundAll(e)
		inv = 1
	}
	return inv
}
