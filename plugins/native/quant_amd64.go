//go:generate go run ./internal/asmgenq -out quant_kernels_amd64.s -stubs quant_kernels_amd64.go -pkg native
//go:generate go run ./internal/asmgenq2 -out quant2_kernels_amd64.s -stubs quant2_kernels_amd64.go -pkg native

package native

import "golang.org/x/sys/cpu"

// The int8 kernel families of amd64, best first: AVX-512 VNNI
// (VPDPBUSD, internal/asmgenq), then AVX2 (VPMADDWD on int16-widened
// operands, internal/asmgenq2), then the portable Go kernels. Both
// assembly families keep one contract (quant.go), so each op takes
// whichever family's kernel the machine has; qkernelFamily can force a
// lesser one.
var (
	hasQVNNI = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VNNI
	hasQ512  = cpu.X86.HasAVX512F
	hasQAVX2 = cpu.X86.HasAVX2
)

// archQFamilies are the int8 kernel families this CPU runs, best first
// ("generic" last).
func archQFamilies() []string {
	var fs []string
	if hasQVNNI {
		fs = append(fs, "vnni")
	}
	if hasQAVX2 {
		fs = append(fs, "avx2")
	}
	return append(fs, "generic")
}

// useQ512 says whether the AVX-512 kernels are chosen (present and not
// forced away).
func useQ512(f string) bool { return f != "avx2" && f != "generic" }

// archQKernels are the int8 assembly tile kernels chosen for this CPU
// (nil: the portable kernel): the VNNI tiles, several shapes so that a
// layer's rows and channels pad little (pickQKernel); else the AVX2
// tiles, 2×16 (the largest with more than one row that sixteen YMM
// registers hold) computed in one, two or four passes, and 1×48 for
// single rows.
func archQKernels() []qkernel {
	f := qkernelFamily()
	switch {
	case f == "generic":
		return nil
	case hasQVNNI && useQ512(f):
		return []qkernel{
			{name: "vnni8x48", mr: 8, nv: 3, fn: qgemmVNNI8x3},
			{name: "vnni12x32", mr: 12, nv: 2, fn: qgemmVNNI12x2},
			{name: "vnni24x16", mr: 24, nv: 1, fn: qgemmVNNI24x1},
			{name: "vnni2x64", mr: 2, nv: 4, fn: qgemmVNNI2x4},
		}
	case hasQAVX2:
		// step: the instructions of one k-step (per 16 channels and
		// pass: 4 VPMOVSXBW; per row: 2 for the activations; per row and
		// 4 channels: VPMADDWD and VPADDD); of equal costs the first
		// listed, the tile of most passes (fewest calls), is taken
		return []qkernel{
			{name: "avx2x8x16", mr: 8, nv: 1, fn: qgemmAVX2Tile8x16, step: 88},
			{name: "avx2x4x16", mr: 4, nv: 1, fn: qgemmAVX2Tile4x16, step: 44},
			{name: "avx2x2x16", mr: 2, nv: 1, fn: qgemmAVX2Tile2x16, step: 22},
			{name: "avx2x1x48", mr: 1, nv: 3, fn: qgemmAVX2Tile1x48, step: 38},
		}
	}
	return nil
}

// archDWQ is the int8 depthwise kernel chosen for this CPU (nil: none)
// and whether it takes its taps in pairs (dwqAVX2; see qdw).
func archDWQ() (func(nt, taps int, offs *int, w *int32, x *int8, xstep int, rq *int32, y *int8, ystep int, mask uint64), bool) {
	return pickQ(dwqAVX512, dwqAVX2)
}

// pickQ is the int8 kernel chosen for this CPU between an AVX-512 one and
// an AVX2 one (the zero F: none); avx2 reports the AVX2 one.
func pickQ[F any](k512, k2 F) (k F, avx2 bool) {
	f := qkernelFamily()
	switch {
	case f == "generic":
	case hasQ512 && useQ512(f):
		return k512, false
	case hasQAVX2:
		return k2, true
	}
	return k, false
}

// archQAdd is the int8 Add kernel chosen for this CPU (nil: none).
func archQAdd() func(n int, a, b *int8, p *int32, y *int8) {
	k, _ := pickQ(qaddAVX512, qaddAVX2)
	return k
}

// archQKernelsF are archQKernels with ONNX's float requantisation (the
// F kernels of internal/asmgenq and internal/asmgenq2; the same tiles,
// costs and order).
func archQKernelsF() []qkernel {
	ks := archQKernels()
	if len(ks) == 0 {
		return nil
	}
	f := map[string]func(k4 int, a *uint8, b *int8, rq *int32, y *int8, ldy, rows int, masks uint64){
		"vnni8x48": qgemmVNNIF8x3, "vnni12x32": qgemmVNNIF12x2, "vnni24x16": qgemmVNNIF24x1, "vnni2x64": qgemmVNNIF2x4,
		"avx2x8x16": qgemmAVX2Tile8x16F, "avx2x4x16": qgemmAVX2Tile4x16F, "avx2x2x16": qgemmAVX2Tile2x16F, "avx2x1x48": qgemmAVX2Tile1x48F,
	}
	out := make([]qkernel, len(ks))
	for i, k := range ks {
		k.fn = f[k.name]
		k.name += "f"
		out[i] = k
	}
	return out
}

// archDWQF is archDWQ with ONNX's float requantisation.
func archDWQF() (func(nt, taps int, offs *int, w *int32, x *int8, xstep int, rq *int32, y *int8, ystep int, mask uint64), bool) {
	return pickQ(dwqAVX512F, dwqAVX2F)
}
