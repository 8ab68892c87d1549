package native

import "github.com/switchyard-hal/switchyard/core/ggml"

// the tile kernels by type and activation rows (index R-1)
var qgemmVNNI = map[ggml.Type]*[4]qgemmFn{
	ggml.Q4_0: {qgemmQ4_04x1VNNI, qgemmQ4_04x2VNNI, qgemmQ4_04x3VNNI, qgemmQ4_04x4VNNI},
	ggml.Q5_0: {qgemmQ5_04x1VNNI, qgemmQ5_04x2VNNI, qgemmQ5_04x3VNNI, qgemmQ5_04x4VNNI},
	ggml.Q8_0: {qgemmQ8_04x1VNNI, qgemmQ8_04x2VNNI, qgemmQ8_04x3VNNI, qgemmQ8_04x4VNNI},
}

// qgemmKernels are the tile kernels of type t for a node whose single-row
// kernel family is fam (the tiles exist where that family is VNNI's: the
// same CPU features, and SWITCHYARD_NATIVE_QKERNEL forcing avx2 or
// generic turns them off too); nil where there are none.
func qgemmKernels(t ggml.Type, fam string) *[4]qgemmFn {
	if fam != "vnni" || !hasBQIVNNI || !hasBQKAVX2 {
		return nil
	}
	return qgemmVNNI[t]
}
