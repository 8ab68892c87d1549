package native

import (
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/graph"
	"golang.org/x/sys/cpu"
)

// f16Attn: gqa_cache_amd64.s's float16 row kernels need AVX-512 F (and
// the FMA the dot products it matches use: dotAVX2, axpyAVX2).
var f16Attn = f16Asm && hasAVX2FMA && cpu.X86.HasAVX512F

//go:noescape
func f16DotRowsAVX512(n, h int, k *uint16, q *float32, out *float32)

//go:noescape
func f16WeighRowsAVX512(n, h int, e *float32, v *uint16, o *float32)

//go:noescape
func f16NarrowF16C(dst *uint16, src *float32, n int)

// f16DotRows sets out[j] to dot(q, kⱼ) for the len(out) float16 rows kⱼ
// of K (len(q) values each) with the bits dot gives the rows widened
// (scoreRows over a decoded cache), reading K as it is; false: not done
// (no AVX-512, or a row not a multiple of 32), out untouched.
func f16DotRows(out []float32, K []graph.F16, q []float32) bool {
	h, n := len(q), len(out)
	if !f16Attn || h == 0 || h%32 != 0 || n == 0 || len(K) < n*h {
		return false
	}
	f16DotRowsAVX512(n, h, (*uint16)(unsafe.Pointer(&K[0])), &q[0], &out[0])
	return true
}

// f16WeighRows sets o to Σⱼ e[j]·vⱼ over the len(e) float16 rows vⱼ of V
// (len(o) values each) with the bits weighRows(e, V widened, o, 1)
// gives, reading V as it is; false: not done (no AVX-512, or a row not a
// multiple of 16), o untouched.
func f16WeighRows(e []float32, V []graph.F16, o []float32) bool {
	h, n := len(o), len(e)
	if !f16Attn || h == 0 || h%16 != 0 || len(V) < n*h {
		return false
	}
	var ep *float32
	var vp *uint16
	if n > 0 {
		ep, vp = &e[0], (*uint16)(unsafe.Pointer(&V[0]))
	}
	f16WeighRowsAVX512(n, h, ep, vp, &o[0])
	return true
}

// archF16Narrow converts the leading multiple of 8 of src to float16 in
// dst (nearest even) with F16C and returns how many it did.
func archF16Narrow(dst []graph.F16, src []float32) int {
	n := len(src) &^ 7
	if !f16Asm || n == 0 {
		return 0
	}
	_ = dst[n-1]
	f16NarrowF16C((*uint16)(unsafe.Pointer(&dst[0])), &src[0], n)
	return n
}
