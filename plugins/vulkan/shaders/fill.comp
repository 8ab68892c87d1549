#version 450
// Fills u[0] elements with the float u[1].
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(std430, binding = 0) writeonly buffer Y { float y[]; };
void main() {
    uint i = flatIndex();
    if (i >= pc.u[0]) return;
    y[i] = pf(1);
}
