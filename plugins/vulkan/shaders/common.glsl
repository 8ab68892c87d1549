// Shared by every shader: 128 bytes of push constants read as uints (a
// float is passed as its bits), the workgroup size as specialisation
// constant 0 and the variant as constant 1, and a flat invocation index
// over a 2-D grid of workgroups (x is at most 65535).
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint VARIANT = 0;
layout(push_constant) uniform Push { uint u[32]; } pc;

uint flatIndex() {
    return (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
}
float pf(uint i) { return uintBitsToFloat(pc.u[i]); }
int pi(uint i) { return int(pc.u[i]); }

// IEEE specials (a constant division by zero is undefined in GLSL)
#define INF uintBitsToFloat(0x7f800000u)
#define NAN uintBitsToFloat(0x7fc00000u)
