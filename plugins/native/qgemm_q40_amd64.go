package native

// q40Tiles are the Q4_0 tiles of 16 and 8 activation rows
// (internal/asmgenq40) for a node whose single-row kernel family is fam,
// nil where there are none (as qgemmKernels: AVX-512 VNNI, and not under
// a forced family that turns the tiles off).
func q40Tiles(fam string) (f16, f8 q40Fn) {
	if fam == "generic" || !hasBQIVNNI || !hasBQKAVX2 || !useQ512(qkernelFamily()) {
		return nil, nil
	}
	return qgemmQ40x8L16, qgemmQ40x8L8
}

// q40PanelKernels are the panel kernels (internal/asmgenq40).
var q40PanelKernels = q40PanelFns{pack: qgemmQ40Pack16, kern: [16]func(nb int, w *uint8, a *int8, y *float32, ldy int, pf uintptr, pfn int){
	qgemmQ40P16R1, qgemmQ40P16R2, qgemmQ40P16R3, qgemmQ40P16R4, qgemmQ40P16R5, qgemmQ40P16R6, qgemmQ40P16R7, qgemmQ40P16R8,
	qgemmQ40P16R9, qgemmQ40P16R10, qgemmQ40P16R11, qgemmQ40P16R12, qgemmQ40P16R13, qgemmQ40P16R14, qgemmQ40P16R15, qgemmQ40P16R16}}

// q40Panels are the Q4_0 panel kernels where the tiles run (q40Tiles),
// else nil.
func q40Panels(fam string) *q40PanelFns {
	if f16, _ := q40Tiles(fam); f16 == nil || !q40PanelsOn {
		return nil
	}
	return &q40PanelKernels
}
