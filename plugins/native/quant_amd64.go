package native

// archQKernels are the int8 assembly tile kernels the CPU supports.
func archQKernels() []qkernel { return nil }
