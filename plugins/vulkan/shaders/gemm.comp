#version 450
// Batched C[b] = alpha * A[b] x B[b] + beta * bias, tiled TILE x TILE in
// shared memory (TILE is the workgroup size, specialisation constant 0,
// in x and y). Transposes and broadcast batches are strides.
// u[0] M u[1] N u[2] K, u[3] A row stride u[4] A k stride, u[5] B k stride
// u[6] B col stride, u[7] bias row stride u[8] bias col stride, u[9] has
// bias, u[10] alpha u[11] beta (float bits), u[12..14] batch dims,
// u[15..17] A batch strides, u[18..20] B batch strides, u[21..23] bias
// batch strides.
layout(local_size_x_id = 0, local_size_y_id = 0) in;
layout(push_constant) uniform Push { uint u[32]; } pc;
layout(constant_id = 0) const uint TILE = 16;
layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, binding = 3) writeonly buffer C { float c[]; };
shared float ta[TILE][TILE];
shared float tb[TILE][TILE];
void main() {
    uint M = pc.u[0], N = pc.u[1], K = pc.u[2];
    uint lx = gl_LocalInvocationID.x, ly = gl_LocalInvocationID.y;
    uint n = gl_WorkGroupID.x * TILE + lx;
    uint m = gl_WorkGroupID.y * TILE + ly;
    uint bt = gl_WorkGroupID.z;
    uint b2 = bt % pc.u[14], b1 = (bt / pc.u[14]) % pc.u[13], b0 = bt / (pc.u[14] * pc.u[13]);
    uint aoff = b0 * pc.u[15] + b1 * pc.u[16] + b2 * pc.u[17];
    uint boff = b0 * pc.u[18] + b1 * pc.u[19] + b2 * pc.u[20];
    float acc = 0.0;
    for (uint k0 = 0; k0 < K; k0 += TILE) {
        uint ka = k0 + lx, kb = k0 + ly;
        ta[ly][lx] = (m < M && ka < K) ? a[aoff + m * pc.u[3] + ka * pc.u[4]] : 0.0;
        tb[ly][lx] = (n < N && kb < K) ? b[boff + kb * pc.u[5] + n * pc.u[6]] : 0.0;
        barrier();
        for (uint k = 0; k < TILE; k++) acc += ta[ly][k] * tb[k][lx];
        barrier();
    }
    if (m >= M || n >= N) return;
    float r = uintBitsToFloat(pc.u[10]) * acc;
    if (pc.u[9] != 0) {
        uint coff = b0 * pc.u[21] + b1 * pc.u[22] + b2 * pc.u[23];
        r += uintBitsToFloat(pc.u[11]) * bias[coff + m * pc.u[7] + n * pc.u[8]];
    }
    c[bt * M * N + m * N + n] = r;
}
