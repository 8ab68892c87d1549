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

var hasAVX2FMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// axpy is y[i] += a·x[i] over len(y) (x at least as long).
func axpy(a float32, x, y []float32) {
	if len(y) == 0 {
		return
	}
	x = x[:len(y)]
	if hasAVX2FMA {
		axpyAVX2(len(y), a, &x[0], &y[0])
		return
	}
	axpyGo(a, x, y)
}

// clampTo is y[i] = clamp(x[i], lo, hi) over len(y), NaN kept.
func clampTo(y, x []float32, lo, hi float32) {
	if len(y) == 0 {
		return
	}
	x = x[:len(y)]
	if hasAVX2FMA {
		clampAVX2(len(y), lo, hi, &x[0], &y[0])
		return
	}
	clampGo(y, x, lo, hi)
}
