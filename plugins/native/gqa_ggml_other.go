//go:build !amd64

package native

func dotGGMLFast(x, y []float32) (float32, bool) { return 0, false }
func dot16Fast(x, y []float32) (float32, bool)   { return 0, false }
