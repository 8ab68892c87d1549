package native

import "golang.org/x/sys/cpu"

// hasSwiGLU512: swiglu_amd64.s needs AVX-512 F (VSCALEFPS, opmasks).
var hasSwiGLU512 = cpu.X86.HasAVX512F

// swiglu16 computes the first n − n%16 outputs in assembly where the CPU
// has AVX-512 and returns how many it did.
func swiglu16(y, a, b []float32) int {
	n := len(a) &^ 15
	if !hasSwiGLU512 || n == 0 {
		return 0
	}
	swiglu16AVX512(n, &y[0], &a[0], &b[0])
	return n
}
