//go:generate go run ./internal/asmgenqact -out quantact_amd64.s -stubs quantact_stubs_amd64.go -pkg native

package native

import "github.com/switchyard-hal/switchyard/core/ggml"

// quantizeGGMLAct quantizes the m rows of x (k values each, k a multiple
// of block, 32 or 256) into a, as a.Quantize does and with its bits (the
// same values in every field), on AVX-512 in assembly (internal/asmgenqact:
// llama.cpp's rule with round-half-even by the hardware's conversion, NaN
// and ±Inf blocks made NaN), elsewhere by a.Quantize itself.
func quantizeGGMLAct(a *ggml.Act, x []float32, m, k, block int) {
	if !quantActAsm || m*k == 0 || len(x) < m*k || k%block != 0 || (block != 32 && block != ggml.QK) {
		a.Quantize(x, m, k, block)
		return
	}
	a.Block, a.K = block, k
	nb := m * k / block
	a.Q = growT(a.Q, m*k)
	a.D = growT(a.D, nb)
	if block == 32 {
		a.Sum = growT(a.Sum, nb)
		a.Lanes = growT(a.Lanes, nb*8)
		a.SumD = growT(a.SumD, nb)
		quantAct32(nb, &x[0], &a.Q[0], &a.D[0], &a.Lanes[0], &a.Sum[0], &a.SumD[0])
		return
	}
	a.Sum = growT(a.Sum, nb*16)
	a.Sum32 = growT(a.Sum32, nb*8)
	// the 64 lane sums of four a super-block, in Lanes as scratch
	l := growT(a.Lanes, nb*64)
	quantAct256(nb, &x[0], &a.Q[0], &a.D[0], &l[0])
	for b := 0; b < nb; b++ {
		lb := l[64*b : 64*b+64]
		s := a.Sum[16*b : 16*b+16]
		for g := range s {
			s[g] = lb[4*g] + lb[4*g+1] + lb[4*g+2] + lb[4*g+3]
		}
		s32 := a.Sum32[8*b : 8*b+8]
		for g := range s32 {
			s32[g] = s[2*g] + s[2*g+1]
		}
	}
	a.Lanes = l[:0]
}
