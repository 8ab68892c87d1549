//go:generate go run ./internal/asmgendw3 -out dw3_amd64.s -stubs dw3_stubs_amd64.go -pkg native

package native

import "golang.org/x/sys/cpu"

// dw3Kernels are the 3×3 depthwise row kernels (stride 1 at dilations 1,
// 2 and 4; stride 2 with one column of left padding and with none), where
// the CPU has AVX-512 (F and DQ) and BMI2.
var dw3Kernels = func() []dw3Fn {
	if !cpu.X86.HasAVX512F || !cpu.X86.HasAVX512DQ || !cpu.X86.HasBMI2 {
		return nil
	}
	return []dw3Fn{dw3s1AVX512, dw3s1d2AVX512, dw3s1d4AVX512, dw3s2AVX512, dw3s2p0AVX512}
}()
