//go:generate go run ./internal/asmgenigemm -out igemm_amd64.s -stubs igemm_stubs_amd64.go -pkg native

package native

import "golang.org/x/sys/cpu"

// igemmKernels[h] is the indirect micro-kernel of h rows (h from 1 to 14,
// A packed for mr 14; see the package asmgenigemm), where the CPU has
// AVX-512.
var igemmKernels = func() []igemmFn {
	if !cpu.X86.HasAVX512F {
		return nil
	}
	return []igemmFn{nil, igemmAVX512x1x32, igemmAVX512x2x32, igemmAVX512x3x32, igemmAVX512x4x32,
		igemmAVX512x5x32, igemmAVX512x6x32, igemmAVX512x7x32, igemmAVX512x8x32, igemmAVX512x9x32,
		igemmAVX512x10x32, igemmAVX512x11x32, igemmAVX512x12x32, igemmAVX512x13x32, igemmAVX512x14x32}
}()
