package native

import (
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/ggml"
	"golang.org/x/sys/cpu"
)

// The integer path's few-row products of ggml Q5_0 and Q8_0: a batched
// decode step of 2 to 4 sequences (internal/asmgenbqm's z32.go), four
// weight rows a group in the single-row kernels' ZMM layout, each
// block's unpacking and scales shared by the rows, the activations
// signed bytes straight from memory (their offset's correction packed
// once a call). Q8_0 (the classifier of a tied embedding: long rows,
// long tasks) cuts a task's rows into four runs of consecutive rows and
// a group takes the next row of each run, as the single-row kernels do
// (dot4n): each weight row of a group streams memory in order. Q5_0
// takes groups of four adjacent rows: on Zen 5 (2 threads, BenchmarkFewShapes,
// the two alternating) that measured 1.2–1.35 times a single row's time
// at m = 4 on 896×896 against 1.7–1.9 with runs, 1.4–1.55 on 4864×896
// against 1.65–2.0, where Q8_0's 151936×896 took 1.2–1.85 with runs and
// 1.5–2.5 adjacent. Same bits as the single-row kernels (core/ggml's Dot),
// as the tiles of qgemm.go give.

// hasFewZ: the kernels need AVX-512 BW, BITALG and VNNI (and F16C).
var hasFewZ = hasBQIVNNI && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512BITALG && hasBQKAVX2

type fewFn = func(nb int, w *uint8, ldw int, a *uint8, y *float32, ldy int, ng int, adv int, ys int, yg int)

// the kernels by type and rows (index R-2)
var (
	fewQ5_0 = [3]fewFn{bqmQ5_0x2Z, bqmQ5_0x3Z, bqmQ5_0x4Z}
	fewQ8_0 = [3]fewFn{bqmQ8_0x2Z, bqmQ8_0x3Z, bqmQ8_0x4Z}
)

// fewKernels are type t's few-row kernels (nil: none).
func fewKernels(t ggml.Type) *[3]fewFn {
	switch t {
	case ggml.Q5_0:
		return &fewQ5_0
	case ggml.Q8_0:
		return &fewQ8_0
	}
	return nil
}

// fewMaxRows is the most activation rows the few-row kernels take.
const fewMaxRows = 4

// fewStride is the packed bytes a block of m rows.
func fewStride(m int) int { return 256*m + 64 }

// fewJob is one few-row call's arguments for parallelFor.
type fewJob struct {
	w   *bqWeights
	a   *ggml.Act
	fn  fewFn
	pk  []uint8
	y   []float32
	m   int
	per int
}

// runFew computes y [m, n] = x [m, k] · Wᵀ for 2 ≤ m ≤ fewMaxRows with
// the few-row kernels and reports whether it did (false: none for w
// here; nothing computed).
func (w *bqWeights) runFew(p *pool, x, y []float32, m int) bool {
	fns := fewKernels(w.typ)
	if fewOff || m < 2 || m > fewMaxRows || fns == nil || !hasFewZ || !bqAsm || w.k%32 != 0 {
		return false
	}
	if f, _ := qgemmKernels(w.typ, w.gk.name); f == nil {
		return false // a forced kernel family without the ZMM kernels
	}
	a := qgemmActs.Get().(*ggml.Act)
	defer qgemmActs.Put(a)
	K := w.k
	nb := K / 32
	quantizeGGMLAct(a, x, m, K, 32)
	pk := qgemmPacks.Get().(*qgemmPack)
	defer qgemmPacks.Put(pk)
	n := fewStride(m) * nb
	pk.buf = growT(pk.buf, (n+64)/4)
	raw := unsafe.Slice((*uint8)(unsafe.Pointer(&pk.buf[0])), 4*len(pk.buf))
	buf := raw[(64-int(uintptr(unsafe.Pointer(&raw[0]))%64))%64:][:n] // 64-byte aligned
	packFew(buf, a, m, nb, qgemmOffset(w.typ))
	j := fewJob{w: w, a: a, fn: fns[m-2], pk: buf, y: y, m: m, per: w.n}
	if t := p.threads(); t > 1 && m*w.n*K >= 1<<16 {
		// the single-row kernels' tasks (their bytes of weights): a
		// task's four runs are long streams
		j.per = bqkTaskRows(w.n, w.rb, 1, t, false)
	}
	parallelFor(p, (w.n+j.per-1)/j.per, j, func(j fewJob, t int) {
		j.w.fewRows(j, t*j.per, min(j.w.n, (t+1)*j.per))
	})
	return true
}

// packFew packs m rows of a (blocks of 32, nb a row) for the kernels:
// per block, per row its values 0..15 four times, then 16..31 four
// times, then the int32 −off·(lane sum) of lanes 0..3 four times, then
// of lanes 4..7 four times; then the rows' scales as float32 (64 bytes,
// rows ≥ m zero).
func packFew(buf []uint8, a *ggml.Act, m, nb int, off int32) {
	stride := fewStride(m)
	_ = buf[stride*nb-1]
	for b := 0; b < nb; b++ {
		o := b * stride
		for r := 0; r < m; r++ {
			ab := r*nb + b
			dst := buf[o+256*r : o+256*r+256]
			q := unsafe.Slice((*uint8)(unsafe.Pointer(&a.Q[ab*32])), 32)
			cs := unsafe.Slice((*int32)(unsafe.Pointer(&dst[128])), 32)
			ln := a.Lanes[ab*8 : ab*8+8]
			for c := range 4 {
				copy(dst[16*c:16*c+16], q[:16])
				copy(dst[64+16*c:64+16*c+16], q[16:])
				for l := range 4 {
					cs[4*c+l] = -off * ln[l]
					cs[16+4*c+l] = -off * ln[4+l]
				}
			}
		}
		d := unsafe.Slice((*float32)(unsafe.Pointer(&buf[o+256*m])), 16)
		for r := range d {
			d[r] = 0
			if r < m {
				d[r] = a.D[r*nb+b]
			}
		}
	}
}

// fewRows computes outputs n0..n1-1 of the job's rows: groups of four
// (adjacent rows, or the next row of each of four runs), the rows left
// one by one.
func (w *bqWeights) fewRows(j fewJob, n0, n1 int) {
	N, nb := w.n, w.k/32
	n := n0
	if s := (n1 - n0) / 4; s > 0 {
		rows := w.raw[n*w.rb : (n+4*s)*w.rb]
		y := j.y[n : (j.m-1)*N+n+4*s]
		if (w.typ == ggml.Q8_0) != fewOtherOrder {
			j.fn(nb, &rows[0], s*w.rb, &j.pk[0], &y[0], 4*N, s, w.rb, s, 1) // four runs
		} else {
			j.fn(nb, &rows[0], w.rb, &j.pk[0], &y[0], 4*N, s, 4*w.rb, 1, 4) // adjacent rows
		}
		n += 4 * s
	}
	for ; n < n1; n++ {
		for r := 0; r < j.m; r++ {
			j.y[r*N+n] = w.gk.dot(w, n, j.a, r)
		}
	}
}

// fewOtherOrder: the rows in the order the type does not take (the
// benchmarks compare).
var fewOtherOrder bool
