package native

import (
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/ggml"
	"golang.org/x/sys/cpu"
)

// The integer path's few-row products of ggml Q5_0 and Q8_0: a batched
// decode step of 2 to 4 sequences (internal/asmgenbqm's z32.go), four
// weight rows a group in the single-row kernel's ZMM layout, each block's
// unpacking, scales and offset correction shared by the rows. Same bits
// as the single-row kernels (core/ggml's Dot), as the tiles of qgemm.go
// give. Q5_0: about as fast as the tiles at 4 rows and 10–15% faster at 2
// and 3 (BenchmarkFewKernel, data in cache), where the tiles' pairs of
// rows do the most work for the fewest rows. Q8_0 (a tied classifier,
// 151936 × 896 in Qwen2.5-0.5B): see BenchmarkFewShapes.

// hasFewZ: the kernels need AVX-512 BW, BITALG and VNNI (and F16C).
var hasFewZ = hasBQIVNNI && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512BITALG && hasBQKAVX2

type fewFn = func(nb int, w *uint8, ldw int, a *uint8, y *float32, ldy int, ng int, gw int, gy int, ldo int)

// fewQ5_0 and fewQ8_0 are the kernels by rows (index R-2).
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
func fewStride(m int) int { return 128*m + 64 }

// fewJob is one few-row call's arguments for parallelFor.
type fewJob struct {
	w   *bqWeights
	a   *ggml.Act
	pk  []uint8
	y   []float32
	fns *[3]fewFn
	m   int
	per int
}

// runFew computes y [m, n] = x [m, k] · Wᵀ for 2 ≤ m ≤ fewMaxRows with
// the few-row kernels and reports whether it did (false: none for w
// here; nothing computed).
func (w *bqWeights) runFew(p *pool, x, y []float32, m int) bool {
	if fewOff || m < 2 || m > fewMaxRows || !hasFewZ || !bqAsm || w.k%32 != 0 {
		return false
	}
	few := fewKernels(w.typ)
	if few == nil {
		return false
	}
	if fns, _ := qgemmKernels(w.typ, w.gk.name); fns == nil {
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
	packFew(buf, a, m, nb)
	j := fewJob{w: w, a: a, pk: buf, y: y, fns: few, m: m, per: w.n}
	if t := p.threads(); t > 1 && m*w.n*K >= 1<<16 {
		// tasks as the single-row kernels' (at most bqkTaskBytes of
		// weights, claimed as they come): in two a thread, a thread the
		// machine slowed left the other waiting up to half the product
		j.per = bqkTaskRows(w.n, w.rb, 1, t, false)
	}
	parallelFor(p, (w.n+j.per-1)/j.per, j, func(j fewJob, t int) {
		j.w.fewRows(j, t*j.per, min(j.w.n, (t+1)*j.per))
	})
	return true
}

// packFew packs m rows of a (blocks of 32, nb a row) for the kernels:
// per block, per row its values 0..15 plus 128 (as bytes) four times,
// then 16..31 plus 128 four times; then the rows' scales as float32 (64
// bytes, rows ≥ m zero).
func packFew(buf []uint8, a *ggml.Act, m, nb int) {
	stride := fewStride(m)
	_ = buf[stride*nb-1]
	for b := 0; b < nb; b++ {
		o := b * stride
		for r := 0; r < m; r++ {
			src := a.Q[(r*nb+b)*32 : (r*nb+b)*32+32]
			dst := buf[o+128*r : o+128*r+128]
			for i := range 16 {
				dst[i] = uint8(src[i]) ^ 0x80
				dst[64+i] = uint8(src[16+i]) ^ 0x80
			}
			for c := 1; c < 4; c++ {
				copy(dst[16*c:16*c+16], dst[:16])
				copy(dst[64+16*c:64+16*c+16], dst[64:80])
			}
		}
		d := unsafe.Slice((*float32)(unsafe.Pointer(&buf[o+128*m])), 16)
		for r := range d {
			d[r] = 0
			if r < m {
				d[r] = a.D[r*nb+b]
			}
		}
	}
}

// fewRuns reports whether type t's kernels take their groups' rows from
// four runs of consecutive rows (else groups of adjacent rows; see
// internal/asmgenbqm's fewZ).
func fewRuns(t ggml.Type) bool { return t == ggml.Q8_0 }

// fewLayout is the kernels' ldw, gw, gy and ldo for ng groups of rows
// rb bytes.
func fewLayout(t ggml.Type, ng, rb int) (ldw, gw, gy, ldo int) {
	if fewRuns(t) {
		return ng * rb, rb, 4, 4 * ng
	}
	return rb, 4 * rb, 16, 4
}

// fewRows computes outputs n0..n1-1 of the job's rows, in groups of four
// (fewLayout), the rows left over one at a time.
func (w *bqWeights) fewRows(j fewJob, n0, n1 int) {
	N, nb := w.n, w.k/32
	n := n0
	if ng := (n1 - n0) / 4; ng > 0 {
		rows := w.raw[n*w.rb : (n+4*ng)*w.rb]
		y := j.y[n : (j.m-1)*N+n+4*ng]
		ldw, gw, gy, ldo := fewLayout(w.typ, ng, w.rb)
		j.fns[j.m-2](nb, &rows[0], ldw, &j.pk[0], &y[0], 4*N, ng, gw, gy, ldo)
		n += 4 * ng
	}
	for ; n < n1; n++ {
		for r := 0; r < j.m; r++ {
			j.y[r*N+n] = w.gk.dot(w, n, j.a, r)
		}
	}
}
