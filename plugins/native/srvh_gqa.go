package native

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// srvhPrep is runCacheSplit's loop argument: the call's attention and
// what its tasks need to prepare their rows (run's rotary parameters).
type srvhPrep struct {
	j            *gqaHeads
	cosC, sinC   []float32
	width        int
	interleaved  bool
	rotFMA       bool
	ggmlAttn     int64
	rotary       bool
	scaleQueries bool // ggml attention mode 2 over a float16 cache: the queries scaled before they are rounded
}

// runCacheSplit is run's second half for a float16 or Q8_0 cache whose
// presents are the pasts' own memory (a batched decoder's step: the new
// rows written in place, nothing copied), as one parallel loop over the
// (batch entry, KV head) pairs: each task stores its pair's new keys
// (rotated) and values in the cache's form, rotates and rounds its
// group's queries (run's loop over every query row, each row's the same
// arithmetic), then attends (gqaHeads.head). run and runCache do the
// first two serially, on one thread while the others wait, before their
// loop: for a decode step of four sequences that was 64 rows rotated a
// layer. false (nothing done, sc.q untouched): the call is not one of
// those (a copy of the pasts, one thread or pair, too little work), and
// run goes on as before.
func (gn *gqaNative) runCacheSplit(ctx *kernels.Context, n *graph.Node, g *gqaShape, sc *gqaScratch, presK, presV, y *graph.Tensor,
	inK, inV bool, cosC, sinC []float32, width int, interleaved, rotFMA bool, ggmlAttn int64, scale, softcap float32, window int) (bool, []*graph.Tensor, error) {
	if !gn.splitsPrep(g, inK, inV) {
		return false, nil, nil
	}
	B, KV := g.B, g.KV
	j := &sc.heads // in the scratch: nothing allocated a call
	*j = gqaHeads{ctx: ctx, gn: gn, n: n, g: *g, q: sc.q, PK: presK.Data, PV: presV.Data, Y: f32(y), scale: scale, softcap: softcap, window: window,
		mode: ggmlAttn}
	defer func() { *j = gqaHeads{} }()
	arg := srvhPrep{j: j, cosC: cosC, sinC: sinC, width: width, interleaved: interleaved, rotFMA: rotFMA, ggmlAttn: ggmlAttn,
		rotary: cosC != nil, scaleQueries: ggmlAttn == 2 && !g.cache.q8}
	parallelFor(gn.pool, B*KV, arg, func(a srvhPrep, t int) {
		j := a.j
		if j.ctx.Stopped() {
			return
		}
		hs, _ := j.gn.scratch.Get().(*gqaScratch)
		if hs == nil {
			hs = &gqaScratch{}
		}
		b, kh := t/j.g.KV, t%j.g.KV
		a.prepare(hs, b, kh)
		j.head(hs, b, kh)
		j.gn.scratch.Put(hs)
	})
	if ctx.Stopped() {
		return true, nil, ctx.Stop(n)
	}
	return true, ctx.Outputs(y, presK, presV), nil
}

// srvhSplitPrep turns runCacheSplit on (a variable for the benchmarks'
// before and after).
var srvhSplitPrep = true

// splitsPrep reports whether runCacheSplit takes a call of shape g
// (inK, inV: the presents are the pasts' memory): a float16 or Q8_0
// cache in place, more than one thread and (batch entry, KV head) pair,
// and as much work as runCache splits (gqaSplitWork).
func (gn *gqaNative) splitsPrep(g *gqaShape, inK, inV bool) bool {
	if !srvhSplitPrep || g.cache.dt == graph.Float32 || !inK || !inV || gn.pool.threads() <= 1 || g.B*g.KV <= 1 {
		return false
	}
	maxL := 0
	for b := 0; b < g.B; b++ {
		maxL = max(maxL, g.past(b)+g.S)
	}
	return maxL*g.H*g.N >= gqaSplitWork
}

// prepare stores batch entry b's new keys (rotated) and values of KV
// head kh in the cache and sets its group's queries: rotated, scaled
// first where the mode asks, rounded as the cache rounds them (run's and
// runCache's arithmetic for those rows).
func (a srvhPrep) prepare(hs *gqaScratch, b, kh int) {
	j := a.j
	g := &j.g
	S, N, KV, H, T, W := g.S, g.N, g.KV, g.H, g.T, g.cache.width
	p := g.past(b)
	hs.k = growRows(hs.k, H)
	row := hs.k[:H]
	base := (b*KV + kh) * T * W
	for s := 0; s < S; s++ {
		at := base + (p+s)*W
		copy(row, g.k.at(b*S+s, kh, H))
		if a.rotary {
			pos := p + s
			rotateRow(row, a.cosC[pos*a.width:(pos+1)*a.width], a.sinC[pos*a.width:(pos+1)*a.width], a.interleaved, a.rotFMA)
		}
		g.cache.encode(j.PK, at, row)
		g.cache.encode(j.PV, at, g.v.at(b*S+s, kh, H))
	}
	group := N / KV
	for s := 0; s < S; s++ {
		r := b*S + s
		pos := p + s
		for h := kh * group; h < (kh+1)*group; h++ {
			dst := j.q[(r*N+h)*H : (r*N+h+1)*H]
			copy(dst, g.q.at(r, h, H))
			if a.rotary {
				rotateRow(dst, a.cosC[pos*a.width:(pos+1)*a.width], a.sinC[pos*a.width:(pos+1)*a.width], a.interleaved, a.rotFMA)
			}
			if a.scaleQueries {
				for i := range dst {
					dst[i] *= j.scale
				}
			}
			g.cache.roundQuery(dst)
		}
	}
}
