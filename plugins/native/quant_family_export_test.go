package native

// QuantKernelFamilies are the int8 kernel families this machine runs,
// best first, as SWITCHYARD_NATIVE_QKERNEL names them ("generic" last).
func QuantKernelFamilies() []string { return archQFamilies() }

// QuantKernelName is the int8 GEMM tile kernel that nodes compiled now
// get (under the environment's SWITCHYARD_NATIVE_QKERNEL).
func QuantKernelName() string { return quantKernelName() }
