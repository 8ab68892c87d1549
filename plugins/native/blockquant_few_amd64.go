package native

import (
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/ggml"
	"golang.org/x/sys/cpu"
)

// The integer path's few-row products of ggml Q5_0 and Q8_0: a batched
// decode step of 2 to 4 sequences (internal/asmgenbqm's z32.go), eight
// weight rows a group (two quads in the single-row kernel's ZMM layout),
// each block's unpacking and scales shared by the rows, the offsets'
// correction packed with the activations once a call. Same bits as the
// single-row kernels (core/ggml's Dot), as the tiles of qgemm.go give.
// Streaming their weights from memory (BenchmarkSrv4FewMem, one thread,
// four rows) about as fast as the tiles (Q5_0) or 3–8% faster (Q8_0, the
// tied classifier, 151936 × 896 in Qwen2.5-0.5B); at 2 and 3 rows
// faster than the tiles, whose pairs of rows do the most work for the
// fewest rows (BenchmarkFewKernel, in cache).

// hasFewZ: the kernels need AVX-512 BW, BITALG and VNNI (and F16C).
var hasFewZ = hasBQIVNNI && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512BITALG && hasBQKAVX2

type fewFn = func(nb int, w *uint8, ldw int, a *uint8, y *float32, ldy int, ng int, gw int, gy int, ldo int)

// fewZKernels are the kernels by type and group rows (4 or 8), by
// activation rows (index R-2).
var fewZKernels = map[fewVariant]*[3]fewFn{
	{ggml.Q5_0, 4}: {bqmQ5_0x2Z, bqmQ5_0x3Z, bqmQ5_0x4Z},
	{ggml.Q8_0, 4}: {bqmQ8_0x2Z, bqmQ8_0x3Z, bqmQ8_0x4Z},
	{ggml.Q5_0, 8}: {bqmQ5_0x2Z8, bqmQ5_0x3Z8, bqmQ5_0x4Z8},
	{ggml.Q8_0, 8}: {bqmQ8_0x2Z8, bqmQ8_0x3Z8, bqmQ8_0x4Z8},
}

// fewVariant names a set of few-row kernels: type and group rows.
type fewVariant struct {
	t ggml.Type
	G int
}

// fewGroup is the weight rows of the kernels' groups (4 or 8; 8
// measured 5–12% faster, see internal/asmgenbqm's z32.go).
var fewGroup = 8

// fewKernels are type t's few-row kernels (nil: none) for groups of
// fewGroup rows.
func fewKernels(t ggml.Type) *[3]fewFn {
	return fewZKernels[fewVariant{t, fewGroup}]
}

// fewMaxRows is the most activation rows the few-row kernels take.
const fewMaxRows = 4

// fewStride is the packed bytes a block of m rows.
func fewStride(m int) int { return 64*m + 64 }

// fewOffset is the offset of type t's unsigned quants in the few-row
// kernels (Q5_0's 5-bit quants q stand for q−16, Q8_0's q+128 for q):
// each lane starts at −fewOffset(t) times its four activations' sum.
func fewOffset(t ggml.Type) int32 {
	if t == ggml.Q8_0 {
		return 128
	}
	return 16
}

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

// fewKernelsFor are w's few-row kernels for m activation rows (nil:
// none here, or m out of their range).
func (w *bqWeights) fewKernelsFor(m int) *[3]fewFn {
	if fewOff || m < 2 || m > fewMaxRows || !hasFewZ || !bqAsm || w.k%32 != 0 || w.gk == nil {
		return nil
	}
	if fns, _ := qgemmKernels(w.typ, w.gk.name); fns == nil {
		return nil // a forced kernel family without the ZMM kernels
	}
	return fewKernels(w.typ)
}

// fewPack packs m rows of a (nb blocks a row) for kernels whose quants
// are offset by off into pk's buffer, 64-byte aligned.
func fewPack(pk *qgemmPack, a *ggml.Act, m, nb int, off int32) []uint8 {
	n := fewStride(m) * nb
	pk.buf = growT(pk.buf, (n+64)/4)
	raw := unsafe.Slice((*uint8)(unsafe.Pointer(&pk.buf[0])), 4*len(pk.buf))
	buf := raw[(64-int(uintptr(unsafe.Pointer(&raw[0]))%64))%64:][:n]
	packFew(buf, a, m, nb, off)
	return buf
}

