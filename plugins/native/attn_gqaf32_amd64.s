//go:build amd64

// Written by hand (attn): bw70_gqaf16_amd64.s's ggmlF16WeighAVX512 over
// float32 value rows (an F32 cache at decode): the same lane chains, sums
// and order, the rows read as they are instead of widened from float16.

#include "textflag.h"

// func attnF32WeighAVX512(n, h int, e *float32, v *float32, acc *float32, o *float32)
// o[d] = dotGGML(vt_d, e) for d < h (h a multiple of 64), vt_d value d
// of the float32 rows of v for keys 0..n−1 zero-padded to a multiple of
// 64 keys (attendRowGGML's one-row sum over ggmlValues' transposed
// values): ggmlF16WeighAVX512's arithmetic, its acc a 64×64 float32
// scratch; the padding's keys (fma(0, 0, ·)) are not read.
TEXT ·attnF32WeighAVX512(SB), NOSPLIT, $0-48
	MOVQ n+0(FP), CX
	MOVQ h+8(FP), DX
	MOVQ e+16(FP), SI
	MOVQ v+24(FP), DI
	MOVQ acc+32(FP), R10
	MOVQ o+40(FP), R8
	LEAQ (DX*4), R9  // a row's bytes
	MOVQ R9, R11
	SHLQ $6, R11     // 64 rows' bytes
	XORQ AX, AX      // the chunk's first column

f32weigh_chunk:
	XORQ BX, BX // the chain s
	MOVQ DI, R13
	LEAQ (R13)(AX*4), R13 // row s's chunk
	MOVQ R10, R15         // acc row s

f32weigh_slot:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	MOVQ   BX, R12 // the key
	MOVQ   R13, DX
	CMPQ   R12, CX
	JGE    f32weigh_store

f32weigh_key:
	VBROADCASTSS (SI)(R12*4), Z8
	VMOVUPS      (DX), Z4
	VFMADD231PS  Z8, Z4, Z0
	VMOVUPS      64(DX), Z5
	VFMADD231PS  Z8, Z5, Z1
	VMOVUPS      128(DX), Z6
	VFMADD231PS  Z8, Z6, Z2
	VMOVUPS      192(DX), Z7
	VFMADD231PS  Z8, Z7, Z3
	ADDQ         R11, DX
	ADDQ         $64, R12
	CMPQ         R12, CX
	JLT          f32weigh_key

f32weigh_store:
	VMOVUPS Z0, (R15)
	VMOVUPS Z1, 64(R15)
	VMOVUPS Z2, 128(R15)
	VMOVUPS Z3, 192(R15)
	ADDQ    R9, R13
	ADDQ    $256, R15
	INCQ    BX
	CMPQ    BX, $64
	JLT     f32weigh_slot

	// the columns: chain s's column c at acc + 256·s + 4·c
	XORQ BX, BX // the group's byte offset in a chain's row (0, 64, 128, 192)

