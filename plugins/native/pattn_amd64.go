//go:generate go run ./internal/asmgenpattn -out pattn_amd64.s -stubs pattn_stubs_amd64.go -pkg native

package native

import "golang.org/x/sys/cpu"

// hasPattn512: pattn_amd64.s needs AVX-512 F and DQ (VEXTRACTF32X8).
var hasPattn512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ

// dots16Fast is dots16 in assembly where the CPU has AVX-512 (false: it
// has not, out untouched); h = len(y) > 0, a multiple of 16.
func dots16Fast(out, x, y []float32) bool {
	if !hasPattn512 {
		return false
	}
	pattnDots16AVX512(&out[0], &x[0], &y[0], len(out), len(y))
	return true
}

// dotsGGMLFast sets out[j] to dotGGML's sum over the first np values of
// row j of x (rows ld apart) with y, np > 0 a multiple of 64, in
// assembly where the CPU has AVX-512 (false: it has not, out untouched).
func dotsGGMLFast(out, x, y []float32, ld, np int) bool {
	if !hasPattn512 {
		return false
	}
	pattnDotsGGMLAVX512(&out[0], &x[0], &y[0], len(out), ld, np)
	return true
}
