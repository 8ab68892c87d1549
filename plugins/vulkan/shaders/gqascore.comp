#version 450
// GroupQueryAttention's scores [B, N, S, T]: for query head h of row
// (b, s), scale * q . k_j for the keys j <= p + s of the present key
// [B, KV, T, H] (head h / (N / KV)), -inf after (causal); the query is
// rotated at position p + s as kvstore rotates the keys; with softcap > 0
// the score is softcap * tanh(score / softcap).
// u[0] invocations (B*N*S*T), u[1] N, u[2] KV, u[3] T, u[4] H, u[5] S,
// u[6] the stride of a (b, s) query row, u[7] rotary, u[8] width,
// u[9] the caches' rows, u[10] sin offset, u[11] scale (float bits),
// u[12] softcap (float bits), u[13] P.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(std430, binding = 0) readonly buffer Q { float q[]; };
layout(std430, binding = 1) readonly buffer K { float k[]; };
layout(std430, binding = 2) readonly buffer Seq { int seqlens[]; };
layout(std430, binding = 3) readonly buffer Rope { float rope[]; };
layout(std430, binding = 4) writeonly buffer Sc { float sc[]; };

void main() {
    uint o = flatIndex();
    if (o >= pc.u[0]) return;
    uint N = pc.u[1], KV = pc.u[2], T = pc.u[3], H = pc.u[4], S = pc.u[5], P = pc.u[13];
    uint j = o % T, t = o / T;
    uint s = t % S; t /= S;
    uint h = t % N, b = t / N;
    int pp = seqlens[b] + 1 - int(S);
    uint p = uint(clamp(pp, 0, max(min(int(P), int(T) - int(S)), 0)));
    if (j > p + s) { sc[o] = -INF; return; }
    uint qb = (b * S + s) * pc.u[6] + h * H;
    uint kb = ((b * KV + h / (N / KV)) * T + j) * H;
    uint rot = pc.u[7], w = pc.u[8];
    uint pos = min(p + s, pc.u[9] - 1u);
    float d = 0.0;
    for (uint i = 0; i < H; i++) {
        float qi = q[qb + i];
        if (rot != 0u && i < 2u * w) {
            uint m, i1, i2;
            if (rot == 2u) { m = i / 2u; i1 = qb + 2u * m; i2 = i1 + 1u; }
            else { m = i < w ? i : i - w; i1 = qb + m; i2 = qb + w + m; }
            float c = rope[pos * w + m], sn = rope[pc.u[10] + pos * w + m];
            bool first = rot == 2u ? (i % 2u == 0u) : (i < w);
            qi = first ? c * q[i1] - sn * q[i2] : sn * q[i1] + c * q[i2];
        }
        d += qi * k[kb + i];
    }
    d *= pf(11);
    float cap = pf(12);
    if (cap > 0.0) d = cap * tanh(d / cap);
    sc[o] = d;
}
