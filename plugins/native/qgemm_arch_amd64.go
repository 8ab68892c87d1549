package native

import "github.com/switchyard-hal/switchyard/core/ggml"

// the tile kernels by type and activation rows (index R-1)
var (
	qgemmVNNI = map[ggml.Type]*[4]qgemmFn{
		ggml.Q4_0: {qgemmQ4_04x1VNNI, qgemmQ4_04x2VNNI, qgemmQ4_04x3VNNI, qgemmQ4_04x4VNNI},
		ggml.Q5_0: {qgemmQ5_04x1VNNI, qgemmQ5_04x2VNNI, qgemmQ5_04x3VNNI, qgemmQ5_04x4VNNI},
		ggml.Q8_0: {qgemmQ8_04x1VNNI, qgemmQ8_04x2VNNI, qgemmQ8_04x3VNNI, qgemmQ8_04x4VNNI},
	}
	qgemmKVNNI = map[ggml.Type]*[4]qgemmKFn{
		ggml.Q4_K: {qgemmQ4_K4x1VNNI, qgemmQ4_K4x2VNNI, qgemmQ4_K4x3VNNI, qgemmQ4_K4x4VNNI},
		ggml.Q6_K: {qgemmQ6_K4x1VNNI, qgemmQ6_K4x2VNNI, qgemmQ6_K4x3VNNI, qgemmQ6_K4x4VNNI},
	}
)

// qgemmKernels are the tile kernels of type t (32-element types in fns,
// K types in kfns) for a node whose single-row kernel family is fam: the
// tiles need AVX-512 VNNI (and F16C), and follow the forced family
// (SWITCHYARD_NATIVE_QKERNEL=avx2 or generic turns them off); nil where
// there are none.
func qgemmKernels(t ggml.Type, fam string) (fns *[4]qgemmFn, kfns *[4]qgemmKFn) {
	if fam == "generic" || !hasBQIVNNI || !hasBQKAVX2 || !useQ512(qkernelFamily()) {
		return nil, nil
	}
	return qgemmVNNI[t], qgemmKVNNI[t]
}
