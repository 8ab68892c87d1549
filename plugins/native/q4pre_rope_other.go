//go:build !amd64

package native

// rotateRowFMAFast: no assembly for this GOARCH.
func rotateRowFMAFast(x, c, s []float32, interleaved bool) int { return 0 }
