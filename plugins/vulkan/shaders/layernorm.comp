#version 450
// LayerNormalization over the last u[1] elements of each of u[0] rows:
// y = (x - mean) / sqrt(var + eps) * gamma + beta. u[2] eps (float
// bits), u[3] has beta. VARIANT 1 is RMS normalization
// (SimplifiedLayerNormalization): y = x / sqrt(mean(x^2) + eps) * gamma,
// no mean subtracted, no beta.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer G { float g[]; };
layout(std430, binding = 2) readonly buffer Bt { float bt[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
void main() {
    uint i = flatIndex();
    if (i >= pc.u[0]) return;
    uint L = pc.u[1], base = i * L;
    float mean = 0.0;
    if (VARIANT == 0) {
        for (uint k = 0; k < L; k++) mean += x[base + k];
        mean /= float(L);
    }
    float var = 0.0;
    for (uint k = 0; k < L; k++) { float d = x[base + k] - mean; var += d * d; }
    float inv = 1.0 / sqrt(var / float(L) + pf(2));
    for (uint k = 0; k < L; k++) {
        float r = (x[base + k] - mean) * inv * g[k];
        if (VARIANT == 0 && pc.u[3] != 0) r += bt[k];
        y[base + k] = r;
    }
}
