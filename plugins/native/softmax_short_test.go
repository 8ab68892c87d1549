package native

import (
	"math"
	"math/rand/v2"
	"testing"
)

// softmaxShort computes what softmaxRow computes row by row, to float32
// rounding, over blocks of rows and a partial last block, with rows whose
// maximum is +Inf, −Inf or NaN among them (those go row by row).
func TestSoftmaxShortRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	inf := float32(math.Inf(1))
	for _, n := range []int{1, 2, 3, 4, 7, 16} {
		rows := 2*1024/n + 37
		x := make([]float32, rows*n)
		for i := range x {
			x[i] = float32(rng.NormFloat64() * 8)
		}
		x[5*n] = inf
		x[9*n+n-1] = float32(math.NaN())
		for k := 0; k < n; k++ {
			x[13*n+k] = -inf
		}
		got, want := make([]float32, len(x)), make([]float32, len(x))
		softmaxShort(x, got, 0, rows, n)
		for r := 0; r < rows; r++ {
			softmaxRow(x, want, r*n, n, 1)
		}
		for i := range got {
			g, w := got[i], want[i]
			if g != g && w != w {
				continue
			}
			if d := math.Abs(float64(g - w)); d > 4e-7*math.Max(1, math.Abs(float64(w))) || g != g || w != w {
				t.Fatalf("n=%d: element %d (row %d): got %v, softmaxRow %v", n, i, i/n, g, w)
			}
		}
	}
}
