//go:generate go run ./internal/asmgenk4few -out k4few_amd64.s -stubs k4few_stubs_amd64.go -pkg native

package native

import (
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/ggml"
)

// The integer path's few-row products of ggml Q4_K and Q6_K (a batched decode
// step of 2 to 4 sequences; Qwen2.5's ffn_down): groups of four weight
// rows, one a 128-bit lane, each super-block's quants, scales and
// minimums unpacked once for the R activation rows, the sixteen (row,
// activation row) sums added across in one vector (internal/
// asmgenk4few). Same bits as core/ggml's Dot of each row alone (the
// tiles of qgemm.go give the same). The activations are the tiles'
// packing (packK); a task's rows are cut into four runs of consecutive
// rows (a group takes one row of each), so that each row of a group
// streams through memory in order, as the single-row kernels' quarters.
//
// Measured (Zen 5 VM, 2 vCPUs shared, load 4–7; least CPU time, the
// variants alternating in one process): in the L1 cache
// (BenchmarkK4FewKernel, K 4864, ns a super-block of four rows, few/
// tile) Q4_K R2 16.8/26.9, R3 21.3/30.8, R4 25.0/33.1, Q6_K R2 21.2/37.2,
// R3 26.5/41.3, R4 32.3/45.9; streaming 64 MB of Qwen2.5-0.5B's ffn_down
// (BenchmarkK4FewMem, 896 × 4864, one thread, µs a product few/tiles/one
// row) Q4_K m4 124–136/181–196/67, m2 86–93/138–153, Q6_K m4 182–212/
// 249–271/88–101, m2 122–138/198–208. Groups of four adjacent rows (the
// same kernels, the next rows prefetched the same) took 25–45% more time
// than the runs; prefetching 384 or 1536 bytes ahead in a run instead of
// 768, about the same or worse.

// k4fewOff turns the few-row kernels of Q4_K and Q6_K off (the tiles of qgemm.go
// then take m = 2…4), for benchmarks.
var k4fewOff bool

type k4fewFn = func(nb int, w *uint8, ldw int, a *int8, y *float32, ldy int, ng int, gw int, gy int, ldo int)

// k4fewKernels are the kernels by type, by activation rows (index R-2).
var k4fewKernels = map[ggml.Type]*[3]k4fewFn{
	ggml.Q4_K: {k4fewQ4Kx2Z, k4fewQ4Kx3Z, k4fewQ4Kx4Z},
	ggml.Q6_K: {k4fewQ6Kx2Z, k4fewQ6Kx3Z, k4fewQ6Kx4Z},
}

// k4fewKernelsFor are w's few-row kernels for m activation rows (nil:
// none here, or m out of their range).
func (w *bqWeights) k4fewKernelsFor(m int) *[3]k4fewFn {
	if k4fewOff || fewOff || m < 2 || m > fewMaxRows || !hasFewZ || !bqAsm || w.k%ggml.QK != 0 || w.gk == nil {
		return nil
	}
	if _, kfns := qgemmKernels(w.typ, w.gk.name); kfns == nil {
		return nil // a forced kernel family without the ZMM kernels
	}
	return k4fewKernels[w.typ]
}

// k4fewJob is one call's arguments for parallelFor.
type k4fewJob struct {
	w   *bqWeights
	a   *ggml.Act
	pk  []int8
	y   []float32
	fns *[3]k4fewFn
	m   int
	per int
}

// runK4Few computes y [m, n] = x [m, k] · Wᵀ for 2 ≤ m ≤ fewMaxRows with
// the K types' few-row kernels and reports whether it did (false: none
// for w here; nothing computed).
func (w *bqWeights) runK4Few(p *pool, x, y []float32, m int) bool {
	fns := w.k4fewKernelsFor(m)
	if fns == nil {
		return false
	}
	a := qgemmActs.Get().(*ggml.Act)
	defer qgemmActs.Put(a)
	nb := w.k / ggml.QK
	quantizeGGMLAct(a, x, m, w.k, ggml.QK)
	pk := qgemmPacks.Get().(*qgemmPack)
	defer qgemmPacks.Put(pk)
	pk.packK(a, w.typ, 0, m, nb)
	buf := unsafe.Slice((*int8)(unsafe.Pointer(&pk.buf[0])), 4*len(pk.buf))
	j := k4fewJob{w: w, a: a, pk: buf, y: y, fns: fns, m: m, per: w.fewTaskRows(p, m)}
	parallelFor(p, (w.n+j.per-1)/j.per, j, func(j k4fewJob, t int) {
		j.w.k4fewRows(j, t*j.per, min(j.w.n, (t+1)*j.per))
	})
	return true
}

// k4fewRows computes outputs n0..n1-1 of the job's rows: ng groups of
// four, row i of group g the output n0 + i·ng + g (four runs of ng
// consecutive rows), the rows left over one at a time.
func (w *bqWeights) k4fewRows(j k4fewJob, n0, n1 int) {
	N, nb := w.n, w.k/ggml.QK
	n := n0
	if ng := (n1 - n0) / 4; ng > 0 {
		rows := w.raw[n*w.rb : (n+4*ng)*w.rb]
		y := j.y[n : (j.m-1)*N+n+4*ng]
		j.fns[j.m-2](nb, &rows[0], ng*w.rb, &j.pk[0], &y[0], 4*N, ng, w.rb, 4, 4*ng)
		n += 4 * ng
	}
	for ; n < n1; n++ {
		for r := 0; r < j.m; r++ {
			j.y[r*N+n] = w.gk.dot(w, n, j.a, r)
		}
	}
}
