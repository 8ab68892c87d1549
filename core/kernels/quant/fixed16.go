package quant

import "math"

// This file holds gemmlowp's fixed-point arithmetic on 16-bit raw values,
// which TFLite's integer LSTM uses for its gates (Q3.12 in, Q0.15 out) and
// its cell state (Q(15+cell_scale)): the same formulas as the 32-bit ones
// in fixedpoint.go with 15 fractional-bit headroom, 16-bit wrapping sums
// and 16-bit constants rounded from the 32-bit ones
// (RescaleConstantInitializer: a rounding shift right by 16).

// c16 rescales a Q·.31 constant to Q·.15.
func c16(v int32) int16 { return int16(rdbypot(v, 16)) }

// srdhm16 is SaturatingRoundingDoublingHighMul on int16: a·b/2^15 rounded
// to nearest (the ±2^14 nudge, then a truncating division); −2^15·−2^15
// saturates to 2^15−1.
func srdhm16(a, b int16) int16 {
	if a == b && a == math.MinInt16 {
		return math.MaxInt16
	}
	ab := int32(a) * int32(b)
	nudge := int32(1 << 14)
	if ab < 0 {
		nudge = 1 - (1 << 14)
	}
	return int16((ab + nudge) / (1 << 15))
}

// mulByPOT16 is SaturatingRoundingMultiplyByPOT on int16.
func mulByPOT16(x int16, exp int) int16 {
	if exp <= 0 {
		return int16(rdbypot(int32(x), -exp))
	}
	threshold := int16(1)<<(15-exp) - 1
	switch {
	case x > threshold:
		return math.MaxInt16
	case x < -threshold:
		return math.MinInt16
	}
	return x << exp
}

// satAdd16 is gemmlowp's SaturatingAdd on int16.
func satAdd16(a, b int16) int16 {
	return int16(min(max(int32(a)+int32(b), math.MinInt16), math.MaxInt16))
}

// roundingHalfSum16 is gemmlowp's RoundingHalfSum on int16: (a+b)/2
// rounded away from zero.
func roundingHalfSum16(a, b int16) int16 {
	sum := int32(a) + int32(b)
	sign := int32(1)
	if sum < 0 {
		sign = -1
	}
	return int16((sum + sign) / 2)
}

// expOnIntervalQuarter16 is exp(a) for a in [−1/4, 0) in Q0.15: the
// Taylor expansion around −1/8 of expOnIntervalQuarter, whose last sum
// saturates on 16 bits (AddSaturatingIf16Bit).
func expOnIntervalQuarter16(a int16) int16 {
	constTerm := c16(1895147668) // exp(−1/8)
	oneThird := c16(715827883)
	x := a + 1<<12 // a + 1/8
	x2 := srdhm16(x, x)
	x3 := srdhm16(x2, x)
	x4 := srdhm16(x2, x2)
	x4over4 := mulByPOT16(x4, -2)
	poly := mulByPOT16(srdhm16(x4over4+x3, oneThird)+x2, -1)
	return satAdd16(constTerm, srdhm16(constTerm, x+poly))
}

// expOnNegativeValues16 is exp_on_negative_values for an int16 input with
// intBits integer bits (a ≤ 0); the result is Q0.15.
func expOnNegativeValues16(a int16, intBits int) int16 {
	fracBits := 15 - intBits
	quarter := int16(1) << (fracBits - 2)
	mask := quarter - 1
	amq := (a & mask) - quarter
	result := expOnIntervalQuarter16(mulByPOT16(amq, intBits))
	remainder := uint16(amq - a)
	for _, b := range []struct {
		exp  int
		mult int32
	}{{-2, 1672461947}, {-1, 1302514674}, {0, 790015084}, {1, 290630308}, {2, 39332535}, {3, 720401}, {4, 242}} {
		if intBits > b.exp && remainder&(uint16(1)<<(fracBits+b.exp)) != 0 {
			result = srdhm16(result, c16(b.mult))
		}
	}
	if intBits > 5 {
		if clamp := c16(-(int32(1) << (36 - intBits))); a < clamp { // −32
			result = 0
		}
	}
	if a == 0 {
		result = math.MaxInt16
	}
	return result
}

// newtonReciprocal16 runs the three Newton–Raphson steps of
// one_over_one_plus_x_for_x_in_0_1 on a Q0.15 input; it returns x ≈
// 1/((1+a)/2) in Q2.13.
func newtonReciprocal16(a int16) int16 {
	half := roundingHalfSum16(a, math.MaxInt16)
	x := c16(1515870810) + srdhm16(half, c16(-1010580540)) // 48/17 − 32/17·d
	const oneQ2 = int16(1) << 13
	for i := 0; i < 3; i++ {
		x += mulByPOT16(srdhm16(x, oneQ2-srdhm16(half, x)), 2)
	}
	return x
}

// logistic16 is gemmlowp's logistic of an int16 input with intBits
// integer bits, in Q0.15: 1/(1+exp(−|a|)), mirrored for negative a, one
// half at zero.
func logistic16(a int16, intBits int) int16 {
	if a == 0 {
		return 1 << 14
	}
	abs := a
	if a < 0 {
		abs = -a // wraps at −2^15, as the C++ does
	}
	pos := mulByPOT16(newtonReciprocal16(expOnNegativeValues16(-abs, intBits)), 1)
	if a > 0 {
		return pos
	}
	return math.MaxInt16 - pos
}

// tanh16 is gemmlowp's tanh of an int16 input with intBits integer bits,
// in Q0.15: (1−e)/(1+e) with e = exp(−2|a|) (the input read with one more
// integer bit), negated for negative a, zero at zero.
func tanh16(a int16, intBits int) int16 {
	if a == 0 {
		return 0
	}
	n := a
	if a > 0 {
		n = -a
	}
	const oneQ2 = int16(1) << 13
	t := mulByPOT16(newtonReciprocal16(expOnNegativeValues16(n, intBits+1))-oneQ2, 2) // Rescale<0> from Q2
	if a < 0 {
		return -t
	}
	return t
}
