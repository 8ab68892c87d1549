//go:build !amd64

package native

func dots16Fast(out, x, y []float32) bool               { return false }
func dotsGGMLFast(out, x, y []float32, ld, np int) bool { return false }
