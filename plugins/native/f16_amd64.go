//go:generate go run ./internal/asmgenf16 -out f16_amd64.s -stubs f16_stubs_amd64.go

package native

import "golang.org/x/sys/cpu"

// The F16/BF16 kernel families of amd64 (internal/asmgenf16): AVX-512
// (F, BW, VL: 32 and 16 weight rows a call) and AVX2 with F16C and FMA
// (16 and 8), each for one to four activation rows; a family's rows past
// its multiples fall to the smaller kernel, then to Go.
var (
	hasF16AVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL
	hasF16AVX2   = cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C
)

var (
	f16AVX512 = &f16Kernel{name: "avx512", dots: [5][]f16Dot{nil,
		{{32, f16Dot32x1AVX512}, {16, f16Dot16x1AVX512}}, {{32, f16Dot32x2AVX512}, {16, f16Dot16x2AVX512}},
		{{32, f16Dot32x3AVX512}, {16, f16Dot16x3AVX512}}, {{32, f16Dot32x4AVX512}, {16, f16Dot16x4AVX512}}},
		packs: []f16Pack{{16, f16Pack16AVX512}}}
	bf16AVX512 = &f16Kernel{name: "avx512", dots: [5][]f16Dot{nil,
		{{32, bf16Dot32x1AVX512}, {16, bf16Dot16x1AVX512}}, {{32, bf16Dot32x2AVX512}, {16, bf16Dot16x2AVX512}},
		{{32, bf16Dot32x3AVX512}, {16, bf16Dot16x3AVX512}}, {{32, bf16Dot32x4AVX512}, {16, bf16Dot16x4AVX512}}},
		packs: []f16Pack{{16, bf16Pack16AVX512}}}
	f16AVX2 = &f16Kernel{name: "avx2", dots: [5][]f16Dot{nil,
		{{16, f16Dot16x1AVX2}, {8, f16Dot8x1AVX2}}, {{16, f16Dot16x2AVX2}, {8, f16Dot8x2AVX2}},
		{{16, f16Dot16x3AVX2}, {8, f16Dot8x3AVX2}}, {{8, f16Dot8x4AVX2}}},
		packs: []f16Pack{{8, f16Pack8AVX2}}}
	bf16AVX2 = &f16Kernel{name: "avx2", dots: [5][]f16Dot{nil,
		{{16, bf16Dot16x1AVX2}, {8, bf16Dot8x1AVX2}}, {{16, bf16Dot16x2AVX2}, {8, bf16Dot8x2AVX2}},
		{{16, bf16Dot16x3AVX2}, {8, bf16Dot8x3AVX2}}, {{8, bf16Dot8x4AVX2}}},
		packs: []f16Pack{{8, bf16Pack8AVX2}}}
)

// f16KernelFor is the family for bf (BF16, else F16) that family
// (SWITCHYARD_NATIVE_QKERNEL: "generic", "avx2", or "" for the best)
// allows on this CPU.
func f16KernelFor(bf bool, family string) *f16Kernel {
	switch {
	case family == "generic":
		return f16Go
	case hasF16AVX512 && family != "avx2":
		if bf {
			return bf16AVX512
		}
		return f16AVX512
	case hasF16AVX2:
		if bf {
			return bf16AVX2
		}
		return f16AVX2
	}
	return f16Go
}

// f16Families lists the kernel families of this machine (tests).
func f16Families(bf bool) []*f16Kernel {
	ks := []*f16Kernel{f16Go}
	for _, f := range []string{"avx2", ""} {
		if k := f16KernelFor(bf, f); k != ks[len(ks)-1] {
			ks = append(ks, k)
		}
	}
	return ks
}
