#version 450
// GroupQueryAttention's output [B, S, N*H]: softmax over the causal
// scores of the row (gqascore) times the present value [B, KV, T, H].
// u[0] invocations (B*S*N*H), u[1] N, u[2] KV, u[3] T, u[4] H, u[5] S,
// u[6] P.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(std430, binding = 0) readonly buffer Sc { float sc[]; };
layout(std430, binding = 1) readonly buffer V { float v[]; };
layout(std430, binding = 2) readonly buffer Seq { int seqlens[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };

void main() {
    uint o = flatIndex();
    if (o >= pc.u[0]) return;
    uint N = pc.u[1], KV = pc.u[2], T = pc.u[3], H = pc.u[4], S = pc.u[5], P = pc.u[6];
    uint i = o % H, t = o / H;
    uint h = t % N; t /= N;
    uint s = t % S, b = t / S;
    int pp = seqlens[b] + 1 - int(S);
    uint p = uint(clamp(pp, 0, max(min(int(P), int(T) - int(S)), 0)));
    uint L = min(p + s + 1u, T);
    uint row = ((b * N + h) * S + s) * T;
    float mx = -INF;
    for (uint j = 0; j < L; j++) mx = max(mx, sc[row + j]);
    float sum = 0.0, acc = 0.0;
    uint vb = (b * KV + h / (N / KV)) * T * H + i;
    for (uint j = 0; j < L; j++) {
        float e = exp(sc[row + j] - mx);
        sum += e;
        acc += e * v[vb + j * H];
    }
    y[o] = acc / sum;
}
