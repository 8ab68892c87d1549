package native

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// attnF32Split is runCacheSplit's loop argument for a float32 cache:
// the call's sizes, the presents', queries' and output's data, and what
// its tasks need to prepare their rows (run's parameters).
type attnF32Split struct {
	gn             *gqaNative
	ctx            *kernels.Context
	g              gqaShape
	q, PK, PV, Y   []float32
	cosC, sinC     []float32
	width          int
	interleaved    bool
	rotFMA         bool
	mode           int64 // contrib.GGMLAttentionAttr
	scale, softcap float32
	window         int
}

// attnSplitF32 is run's float32-cache half for a call whose presents are
// the pasts' own memory (a decode step: the new rows written in place,
// nothing copied), as one parallel loop over the (batch entry, KV head)
// pairs, as runCacheSplit does for float16 and Q8_0 caches: each task
// stores its pair's new keys (rotated) and values, rotates (and scales,
// unless the scores are: mode 1) its group's queries, then attends them
// (attendF32Pair) — each row's arithmetic run's own, on both threads
// where run did it all on one. false (nothing done, sc.q untouched): not
// such a call (another cache, a copy of the pasts, one thread or pair,
// too little work).
func (gn *gqaNative) attnSplitF32(ctx *kernels.Context, n *graph.Node, g *gqaShape, sc *gqaScratch, presK, presV, y *graph.Tensor,
	inK, inV bool, cosC, sinC []float32, width int, interleaved, rotFMA bool, mode int64, scale, softcap float32, window int) (bool, []*graph.Tensor, error) {
	if !attnSplitF32On || g.cache.dt != graph.Float32 || !inK || !inV || gn.pool.threads() <= 1 || g.B*g.KV <= 1 {
		return false, nil, nil
	}
	maxL := 0
	for b := 0; b < g.B; b++ {
		maxL = max(maxL, g.past(b)+g.S)
	}
	if maxL*g.H*g.N < gqaSplitWork {
		return false, nil, nil
	}
	a := &sc.f32 // in the scratch: nothing allocated a call
	*a = attnF32Split{gn: gn, ctx: ctx, g: *g, q: sc.q, PK: f32(presK), PV: f32(presV), Y: f32(y), cosC: cosC, sinC: sinC, width: width,
		interleaved: interleaved, rotFMA: rotFMA, mode: mode, scale: scale, softcap: softcap, window: window}
	defer func() { *a = attnF32Split{} }()
	parallelFor(gn.pool, g.B*g.KV, a, func(a *attnF32Split, t int) {
		if a.ctx.Stopped() {
			return
		}
		hs, _ := a.gn.scratch.Get().(*gqaScratch)
		if hs == nil {
			hs = &gqaScratch{}
		}
		a.pair(hs, t/a.g.KV, t%a.g.KV)
		a.gn.scratch.Put(hs)
	})
	if ctx.Stopped() {
		return true, nil, ctx.Stop(n)
	}
	return true, ctx.Outputs(y, presK, presV), nil
}

// attnSplitF32On turns attnSplitF32 on (a variable for the benchmarks'
// before and after).
var attnSplitF32On = true

// pair is one task of attnSplitF32: batch entry b's new rows of KV head
// kh stored (the keys rotated), its group's queries prepared, then
// attended with the scratch hs — run's arithmetic for those rows.
func (a *attnF32Split) pair(hs *gqaScratch, b, kh int) {
	g := &a.g
	S, N, KV, H, T := g.S, g.N, g.KV, g.H, g.T
	p := g.past(b)
	base := (b*KV + kh) * T * H
	rotary := a.cosC != nil
	for s := 0; s < S; s++ {
		at := base + (p+s)*H
		kr := a.PK[at : at+H]
		copy(kr, g.k.at(b*S+s, kh, H))
		copy(a.PV[at:at+H], g.v.at(b*S+s, kh, H))
		if rotary {
			pos := p + s
			rotateRow(kr, a.cosC[pos*a.width:(pos+1)*a.width], a.sinC[pos*a.width:(pos+1)*a.width], a.interleaved, a.rotFMA)
		}
	}
	group := N / KV
	for s := 0; s < S; s++ {
		r := b*S + s
		pos := p + s
		for h := kh * group; h < (kh+1)*group; h++ {
			dst := a.q[(r*N+h)*H : (r*N+h+1)*H]
			copy(dst, g.q.at(r, h, H))
			if rotary {
				rotateRow(dst, a.cosC[pos*a.width:(pos+1)*a.width], a.sinC[pos*a.width:(pos+1)*a.width], a.interleaved, a.rotFMA)
			}
			if a.mode == 1 {
				continue // the scores scaled
			}
			for i := range dst {
				dst[i] *= a.scale
			}
		}
	}
	K, V := a.PK[base:base+(p+S)*H], a.PV[base:base+(p+S)*H]
	direct := a.mode != 0 && S == 1 && attnF32Rows && H%64 == 0
	if a.mode != 0 && !direct {
		hs.gv.set(V, H, p+S, S == 1)
	}
	if direct {
		hs.acc = grow(hs.acc, 64*64)
	}
	hs.sc, hs.e = growRows(hs.sc, p+S), growRows(hs.e, p+S)
	for h := kh * group; h < (kh+1)*group; h++ {
		for s := 0; s < S; s++ {
			r := b*S + s
			q := a.q[(r*N+h)*H : (r*N+h+1)*H]
			L := p + s + 1
			j0 := 0 // the first key the query sees (sliding window)
			if a.window > 0 {
				j0 = max(0, L-a.window)
			}
			o := a.Y[(r*N+h)*H : (r*N+h+1)*H]
			switch {
			case direct:
				if !attendRowGGMLF32(q, K[:L*H], V[:L*H], hs.sc[:L], hs.e[:L], hs.acc, o, j0, scoreScale(a.mode, a.scale), a.softcap) {
					panic("native: attendRowGGMLF32 without its kernel")
				}
			case a.mode != 0:
				attendRowGGML(q, K, &hs.gv, hs.sc[:L], hs.e[:L], o, j0, scoreScale(a.mode, a.scale), a.softcap, S == 1, false)
			default:
				attendRow(q, K[j0*H:], V[j0*H:], hs.sc[:L-j0], hs.e[:L-j0], o, a.softcap)
			}
		}
	}
}

// attendRowGGMLF32 is attendRowGGML for one query row (decode) over a
// float32 cache (half unset), the values V (L = len(scores) rows of
// len(q) each) weighed as they are, with no transposed copy
// (attnF32Weigh: the same bits); acc is its scratch. False: no kernel
// for this head size (nothing written).
func attendRowGGMLF32(q, K, V, scores, e, acc, o []float32, j0 int, scale, softcap float32) bool {
	H, L := len(q), len(scores)
	if !attnF32Rows || H%64 != 0 || len(o) != H || len(V) < L*H {
		return false
	}
	dotsGGML(scores[j0:L], K[j0*H:L*H], q)
	ggmlWeights(scores, e, j0, scale, softcap, false)
	return attnF32Weigh(e[:L], V[:L*H], acc, o)
}
