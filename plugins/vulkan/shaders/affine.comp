#version 450
// Per-channel affine y = x * scale[c] + shift[c] (BatchNormalization
// folded at compile). u[0] n, u[1] channels, u[2] inner (elements per
// channel per batch).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer S { float s[]; };
layout(std430, binding = 2) readonly buffer T { float t[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
void main() {
    uint i = flatIndex();
    if (i >= pc.u[0]) return;
    uint c = (i / pc.u[2]) % pc.u[1];
    y[i] = x[i] * s[c] + t[c];
}
