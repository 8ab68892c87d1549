#version 450
// GroupQueryAttention's present key or value [B, KV, T, H]: rows 0..p-1
// of the past [B, KV, P, H], the S new rows (rotated keys) at p..p+S-1,
// the rest zero; p = seqlens_k[b] + 1 - S (clamped to [0, min(P, T-S)]:
// a shader cannot fail; the host path checks it first).
// u[0] invocations, u[1] B, u[2] KV, u[3] T, u[4] H, u[5] S, u[6] the
// stride of a (b, s) row of the new values, u[7] the offset of head 0 in
// it, u[8] P, u[9] rotary (0 none, 1 halves, 2 interleaved pairs),
// u[10] rotary width (cos_cache's columns), u[11] the caches' rows
// (positions), u[12] the offset of sin_cache in the rope binding.
// VARIANT 0: writes every row of the present (u[0] = B*KV*T*H); VARIANT
// 1, in place (the present is the past's own buffer, bound once, as dst):
// writes only the new rows (u[0] = B*KV*S*H) and never reads binding 0.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(std430, binding = 0) readonly buffer Past { float past[]; };
layout(std430, binding = 1) readonly buffer Src { float src[]; };
layout(std430, binding = 2) writeonly buffer Dst { float dst[]; };
layout(std430, binding = 3) readonly buffer Seq { int seqlens[]; };
layout(std430, binding = 4) readonly buffer Rope { float rope[]; };

uint pastLen(uint b, uint S, uint P, uint T) {
    int p = seqlens[b] + 1 - int(S);
    int hi = min(int(P), int(T) - int(S));
    return uint(clamp(p, 0, max(hi, 0)));
}

// newValue is element i of the new row of (b, s, head kh), rotated at
// position pos when u[9] asks.
float newValue(uint b, uint s, uint kh, uint i, uint pos) {
    uint H = pc.u[4], S = pc.u[5];
    uint base = (b * S + s) * pc.u[6] + pc.u[7] + kh * H;
    uint rot = pc.u[9], w = pc.u[10];
    if (rot == 0u || i >= 2u * w) return src[base + i];
    pos = min(pos, pc.u[11] - 1u);
    uint m, i1, i2;
    if (rot == 2u) { m = i / 2u; i1 = base + 2u * m; i2 = i1 + 1u; }
    else { m = i < w ? i : i - w; i1 = base + m; i2 = base + w + m; }
    float c = rope[pos * w + m], sn = rope[pc.u[12] + pos * w + m];
    float x1 = src[i1], x2 = src[i2];
    bool first = rot == 2u ? (i % 2u == 0u) : (i < w);
    return first ? c * x1 - sn * x2 : sn * x1 + c * x2;
}

void main() {
    uint o = flatIndex();
    if (o >= pc.u[0]) return;
    uint KV = pc.u[2], T = pc.u[3], H = pc.u[4], S = pc.u[5], P = pc.u[8];
    uint i = o % H, t = o / H;
    if (VARIANT == 1) {
        uint s = t % S; t /= S;
        uint kh = t % KV, b = t / KV;
        uint p = pastLen(b, S, P, T);
        dst[((b * KV + kh) * T + p + s) * H + i] = newValue(b, s, kh, i, p + s);
        return;
    }
    uint r = t % T; t /= T;
    uint kh = t % KV, b = t / KV;
    uint p = pastLen(b, S, P, T);
    float v = 0.0;
    if (r < p) v = past[((b * KV + kh) * P + r) * H + i];
    else if (r < p + S) v = newValue(b, r - p, kh, i, r);
    dst[o] = v;
}
