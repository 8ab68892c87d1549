#version 450
// 2-D max / average pooling, NCHW. u[0] total outputs u[1] H u[2] W
// u[3] OH u[4] OW u[5] KH u[6] KW u[7] stride h u[8] stride w u[9] pad top
// u[10] pad left u[11] dilation h u[12] dilation w u[13] count_include_pad
// u[14] pad bottom u[15] pad right. VARIANT: 0 max, 1 average.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) writeonly buffer Y { float y[]; };
void main() {
    uint i = flatIndex();
    if (i >= pc.u[0]) return;
    uint H = pc.u[1], W = pc.u[2], OH = pc.u[3], OW = pc.u[4];
    uint ow = i % OW, oh = (i / OW) % OH, plane = i / (OW * OH);
    int ih0 = int(oh * pc.u[7]) - pi(9), iw0 = int(ow * pc.u[8]) - pi(10);
    float acc = VARIANT == 0 ? -INF : 0.0;
    uint cnt = 0, cntPad = 0;
    for (uint kh = 0; kh < pc.u[5]; kh++) {
        int ih = ih0 + int(kh * pc.u[11]);
        for (uint kw = 0; kw < pc.u[6]; kw++) {
            int iw = iw0 + int(kw * pc.u[12]);
            if (ih < int(H) + pi(14) && iw < int(W) + pi(15)) cntPad++;
            if (ih < 0 || ih >= int(H) || iw < 0 || iw >= int(W)) continue;
            float v = x[plane * H * W + uint(ih) * W + uint(iw)];
            if (VARIANT == 0) acc = v > acc ? v : acc; else acc += v; // max skips NaN, as the reference does
            cnt++;
        }
    }
    if (VARIANT == 1) acc /= float(pc.u[13] != 0 ? cntPad : cnt);
    y[i] = acc;
}
