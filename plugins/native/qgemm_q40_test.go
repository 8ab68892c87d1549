package native

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/ggml"
)

// TestQ40PanelsLarge: Q4_0's panels over products larger than
// TestQ40PanelsSameBits's (152 blocks a row, several activation groups:
// the next panel's prefetch spread over the last ones, a tail of rows past
// the last whole panel) give every output core/ggml's Dot's bits.
func TestQ40PanelsLarge(t *testing.T) {
	rng := rand.New(rand.NewPCG(40, 8))
	const K, N = 4864, 45
	w := gemmWeights(rng, ggml.Q4_0, N, K)
	if !hasQ40Panels(ggml.Q4_0, w.gk.name) {
		t.Skip("no Q4_0 panels here (amd64 with AVX-512 VNNI)")
	}
	for _, m := range []int{4, 25, 100} {
		for _, threads := range []int{1, 2} {
			name := fmt.Sprintf("m%d/t%d", m, threads)
			x := make([]float32, m*K)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			y := make([]float32, m*N)
			var p *pool
			if threads > 1 {
				p = newPool(threads)
			}
			if !w.runGEMM(p, x, y, m) {
				t.Fatalf("%s: runGEMM declined", name)
			}
			p.close()
			var a ggml.Act
			a.Quantize(x, m, K, 32)
			for r := 0; r < m; r++ {
				for n := range N {
					want := ggml.Dot(ggml.Q4_0, w.raw[n*w.rb:(n+1)*w.rb], &a, r)
					if got := y[r*N+n]; math.Float32bits(got) != math.Float32bits(want) {
						t.Fatalf("%s: y[%d,%d] = %v, Dot %v", name, r, n, got, want)
					}
				}
			}
		}
	}
}
