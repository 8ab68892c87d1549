package native

import "golang.org/x/sys/cpu"

// hasGGMLDot512: gqa_ggml_amd64.s needs AVX-512 F.
var hasGGMLDot512 = cpu.X86.HasAVX512F

// dotGGMLFast is dotGGML over n = len(x), a multiple of 64, in assembly
// where the CPU has AVX-512 (ok false: it has not).
func dotGGMLFast(x, y []float32) (float32, bool) {
	if !hasGGMLDot512 || len(x) == 0 {
		return 0, hasGGMLDot512
	}
	return dotGGMLAVX512(len(x), &x[0], &y[0]), true
}

// dot16Fast is dot16 over n = len(x), a multiple of 16, in assembly
// where the CPU has AVX-512 (ok false: it has not).
func dot16Fast(x, y []float32) (float32, bool) {
	if !hasGGMLDot512 || len(x) == 0 {
		return 0, hasGGMLDot512
	}
	return dot16AVX512(len(x), &x[0], &y[0]), true
}
