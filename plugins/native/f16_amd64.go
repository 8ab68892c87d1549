//go:generate go run ./internal/asmgenf16 -out f16_amd64.s -stubs f16_stubs_amd64.go

package native

import "golang.org/x/sys/cpu"

// The F16/BF16 kernel families of amd64 (internal/asmgenf16): AVX-512
// (F, BW, VL: 32 and 16 rows a call) and AVX2 with F16C and FMA (16 and
// 8 rows a call); a family's rows past its multiples fall to the smaller
// kernel, then to Go.
var (
	hasF16AVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VL
	hasF16AVX2   = cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C
)

var (
	f16AVX512 = &f16Kernel{name: "avx512", rows: 32, dot: f16Dot32AVX512,
		half: &f16Kernel{name: "avx512", rows: 16, dot: f16Dot16AVX512, pack: f16Pack16AVX512}}
	bf16AVX512 = &f16Kernel{name: "avx512", rows: 32, dot: bf16Dot32AVX512,
		half: &f16Kernel{name: "avx512", rows: 16, dot: bf16Dot16AVX512, pack: bf16Pack16AVX512}}
	f16AVX2 = &f16Kernel{name: "avx2", rows: 16, dot: f16Dot16AVX2,
		half: &f16Kernel{name: "avx2", rows: 8, dot: f16Dot8AVX2, pack: f16Pack8AVX2}}
	bf16AVX2 = &f16Kernel{name: "avx2", rows: 16, dot: bf16Dot16AVX2,
		half: &f16Kernel{name: "avx2", rows: 8, dot: bf16Dot8AVX2, pack: bf16Pack8AVX2}}
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
