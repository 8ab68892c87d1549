// Package quant holds the reference kernels of the int8 operators of
// domain "switchyard.quant" (schemas and the tensor convention in
// core/ops/quant). They follow TensorFlow Lite's int8 reference kernels
// (reference/integer_ops, the default build without single rounding)
// integer for integer, written from the formulas; no TFLite runtime is
// reachable here to compare against, so the tests check the fixed-point
// primitives against exact arithmetic and the kernels against float
// references within one step. The integer rules, stated once:
//
//   - Requantisation is MultiplyByQuantizedMultiplier with double
//     rounding: a real multiplier M (computed in float64 from the float32
//     scales) becomes a Q31 mantissa q ∈ [2^30, 2^31) rounded half away
//     from zero and an exponent e; acc·M is srdhm(acc·2^max(e,0), q) — the
//     high half of 2·acc·q, rounded to nearest with ties toward +∞ — then
//     a right shift by max(−e,0) rounding to nearest, ties away from zero.
//     Conv2D and DepthwiseConv2D use M = xs·ws[c]/ys per output channel in
//     float64; FullyConnected per tensor uses float64(xs·ws as
//     float32)/ys (TFLite's GetQuantizedConvolutionMultipler).
//   - Add and Sub rescale both inputs to 2^20 × the larger input scale
//     (multipliers xs/(2·max) and 2·max/(2^20·ys)); Mul uses xs·bs/ys.
//   - Fused activations clamp to zp + round(bound/scale), round half away
//     from zero, within [−128, 127].
//   - AveragePool2D divides the window sum (raw values, padding excluded)
//     by the count rounding half away from zero; MaxPool2D takes the max.
//   - Mean over axes {1,2} of a 4-D tensor is TFLite's integer Mean:
//     Σ(x−xz) requantised by xs/ys, then divided by the count rounding half
//     away from zero; other axes use TFLite's float QuantizedMeanOrSum.
//   - Softmax is TFLite's fixed-point reference: differences to the row max
//     scaled by β·xs into Q5.26, gemmlowp's exp_on_negative_values,
//     sum in Q12.19, 1/sum by Newton–Raphson, output in units of 1/256
//     offset by −128 (output scale 1/256, zero point −128 expected).
//   - Logistic is TFLite Micro's reference: (x−xz) into Q4.27 by the
//     multiplier xs·2^27, saturating beyond the input radius, gemmlowp's
//     fixed-point logistic, divided by 2^23 with rounding, offset −128.
//   - Tanh is TFLite Micro's reference: (x−xz) into Q4.27 as for
//     Logistic, gemmlowp's fixed-point tanh ((1−e)/(1+e), e = exp(−2|x|),
//     the division by Newton–Raphson), divided by 2^24 with rounding
//     (output scale 1/128, zero point 0 expected).
//   - Quantize is zp + round(x/scale) (half away from zero), clamped;
//     Dequantize is float32(float64(scale)·(q−zp)).
package quant
