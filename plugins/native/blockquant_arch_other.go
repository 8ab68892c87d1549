//go:build !amd64

package native

// bqRowAsm: no assembly on this architecture (the Go loop runs).
func bqRowAsm(w *bqWeights, j int, x []float32) (float32, bool) { return 0, false }
