//go:generate go run ./internal/asmgentfl2sp -out tfl2_sparse1x1_amd64.s -stubs tfl2_sparse1x1_stubs_amd64.go -pkg native

package native

import "golang.org/x/sys/cpu"

// spmm1x1Kernels are the sparse 1×1 kernels of 1 to 4 vectors of
// positions, where the CPU has AVX-512 (F and DQ) and BMI2.
var spmm1x1Kernels = func() []spmm1x1Fn {
	if !cpu.X86.HasAVX512F || !cpu.X86.HasAVX512DQ || !cpu.X86.HasBMI2 {
		return nil
	}
	return []spmm1x1Fn{spmm1x1V1AVX512, spmm1x1V2AVX512, spmm1x1V3AVX512, spmm1x1V4AVX512}
}()
