package native

import (
	"github.com/switchyard-hal/switchyard/core/ggml"
)

// A batched decode step's sibling products (a layer's Q, K and V; its
// gate and up) on the few-row kernels in one parallel loop, as a
// single-row step runs them (bqfuse.go): the activation rows quantized
// once and packed once for each offset (Q5_0's, Q8_0's), the union of
// the members' rows in tasks of the sizes each member's own loop takes
// (fewTaskRows), each member's bias added by the task that computed the
// rows. Each output gets the bits of the member's own node (the same
// kernels on the same quantized activations).

// fewGroupJob is one group call's arguments for parallelFor.
type fewGroupJob struct {
	g   *bqGroup
	a   *ggml.Act
	pk  [bqGroupMax][]uint8
	fns [bqGroupMax]*[3]fewFn
	ys  [bqGroupMax][]float32
	per [bqGroupMax]int
	end [bqGroupMax]int
	m   int
}

// runFewGroup computes the group's members for 2 ≤ m ≤ fewMaxRows
// activation rows with the few-row kernels in one loop and reports
// whether it did (false: a member has none here; nothing computed).
func (g *bqGroup) runFewGroup(p *pool, x []float32, ys [bqGroupMax][]float32, m int) bool {
	if !g.intPath || len(g.ws) > bqGroupMax {
		return false
	}
	j := fewGroupJob{g: g, ys: ys, m: m}
	for i, w := range g.ws {
		if w.x16Gemm(m) {
			return false
		}
		if j.fns[i] = w.fewKernelsFor(m); j.fns[i] == nil {
			return false
		}
	}
	k := g.ws[0].k
	nb := k / 32
	a := qgemmActs.Get().(*ggml.Act)
	defer qgemmActs.Put(a)
	quantizeGGMLAct(a, x, m, k, 32)
	j.a = a
	var pks [2]*qgemmPack // by offset: Q5_0's 16, Q8_0's 128
	var bufs [2][]uint8
	tasks := 0
	for i, w := range g.ws {
		o := 0
		if fewOffset(w.typ) != 16 {
			o = 1
		}
		if pks[o] == nil {
			pks[o] = qgemmPacks.Get().(*qgemmPack)
			defer qgemmPacks.Put(pks[o])
			bufs[o] = fewPack(pks[o], a, m, nb, fewOffset(w.typ))
		}
		j.pk[i] = bufs[o]
		j.per[i] = w.fewTaskRows(p, m)
		tasks += (w.n + j.per[i] - 1) / j.per[i]
		j.end[i] = tasks
	}
	parallelFor(p, tasks, j, func(j fewGroupJob, t int) {
		i, first := groupMember(&j.end, t)
		w, per := j.g.ws[i], j.per[i]
		n0 := (t - first) * per
		n1 := min(w.n, n0+per)
		y := j.ys[i]
		w.fewRows(fewJob{w: w, a: j.a, pk: j.pk[i], y: y, fns: j.fns[i], m: j.m, per: per}, n0, n1)
		addBiasRows(y, j.g.bias[i], j.m, w.n, n0, n1)
	})
	return true
}
