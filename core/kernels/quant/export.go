package quant

// The fixed-point primitives of the requantisation, exported so that the
// fast backends' int8 kernels round exactly as these reference kernels do
// (their outputs must be bit-identical).

// QuantizeMultiplier splits a positive real multiplier into a Q31
// mantissa and an exponent (see quantizeMultiplier): m ≈ q·2^(shift−31).
func QuantizeMultiplier(m float64) (q int32, shift int) { return quantizeMultiplier(m) }

// MulByQuantizedMultiplier is TFLite's MultiplyByQuantizedMultiplier with
// double rounding (see mulByQuantizedMultiplier).
func MulByQuantizedMultiplier(x, q int32, shift int) int32 {
	return mulByQuantizedMultiplier(x, q, shift)
}

// ActivationRange is the int8 clamp [lo, hi] of a fused activation (NONE,
// RELU, RELU6, RELU_N1_TO_1) for an output scale and zero point; ok is
// false for any other activation.
func ActivationRange(act string, scale float32, zp int32) (lo, hi int32, ok bool) {
	return activationRange(act, scale, zp)
}
