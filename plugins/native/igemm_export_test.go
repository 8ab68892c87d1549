package native

// UseIndirect turns the indirect GEMM path of convolutions on or off and
// says whether it exists on this machine.
func UseIndirect(on bool) bool {
	useIndirect = on
	return igemmKernels != nil
}
