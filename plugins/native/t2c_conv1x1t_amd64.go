package native

import "golang.org/x/sys/cpu"

// gemmATKernels[h] (h from 1 to 14) is the AVX-512 micro-kernel of h rows
// and 32 columns reading A transposed in place (row i's k-th value at
// a + k·lda + i: internal/asmgen); nil without AVX-512.
var gemmATKernels = func() []kernelFn {
	if !cpu.X86.HasAVX512F {
		return nil
	}
	return []kernelFn{nil, gemmAVX512x1x32AT, gemmAVX512x2x32AT, gemmAVX512x3x32AT, gemmAVX512x4x32AT,
		gemmAVX512x5x32AT, gemmAVX512x6x32AT, gemmAVX512x7x32AT, gemmAVX512x8x32AT, gemmAVX512x9x32AT,
		gemmAVX512x10x32AT, gemmAVX512x11x32AT, gemmAVX512x12x32AT, gemmAVX512x13x32AT, gemmAVX512x14x32AT}
}()

// gemmATMR and gemmATNR are the tile of gemmATKernels (the avx512x14x32
// micro-kernel's).
const gemmATMR, gemmATNR = 14, 32