f32weigh_group:
	LEAQ (R10)(BX*1), R15

	VMOVUPS 0(R15), Z16
	VADDPS  8192(R15), Z16, Z16
	VMOVUPS 4096(R15), Z9
	VADDPS  12288(R15), Z9, Z9
	VADDPS  Z9, Z16, Z16
	VMOVUPS 256(R15), Z17
	VADDPS  8448(R15), Z17, Z17
	VMOVUPS 4352(R15), Z9
	VADDPS  12544(R15), Z9, Z9
	VADDPS  Z9, Z17, Z17
	VMOVUPS 512(R15), Z18
	VADDPS  8704(R15), Z18, Z18
	VMOVUPS 4608(R15), Z9
	VADDPS  12800(R15), Z9, Z9
	VADDPS  Z9, Z18, Z18
	VMOVUPS 768(R15), Z19
	VADDPS  8960(R15), Z19, Z19
	VMOVUPS 4864(R15), Z9
	VADDPS  13056(R15), Z9, Z9
	VADDPS  Z9, Z19, Z19
	VMOVUPS 1024(R15), Z20
	VADDPS  9216(R15), Z20, Z20
	VMOVUPS 5120(R15), Z9
	VADDPS  13312(R15), Z9, Z9
	VADDPS  Z9, Z20, Z20
	VMOVUPS 1280(R15), Z21
	VADDPS  9472(R15), Z21, Z21
	VMOVUPS 5376(R15), Z9
	VADDPS  13568(R15), Z9, Z9
	VADDPS  Z9, Z21, Z21
	VMOVUPS 1536(R15), Z22
	VADDPS  9728(R15), Z22, Z22
	VMOVUPS 5632(R15), Z9
	VADDPS  13824(R15), Z9, Z9
	VADDPS  Z9, Z22, Z22
	VMOVUPS 1792(R15), Z23
	VADDPS  9984(R15), Z23, Z23
	VMOVUPS 5888(R15), Z9
	VADDPS  14080(R15), Z9, Z9
	VADDPS  Z9, Z23, Z23
	VMOVUPS 2048(R15), Z24
	VADDPS  10240(R15), Z24, Z24
	VMOVUPS 6144(R15), Z9
	VADDPS  14336(R15), Z9, Z9
	VADDPS  Z9, Z24, Z24
	VMOVUPS 2304(R15), Z25
	VADDPS  10496(R15), Z25, Z25
	VMOVUPS 6400(R15), Z9
	VADDPS  14592(R15), Z9, Z9
	VADDPS  Z9, Z25, Z25
	VMOVUPS 2560(R15), Z26
	VADDPS  10752(R15), Z26, Z26
	VMOVUPS 6656(R15), Z9
	VADDPS  14848(R15), Z9, Z9
	VADDPS  Z9, Z26, Z26
	VMOVUPS 2816(R15), Z27
	VADDPS  11008(R15), Z27, Z27
	VMOVUPS 6912(R15), Z9
	VADDPS  15104(R15), Z9, Z9
	VADDPS  Z9, Z27, Z27
	VMOVUPS 3072(R15), Z28
	VADDPS  11264(R15), Z28, Z28
	VMOVUPS 7168(R15), Z9
	VADDPS  15360(R15), Z9, Z9
	VADDPS  Z9, Z28, Z28
	VMOVUPS 3328(R15), Z29
	VADDPS  11520(R15), Z29, Z29
	VMOVUPS 7424(R15), Z9
	VADDPS  15616(R15), Z9, Z9
	VADDPS  Z9, Z29, Z29
	VMOVUPS 3584(R15), Z30
	VADDPS  11776(R15), Z30, Z30
	VMOVUPS 7680(R15), Z9
	VADDPS  15872(R15), Z9, Z9
	VADDPS  Z9, Z30, Z30
	VMOVUPS 3840(R15), Z31
	VADDPS  12032(R15), Z31, Z31
	VMOVUPS 7936(R15), Z9
	VADDPS  16128(R15), Z9, Z9
	VADDPS  Z9, Z31, Z31
	// halves: b_i = t_i + t_(i+8)
	VADDPS Z24, Z16, Z16
	VADDPS Z25, Z17, Z17
	VADDPS Z26, Z18, Z18
	VADDPS Z27, Z19, Z19
	VADDPS Z28, Z20, Z20
	VADDPS Z29, Z21, Z21
	VADDPS Z30, Z22, Z22
	VADDPS Z31, Z23, Z23
	// quarters: c_i = b_i + b_(i+4)
	VADDPS Z20, Z16, Z16
	VADDPS Z21, Z17, Z17
	VADDPS Z22, Z18, Z18
	VADDPS Z23, Z19, Z19
	// pairs: (c0 + c2) + (c1 + c3)
	VADDPS Z18, Z16, Z16
	VADDPS Z19, Z17, Z17
	VADDPS Z17, Z16, Z16
	LEAQ    (R8)(AX*4), R12
	VMOVUPS Z16, (R12)(BX*1)
	ADDQ    $64, BX
	CMPQ    BX, $256
	JLT     f32weigh_group

	ADDQ $64, AX
	MOVQ h+8(FP), DX
	CMPQ AX, DX
	JLT  f32weigh_chunk
	VZEROUPPER
	RET
