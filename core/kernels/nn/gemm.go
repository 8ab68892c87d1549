package nn

import "github.com/switchyard-hal/switchyard/core/graph"

// mat is a strided read-only view of a matrix: element (i, j) is
// d[i*rs + j*cs]. Transposition is a swap of rs and cs.
type mat[T any] struct {
	d      []T
	rs, cs int
}

func (m mat[T]) t() mat[T] { return mat[T]{m.d, m.cs, m.rs} }

// Blocking parameters of the float32 GEMM. A is packed into panels of
// gemmMR rows; the micro-kernel keeps gemmMR rows of C (gemmNC wide) in L1
// and streams a gemmKC×gemmNC block of B from L2. (Pure Go has no SIMD, so
// the kernel is scalar; this shape keeps its multipliers in registers and
// needs the fewest loads and stores per multiply-add.)
const (
	gemmMR = 2
	gemmKC = 256
	gemmNC = 256
	gemmMC = 64
	// Below this many multiply-adds the plain loop beats packing.
	gemmSmall = 16 * 1024
	// Below this many multiply-adds one goroutine does the whole product.
	gemmParallelMin = 128 * 1024
)

// sgemm computes C += alpha·A·B for an m×k A and a k×n B, with C row-major
// (row stride ldc). It uses up to par goroutines, and gives up (leaving C
// incomplete) once st is done.
func sgemm(st stop, m, n, k int, alpha float32, a, b mat[float32], c []float32, ldc int, par int) {
	if m <= 0 || n <= 0 || k <= 0 {
		return
	}
	work := m * n * k
	if work <= gemmSmall {
		sgemmSmall(m, n, k, alpha, a, b, c, ldc)
		return
	}
	if work < gemmParallelMin {
		par = 1
	}
	if m <= 4 && a.cs == 1 && b.rs == 1 && b.cs != 1 {
		// A few rows times a transposed B (Linear layers): dot products of
		// contiguous rows, no packing.
		parallelRange(st, n, par, 16, func(lo, hi int) {
			for i := 0; i < m; i++ {
				arow := a.d[i*a.rs : i*a.rs+k]
				for j := lo; j < hi; j++ {
					c[i*ldc+j] += alpha * dotF32(arow, b.d[j*b.cs:j*b.cs+k])
				}
			}
		})
		return
	}
	if m == 1 && b.cs == 1 {
		// A row vector times B: one pass over B's rows, split by columns.
		parallelRange(st, n, par, 64, func(lo, hi int) {
			vecMatF32(k, alpha, a, b.d[lo:], b.rs, c[lo:hi])
		})
		return
	}

	ap := packA(st, m, k, alpha, a, par)
	// B is read in place when its rows are contiguous, else packed row-major.
	bd, ldb := b.d, b.rs
	if b.cs != 1 {
		bp := make([]float32, k*n)
		parallelRange(st, k, par, 16, func(lo, hi int) {
			for q := lo; q < hi; q++ {
				row := bp[q*n : (q+1)*n]
				src := b.d[q*b.rs:]
				for j := range row {
					row[j] = src[j*b.cs]
				}
			}
		})
		bd, ldb = bp, n
	}
	sgemmPacked(st, m, n, k, ap, bd, ldb, c, ldc, par)
}

// packA packs alpha·A (m×k) into panels of gemmMR rows: panel p holds
// ap[(p*k+q)*gemmMR + r] = alpha·A[p*gemmMR+r, q], zero past row m.
func packA(st stop, m, k int, alpha float32, a mat[float32], par int) []float32 {
	panels := (m + gemmMR - 1) / gemmMR
	ap := make([]float32, panels*k*gemmMR)
	parallelRange(st, panels, par, 8, func(lo, hi int) {
		for p := lo; p < hi; p++ {
			dst := ap[p*k*gemmMR : (p+1)*k*gemmMR]
			for r := 0; r < gemmMR; r++ {
				i := p*gemmMR + r
				if i >= m {
					break
				}
				src := a.d[i*a.rs:]
				if a.cs == 1 {
					src = src[:k]
					for q, v := range src {
						dst[q*gemmMR+r] = alpha * v
					}
				} else {
					for q := 0; q < k; q++ {
						dst[q*gemmMR+r] = alpha * src[q*a.cs]
					}
				}
			}
		}
	})
	return ap
}

// sgemmPacked computes C += A·B with A packed by packA and B row-major
// with row stride ldb (stopping early once st is done).
func sgemmPacked(st stop, m, n, k int, ap []float32, bd []float32, ldb int, c []float32, ldc int, par int) {
	if m <= 0 || n <= 0 || k <= 0 {
		return
	}
	if m*n*k < gemmParallelMin {
		par = 1
	}
	mc, nc := gemmBlocks(m, n, par)
	tm := (m + mc - 1) / mc
	tn := (n + nc - 1) / nc
	parallelTasks(st, tm*tn, par, func(t int) {
		i0 := (t / tn) * mc
		j0 := (t % tn) * nc
		i1 := min(i0+mc, m)
		nb := min(nc, n-j0)
		var scratch []float32
		for k0 := 0; k0 < k && !st.done(); k0 += gemmKC {
			kb := min(gemmKC, k-k0)
			bblk := bd[k0*ldb+j0:]
			for i := i0; i < i1; i += gemmMR {
				var rows [gemmMR][]float32
				for r := range rows {
					if i+r < m {
						off := (i+r)*ldc + j0
						rows[r] = c[off : off+nb]
					} else {
						if scratch == nil {
							scratch = make([]float32, nc)
						}
						rows[r] = scratch[:nb]
					}
				}
				p := i / gemmMR
				sgemmKernel2(kb, nb, ap[(p*k+k0)*gemmMR:], bblk, ldb, rows[0], rows[1])
			}
		}
	})
}

