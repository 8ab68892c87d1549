package native

// UseDW512 turns the AVX-512 depthwise kernels on or off (tests run both
// paths); false where the machine has none (then nothing changes).
func UseDW512(on bool) bool {
	if !dw512Available {
		return false
	}
	hasDW512 = on
	return true
}

// UsePackedDW turns the packed depthwise path on or off (tests run both
// paths); false where the machine has none (then nothing changes).
func UsePackedDW(on bool) bool {
	if !dwPackedAvailable {
		return false
	}
	hasDWPacked = on
	return true
}
