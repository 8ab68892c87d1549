package native

import (
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/graph"
)

//go:noescape
func ggmlF16ScoresAVX512(n, h int, k *uint16, q *float32, out *float32)

//go:noescape
func ggmlF16WeighAVX512(n, h int, e *float32, v *uint16, acc *float32, o *float32)

// ggmlF16Rows: bw70_gqaf16_amd64.s's kernels need AVX-512 F and F16C.
var ggmlF16Rows = f16Asm && hasGGMLDot512

// ggmlF16Scores sets out[j] to dotGGML(float32(kⱼ), q) for the len(out)
// float16 rows kⱼ of K (len(q) values each), reading K as it is; false:
// not done (no AVX-512, or len(q) not a multiple of 64), out untouched.
func ggmlF16Scores(out []float32, K []graph.F16, q []float32) bool {
	h, n := len(q), len(out)
	if !ggmlF16Rows || h == 0 || h%64 != 0 || len(K) < n*h {
		return false
	}
	if n > 0 {
		ggmlF16ScoresAVX512(n, h, (*uint16)(unsafe.Pointer(&K[0])), &q[0], &out[0])
	}
	return true
}

// ggmlF16Weigh sets o[d] to dotGGML over value d of the len(e) float16
// rows of V (len(o) values each) and the weights e, both padded with
// zeros to a multiple of 64 keys (attendRowGGML's one-row sum over the
// transposed values), reading V as it is; acc is 64·64 values of
// scratch. False: not done (no AVX-512, or len(o) not a multiple of
// 64), o untouched.
func ggmlF16Weigh(e []float32, V []graph.F16, acc, o []float32) bool {
	h, n := len(o), len(e)
	if !ggmlF16Rows || h == 0 || h%64 != 0 || len(V) < n*h || len(acc) < 64*64 {
		return false
	}
	if n == 0 {
		clear(o)
		return true
	}
	ggmlF16WeighAVX512(n, h, &e[0], (*uint16)(unsafe.Pointer(&V[0])), &acc[0], &o[0])
	return true
}

//go:noescape
func ggmlExpSumAVX512(n int, e *float32) float64

//go:noescape
func ggmlScaleF16AVX512(n int, e *float32, inv float32)

// ggmlExpSum is ggmlWeights' sum of e (sixteen at a time, each sixteen
// reduced by reduce16, added in float64) with AVX-512; false: not here.
func ggmlExpSum(e []float32) (float64, bool) {
	if !hasGGMLDot512 {
		return 0, false
	}
	if len(e) == 0 {
		return 0, true
	}
	return ggmlExpSumAVX512(len(e), &e[0]), true
}

// ggmlScaleF16 sets each e[j] to f16Round(e[j]·inv) with AVX-512 and
// F16C; false: not here (nothing done).
func ggmlScaleF16(e []float32, inv float32) bool {
	if !ggmlF16Rows {
		return false
	}
	if len(e) > 0 {
		ggmlScaleF16AVX512(len(e), &e[0], inv)
	}
	return true
}

//go:noescape
func ggmlF16ScoresGAVX512(n, nq int, k *uint16, q *float32, out *float32, os int)

// ggmlF16ScoresG is ggmlF16Scores for len(q)/64 queries of 64 values (a
// KV head's group) over the n = len(K)/64 float16 keys of K: query i's
// scores in out[i·os : i·os+n]. False: not done (no AVX-512, or len(q)
// not a multiple of 64), out untouched.
func ggmlF16ScoresG(out []float32, os int, K []graph.F16, q []float32) bool {
	n, g := len(K)/64, len(q)/64
	if !ggmlF16Rows || len(q)%64 != 0 || n > os || g > 0 && len(out) < (g-1)*os+n {
		return false
	}
	if n > 0 && g > 0 {
		ggmlF16ScoresGAVX512(n, g, (*uint16)(unsafe.Pointer(&K[0])), &q[0], &out[0], os)
	}
	return true
}
