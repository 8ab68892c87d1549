#version 450
// Resize of the last two dimensions (NCHW; N and C unscaled), nearest or
// (bi)linear. u[0] total outputs u[1] H u[2] W u[3] OH u[4] OW, u[5]
// coordinate mode (0 half_pixel, 1 asymmetric, 2 align_corners,
// 3 pytorch_half_pixel, 4 tf_half_pixel_for_nn), u[6] nearest mode
// (0 round_prefer_floor, 1 round_prefer_ceil, 2 floor, 3 ceil), u[7]
// scale h u[8] scale w (float bits). VARIANT: 0 nearest, 1 linear.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };

float orig(uint o, uint lin, uint lout, float scale) {
    float v = float(o);
    uint m = pc.u[5];
    if (m == 0) return (v + 0.5) / scale - 0.5;
    if (m == 1) return v / scale;
    if (m == 2) return lout == 1 ? 0.0 : v * float(lin - 1) / float(lout - 1);
    if (m == 3) return lout > 1 ? (v + 0.5) / scale - 0.5 : 0.0;
    return (v + 0.5) / scale;
}
int nearest(float v) {
    uint m = pc.u[6];
    if (m == 2) return int(floor(v));
    if (m == 3) return int(ceil(v));
    float f = floor(v);
    if (v - f == 0.5) return int(m == 0 ? f : f + 1.0);
    return int(round(v));
}
void main() {
    uint i = flatIndex();
    if (i >= pc.u[0]) return;
    uint H = pc.u[1], W = pc.u[2], OH = pc.u[3], OW = pc.u[4];
    uint ow = i % OW, oh = (i / OW) % OH, plane = i / (OW * OH);
    float fh = orig(oh, H, OH, pf(7)), fw = orig(ow, W, OW, pf(8));
    uint base = plane * H * W;
    if (VARIANT == 0) {
        int ih = clamp(nearest(fh), 0, int(H) - 1), iw = clamp(nearest(fw), 0, int(W) - 1);
        y[i] = x[base + uint(ih) * W + uint(iw)];
        return;
    }
    fh = clamp(fh, 0.0, float(H - 1));
    fw = clamp(fw, 0.0, float(W - 1));
    uint h0 = uint(floor(fh)), w0 = uint(floor(fw));
    uint h1 = min(h0 + 1, H - 1), w1 = min(w0 + 1, W - 1);
    float dh = fh - float(h0), dw = fw - float(w0);
    float top = mix(x[base + h0 * W + w0], x[base + h0 * W + w1], dw);
    float bot = mix(x[base + h1 * W + w0], x[base + h1 * W + w1], dw);
    y[i] = mix(top, bot, dh);
}
