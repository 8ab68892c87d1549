#version 450
// Elementwise unary op. u[0] n, u[1] alpha, u[2] beta (float bits).
// VARIANT: 0 relu 1 sigmoid 2 tanh 3 clip(alpha=min, beta=max)
// 4 hardsigmoid 5 hardswish 6 leakyrelu 7 gelu (erf) 8 erf 9 exp 10 log
// 11 sqrt 12 abs 13 neg 14 reciprocal 15 copy 16 elu 17 softplus
// 18 floor 19 ceil 20 sin 21 cos.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };

// erf to about 1e-7 (Abramowitz and Stegun 7.1.26 is 1.5e-7; this is the
// same form with the W. J. Cody style refinement for small |v| by series)
float erf_(float v) {
    float a = abs(v);
    float r;
    if (a < 0.5) {
        float v2 = v * v;
        // Maclaurin series, 6 terms: enough below 0.5
        r = a * (1.1283791671 + v2 * (-0.3761263890 + v2 * (0.1128379167 + v2 * (-0.0268661706 + v2 * (0.0052239775 - v2 * 0.0008548327)))));
    } else {
        float t = 1.0 / (1.0 + 0.3275911 * a);
        float p = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
        r = 1.0 - p * exp(-a * a);
    }
    return v < 0.0 ? -r : r;
}
float log1p_(float e) { return e < 1e-4 ? e * (1.0 - 0.5 * e) : log(1.0 + e); }
float tanh_(float v) {
    float a = abs(v);
    if (a > 10.0) return sign(v);
    if (a < 0.1) { float v2 = v * v; return v * (1.0 + v2 * (-1.0 / 3.0 + v2 * (2.0 / 15.0 + v2 * (-17.0 / 315.0)))); }
    float r = 1.0 - 2.0 / (exp(2.0 * a) + 1.0);
    return v < 0.0 ? -r : r;
}
float sigmoid_(float v) { return v >= 0.0 ? 1.0 / (1.0 + exp(-v)) : exp(v) / (1.0 + exp(v)); }
void main() {
    uint i = flatIndex();
    if (i >= pc.u[0]) return;
    float v = x[i], al = pf(1), be = pf(2), r;
    if (VARIANT == 0) r = isnan(v) ? v : max(v, 0.0);
    else if (VARIANT == 1) r = sigmoid_(v);
    else if (VARIANT == 2) r = tanh_(v);
    else if (VARIANT == 3) r = isnan(v) ? v : min(max(v, al), be);
    else if (VARIANT == 4) r = max(0.0, min(1.0, al * v + be));
    else if (VARIANT == 5) r = v <= -3.0 ? 0.0 : (v >= 3.0 ? v : v * (v / 6.0 + 0.5));
    else if (VARIANT == 6) r = v < 0.0 ? al * v : v;
    else if (VARIANT == 7) r = isinf(v) ? max(v, 0.0) : 0.5 * v * (1.0 + erf_(v * 0.70710678118654752));
    else if (VARIANT == 8) r = erf_(v);
    else if (VARIANT == 9) r = exp(v);
    else if (VARIANT == 10) r = log(v);
    else if (VARIANT == 11) r = sqrt(v);
    else if (VARIANT == 12) r = abs(v);
    else if (VARIANT == 13) r = -v;
    else if (VARIANT == 14) r = 1.0 / v;
    else if (VARIANT == 15) r = v;
    else if (VARIANT == 16) r = v < 0.0 ? al * (exp(v) - 1.0) : v;
    else if (VARIANT == 17) r = max(v, 0.0) + log1p_(exp(-abs(v)));
    else if (VARIANT == 18) r = floor(v);
    else if (VARIANT == 19) r = ceil(v);
    else if (VARIANT == 20) r = sin(v);
    else r = cos(v);
    if (isnan(v)) r = v; // every op propagates NaN (min/max would drop it)
    y[i] = r;
}
