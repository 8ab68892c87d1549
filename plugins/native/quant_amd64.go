//go:generate go run ./internal/asmgenq -out quant_kernels_amd64.s -stubs quant_kernels_amd64.go -pkg native

package native

import "golang.org/x/sys/cpu"

// archQKernels are the int8 assembly tile kernels the CPU supports:
// AVX-512 VNNI (VPDPBUSD) tiles, several shapes so that a layer's rows
// and channels pad little (pickQKernel). Without VNNI: the portable
// kernel.
func archQKernels() []qkernel {
	if !cpu.X86.HasAVX512F || !cpu.X86.HasAVX512VNNI {
		return nil
	}
	return []qkernel{
		{name: "vnni8x48", mr: 8, nv: 3, fn: qgemmVNNI8x3},
		{name: "vnni12x32", mr: 12, nv: 2, fn: qgemmVNNI12x2},
		{name: "vnni24x16", mr: 24, nv: 1, fn: qgemmVNNI24x1},
		{name: "vnni2x64", mr: 2, nv: 4, fn: qgemmVNNI2x4},
	}
}

// archDWQ is the int8 depthwise kernel the CPU supports (nil: none).
func archDWQ() func(nt, taps int, offs *int, w *int32, x *int8, xstep int, rq *int32, y *int8, ystep int, mask uint64) {
	if !cpu.X86.HasAVX512F {
		return nil
	}
	return dwqAVX512
}

// archQAdd is the int8 Add kernel the CPU supports (nil: none).
func archQAdd() func(n int, a, b *int8, p *int32, y *int8) {
	if !cpu.X86.HasAVX512F {
		return nil
	}
	return qaddAVX512
}
