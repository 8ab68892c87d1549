package native

import "golang.org/x/sys/cpu"

// archKernels are the assembly micro-kernels the CPU and OS support.
func archKernels() []microKernel {
	var ks []microKernel
	if cpu.X86.HasAVX512F {
		ks = append(ks, microKernel{name: "avx512x14x32", mr: 14, nr: 32, kc: 256, mc: 112, fn: gemmAVX512x14x32})
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		ks = append(ks, microKernel{name: "avx2x6x16", mr: 6, nr: 16, kc: 256, mc: 72, fn: gemmAVX2x6x16})
	}
	return ks
}
