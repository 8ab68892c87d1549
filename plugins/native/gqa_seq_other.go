//go:build !amd64

package native

// seqDots is gqa_seq_amd64.go's assembly path: none here (false).
func seqDots(out, K, q []float32) bool { return false }

// fmaSeq is s after s = fma32(x[i], y[i], s) for each i in order.
func fmaSeq(x, y []float32, s float32) float32 { return fmaSeqGo(x, y, s) }
