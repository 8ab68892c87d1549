// Written by hand: llama.cpp's SwiGLU on AVX-512 (see swiglu.go).

#include "textflag.h"

DATA swigluC<>+0(SB)/4, $0x4b400000  // 0x1.8p23, the rounding shift
DATA swigluC<>+4(SB)/4, $0x3fb8aa3b  // log2 e
DATA swigluC<>+8(SB)/4, $0x3f317200  // ln 2, high part
DATA swigluC<>+12(SB)/4, $0x35bfbe8e // ln 2, low part
DATA swigluC<>+16(SB)/4, $0x3c072010 // the polynomial's coefficients
DATA swigluC<>+20(SB)/4, $0x3d2b9f17
DATA swigluC<>+24(SB)/4, $0x3e2aaf33
DATA swigluC<>+28(SB)/4, $0x3efffedb
DATA swigluC<>+32(SB)/4, $0x3f7ffff6
DATA swigluC<>+36(SB)/4, $0x3f800000 // 1
DATA swigluC<>+40(SB)/4, $0x43400000 // 192
DATA swigluC<>+44(SB)/4, $0x7f800000 // +Inf
DATA swigluC<>+48(SB)/4, $0x7fffffff // |x| mask
GLOBL swigluC<>(SB), RODATA|NOPTR, $52

// func swiglu16AVX512(n int, y, a, b *float32)
// y[i] = a[i] / (1 + expGGML(0 − a[i])) · b[i] for i < n, n a multiple of 16.
TEXT ·swiglu16AVX512(SB), NOSPLIT, $0-32
	MOVQ n+0(FP), CX
	MOVQ y+8(FP), DI
	MOVQ a+16(FP), SI
	MOVQ b+24(FP), DX
	VBROADCASTSS swigluC<>+0(SB), Z16
	VBROADCASTSS swigluC<>+4(SB), Z17
	VBROADCASTSS swigluC<>+8(SB), Z18
	VBROADCASTSS swigluC<>+12(SB), Z19
	VBROADCASTSS swigluC<>+16(SB), Z20
	VBROADCASTSS swigluC<>+20(SB), Z21
	VBROADCASTSS swigluC<>+24(SB), Z22
	VBROADCASTSS swigluC<>+28(SB), Z23
	VBROADCASTSS swigluC<>+32(SB), Z24
	VBROADCASTSS swigluC<>+36(SB), Z25
	VBROADCASTSS swigluC<>+40(SB), Z26
	VBROADCASTSS swigluC<>+44(SB), Z27
	VPBROADCASTD swigluC<>+48(SB), Z28
	VPXORD Z31, Z31, Z31
	SHRQ $4, CX
	JZ done
loop:
	VMOVUPS (SI), Z0           // gate
	VSUBPS Z0, Z31, Z1         // x = 0 − gate
	VMOVAPS Z16, Z2
	VFMADD231PS Z17, Z1, Z2    // z = x·log2e + shift
	VSUBPS Z16, Z2, Z3         // n = z − shift
	VMOVAPS Z1, Z4
	VFNMADD231PS Z18, Z3, Z4   // x − n·ln2hi
	VFNMADD231PS Z19, Z3, Z4   // b = … − n·ln2lo
	VPANDD Z28, Z3, Z5
	VCMPPS $0x1e, Z26, Z5, K1  // |n| > 192
	VMULPS Z4, Z4, Z6          // u = b·b
	VMOVAPS Z21, Z7
	VFMADD231PS Z4, Z20, Z7    // c5·b + c4
	VMOVAPS Z23, Z8
	VFMADD231PS Z4, Z22, Z8    // c3·b + c2
	VFMADD231PS Z6, Z7, Z8     // (c5·b + c4)·u + (c3·b + c2)
	VMOVAPS Z25, Z9
	VFMADD231PS Z4, Z24, Z9    // c1·b + 1
	VFMADD231PS Z6, Z8, Z9     // j
	VSCALEFPS Z3, Z9, Z10      // j·2ⁿ
	VCMPPS $0x12, Z31, Z3, K2  // n ≤ 0
	VMOVAPS Z27, Z11
	VMOVAPS Z31, K2, Z11       // out of range: 0 if n ≤ 0, else +Inf
	VMOVAPS Z11, K1, Z10
	VADDPS Z25, Z10, Z10       // 1 + e^−gate
	VDIVPS Z10, Z0, Z0         // gate / (1 + e^−gate)
	VMULPS (DX), Z0, Z0
	VMOVUPS Z0, (DI)
	ADDQ $64, SI
	ADDQ $64, DX
	ADDQ $64, DI
	DECQ CX
	JNZ loop
