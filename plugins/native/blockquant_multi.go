//go:generate go run ./internal/asmgenbqm -out blockquant_multi_amd64.s -stubs blockquant_multi_stubs_amd64.go -pkg native

package native

// Multi-row products (batched decoding).
//
// A decode step of B sequences decoded together multiplies B activation
// rows by every weight. Row by row, each weight block is unpacked and
// converted to float32 B times; where a multi-row kernel exists
// (internal/asmgenbqm: int8 blocks of 32 — GGUF's Q8_0 — and ggml's
// Q5_0, Q4_K and Q6_K, on the float path, with AVX2, FMA and F16C) a
// block is unpacked once for up to 4 rows. Each row's sums are the single-row kernel's,
// operation for operation, so the outputs have the same bits whether a
// row is computed alone or beside others: a sequence decodes the same
// tokens batched as alone. On the integer path (int8 activations, the
// default for GGUF in generate) several rows take the tiled GEMM of
// qgemm.go instead, with the same guarantee.

// rowsMulti computes outputs n0..n1-1 of the m rows of x (m ≥ 2) with
// the multi-row kernels, and reports false (nothing computed) where w has
// none. xs is Q4_K's 32-value sums of each row of x ([m, K/32]).
func (w *bqWeights) rowsMulti(x, y, xs []float32, m, n0, n1 int) bool {
	if m < 2 || !bqAsm || !w.multiOK() || w.needSums() && len(xs) < m*w.k/32 {
		return false
	}
	K, N := w.k, w.n
	_, _ = x[m*K-1], y[m*N-1]
	// the row groups: fours, then the 3, 2 or 1 rows left
	type group struct {
		r, R int
		xs   []float32 // Q4_K: per super-block the group's rows' 8 sums
	}
	var gs [8]group
	groups := gs[:0]
	for r := 0; r < m; r += 4 {
		groups = append(groups, group{r: r, R: min(4, m-r)})
	}
	if w.needSums() {
		nb := K / 256
		for i := range groups {
			g := &groups[i]
			if g.R == 1 {
				g.xs = xs[g.r*K/32:]
				continue
			}
			g.xs = make([]float32, nb*g.R*8)
			for b := 0; b < nb; b++ {
				for rr := 0; rr < g.R; rr++ {
					copy(g.xs[(b*g.R+rr)*8:(b*g.R+rr+1)*8], xs[(g.r+rr)*K/32+b*8:])
				}
			}
		}
	}
	for n := n0; n < n1; n++ {
		for _, g := range groups {
			if g.R == 1 {
				y[g.r*N+n] = w.singleDot(n, x[g.r*K:g.r*K+K], g.xs)
			} else {
				w.multiDot(n, x[g.r*K:], y[g.r*N+n:], g.xs, g.R)
			}
		}
	}
	return true
}

// fewOff turns the few-row kernels (blockquant_few_amd64.go) off: the
// benchmarks compare them with the tiles of qgemm.go.
var fewOff bool
