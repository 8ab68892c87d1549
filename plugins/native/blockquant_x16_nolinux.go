//go:build !linux

package native

// x16Release: the raw rows' pages are released on Linux only.
func x16Release([]byte) {}

// x16Alloc is n bytes for a weight's x16 copy.
func x16Alloc(n int) []byte { return make([]byte, n) }
