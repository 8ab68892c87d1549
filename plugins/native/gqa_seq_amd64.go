package native

import "golang.org/x/sys/cpu"

// hasSeqFMA: gqa_seq_amd64.s needs FMA3 (VEX-encoded scalar FMAs);
// hasSeq512 its sixteen-key kernel AVX-512 F.
var (
	hasSeqFMA = cpu.X86.HasFMA && cpu.X86.HasAVX
	hasSeq512 = hasSeqFMA && cpu.X86.HasAVX512F
)

//go:noescape
func seqDotsFMA(n, h int, k, q, out *float32)

//go:noescape
func seqDots16AVX512(n, h int, k, q, out *float32)

//go:noescape
func fmaSeqFMA(n int, x, y *float32, s float32) float32

// seqDots sets out[j] to the fused multiply-add chain of key row j of K
// (len(q) values a row) with q, in assembly where the CPU has FMA (false:
// it has not, out untouched): with AVX-512 sixteen keys at once, lane j
// the chain of key j.
func seqDots(out, K, q []float32) bool {
	h, n := len(q), len(out)
	if !hasSeqFMA || h == 0 || n == 0 || len(K) < n*h {
		return false
	}
	j := 0
	if hasSeq512 && n >= 16 && h <= 1<<20 {
		// sixteen keys a pass (gathers), the rest one by one
		j = n &^ 15
		seqDots16AVX512(j, h, &K[0], &q[0], &out[0])
	}
	if j < n {
		seqDotsFMA(n-j, h, &K[j*h], &q[0], &out[j])
	}
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
