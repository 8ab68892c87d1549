package native

import (
	"github.com/switchyard-hal/switchyard/core/ggml"
	"golang.org/x/sys/cpu"
)

func init() {
	if hasX16 {
		x16Kinds[ggml.Q4_0] = x16Q40Kind(x16Q40Fns(cpu.X86.HasAVX512GFNI))
	}
}

// x16Q40Fn is the assembly kernels' signature (internal/asmgenx16a): nr
// activation rows a kernel.
type x16Q40Fn = func(nb int, w *uint8, x *int8, xd *float32, xs *int32, y *float32, ng int, ldy int)

// x16Q40Fns are the Q4_0 kernels of one to four activation rows: the
// high nibbles by GF2P8AFFINEQB (gfni), else a shift and an AND.
func x16Q40Fns(gfni bool) [x16GemmRows]x16Q40Fn {
	if gfni {
		return [...]x16Q40Fn{x16Q40R1G, x16Q40R2G, x16Q40R3G, x16Q40R4G}
	}
	return [...]x16Q40Fn{x16Q40R1Z, x16Q40R2Z, x16Q40R3Z, x16Q40R4Z}
}

// x16Q40Kind is Q4_0's kind with the kernels fs.
func x16Q40Kind(fs [x16GemmRows]x16Q40Fn) *x16Kind {
	gemm := func(packed []byte, nb, ng int, a *ggml.Act, r, nr int, y []float32, ldy int) {
		if ng <= 0 || nb <= 0 || nr < 1 || nr > x16GemmRows {
			return
		}
		_ = packed[ng*nb*x16Q40Block-1]
		_ = y[(nr-1)*ldy+16*ng-1]
		x := a.Q[r*32*nb : (r+nr)*32*nb]
		xd, xs := a.D[r*nb:(r+nr)*nb], a.Sum[r*nb:(r+nr)*nb]
		fs[nr-1](nb, &packed[0], &x[0], &xd[0], &xs[0], &y[0], ng, ldy)
	}
	return &x16Kind{size: x16Q40Size, repack: x16Q40Repack, gemm: gemm,
		gemv: func(packed []byte, nb, ng int, a *ggml.Act, r int, y []float32) { gemm(packed, nb, ng, a, r, 1, y, 0) }}
}
