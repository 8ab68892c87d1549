package quant

import (
	"math"
	"math/bits"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// This file holds the integer arithmetic TFLite's int8 reference kernels
// are defined by, written from the formulas: multipliers quantized from
// double-precision real scales, gemmlowp-style saturating rounding
// doubling high multiplication and rounding right shifts.

// quantizeMultiplier splits a positive real multiplier m into a Q31
// mantissa q in [2^30, 2^31) and a power-of-two exponent: m ≈ q·2^(shift−31).
// The mantissa is rounded half away from zero (C's round); a mantissa that
// rounds up to 2^31 is halved and the exponent raised; exponents below −31
// give a zero multiplier, above 30 the largest one.
func quantizeMultiplier(m float64) (q int32, shift int) {
	if m == 0 || math.IsNaN(m) || math.IsInf(m, 0) {
		return 0, 0
	}
	frac, exp := math.Frexp(m)
	qf := int64(math.Round(frac * (1 << 31)))
	if qf == 1<<31 {
		qf /= 2
		exp++
	}
	if exp < -31 {
		return 0, 0
	}
	if exp > 30 {
		return math.MaxInt32, 30
	}
	return int32(qf), exp
}

// srdhm is SaturatingRoundingDoublingHighMul: the high 32 bits of 2·a·b,
// that is a·b/2^31, rounded to nearest with ties toward +∞ (the nudge of
// ±2^30 before a truncating division); the one overflowing case
// (a = b = −2^31) saturates to 2^31−1.
func srdhm(a, b int32) int32 {
	if a == b && a == math.MinInt32 {
		return math.MaxInt32
	}
	ab := int64(a) * int64(b)
	nudge := int64(1 << 30)
	if ab < 0 {
		nudge = 1 - (1 << 30)
	}
	return int32((ab + nudge) / (1 << 31)) // Go's / truncates toward zero, as C++'s
}

// rdbypot is RoundingDivideByPOT: x / 2^exp rounded to nearest, ties away
// from zero.
func rdbypot(x int32, exp int) int32 {
	if exp <= 0 {
		return x
	}
	mask := int32(1)<<exp - 1
	rem := x & mask
	threshold := mask >> 1
	if x < 0 {
		threshold++
	}
	r := x >> exp
	if rem > threshold {
		r++
	}
	return r
}

// mulByQuantizedMultiplier is TFLite's MultiplyByQuantizedMultiplier
// (double rounding): a left shift for positive exponents, srdhm by the
// mantissa, then a rounding right shift for negative exponents.
func mulByQuantizedMultiplier(x, q int32, shift int) int32 {
	left, right := 0, 0
	if shift > 0 {
		left = shift
	} else {
		right = -shift
	}
	return rdbypot(srdhm(x*(int32(1)<<left), q), right)
}

// requantShifts splits mulByQuantizedMultiplier's exponent into its left
// and right shifts (one of them zero).
func requantShifts(shift int) (left, right uint) {
	if shift > 0 {
		return uint(shift), 0
	}
	return 0, uint(-shift)
}

// requantAway is mulByQuantizedMultiplier for a multiplier q >= 0 (as
// quantizeMultiplier makes: srdhm's one saturating case cannot occur) with
// its shifts split (requantShifts), small enough to be inlined in a
// kernel's inner loop.
func requantAway(x, q int32, left, right uint) int32 {
	ab := int64(x<<left) * int64(q)
	nudge := int64(1 << 30)
	if ab < 0 {
		nudge = 1 - (1 << 30)
	}
	v := int32((ab + nudge) / (1 << 31))
	// rdbypot(v, right); right = 0 leaves v as it is (mask 0)
	mask := int32(1)<<right - 1
	threshold := mask >> 1
	if v < 0 {
		threshold++
	}
	r := v >> right
	if v&mask > threshold {
		r++
	}
	return r
}

// mulByQuantizedMultiplierHalfUp is mulByQuantizedMultiplier with the
// final rounding right shift rounding ties toward +∞ (add half, shift
// arithmetically), as ruy's GEMM kernels do in TFLite's optimized builds.
func mulByQuantizedMultiplierHalfUp(x, q int32, shift int) int32 {
	left, right := 0, 0
	if shift > 0 {
		left = shift
	} else {
		right = -shift
	}
	v := srdhm(x*(int32(1)<<left), q)
	if right == 0 {
		return v
	}
	return int32((int64(v) + int64(1)<<(right-1)) >> right)
}

// requantizer is the requantisation a node's "rounding" attribute asks
// for: "away" (the default, TFLite's reference kernels) or "half_up".
func requantizer(n *graph.Node) (func(x, q int32, shift int) int32, error) {
	switch r := n.AttrString("rounding", "away"); r {
	case "away":
		return mulByQuantizedMultiplier, nil
	case "half_up":
		return mulByQuantizedMultiplierHalfUp, nil
	default:
		return nil, kernels.Unsupportedf(n, "rounding %q (want away or half_up)", r)
	}
}

// satShiftLeft is gemmlowp's SaturatingRoundingMultiplyByPOT for a
// positive exponent: x·2^exp, saturated to the int32 range.
func satShiftLeft(x int32, exp int) int32 {
	threshold := int32(1)<<(31-exp) - 1
	switch {
	case x > threshold:
		return math.MaxInt32
	case x < -threshold:
		return math.MinInt32
	}
	return x << exp
}

// mulByPOT is SaturatingRoundingMultiplyByPOT for any exponent.
func mulByPOT(x int32, exp int) int32 {
	if exp > 0 {
		return satShiftLeft(x, exp)
	}
	return rdbypot(x, -exp)
}

// Fixed-point numbers below are raw int32 values with I integer bits
// (31−I fractional bits); products of two numbers with I1 and I2 integer
// bits have I1+I2 (srdhm of the raws), sums are raw (wrapping) sums.

// expOnIntervalQuarter is exp(a) for a in [−1/4, 0), a and the result
// with 0 integer bits: a Taylor expansion around −1/8.
func expOnIntervalQuarter(a int32) int32 {
	const constTerm = 1895147668 // exp(−1/8) in Q0.31
	const oneThird = 715827883   // 1/3
	x := a + 1<<28               // a + 1/8
	x2 := srdhm(x, x)
	x3 := srdhm(x2, x)
	x4 := srdhm(x2, x2)
	x4over4 := mulByPOT(x4, -2)
	poly := mulByPOT(srdhm(x4over4+x3, oneThird)+x2, -1)
	return constTerm + srdhm(constTerm, x+poly)
}

// expOnNegativeValues is gemmlowp's exp_on_negative_values for an input
// with intBits integer bits (a ≤ 0); the result has 0 integer bits.
func expOnNegativeValues(a int32, intBits int) int32 {
	fracBits := 31 - intBits
	quarter := int32(1) << (fracBits - 2)
	mask := quarter - 1
	aModQuarterMinusQuarter := (a & mask) - quarter
	result := expOnIntervalQuarter(mulByPOT(aModQuarterMinusQuarter, intBits))
	remainder := aModQuarterMinusQuarter - a
	barrel := []struct {
		exp  int
		mult int32
	}{{-2, 1672461947}, {-1, 1302514674}, {0, 790015084}, {1, 290630308}, {2, 39332535}, {3, 720401}, {4, 242}}
	for _, b := range barrel {
		if intBits > b.exp {
			if remainder&(int32(1)<<(fracBits+b.exp)) != 0 {
				result = srdhm(result, b.mult)
			}
		}
	}
	if intBits > 5 {
		clamp := -(int32(1) << (36 - intBits)) // −32 in this format
		if a < clamp {
			result = 0
		}
	}
	if a == 0 {
		result = math.MaxInt32 // one, in Q0.31
	}
	return result
}

// oneOverOnePlusX is 1/(1+x) for x in [0,1), input with 0 integer bits,
// result with 0: three Newton–Raphson steps from 48/17 − 32/17·d.
func oneOverOnePlusX(a int32) int32 {
	return mulByPOT(halfDenominatorInverse(a), 1) // x/2 in Q1 -> Q0
}

// oneMinusXOverOnePlusX is gemmlowp's one_minus_x_over_one_plus_x_for_x_in_0_1:
// (1−a)/(1+a) for a in [0, 1) in Q0.31, as 1/((1+a)/2) − 1 rescaled
// from Q2.29 with saturation.
func oneMinusXOverOnePlusX(a int32) int32 {
	return mulByPOT(halfDenominatorInverse(a)-1<<29, 2)
}

// halfDenominatorInverse is 1/((1+a)/2) in Q2.29 for a in [0, 1) (Q0.31):
// gemmlowp's Newton–Raphson division, three iterations from 48/17 −
// 32/17·d.
func halfDenominatorInverse(a int32) int32 {
	// RoundingHalfSum(a, one)
	sum := int64(a) + math.MaxInt32
	sign := int64(1)
	if sum < 0 {
		sign = -1
	}
	half := int32((sum + sign) / 2)
	const c48over17 = 1515870810     // Q2.29
	const cNeg32over17 = -1010580540 // Q2.29
	x := c48over17 + srdhm(half, cNeg32over17)
	const oneQ2 = int32(1) << 29
	for i := 0; i < 3; i++ {
		hx := srdhm(half, x)                    // Q2
		oneMinus := oneQ2 - hx                  // Q2
		x = x + mulByPOT(srdhm(x, oneMinus), 2) // Q4 -> Q2
	}
	return x
}

// tanhQ0 is gemmlowp's tanh of an input with intBits integer bits:
// (1−e)/(1+e) with e = exp(−2|a|) (the input's integer bits raised by one,
// the raw value unchanged), negated for negative a, exactly zero at
// zero; the result has 0 integer bits.
func tanhQ0(a int32, intBits int) int32 {
	if a == 0 {
		return 0
	}
	abs := a
	if a < 0 {
		abs = -a
	}
	t := oneMinusXOverOnePlusX(expOnNegativeValues(-abs, intBits+1))
	if a < 0 {
		return -t
	}
	return t
}

// reciprocal is TFLite's GetReciprocal: for x with xIntBits integer bits
// it returns the Q0.31 mantissa of 1/x and how many bits over one x was.
func reciprocal(x int32, xIntBits int) (int32, int) {
	headroomPlusOne := bits.LeadingZeros32(uint32(x))
	numBitsOverUnit := xIntBits - headroomPlusOne
	shiftedMinusOne := int32((uint32(x) << headroomPlusOne) - (uint32(1) << 31))
	return oneOverOnePlusX(shiftedMinusOne), numBitsOverUnit
}

// inputRadius is TFLite's CalculateInputRadius: the largest input
// magnitude (in input units) that the fixed-point transcendental keeps.
func inputRadius(intBits, leftShift, totalBits int) int32 {
	maxRescaled := float64(int64(1)<<intBits-1) * float64(int64(1)<<(totalBits-intBits)) / float64(int64(1)<<leftShift)
	return int32(math.Floor(maxRescaled))
}

// quantizeRound is TFLite's float quantization: zero_point + round(v /
// scale) with round half away from zero, clamped to int8.
func quantizeRound(v, scale float32, zp int32) int8 {
	q := int64(math.Round(float64(v/scale))) + int64(zp)
	return int8(min(max(q, -128), 127))
}

// activationRange is TFLite's CalculateActivationRangeQuantized for int8:
// the real clamp of the fused activation, quantized with the output's
// scale and zero point, intersected with [−128, 127].
func activationRange(act string, scale float32, zp int32) (int32, int32, bool) {
	q := func(f float32) int32 { return zp + int32(math.Round(float64(f/scale))) }
	lo, hi := int32(-128), int32(127)
	switch act {
	case "", "NONE":
	case "RELU":
		lo = max(lo, q(0))
	case "RELU6":
		lo, hi = max(lo, q(0)), min(hi, q(6))
	case "RELU_N1_TO_1":
		lo, hi = max(lo, q(-1)), min(hi, q(1))
	default:
		return 0, 0, false
	}
	return lo, hi, true
}

// logisticQ0 is gemmlowp's logistic of an input with intBits integer bits:
// 1/(1+exp(−|a|)) through exp_on_negative_values and the Newton–Raphson
// reciprocal, mirrored for negative a (one − result), exactly one half at
// zero; the result has 0 integer bits.
func logisticQ0(a int32, intBits int) int32 {
	if a == 0 {
		return 1 << 30
	}
	abs := a
	if a < 0 {
		abs = -a
	}
	pos := oneOverOnePlusX(expOnNegativeValues(-abs, intBits))
	if a > 0 {
		return pos
	}
	return math.MaxInt32 - pos
}
