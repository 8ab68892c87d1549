package nn

import (
	"math"
	"math/rand"
	"testing"
)

func randF32(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.Float64()*2 - 1)
	}
	return v
}

// TestSgemmBlocked checks the packed, parallel float32 GEMM against a
// float64 triple loop over shapes that hit every edge: ragged row panels,
// odd k, k beyond one block, n beyond one block, transposed operands.
func TestSgemmBlocked(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	cases := []struct {
		m, n, k        int
		transA, transB bool
	}{
		{1, 1, 1, false, false},
		{3, 5, 7, false, false},
		{37, 41, 43, false, false},
		{64, 300, 513, false, false},
		{130, 70, 260, true, false},
		{66, 257, 31, false, true},
		{17, 600, 99, true, true},
		{5, 3, 2000, false, false},
		{1, 500, 301, false, false}, // row vector
		{1, 500, 301, true, false},
		{3, 400, 300, false, true}, // Linear: dot products
		{4, 90, 257, true, true},
	}
	for _, c := range cases {
		a := randF32(r, c.m*c.k)
		b := randF32(r, c.k*c.n)
		am := mat[float32]{a, c.k, 1}
		if c.transA { // a holds A^T (k×m)
			am = mat[float32]{a, 1, c.m}
		}
		bm := mat[float32]{b, c.n, 1}
		if c.transB { // b holds B^T (n×k)
			bm = mat[float32]{b, 1, c.k}
		}
		const alpha = 0.5
		init := randF32(r, c.m*c.n)
		for _, par := range []int{1, 3} {
			got := append([]float32{}, init...)
			sgemm(nil, c.m, c.n, c.k, alpha, am, bm, got, c.n, par)
			for i := 0; i < c.m; i++ {
				for j := 0; j < c.n; j++ {
					want := float64(init[i*c.n+j])
					for q := 0; q < c.k; q++ {
						want += alpha * float64(am.d[i*am.rs+q*am.cs]) * float64(bm.d[q*bm.rs+j*bm.cs])
					}
					if g := float64(got[i*c.n+j]); math.Abs(g-want) > 1e-4*(1+math.Abs(want))*math.Sqrt(float64(c.k)) {
						t.Fatalf("%+v par=%d: C[%d,%d] = %v, want %v", c, par, i, j, g, want)
					}
				}
			}
		}
	}
}

func TestSgemmNaNPropagates(t *testing.T) {
	// 0·NaN must give NaN: the kernel may not skip zero multipliers.
	m, n, k := 40, 40, 40
	a := make([]float32, m*k)
	b := make([]float32, k*n)
	b[5*n+7] = float32(math.NaN())
	c := make([]float32, m*n)
	sgemm(nil, m, n, k, 1, mat[float32]{a, k, 1}, mat[float32]{b, n, 1}, c, n, 2)
	for i := 0; i < m; i++ {
		if !math.IsNaN(float64(c[i*n+7])) {
			t.Fatalf("row %d col 7 = %v, want NaN", i, c[i*n+7])
		}
		if c[i*n+6] != 0 {
			t.Fatalf("row %d col 6 = %v, want 0", i, c[i*n+6])
		}
	}
}
