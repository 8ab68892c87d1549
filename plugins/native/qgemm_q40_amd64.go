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
