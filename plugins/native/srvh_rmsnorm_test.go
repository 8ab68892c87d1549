package native

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// rmsNormRowByRow is rmsNormRows' definition: one row after the other.
func rmsNormRowByRow(xs, ys, gs []float32, M int, eps float32) {
	for r := 0; r+M <= len(xs); r += M {
		row, out := xs[r:r+M], ys[r:r+M]
		sum := 0.0
		for _, v := range row {
			sum += float64(float32(v * v))
		}
		mean := float32(sum / float64(M))
		s := 1 / float32(math.Sqrt(float64(mean+eps)))
		for i, v := range row {
			out[i] = (v * s) * gs[i]
		}
	}
}

// TestSrvhRMSNormRowsSameBits: the rows summed side by side give each
// row's bits alone, for 1 to 9 rows (the groups of four and the rest),
// values over many binades (where the float64 sum's order shows).
func TestSrvhRMSNormRowsSameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, M := range []int{1, 7, 48, 896} {
		for rows := 1; rows <= 9; rows++ {
			x, g := make([]float32, rows*M), make([]float32, M)
			for i := range x {
				x[i] = float32(rng.NormFloat64() * math.Exp2(float64(rng.IntN(40)-20)))
			}
			for i := range g {
				g[i] = 1 + (rng.Float32()*2-1)/8
			}
			got, want := make([]float32, len(x)), make([]float32, len(x))
			rmsNormRows(x, got, g, M, 1e-6)
			rmsNormRowByRow(x, want, g, M, 1e-6)
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("M %d, %d rows: y[%d] = %v, row by row %v", M, rows, i, got[i], want[i])
				}
			}
		}
	}
}

// BenchmarkSrvhRMSNormRows: a Qwen2.5-0.5B-size norm (896 values a row)
// of a decode step's 1 or 4 rows and a 28-row prompt, side by side
// (new) and row by row (old).
func BenchmarkSrvhRMSNormRows(b *testing.B) {
	const M = 896
	rng := rand.New(rand.NewPCG(1, 2))
	for _, rows := range []int{1, 4, 28} {
		x, y, g := make([]float32, rows*M), make([]float32, rows*M), make([]float32, M)
		for i := range x {
			x[i] = rng.Float32()*2 - 1
		}
		for i := range g {
			g[i] = 1
		}
		b.Run(fmt.Sprintf("rows%d/new", rows), func(b *testing.B) {
			for b.Loop() {
				rmsNormRows(x, y, g, M, 1e-6)
			}
		})
		b.Run(fmt.Sprintf("rows%d/old", rows), func(b *testing.B) {
			for b.Loop() {
				rmsNormRowByRow(x, y, g, M, 1e-6)
			}
		})
	}
}
