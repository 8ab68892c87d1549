package native

// UseHandC3 turns the direct strided 3×3 kernels (hand_conv3.go) on or
// off (tests run both paths); false where the machine has none (then
// nothing changes).
func UseHandC3(on bool) bool {
	if !handC3Kernels {
		return false
	}
	useHandC3 = on
	return true
}
