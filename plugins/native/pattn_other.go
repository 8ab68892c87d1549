//go:build !amd64

package native

func dots16Fast(out, x, y []float32) bool { return false }
