package native

import (
	"github.com/switchyard-hal/switchyard/core/ggml"
	"golang.org/x/sys/cpu"
)

// hasX16bAsm: the x16 Q5_0 and Q6_K kernels need AVX-512 BW, VNNI,
// BITALG (VPSHUFBITQMB) and GFNI, and F16C.
var hasX16bAsm = hasBQIVNNI && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512BITALG && cpu.X86.HasAVX512GFNI && cpu.X86.HasF16C

// x16bArchGemv runs the assembly kernel of type t (Q5_0 or Q6_K) for
// activation rows r..r+m-1 (m 1 or 2), reporting false where it does not
// (the CPU lacks it, or SWITCHYARD_NATIVE_QKERNEL forces another family).
func x16bArchGemv(t ggml.Type, packed []byte, nb, ng int, a *ggml.Act, r, m int, y []float32, ldy int) bool {
	if !hasX16bAsm || x16bForceGo || ng <= 0 || m < 1 || m > 2 {
		return false
	}
	if f := qkernelFamily(); f == "generic" || f == "avx2" || f == "vnni256" {
		return false
	}
	var f func(nb int, w *uint8, x *int8, xd *float32, xs *int32, y *float32, ng int, ldy int)
	var xs []int32
	var size, ns int
	switch t {
	case ggml.Q5_0:
		f, size, ns, xs = x16bQ5_0Gemv1, x16q5Size(nb), 8, a.Lanes
		if m == 2 {
			f = x16bQ5_0Gemv2
		}
	case ggml.Q6_K:
		f, size, ns, xs = x16bQ6KGemv1, x16q6kSize(nb), 16, a.Sum
		if m == 2 {
			f = x16bQ6KGemv2
		}
	default:
		return false
	}
	K := nb * ggml.ActBlock(t)
	_ = packed[ng*size-1]
	_ = y[(m-1)*ldy+16*ng-1]
	x := a.Q[r*K : (r+m)*K]
	xd := a.D[r*nb : (r+m)*nb]
	s := xs[r*nb*ns : (r+m)*nb*ns]
	f(nb, &packed[0], &x[0], &xd[0], &s[0], &y[0], ng, ldy)
	return true
}

// The Q5_0 and Q6_K kinds take batched decode's few rows (gemm, up to
// x16GemmRows) and leave prefill to the raw layout's tiles (gemmMax).
func init() {
	if hasX16bAsm && hasX16 {
		x16Kinds[ggml.Q5_0] = &x16Kind{size: x16q5Size, repack: x16q5Repack, gemv: x16q5Gemv, gemm: x16q5GemvM, gemmMax: x16GemmRows}
		x16Kinds[ggml.Q6_K] = &x16Kind{size: x16q6kSize, repack: x16q6kRepack, gemv: x16q6kGemv, gemm: x16q6kGemvM, gemmMax: x16GemmRows}
	}
}
