package llm

import (
	"math"
	"math/rand/v2"
	"testing"
)

// scanArgmax is the plain scan argmax must agree with.
func scanArgmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// TestArgmaxScan: argmax agrees with the plain scan (the first of the
// largest; NaN never larger, a NaN first wins) on edge cases (NaN, ±0,
// ±Inf, ties across lanes, every length around the unrolling) and on
// random values with many ties; sample at temperature 0 is argmax.
func TestArgmaxScan(t *testing.T) {
	nan, inf, negz := float32(math.NaN()), float32(math.Inf(1)), float32(math.Copysign(0, -1))
	cases := [][]float32{
		{}, {1}, {nan}, {nan, 5, 6}, {1, nan, 3, nan, 3}, {nan, nan, nan, nan, nan},
		{negz, 0}, {0, negz}, {-1, 0, negz}, {-1, negz, 0}, {0, 0, 0, 0, 0, 0, 0, 0, 1},
		{-inf, -inf}, {-inf, inf, inf, 3}, {2, 2, 2, 2, 2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8, 9},
		{9, 8, 7, 6, 5, 4, 3, 2, 1}, {1, 1, 1, 1, 1, 7, 1, 7, 7, 1, 7},
		{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0, 5},
		{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1, 1, 1, 1, 2},
	}
	rng := rand.New(rand.NewPCG(9, 10))
	for trial := range 600 {
		xs := make([]float32, rng.IntN(300))
		for i := range xs {
			xs[i] = float32(rng.IntN(7) - 3) // many ties
			if trial%3 == 0 {
				xs[i] = float32(rng.NormFloat64())
			}
			if rng.IntN(40) == 0 {
				xs[i] = nan
			}
		}
		cases = append(cases, xs)
	}
	for _, xs := range cases {
		want := scanArgmax(xs)
		if got := argmax(xs); got != want {
			t.Fatalf("argmax(%v) = %d, the scan %d", xs, got, want)
		}
		if len(xs) > 0 {
			if got := sample(xs, Options{}, nil); got != want {
				t.Fatalf("sample(%v) at temperature 0 = %d, the scan %d", xs, got, want)
			}
		}
	}
}

// BenchmarkExec14Argmax: greedy sampling's argmax over Qwen2.5's 151936
// logits, the plain scan and argmax.
func BenchmarkExec14Argmax(b *testing.B) {
	l := make([]float32, 151936)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range l {
		l[i] = float32(rng.NormFloat64())
	}
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			_ = scanArgmax(l)
		}
	})
	b.Run("argmax", func(b *testing.B) {
		for b.Loop() {
			_ = argmax(l)
		}
	})
}
