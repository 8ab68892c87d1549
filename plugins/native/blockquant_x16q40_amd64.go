package native

import (
	"github.com/switchyard-hal/switchyard/core/ggml"
	"golang.org/x/sys/cpu"
)

func init() {
	if hasX16 {
		x16Kinds[ggml.Q4_0] = x16Q40Kind(x16Q40Asm(x16Q40Fn()))
	}
}

// x16Q40GemvFn is the assembly kernel's signature (internal/asmgenx16a).
type x16Q40GemvFn = func(nb int, w *uint8, x *int8, xd *float32, xs *int32, y *float32, ng int)

// x16Q40Fn is the Q4_0 kernel for this CPU: the high nibbles by
// GF2P8AFFINEQB where it has GFNI (x16Q40GemvG), else a shift and an AND.
func x16Q40Fn() x16Q40GemvFn {
	if cpu.X86.HasAVX512GFNI {
		return x16Q40GemvG
	}
	return x16Q40GemvZ
}

// x16Q40Asm wraps kernel f as an x16Kind's gemv.
func x16Q40Asm(f x16Q40GemvFn) func(packed []byte, nb, ng int, a *ggml.Act, r int, y []float32) {
	return func(packed []byte, nb, ng int, a *ggml.Act, r int, y []float32) {
		if ng <= 0 || nb <= 0 {
			return
		}
		_ = packed[ng*nb*x16Q40Block-1]
		_ = y[16*ng-1]
		x := a.Q[r*32*nb : (r+1)*32*nb]
		xd, xs := a.D[r*nb:(r+1)*nb], a.Sum[r*nb:(r+1)*nb]
		f(nb, &packed[0], &x[0], &xd[0], &xs[0], &y[0], ng)
	}
}
