//go:generate go run ./internal/asmgenf32w -out f32w_amd64.s -stubs f32w_stubs_amd64.go

package native

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// The F32 weight kernel families of amd64 (internal/asmgenf32w): AVX-512
// (F: 8 and 4 weight rows a call, one to four activation rows) and AVX2
// with FMA (4 rows, one activation row a call).
var (
	hasF32WAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL
	hasF32WAVX2   = cpu.X86.HasAVX2 && cpu.X86.HasFMA
)

var (
	f32wAVX512 = &f32wKernel{name: "avx512", dots: [5][]f32wDot{nil,
		{{8, f32wDot8x1AVX512}, {4, f32wDot4x1AVX512}}, {{8, f32wDot8x2AVX512}, {4, f32wDot4x2AVX512}},
		{{4, f32wDot4x3AVX512}}, {{4, f32wDot4x4AVX512}}}}
	f32wAVX2 = &f32wKernel{name: "avx2", dots: [5][]f32wDot{nil,
		{{4, f32wDot4x1AVX2}}, {{4, f32wRows(f32wDot4x1AVX2, 2)}},
		{{4, f32wRows(f32wDot4x1AVX2, 3)}}, {{4, f32wRows(f32wDot4x1AVX2, 4)}}}}
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
// "generic", "avx2", or "" for the best) allows on this CPU.
func f32wKernelFor(family string) *f32wKernel {
	switch {
	case family == "generic":
		return f32wGo
	case hasF32WAVX512 && family != "avx2":
		return f32wAVX512
	case hasF32WAVX2:
		return f32wAVX2
	}
	return f32wGo
}

// f32wFamilies lists the kernel families of this machine (tests).
func f32wFamilies() []*f32wKernel {
	ks := []*f32wKernel{f32wGo}
	for _, f := range []string{"avx2", ""} {
		if k := f32wKernelFor(f); k != ks[len(ks)-1] {
			ks = append(ks, k)
		}
	}
	return ks
}
