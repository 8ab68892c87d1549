#version 450
// Softmax over one axis: rows = outer * inner, each of length u[1] with
// stride u[2] (inner). u[0] rows. VARIANT: 0 softmax, 1 log-softmax.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
void main() {
    uint i = flatIndex();
    if (i >= pc.u[0]) return;
    uint L = pc.u[1], inner = pc.u[2];
    uint base = (i / inner) * L * inner + i % inner;
    float mx = -INF;
    for (uint k = 0; k < L; k++) mx = max(mx, x[base + k * inner]);
    float s = 0.0;
    for (uint k = 0; k < L; k++) s += exp(x[base + k * inner] - mx);
    for (uint k = 0; k < L; k++) {
        float v = x[base + k * inner] - mx;
        y[base + k * inner] = VARIANT == 0 ? exp(v) / s : v - log(s);
    }
}
