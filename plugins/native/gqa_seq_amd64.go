package native

import "golang.org/x/sys/cpu"

// hasSeqFMA: gqa_seq_amd64.s needs FMA3 (VEX-encoded scalar FMAs).
var hasSeqFMA = cpu.X86.HasFMA && cpu.X86.HasAVX

//go:noescape
func seqDotsFMA(n, h int, k, q, out *float32)

//go:noescape
func fmaSeqFMA(n int, x, y *float32, s float32) float32

// seqDots sets out[j] to the fused multiply-add chain of key row j of K
// (len(q) values a row) with q, in assembly where the CPU has FMA (false:
// it has not, out untouched).
func seqDots(out, K, q []float32) bool {
	h, n := len(q), len(out)
	if !hasSeqFMA || h == 0 || n == 0 || len(K) < n*h {
		return false
	}
	seqDotsFMA(n, h, &K[0], &q[0], &out[0])
	return true
}

// fmaSeq is s after s = fma32(x[i], y[i], s) for each i in order.
func fmaSeq(x, y []float32, s float32) float32 {
	n := len(x)
	if n == 0 {
		return s
	}
	y = y[:n]
	if hasSeqFMA {
		return fmaSeqFMA(n, &x[0], &y[0], s)
	}
	return fmaSeqGo(x, y, s)
}
