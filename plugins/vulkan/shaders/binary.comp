#version 450
// Elementwise binary op with broadcasting (rank <= 6): out = a OP b.
// u[0] n, u[1] rank, u[2..7] output dims, u[8..13] a strides, u[14..19] b
// strides (0 on broadcast dims). VARIANT: 0 add 1 sub 2 mul 3 div 4 pow
// 5 max 6 min 7 prelu (a < 0 ? a*b : a).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) writeonly buffer C { float c[]; };
// pow with C's special cases (GLSL's pow is undefined for x < 0 and x = 0)
float pow_(float x, float y) {
    if (y == 0.0 || x == 1.0) return 1.0;
    if (y == 1.0) return x;
    if (isnan(x) || isnan(y)) return NAN;
    bool yint = !isinf(y) && y == floor(y);
    bool yodd = yint && mod(y, 2.0) == 1.0;
    if (isinf(y)) {
        float ax = abs(x);
        if (ax == 1.0) return 1.0;
        return ((ax > 1.0) == (y > 0.0)) ? INF : 0.0;
    }
    if (x == 0.0) {
        bool neg = (floatBitsToUint(x) >> 31) != 0u;
        if (y > 0.0) return yodd ? x : 0.0;
        return (yodd && neg) ? -INF : INF;
    }
    if (isinf(x)) {
        float r = (y > 0.0) ? INF : 0.0;
        return (x < 0.0 && yodd) ? -r : r;
    }
    if (x < 0.0 && !yint) return NAN;
    if (y == 2.0) return x * x;
    float r = pow(abs(x), y);
    return (x < 0.0 && yodd) ? -r : r;
}
void main() {
    uint i = flatIndex();
    if (i >= pc.u[0]) return;
    uint rank = pc.u[1];
    uint rem = i, ia = 0, ib = 0;
    for (int d = int(rank) - 1; d >= 0; d--) {
        uint dim = pc.u[2 + d];
        uint k = rem % dim;
        rem /= dim;
        ia += k * pc.u[8 + d];
        ib += k * pc.u[14 + d];
    }
    float x = a[ia], y = b[ib], r;
    if (VARIANT == 0) r = x + y;
    else if (VARIANT == 1) r = x - y;
    else if (VARIANT == 2) r = x * y;
    else if (VARIANT == 3) r = x / y;
    else if (VARIANT == 4) r = pow_(x, y);
    else if (VARIANT == 5) r = (isnan(x) || isnan(y)) ? x + y : max(x, y);
    else if (VARIANT == 6) r = (isnan(x) || isnan(y)) ? x + y : min(x, y);
    else r = x < 0.0 ? x * y : x;
    c[i] = r;
}
