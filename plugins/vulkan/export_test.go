package vulkan

// SetUnusableForTest makes every physical device unusable with reason
// (the third unavailable reason); the returned function undoes it.
func SetUnusableForTest(reason string) func() {
	testUnusable = reason
	return func() { testUnusable = "" }
}
