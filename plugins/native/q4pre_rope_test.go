package native

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/ggml"
)

// ropeFMARef is rotateRowFMA's definition one pair at a time in
// core/ggml's fused multiply-add.
func ropeFMARef(x, c, s []float32, interleaved bool) {
	w := len(c)
	for i := range w {
		i1, i2 := i, w+i
		if interleaved {
			i1, i2 = 2*i, 2*i+1
		}
		x1, x2 := x[i1], x[i2]
		x[i1], x[i2] = ggml.FMA32(x1, c[i], -float32(x2*s[i])), ggml.FMA32(x1, s[i], float32(x2*c[i]))
	}
}

// TestRotateRowFMASameBits: rotateRowFMA (the assembly rotation,
// rotateRowFMAFast, with its scalar tail) gives every element the bits of the definition, for widths below,
// at and past the vectors' 16 and 8 pairs, both layouts, on values whose
// products round, overflow, underflow and are NaN; the row past the
// rotated part is untouched.
func TestRotateRowFMASameBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 30))
	special := []float32{0, float32(math.Copysign(0, -1)), 1e-40, -3e-39, 3e38, -2e38, float32(math.Inf(1)), float32(math.NaN()), 1, -1}
	val := func() float32 {
		if rng.IntN(8) == 0 {
			return special[rng.IntN(len(special))]
		}
		return float32(rng.NormFloat64() * math.Pow(2, float64(rng.IntN(40)-20)))
	}
	for _, inter := range []bool{false, true} {
		for w := 1; w <= 75; w++ {
			for rep := 0; rep < 4; rep++ {
				x := make([]float32, 2*w+5)
				c, s := make([]float32, w), make([]float32, w)
				for i := range x {
					x[i] = val()
				}
				for i := range c {
					a := rng.Float64() * 2 * math.Pi
					c[i], s[i] = float32(math.Cos(a)), float32(math.Sin(a))
					if rep == 3 {
						c[i], s[i] = val(), val()
					}
				}
				want := append([]float32(nil), x...)
				ropeFMARef(want, c, s, inter)
				got := append([]float32(nil), x...)
				rotateRowFMA(got, c, s, inter)
				for i := range want {
					g, e := got[i], want[i]
					if math.Float32bits(g) != math.Float32bits(e) && !(g != g && e != e) {
						t.Fatalf("%s: element %d = %v (%#x), want %v (%#x)", fmt.Sprintf("interleaved %v w %d rep %d", inter, w, rep), i, g, math.Float32bits(g), e, math.Float32bits(e))
					}
				}
			}
		}
	}
}

// BenchmarkRotateRowFMA: one head's row of 64 (32 pairs, Qwen2.5's and
// Llama's head size) rotated by rotateRowFMA (the assembly where there
// is one) and by the scalar definition.
func BenchmarkRotateRowFMA(b *testing.B) {
	const w = 32
	x, c, s := make([]float32, 2*w), make([]float32, w), make([]float32, w)
	for i := range c {
		c[i], s[i] = float32(math.Cos(float64(i))), float32(math.Sin(float64(i)))
	}
	for _, inter := range []bool{false, true} {
		b.Run(fmt.Sprintf("interleaved=%v/vec", inter), func(b *testing.B) {
			for b.Loop() {
				for i := range x {
					x[i] = 1
				}
				rotateRowFMA(x, c, s, inter)
			}
		})
		b.Run(fmt.Sprintf("interleaved=%v/scalar", inter), func(b *testing.B) {
			for b.Loop() {
				for i := range x {
					x[i] = 1
				}
				ropeFMARef(x, c, s, inter)
			}
		})
	}
}
