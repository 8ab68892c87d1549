#version 450
// Reduction over a contiguous run of axes: rows = outer * inner, each of
// length u[1] with stride u[2] (inner). u[0] rows.
// VARIANT: 0 sum 1 mean 2 max 3 min 4 sum of squares.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
void main() {
    uint i = flatIndex();
    if (i >= pc.u[0]) return;
    uint L = pc.u[1], inner = pc.u[2];
    uint base = (i / inner) * L * inner + i % inner;
    float acc = VARIANT == 2 ? -INF : (VARIANT == 3 ? INF : 0.0);
    for (uint k = 0; k < L; k++) {
        float v = x[base + k * inner];
        if (VARIANT == 2) acc = (isnan(v) || v > acc) ? v : acc;
        else if (VARIANT == 3) acc = (isnan(v) || v < acc) ? v : acc;
        else if (VARIANT == 4) acc += v * v;
        else acc += v;
    }
    if (VARIANT == 1) acc /= float(L);
    y[i] = acc;
}
