// Written by hand: llama.cpp's float32 dot products on AVX-512 (see
// gqa_ggml.go).

#include "textflag.h"

// REDUCE16 leaves in X0 the sum of Z0's sixteen lanes in
// _mm512_reduce_add_ps's order: halves, quarters, pairs.
#define REDUCE16 \
	VEXTRACTF32X8 $1, Z0, Y1; \
	VADDPS Y0, Y1, Y1; \
	VEXTRACTF128 $1, Y1, X2; \
	VADDPS X1, X2, X2; \
	VPERMILPS $0x4e, X2, X3; \
	VADDPS X3, X2, X2; \
	VMOVSHDUP X2, X3; \
	VADDSS X3, X2, X0

// func dotGGMLAVX512(n int, x, y *float32) float32
// ggml_vec_dot_f32: n a multiple of 64.
TEXT ·dotGGMLAVX512(SB), NOSPLIT, $0-28
	MOVQ n+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DI
	VPXORD Z0, Z0, Z0
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	SHRQ $6, CX
	JZ sum4
loop4:
	VMOVUPS (SI), Z4
	VFMADD231PS (DI), Z4, Z0
	VMOVUPS 64(SI), Z4
	VFMADD231PS 64(DI), Z4, Z5
	VMOVUPS 128(SI), Z4
	VFMADD231PS 128(DI), Z4, Z6
	VMOVUPS 192(SI), Z4
	VFMADD231PS 192(DI), Z4, Z7
	ADDQ $256, SI
	ADDQ $256, DI
	DECQ CX
	JNZ loop4
sum4:
	VADDPS Z6, Z0, Z0
	VADDPS Z7, Z5, Z5
	VADDPS Z5, Z0, Z0
	REDUCE16
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func dot16AVX512(n int, x, y *float32) float32
// llamafile's tinyBLAS: one accumulator of sixteen lanes, n a multiple of 16.
TEXT ·dot16AVX512(SB), NOSPLIT, $0-28
	MOVQ n+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DI
	VPXORD Z0, Z0, Z0
	SHRQ $4, CX
	JZ sum1
loop1:
	VMOVUPS (SI), Z4
	VFMADD231PS (DI), Z4, Z0
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ loop1
sum1:
	REDUCE16
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET
