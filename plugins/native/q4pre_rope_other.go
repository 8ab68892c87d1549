//go:build !amd64

package native

// hasRopeFMA512: no assembly rotation for this GOARCH.
const hasRopeFMA512 = false

// rotateRowFMAFast: no assembly for this GOARCH.
func rotateRowFMAFast(x, c, s []float32, interleaved bool) int { return 0 }
