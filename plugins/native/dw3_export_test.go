package native

// UseDW3Rows turns the 3×3 depthwise row kernels on or off (tests run
// both paths); false where the machine has none (then nothing changes).
func UseDW3Rows(on bool) bool {
	if dw3Kernels == nil {
		return false
	}
	useDW3Rows = on
	return true
}
