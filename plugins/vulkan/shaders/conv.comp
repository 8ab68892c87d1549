#version 450
// Direct 2-D convolution, NCHW, groups, strides, dilations, pads; one
// invocation per output element. u[0] N u[1] C u[2] H u[3] W u[4] M
// (output channels) u[5] OH u[6] OW u[7] KH u[8] KW u[9] stride h u[10]
// stride w u[11] dilation h u[12] dilation w u[13] pad top u[14] pad left
// u[15] groups u[16] has bias u[17] total outputs. VARIANT 1 fuses Relu.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer Wt { float w[]; };
layout(std430, binding = 2) readonly buffer Bs { float bias[]; };
layout(std430, binding = 3) writeonly buffer Y { float y[]; };
void main() {
    uint i = flatIndex();
    if (i >= pc.u[17]) return;
    uint C = pc.u[1], H = pc.u[2], W = pc.u[3], M = pc.u[4], OH = pc.u[5], OW = pc.u[6];
    uint KH = pc.u[7], KW = pc.u[8];
    uint ow = i % OW, oh = (i / OW) % OH, m = (i / (OW * OH)) % M, nb = i / (OW * OH * M);
    uint cg = C / pc.u[15], mg = M / pc.u[15];
    uint c0 = (m / mg) * cg;
    int ih0 = int(oh * pc.u[9]) - pi(13), iw0 = int(ow * pc.u[10]) - pi(14);
    float acc = pc.u[16] != 0 ? bias[m] : 0.0;
    for (uint c = 0; c < cg; c++) {
        uint xb = (nb * C + c0 + c) * H * W;
        uint wb = (m * cg + c) * KH * KW;
        for (uint kh = 0; kh < KH; kh++) {
            int ih = ih0 + int(kh * pc.u[11]);
            if (ih < 0 || ih >= int(H)) continue;
            for (uint kw = 0; kw < KW; kw++) {
                int iw = iw0 + int(kw * pc.u[12]);
                if (iw < 0 || iw >= int(W)) continue;
                acc += x[xb + uint(ih) * W + uint(iw)] * w[wb + kh * KW + kw];
            }
        }
    }
    if (VARIANT == 1) acc = max(acc, 0.0);
    y[i] = acc;
}
