#version 450
// Strided copy (Transpose, Slice, Concat, Split, Expand, Pad): for every
// index of a region of rank <= 6, dst[doff + sum k*dstride] =
// src[soff + sum k*sstride]. u[0] n, u[1] rank, u[2..7] region dims,
// u[8..13] source strides (signed), u[14] source offset, u[15..20]
// destination strides, u[21] destination offset.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) buffer Y { float y[]; };
void main() {
    uint i = flatIndex();
    if (i >= pc.u[0]) return;
    uint rem = i;
    int s = pi(14), d = pi(21);
    for (int k = int(pc.u[1]) - 1; k >= 0; k--) {
        uint dim = pc.u[2 + k];
        int j = int(rem % dim);
        rem /= dim;
        s += j * pi(8 + k);
        d += j * pi(15 + k);
    }
    y[d] = x[s];
}
