//go:generate go run ./internal/asmgenhand -out hand_amd64.s -stubs hand_stubs_amd64.go -pkg native

package native

import "golang.org/x/sys/cpu"

// handC3Kernels are the direct strided 3×3 kernels over few input
// channels, [left padding][n/4−1] for n output channels a call, where the
// CPU has AVX-512 (F) and BMI2.
var handC3Kernels = func() *[2][6]handC3Fn {
	if !cpu.X86.HasAVX512F || !cpu.X86.HasBMI2 {
		return nil
	}
	return &[2][6]handC3Fn{
		{handC3s2p0n4AVX512, handC3s2p0n8AVX512, handC3s2p0n12AVX512, handC3s2p0n16AVX512, handC3s2p0n20AVX512, handC3s2p0n24AVX512},
		{handC3s2p1n4AVX512, handC3s2p1n8AVX512, handC3s2p1n12AVX512, handC3s2p1n16AVX512, handC3s2p1n20AVX512, handC3s2p1n24AVX512},
	}
}()

// handDWFlatKernels are the flat 3×3 and 5×5 depthwise kernels
// (hand_dwflat.go), where the CPU has AVX-512 (F).
var handDWFlatKernels = func() []handDWFlatFn {
	if !cpu.X86.HasAVX512F {
		return nil
	}
	return []handDWFlatFn{handDWFlat3AVX512, handDWFlat5AVX512}
}()
