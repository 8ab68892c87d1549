#version 450
// Direct 2-D transposed convolution (ConvTranspose), NCHW, groups,
// strides, dilations, pads; one invocation per output element, gathering
// the inputs that reach it. Weights are [C, M/groups, KH, KW]. Push
// constants as conv.comp (u[2] u[3] the input H W, u[5] u[6] the output).
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
    int sh = pi(9), sw = pi(10), dh = pi(11), dw = pi(12);
    uint ow = i % OW, oh = (i / OW) % OH, m = (i / (OW * OH)) % M, nb = i / (OW * OH * M);
    uint cg = C / pc.u[15], mg = M / pc.u[15];
    uint g = m / mg, mi = m % mg;
    float acc = pc.u[16] != 0 ? bias[m] : 0.0;
    for (uint kh = 0; kh < KH; kh++) {
        int th = int(oh) + pi(13) - int(kh) * dh;
        if (th < 0 || th % sh != 0) continue;
        int ih = th / sh;
        if (ih >= int(H)) continue;
        for (uint kw = 0; kw < KW; kw++) {
            int tw = int(ow) + pi(14) - int(kw) * dw;
            if (tw < 0 || tw % sw != 0) continue;
            int iw = tw / sw;
            if (iw >= int(W)) continue;
            for (uint c = 0; c < cg; c++) {
                uint ci = g * cg + c;
                acc += x[((nb * C + ci) * H + uint(ih)) * W + uint(iw)] * w[((ci * mg + mi) * KH + kh) * KW + kw];
            }
        }
    }
    y[i] = acc;
}