done:
	VZEROUPPER
	RET

// func expSub16AVX512(n int, y, x *float32, m float32)
// y[i] = expGGML(x[i] − m) for i < n, n a multiple of 16 (ggml_vec_soft_max_f32).
TEXT ·expSub16AVX512(SB), NOSPLIT, $0-28
	MOVQ n+0(FP), CX
	MOVQ y+8(FP), DI
	MOVQ x+16(FP), SI
	VBROADCASTSS m+24(FP), Z29
	VBROADCASTSS swigluC<>+0(SB), Z16
	VBROADCASTSS swigluC<>+4(SB), Z17
	VBROADCASTSS swigluC<>+8(SB), Z18
	VBROADCASTSS swigluC<>+12(SB), Z19
	VBROADCASTSS swigluC<>+16(SB), Z20
	VBROADCASTSS swigluC<>+20(SB), Z21
	VBROADCASTSS swigluC<>+24(SB), Z22
	VBROADCASTSS swigluC<>+28(SB), Z23
	VBROADCASTSS swigluC<>+32(SB), Z24
	VBROADCASTSS swigluC<>+36(SB), Z25
	VBROADCASTSS swigluC<>+40(SB), Z26
	VBROADCASTSS swigluC<>+44(SB), Z27
	VPBROADCASTD swigluC<>+48(SB), Z28
	VPXORD Z31, Z31, Z31
	SHRQ $4, CX
	JZ edone
eloop:
	VMOVUPS (SI), Z0
	VSUBPS Z29, Z0, Z1         // x = score − max
	VMOVAPS Z16, Z2
	VFMADD231PS Z17, Z1, Z2    // z = x·log2e + shift
	VSUBPS Z16, Z2, Z3         // n = z − shift
	VMOVAPS Z1, Z4
	VFNMADD231PS Z18, Z3, Z4   // x − n·ln2hi
	VFNMADD231PS Z19, Z3, Z4   // b = … − n·ln2lo
	VPANDD Z28, Z3, Z5
	VCMPPS $0x1e, Z26, Z5, K1  // |n| > 192
	VMULPS Z4, Z4, Z6          // u = b·b
	VMOVAPS Z21, Z7
	VFMADD231PS Z4, Z20, Z7    // c5·b + c4
	VMOVAPS Z23, Z8
	VFMADD231PS Z4, Z22, Z8    // c3·b + c2
	VFMADD231PS Z6, Z7, Z8     // (c5·b + c4)·u + (c3·b + c2)
	VMOVAPS Z25, Z9
	VFMADD231PS Z4, Z24, Z9    // c1·b + 1
	VFMADD231PS Z6, Z8, Z9     // j
	VSCALEFPS Z3, Z9, Z10      // j·2ⁿ
	VCMPPS $0x12, Z31, Z3, K2  // n ≤ 0
	VMOVAPS Z27, Z11
	VMOVAPS Z31, K2, Z11       // out of range: 0 if n ≤ 0, else +Inf
	VMOVAPS Z11, K1, Z10
	VMOVUPS Z10, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ eloop
edone:
	VZEROUPPER
	RET
