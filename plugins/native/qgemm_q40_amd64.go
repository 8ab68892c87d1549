package native

// q40PanelKernels are the panel kernels (internal/asmgenq40).
var q40PanelKernels = q40PanelFns{pack: qgemmQ40Pack16, kern: [16]func(nb int, w *uint8, a *int8, y *float32, ldy int, pf uintptr, pfn int){
	qgemmQ40P16R1, qgemmQ40P16R2, qgemmQ40P16R3, qgemmQ40P16R4, qgemmQ40P16R5, qgemmQ40P16R6, qgemmQ40P16R7, qgemmQ40P16R8,
	qgemmQ40P16R9, qgemmQ40P16R10, qgemmQ40P16R11, qgemmQ40P16R12, qgemmQ40P16R13, qgemmQ40P16R14, qgemmQ40P16R15, qgemmQ40P16R16}}

// q40Panels are the Q4_0 panel kernels for a node whose single-row kernel
// family is fam, nil where there are none (as qgemmKernels: AVX-512
// VNNI, and not under a forced family that turns them off).
func q40Panels(fam string) *q40PanelFns {
	if fam == "generic" || !hasBQIVNNI || !hasBQKAVX2 || !useQ512(qkernelFamily()) {
		return nil
	}
	return &q40PanelKernels
}
