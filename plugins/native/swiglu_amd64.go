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

// expSub16 writes blockquant.ExpGGML(x[i] − m) into y[i] for the first
// len(x) − len(x)%16 values in assembly where the CPU has AVX-512 and
// returns how many it did.
func expSub16(y, x []float32, m float32) int {
	n := len(x) &^ 15
	if !hasSwiGLU512 || n == 0 {
		return 0
	}
	expSub16AVX512(n, &y[0], &x[0], m)
	return n
}
