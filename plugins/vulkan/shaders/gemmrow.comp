#version 450
// Batched C[b] = alpha * A[b] x B[b] + beta * bias without shared memory:
// each invocation computes 4 consecutive columns of one row. For devices
// where a workgroup barrier is expensive (lavapipe runs the invocations of
// a workgroup as SIMD lanes of CPU threads). Push constants as gemm.comp;
// the grid is x: ceil(N/(4*WG)), y: M, z: batch.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, binding = 3) writeonly buffer C { float c[]; };
void main() {
    uint M = pc.u[0], N = pc.u[1], K = pc.u[2];
    uint n0 = (gl_WorkGroupID.x * gl_WorkGroupSize.x + gl_LocalInvocationID.x) * 4;
    uint m = gl_WorkGroupID.y;
    uint bt = gl_WorkGroupID.z;
    if (n0 >= N || m >= M) return;
    uint b2 = bt % pc.u[14], b1 = (bt / pc.u[14]) % pc.u[13], b0 = bt / (pc.u[14] * pc.u[13]);
    uint aoff = b0 * pc.u[15] + b1 * pc.u[16] + b2 * pc.u[17] + m * pc.u[3];
    uint boff = b0 * pc.u[18] + b1 * pc.u[19] + b2 * pc.u[20];
    uint sak = pc.u[4], sbk = pc.u[5], sbn = pc.u[6];
    vec4 acc = vec4(0.0);
    if (n0 + 3 < N) {
        for (uint k = 0; k < K; k++) {
            float av = a[aoff + k * sak];
            uint bk = boff + k * sbk + n0 * sbn;
            acc += av * vec4(b[bk], b[bk + sbn], b[bk + 2 * sbn], b[bk + 3 * sbn]);
        }
    } else {
        for (uint k = 0; k < K; k++) {
            float av = a[aoff + k * sak];
            uint bk = boff + k * sbk + n0 * sbn;
            for (uint j = 0; j < 4 && n0 + j < N; j++) acc[j] += av * b[bk + j * sbn];
        }
    }
    float al = pf(10), be = pf(11);
    uint coff = b0 * pc.u[21] + b1 * pc.u[22] + b2 * pc.u[23];
    for (uint j = 0; j < 4 && n0 + j < N; j++) {
        float r = al * acc[j];
        if (pc.u[9] != 0) r += be * bias[coff + m * pc.u[7] + (n0 + j) * pc.u[8]];
        c[bt * M * N + m * N + n0 + j] = r;
    }
}