// gemmBlocks picks the task tile (rows × cols of C) so that there are
// enough tasks to keep par goroutines busy.
func gemmBlocks(m, n, par int) (mc, nc int) {
	mc, nc = gemmMC, gemmNC
	if par <= 1 {
		return mc, nc
	}
	tasks := func() int { return ((m + mc - 1) / mc) * ((n + nc - 1) / nc) }
	for tasks() < 3*par && mc > 2*gemmMR {
		mc /= 2
	}
	for tasks() < 3*par && nc > 64 {
		nc /= 2
	}
	return mc, nc
}

// sgemmKernel2 computes, for the 2 rows c0 and c1 (each nb long),
// c_r[j] += Σ_q a[q*2+r]·b[q*ldb+j] for q < kb. Four k-steps per pass cut
// the loads and stores of C; the 8 multipliers stay in registers.
func sgemmKernel2(kb, nb int, a, b []float32, ldb int, c0, c1 []float32) {
	c0 = c0[:nb]
	c1 = c1[:nb]
	q := 0
	for ; q+3 < kb; q += 4 {
		aa := (*[8]float32)(a[q*2 : q*2+8])
		a0, a1, e0, e1 := aa[0], aa[1], aa[2], aa[3]
		f0, f1, g0, g1 := aa[4], aa[5], aa[6], aa[7]
		br := b[q*ldb : q*ldb+nb]
		bs := b[(q+1)*ldb : (q+1)*ldb+nb]
		bt := b[(q+2)*ldb : (q+2)*ldb+nb]
		bu := b[(q+3)*ldb : (q+3)*ldb+nb]
		for j, bv := range br {
			bw, bx, by := bs[j], bt[j], bu[j]
			c0[j] += a0*bv + e0*bw + f0*bx + g0*by
			c1[j] += a1*bv + e1*bw + f1*bx + g1*by
		}
	}
	for ; q < kb; q++ {
		a0, a1 := a[q*2], a[q*2+1]
		br := b[q*ldb : q*ldb+nb]
		for j, bv := range br {
			c0[j] += a0 * bv
			c1[j] += a1 * bv
		}
	}
}

// dotF32 is Σ a[i]·b[i] with four partial sums.
func dotF32(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+3 < len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// vecMatF32 computes c[j] += alpha·Σ_q a(0,q)·b[q*ldb+j] for j < len(c).
func vecMatF32(k int, alpha float32, a mat[float32], b []float32, ldb int, c []float32) {
	nb := len(c)
	q := 0
	for ; q+3 < k; q += 4 {
		a0, a1 := alpha*a.d[q*a.cs], alpha*a.d[(q+1)*a.cs]
		a2, a3 := alpha*a.d[(q+2)*a.cs], alpha*a.d[(q+3)*a.cs]
		b0 := b[q*ldb : q*ldb+nb]
		b1 := b[(q+1)*ldb : (q+1)*ldb+nb]
		b2 := b[(q+2)*ldb : (q+2)*ldb+nb]
		b3 := b[(q+3)*ldb : (q+3)*ldb+nb]
		for j, v := range b0 {
			c[j] += a0*v + a1*b1[j] + a2*b2[j] + a3*b3[j]
		}
	}
	for ; q < k; q++ {
		a0 := alpha * a.d[q*a.cs]
		for j, v := range b[q*ldb : q*ldb+nb] {
			c[j] += a0 * v
		}
	}
}

// sgemmSmall is the unblocked C += alpha·A·B for small products.
func sgemmSmall(m, n, k int, alpha float32, a, b mat[float32], c []float32, ldc int) {
	for i := 0; i < m; i++ {
		crow := c[i*ldc : i*ldc+n]
		for q := 0; q < k; q++ {
			av := alpha * a.d[i*a.rs+q*a.cs]
			if b.cs == 1 {
				brow := b.d[q*b.rs : q*b.rs+n]
				for j, bv := range brow {
					crow[j] += av * bv
				}
			} else {
				for j := range crow {
					crow[j] += av * b.d[q*b.rs+j*b.cs]
				}
			}
		}
	}
}

// gemmGeneric computes C += A·B for any numeric type (float64 and the
// integer types; integers wrap like Go arithmetic, as numpy does), using
// the i-q-j loop order so that the inner loop runs along rows.
func gemmGeneric[T graph.Numeric](st stop, m, n, k int, a, b mat[T], c []T, ldc int, par int) {
	if m <= 0 || n <= 0 || k <= 0 {
		return
	}
	if m*n*k < gemmParallelMin {
		par = 1
	}
	parallelRange(st, m, par, 1, func(lo, hi int) {
		for i := lo; i < hi && !st.done(); i++ {
			crow := c[i*ldc : i*ldc+n]
			for q := 0; q < k; q++ {
				av := a.d[i*a.rs+q*a.cs]
				if b.cs == 1 {
					brow := b.d[q*b.rs : q*b.rs+n]
					for j, bv := range brow {
						crow[j] += av * bv
					}
				} else {
					for j := range crow {
						crow[j] += av * b.d[q*b.rs+j*b.cs]
					}
				}
			}
		}
	})
}
