package native

import "golang.org/x/sys/cpu"

// hasBQIVNNI: VPDPBUSD on YMM registers (AVX-512 VNNI with AVX512VL).
var hasBQIVNNI = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512VNNI

var (
	bqiVNNI = newBQIKernel("vnni", bqi8Dot4VNNI, bqi8Dot1VNNI, bqi4Dot4VNNI, bqi4Dot1VNNI)
	bqiAVX2 = newBQIKernel("avx2", bqi8Dot4AVX2, bqi8Dot1AVX2, bqi4Dot4AVX2, bqi4Dot1AVX2)
)

type bqiFn8 = func(nb int, x *int8, xd *float32, ns *int32, q *int8, ldq int, s *float32, lds int, y *float32)
type bqiFn4 = func(nb int, x *int8, xd *float32, ns *int32, q *uint8, ldq int, s *float32, lds int, y *float32)

// newBQIKernel wraps a family's kernels as a bqiKernel.
func newBQIKernel(name string, d8x4, d8x1 bqiFn8, d4x4, d4x1 bqiFn4) *bqiKernel {
	call := func(w *bqWeights, j int, a *bqAct, r int, y []float32, f8 bqiFn8, f4 bqiFn4, nr int) {
		K := w.k
		nb := K / bqiBlock
		_ = y[nr-1]
		_ = w.s[(j+nr)*nb-1]
		x, xd := a.q[r*K:r*K+K], a.d[r*nb:r*nb+nb]
		if w.bits == 8 {
			q := w.q8[j*K : (j+nr)*K]
			f8(nb, &x[0], &xd[0], nil, &q[0], K, &w.s[j*nb], 4*nb, &y[0])
			return
		}
		ns := a.ns[r*K/4 : r*K/4+K/4]
		q := w.q4[j*K/2 : (j+nr)*K/2]
		f4(nb, &x[0], &xd[0], &ns[0], &q[0], K/2, &w.s[j*nb], 4*nb, &y[0])
	}
	return &bqiKernel{
		name: name,
		dot4: func(w *bqWeights, j int, a *bqAct, r int, y []float32) {
			call(w, j, a, r, y, d8x4, d4x4, 4)
		},
		dot1: func(w *bqWeights, j int, a *bqAct, r int) float32 {
			var y [1]float32
			call(w, j, a, r, y[:], d8x1, d4x1, 1)
			return y[0]
		},
	}
}

// archBQIKernel is the integer path's family for this CPU under the forced
// family f (qkernelFamily; nil: the Go one).
func archBQIKernel(f string) *bqiKernel {
	switch {
	case f == "generic":
		return nil
	case hasBQIVNNI && useQ512(f):
		return bqiVNNI
	case hasQAVX2:
		return bqiAVX2
	}
	return nil
}
