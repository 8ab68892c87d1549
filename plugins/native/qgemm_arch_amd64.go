package native

import "github.com/switchyard-hal/switchyard/core/ggml"

// the tile kernels by type and activation rows (index R-1)
var (
	qgemmVNNI = map[ggml.Type]*[qgemmRows]qgemmFn{
		ggml.Q5_0: {qgemmQ5_04x1Z, qgemmQ5_04x2Z, qgemmQ5_04x3Z, qgemmQ5_04x4Z, qgemmQ5_04x5Z, qgemmQ5_04x6Z, qgemmQ5_04x7Z, qgemmQ5_04x8Z},
		ggml.Q8_0: {qgemmQ8_04x1Z, qgemmQ8_04x2Z, qgemmQ8_04x3Z, qgemmQ8_04x4Z, qgemmQ8_04x5Z, qgemmQ8_04x6Z, qgemmQ8_04x7Z, qgemmQ8_04x8Z},
	}
	qgemmKVNNI = map[ggml.Type]*[4]qgemmFn{
		ggml.Q4_K: {qgemmQ4_K4x1KZ, qgemmQ4_K4x2KZ, qgemmQ4_K4x3KZ, qgemmQ4_K4x4KZ},
		ggml.Q6_K: {qgemmQ6_K4x1KZ, qgemmQ6_K4x2KZ, qgemmQ6_K4x3KZ, qgemmQ6_K4x4KZ},
	}
)

// qgemmKernels are the tile kernels of type t (32-element types in fns,
// K types in kfns) for a node whose single-row kernel family is fam: the
// tiles need AVX-512 VNNI (and F16C), and follow the forced family
// (SWITCHYARD_NATIVE_QKERNEL=avx2 or generic turns them off); nil where
// there are none.
func qgemmKernels(t ggml.Type, fam string) (fns *[qgemmRows]qgemmFn, kfns *[4]qgemmFn) {
	if fam == "generic" || !hasBQIVNNI || !hasBQKAVX2 || !useQ512(qkernelFamily()) {
		return nil, nil
	}
	return qgemmVNNI[t], qgemmKVNNI[t]
}
