package quant

import (
	"math"
	"testing"
)

// TestFixed16Transcendentals: the 16-bit logistic and tanh over every
// int16 input stay within a few Q0.15 steps of the real functions, exact
// at zero, and odd/complementary as gemmlowp's are. They are monotone only
// to within a few steps: on 16 bits the three Newton–Raphson steps of the
// reciprocal land ±2 raw Q2.13 steps from 1/x, so a smaller exp can give
// a slightly smaller reciprocal, up to 4 raw steps × 4 in tanh (gemmlowp's own int16 behaviour).
func TestFixed16Transcendentals(t *testing.T) {
	for _, bitsIn := range []int{3, 4, 5} {
		scale := math.Ldexp(1, bitsIn-15)
		worstL, worstT := 0.0, 0.0
		prevL, prevT := int16(math.MinInt16), int16(math.MinInt16)
		for v := math.MinInt16; v <= math.MaxInt16; v++ {
			a := int16(v)
			x := float64(a) * scale
			l, th := logistic16(a, bitsIn), tanh16(a, bitsIn)
			worstL = max(worstL, math.Abs(float64(l)/32768-1/(1+math.Exp(-x))))
			worstT = max(worstT, math.Abs(float64(th)/32768-math.Tanh(x)))
			if int32(l) < int32(prevL)-16 || int32(th) < int32(prevT)-16 {
				t.Fatalf("Q%d: not monotone at %d: logistic %d after %d, tanh %d after %d", bitsIn, a, l, prevL, th, prevT)
			}
			prevL, prevT = l, th
			if a != math.MinInt16 {
				if s := int32(l) + int32(logistic16(-a, bitsIn)); a != 0 && s != math.MaxInt16 {
					t.Fatalf("Q%d: logistic(%d)+logistic(%d) = %d", bitsIn, a, -a, s)
				}
				if th != -tanh16(-a, bitsIn) {
					t.Fatalf("Q%d: tanh(%d) = %d but tanh(%d) = %d", bitsIn, a, th, -a, tanh16(-a, bitsIn))
				}
			}
		}
		if logistic16(0, bitsIn) != 1<<14 || tanh16(0, bitsIn) != 0 {
			t.Errorf("Q%d: logistic(0) = %d, tanh(0) = %d", bitsIn, logistic16(0, bitsIn), tanh16(0, bitsIn))
		}
		t.Logf("Q%d.%d: max |logistic − σ| %.2g (%.1f steps), max |tanh − tanh| %.2g (%.1f steps)", bitsIn, 15-bitsIn, worstL, worstL*32768, worstT, worstT*32768)
		if worstL > 8.0/32768 || worstT > 16.0/32768 {
			t.Errorf("Q%d: logistic off by %g, tanh by %g", bitsIn, worstL, worstT)
		}
	}
}

// TestFixed16Primitives pins the 16-bit primitives on hand-worked values.
func TestFixed16Primitives(t *testing.T) {
	for _, c := range []struct{ a, b, want int16 }{
		{16384, 16384, 8192},                          // ½·½ = ¼
		{math.MinInt16, math.MinInt16, math.MaxInt16}, // the one saturating case
		{-16384, 16384, -8192},
		{3, 5, 0},       // 15/2^15 rounds to 0
		{181, 181, 1},   // 32761/32768 → 1 (nudge 2^14)
		{-181, 181, -1}, // ties and near-ties away from zero
	} {
		if got := srdhm16(c.a, c.b); got != c.want {
			t.Errorf("srdhm16(%d, %d) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
	if c16(1895147668) != 28918 || c16(715827883) != 10923 || c16(1515870810) != 23130 || c16(-1010580540) != -15420 {
		t.Errorf("rescaled constants %d %d %d %d", c16(1895147668), c16(715827883), c16(1515870810), c16(-1010580540))
	}
	if mulByPOT16(20000, 1) != math.MaxInt16 || mulByPOT16(-20000, 1) != math.MinInt16 || mulByPOT16(-3, -1) != -2 || mulByPOT16(3, -1) != 2 {
		t.Error("mulByPOT16 saturation or rounding")
	}
	if roundingHalfSum16(math.MaxInt16, math.MaxInt16) != math.MaxInt16 || roundingHalfSum16(-3, 0) != -2 {
		t.Error("roundingHalfSum16")
	}
}