// fewTaskRows is the rows of a task of w's few-row product of m rows
// on p: as the single-row kernels' (at most bqkTaskBytes of weights,
// claimed as they come; in two a thread, a thread the machine slowed
// left the other waiting up to half the product).
func (w *bqWeights) fewTaskRows(p *pool, m int) int {
	if t := p.threads(); t > 1 && m*w.n*w.k >= 1<<16 {
		return bqkTaskRows(w.n, w.rb, 1, t, false)
	}
	return w.n
}

// runFew computes y [m, n] = x [m, k] · Wᵀ for 2 ≤ m ≤ fewMaxRows with
// the few-row kernels and reports whether it did (false: none for w
// here; nothing computed).
func (w *bqWeights) runFew(p *pool, x, y []float32, m int) bool {
	if w.runK4Few(p, x, y, m) { // Q4_K, Q6_K (k4few_amd64.go)
		return true
	}
	few := w.fewKernelsFor(m)
	if few == nil {
		return false
	}
	a := qgemmActs.Get().(*ggml.Act)
	defer qgemmActs.Put(a)
	nb := w.k / 32
	quantizeGGMLAct(a, x, m, w.k, 32)
	pk := qgemmPacks.Get().(*qgemmPack)
	defer qgemmPacks.Put(pk)
	buf := fewPack(pk, a, m, nb, fewOffset(w.typ))
	j := fewJob{w: w, a: a, pk: buf, y: y, fns: few, m: m, per: w.fewTaskRows(p, m)}
	parallelFor(p, (w.n+j.per-1)/j.per, j, func(j fewJob, t int) {
		j.w.fewRows(j, t*j.per, min(j.w.n, (t+1)*j.per))
	})
	return true
}

// packFew packs m rows of a (blocks of 32, nb a row) for the kernels
// of a type whose quants are offset by off (fewOffset): per block, per
// row its 32 values (signed bytes), then its eight lanes' starts −off·Σ
// (a.Lanes: the sums of four values) as int32; then the rows' scales as
// float32 (64 bytes, rows ≥ m zero).
func packFew(buf []uint8, a *ggml.Act, m, nb int, off int32) {
	stride := fewStride(m)
	_ = buf[stride*nb-1]
	for b := 0; b < nb; b++ {
		o := b * stride
		for r := 0; r < m; r++ {
			ab := r*nb + b
			dst := buf[o+64*r : o+64*r+64]
			copy(dst[:32], unsafe.Slice((*uint8)(unsafe.Pointer(&a.Q[ab*32])), 32))
			st := unsafe.Slice((*int32)(unsafe.Pointer(&dst[32])), 8)
			for l, v := range a.Lanes[ab*8 : ab*8+8] {
				st[l] = -off * v
			}
		}
		d := unsafe.Slice((*float32)(unsafe.Pointer(&buf[o+64*m])), 16)
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

// fewLayout is the kernels' ldw, gw, gy and ldo for ng groups of G
// rows rb bytes.
func fewLayout(t ggml.Type, ng, G, rb int) (ldw, gw, gy, ldo int) {
	if fewRuns(t) {
		return ng * rb, rb, 4, 4 * ng
	}
	return rb, G * rb, 4 * G, 4
}

// fewRows computes outputs n0..n1-1 of the job's rows, in groups of
// fewGroup (fewLayout), the rows left over one at a time.
func (w *bqWeights) fewRows(j fewJob, n0, n1 int) {
	N, nb, G := w.n, w.k/32, fewGroup
	n := n0
	if ng := (n1 - n0) / G; ng > 0 {
		rows := w.raw[n*w.rb : (n+G*ng)*w.rb]
		y := j.y[n : (j.m-1)*N+n+G*ng]
		ldw, gw, gy, ldo := fewLayout(w.typ, ng, G, w.rb)
		j.fns[j.m-2](nb, &rows[0], ldw, &j.pk[0], &y[0], 4*N, ng, gw, gy, ldo)
		n += G * ng
	}
	for ; n < n1; n++ {
		for r := 0; r < j.m; r++ {
			j.y[r*N+n] = w.gk.dot(w, n, j.a, r)
		}
	}
}
