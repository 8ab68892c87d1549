package native

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestMaxOfIsMax: maxOf's four running maxima give the sequential max's
// bits: NaN wherever one is NaN, +0 over −0, −Inf for none.
func TestMaxOfIsMax(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	specials := []float32{float32(math.NaN()), float32(math.Inf(-1)), float32(math.Inf(1)), 0, float32(math.Copysign(0, -1))}
	for n := 0; n < 40; n++ {
		for trial := 0; trial < 50; trial++ {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
				if rng.IntN(6) == 0 {
					x[i] = specials[rng.IntN(len(specials))]
				}
				if trial%3 == 0 && rng.IntN(2) == 0 {
					x[i] = specials[3+rng.IntN(2)] // only zeros of both signs
				}
			}
			want := float32(math.Inf(-1))
			for _, v := range x {
				want = max(want, v)
			}
			if got := maxOf(x); math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
				t.Fatalf("maxOf(%v) = %v, want %v", x, got, want)
			}
		}
	}
}
