#version 450
// Gather of float32 data along one axis: the data is [outer, A, inner],
// the output [outer, nIdx, inner]. u[0] output elements, u[1] inner,
// u[2] nIdx, u[3] A (the axis length). VARIANT: 0 int32 indices, 1 int64
// indices (read as little-endian pairs of uints). Negative indices count
// from the end (ONNX); an index outside [-A, A) reads nothing and writes
// 0 (the host path checks the indices before it submits).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer I { uint idx[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };
void main() {
    uint o = flatIndex();
    if (o >= pc.u[0]) return;
    uint inner = pc.u[1], nI = pc.u[2], A = pc.u[3];
    uint i = o % inner, t = o / inner;
    uint j = t % nI, outer = t / nI;
    bool ok = false;
    uint k = 0;
    if (VARIANT == 1) {
        uint lo = idx[2 * j], hi = idx[2 * j + 1];
        if (hi == 0u && lo < A) { ok = true; k = lo; }
        else if (hi == 0xffffffffu && lo >= 0x80000000u && int(lo) >= -int(A)) { ok = true; k = uint(int(lo) + int(A)); }
    } else {
        int v = int(idx[j]);
        if (v < 0) v += int(A);
        if (v >= 0 && v < int(A)) { ok = true; k = uint(v); }
    }
    y[o] = ok ? x[(outer * A + k) * inner + i] : 0.0;
}
