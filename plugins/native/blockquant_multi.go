//go:generate go run ./internal/asmgenbqm -out blockquant_multi_amd64.s -stubs blockquant_multi_stubs_amd64.go -pkg native

package native

// Multi-row products (batched decoding).
//
// A decode step of B sequences decoded together multiplies B activation
// rows by every weight. Row by row, each weight block is unpacked and
// converted to float32 B times; where a multi-row kernel exists
// (internal/asmgenbqm: int8 blocks of 32 — GGUF's Q8_0 — and ggml's
// Q5_0, on the float path, with AVX2, FMA and F16C) a block is unpacked
// once for 4 (or 2) rows. Each row's sums are the single-row kernel's,
// operation for operation, so the outputs have the same bits whether a
// row is computed alone or beside others: a sequence decodes the same
// tokens batched as alone.

// rowsMulti computes outputs n0..n1-1 of the m rows of x (m ≥ 2) with
// the multi-row kernels, and reports false (nothing computed) where w has
// none.
func (w *bqWeights) rowsMulti(x, y []float32, m, n0, n1 int) bool {
	if m < 2 || !bqAsm || !w.multiOK() {
		return false
	}
	K, N := w.k, w.n
	_, _ = x[m*K-1], y[m*N-1]
	for n := n0; n < n1; n++ {
		r := 0
		for ; r+4 <= m; r += 4 {
			w.multiDot(n, x[r*K:], y[r*N+n:], 4)
		}
		for ; r+2 <= m; r += 2 {
			w.multiDot(n, x[r*K:], y[r*N+n:], 2)
		}
		if r < m {
			y[r*N+n] = w.singleDot(n, x[r*K:r*K+K])
		}
	}
	return true
}
