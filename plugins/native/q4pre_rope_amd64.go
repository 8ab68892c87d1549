//go:generate go run ./internal/asmgenq4pre -out q4pre_rope_amd64.s -stubs q4pre_rope_stubs_amd64.go -pkg native

package native

import "golang.org/x/sys/cpu"

// hasRopeFMA512: q4pre_rope_amd64.s needs AVX-512 F (its fused
// multiply-adds are AVX-512 F's).
var hasRopeFMA512 = cpu.X86.HasAVX512F

// rotateRowFMAFast rotates the vector part of a head's row as
// rotateRowFMA does, in assembly where the CPU has AVX-512 F, and returns
// the pairs it did (the first ones: 16 at a time, 8 interleaved); 0
// where it cannot.
func rotateRowFMAFast(x, c, s []float32, interleaved bool) int {
	w := len(c)
	if !hasRopeFMA512 || w == 0 {
		return 0
	}
	if interleaved {
		n := w &^ 7
		if n > 0 {
			_, _ = x[2*n-1], s[n-1]
			q4preRopePairsAVX512(n, &x[0], &c[0], &s[0])
		}
		return n
	}
	n := w &^ 15
	if n > 0 {
		_, _ = x[w+n-1], s[n-1]
		q4preRopeHalfAVX512(n, &x[0], &x[w], &c[0], &s[0])
	}
	return n
}
