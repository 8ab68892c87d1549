//go:generate go run ./internal/asmgenf32w -out f32w_amd64.s -stubs f32w_stubs_amd64.go

package native

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// The F32 weight kernel families of amd64 (internal/asmgenf32w): AVX-512
// (F, VL: 16, 8 and 4 weight rows a call, one to four activation rows)
// and AVX2 with FMA (4 rows, one activation row a call).
var (
	hasF32WAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL
	hasF32WAVX2   = cpu.X86.HasAVX2 && cpu.X86.HasFMA
)

var (
	f32wAVX512 = &f32wKernel{name: "avx512", dots: [5][]f32wDot{nil,
		{{16, f32wDot16x1AVX512}, {8, f32wDot8x1AVX512}, {4, f32wDot4x1AVX512}}, {{8, f32wDot8x2AVX512}, {4, f32wDot4x2AVX512}},
		{{4, f32wDot4x3AVX512}}, {{4, f32wDot4x4AVX512}}}}
	f32wAVX2 = &f32wKernel{name: "avx2", dots: [5][]f32wDot{nil,
		{{4, f32wDot4x1AVX2}}, {{4, f32wRows(f32wDot4x1AVX2, 2)}},
		{{4, f32wRows(f32wDot4x1AVX2, 3)}}, {{4, f32wRows(f32wDot4x1AVX2, 4)}}}}
	// the same with one-row kernels that prefetch rows ahead (weights from
	// memory)
	f32wAVX512P = &f32wKernel{name: "avx512", dots: [5][]f32wDot{nil,
		{{16, f32wDot16x1PAVX512}, {8, f32wDot8x1AVX512}, {4, f32wDot4x1AVX512}}, f32wAVX512.dots[2], f32wAVX512.dots[3], f32wAVX512.dots[4]}}
	f32wAVX2P = &f32wKernel{name: "avx2", dots: [5][]f32wDot{nil, {{4, f32wDot4x1PAVX2}}, f32wAVX2.dots[2], f32wAVX2.dots[3], f32wAVX2.dots[4]}}
)

// f32wRows is a kernel for xr activation rows from a one-row kernel.
func f32wRows(fn func(w *float32, ldw int, x *float32, ldx int, k int, y *float32, ldy int), xr int) func(w *float32, ldw int, x *float32, ldx int, k int, y *float32, ldy int) {
	return func(w *float32, ldw int, x *float32, ldx int, k int, y *float32, ldy int) {
		for i := 0; i < xr; i++ {
			fn(w, ldw, (*float32)(unsafe.Add(unsafe.Pointer(x), 4*i*ldx)), ldx, k, (*float32)(unsafe.Add(unsafe.Pointer(y), 4*i*ldy)), ldy)
		}
	}
}

// f32wKernelFor is the family that family (SWITCHYARD_NATIVE_QKERNEL:
// "generic", "avx2", or "" for the best) allows on this CPU, for a
// matrix streamed from memory when stream (the one-row kernels
// prefetch rows ahead), or of rows of short whole 16-value chunks (1 to
// len(f32wShortKernels)-1; 0: not short) when short (16-row kernels
// holding the activations in registers).
func f32wKernelFor(family string, stream bool, short int) *f32wKernel {
	switch {
	case family == "generic":
		return f32wGo
	case hasF32WAVX512 && family != "avx2":
		if short > 0 {
			// 16-row kernels for rows of short whole chunks
			k := *f32wAVX512
			k.dots[1] = append([]f32wDot{{16, f32wShortKernels[short]}}, k.dots[1][1:]...)
			return &k
		}
		if stream {
			return f32wAVX512P
		}
		return f32wAVX512
	case hasF32WAVX2:
		if stream {
			return f32wAVX2P
		}
		return f32wAVX2
	}
	return f32wGo
}

// f32wFamilies lists the kernel families of this machine (tests).
func f32wFamilies() []*f32wKernel {
	ks := []*f32wKernel{f32wGo}
	for _, f := range []string{"avx2", ""} {
		for _, stream := range []bool{false, true} {
			if k := f32wKernelFor(f, stream, 0); k != ks[len(ks)-1] {
				ks = append(ks, k)
			}
		}
	}
	return ks
}
