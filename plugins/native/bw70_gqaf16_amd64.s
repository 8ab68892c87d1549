// Written by hand (bw70): llama.cpp's attention over a float16 cache for
// one query row (gqa_ggml.go's attendRowGGML with half set, decode),
// reading the cache's float16 rows as they are (VCVTPH2PS, exact), in
// the arithmetic order of dotGGMLAVX512 (gqa_ggml_amd64.s) over the
// widened keys and over the transposed, zero-padded values, bit for bit.

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

// func ggmlF16ScoresAVX512(n, h int, k *uint16, q *float32, out *float32)
// out[j] = dotGGML(float32(k[j·h : j·h+h]), q) for j < n, h a multiple
// of 64: four 16-lane fused multiply-add chains from +0 (elements 0–15,
// 16–31, 32–47, 48–63 of every 64), added (0+2)+(1+3), reduced as
// REDUCE16.
TEXT ·ggmlF16ScoresAVX512(SB), NOSPLIT, $0-40
	MOVQ n+0(FP), CX
	MOVQ h+8(FP), DX
	MOVQ k+16(FP), SI
	MOVQ q+24(FP), DI
	MOVQ out+32(FP), R8
	LEAQ (DX*2), R9
	TESTQ CX, CX
	JZ   scores_done

scores_row:
	VPXORD Z0, Z0, Z0
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	XORQ   AX, AX

scores_blk:
	VCVTPH2PS   (SI)(AX*2), Z4
	VFMADD231PS (DI)(AX*4), Z4, Z0
	VCVTPH2PS   32(SI)(AX*2), Z4
	VFMADD231PS 64(DI)(AX*4), Z4, Z5
	VCVTPH2PS   64(SI)(AX*2), Z4
	VFMADD231PS 128(DI)(AX*4), Z4, Z6
	VCVTPH2PS   96(SI)(AX*2), Z4
	VFMADD231PS 192(DI)(AX*4), Z4, Z7
	ADDQ        $64, AX
	CMPQ        AX, DX
	JLT         scores_blk

	VADDPS Z6, Z0, Z0
	VADDPS Z7, Z5, Z5
	VADDPS Z5, Z0, Z0
	REDUCE16
	VMOVSS X0, (R8)
	ADDQ   $4, R8
	ADDQ   R9, SI
	DECQ   CX
	JNZ    scores_row

scores_done:
	VZEROUPPER
	RET

// func ggmlF16WeighAVX512(n, h int, e *float32, v *uint16, acc *float32, o *float32)
// o[d] = dotGGML(vt_d, e) for d < h (h a multiple of 64), vt_d value
// d of keys 0..n−1 zero-padded to a multiple of 64 keys: the lane chain
// s (0..63: accumulator s/16, lane s%16) is fma over keys s, s+64, …
// in order, computed as one 64-column row of acc (64×64 float32
// scratch) a chain, four ZMM accumulators; then per column the chains
// added as dotGGMLAVX512 adds its accumulators ((0+2)+(1+3)) and its
// REDUCE16 (halves, quarters, pairs), sixteen columns a register. The
// padding's keys add fma(0, 0, ·), which changes nothing, so they are
// not read.
TEXT ·ggmlF16WeighAVX512(SB), NOSPLIT, $0-48
	MOVQ n+0(FP), CX
	MOVQ h+8(FP), DX
	MOVQ e+16(FP), SI
	MOVQ v+24(FP), DI
	MOVQ acc+32(FP), R10
	MOVQ o+40(FP), R8
	LEAQ (DX*2), R9  // a row's bytes
	MOVQ R9, R11
	SHLQ $6, R11     // 64 rows' bytes
	XORQ AX, AX      // the chunk's first column

weigh_chunk:
	XORQ BX, BX // the chain s
	MOVQ DI, R13
	LEAQ (R13)(AX*2), R13 // row s's chunk
	MOVQ R10, R15         // acc row s

weigh_slot:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	MOVQ   BX, R12 // the key
	MOVQ   R13, DX
	CMPQ   R12, CX
	JGE    weigh_store

weigh_key:
	VBROADCASTSS (SI)(R12*4), Z8
	VCVTPH2PS    (DX), Z4
	VFMADD231PS  Z8, Z4, Z0
	VCVTPH2PS    32(DX), Z5
	VFMADD231PS  Z8, Z5, Z1
	VCVTPH2PS    64(DX), Z6
	VFMADD231PS  Z8, Z6, Z2
	VCVTPH2PS    96(DX), Z7
	VFMADD231PS  Z8, Z7, Z3
	ADDQ         R11, DX
	ADDQ         $64, R12
	CMPQ         R12, CX
	JLT          weigh_key

weigh_store:
	VMOVUPS Z0, (R15)
	VMOVUPS Z1, 64(R15)
	VMOVUPS Z2, 128(R15)
	VMOVUPS Z3, 192(R15)
	ADDQ    R9, R13
	ADDQ    $256, R15
	INCQ    BX
	CMPQ    BX, $64
	JLT     weigh_slot

	// the columns: chain s's column c at acc + 256·s + 4·c
	XORQ BX, BX // the group's byte offset in a chain's row (0, 64, 128, 192)

weigh_group:
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
	JLT     weigh_group

	ADDQ $64, AX
	MOVQ h+8(FP), DX
	CMPQ AX, DX
	JLT  weigh_chunk
	VZEROUPPER
	RET

// func ggmlExpSumAVX512(n int, e *float32) float64
// Σ over the groups of sixteen of e[:n] (the last one padded with zeros)
// of float64(the group's REDUCE16), in order: attendRowGGML's sum of
// the exponentials.
TEXT ·ggmlExpSumAVX512(SB), NOSPLIT, $0-24
	MOVQ   n+0(FP), CX
	MOVQ   e+8(FP), SI
	VXORPD X4, X4, X4 // the sum

expsum_loop:
	CMPQ CX, $16
	JLT  expsum_tail
	VMOVUPS (SI), Z0
	REDUCE16
	VCVTSS2SD X0, X0, X0
	VADDSD    X0, X4, X4
	ADDQ      $64, SI
	SUBQ      $16, CX
	JMP       expsum_loop

expsum_tail:
	TESTQ CX, CX
	JZ    expsum_done
	MOVQ  $1, AX
	SHLQ  CX, AX
	DECQ  AX
	KMOVW AX, K1
	VMOVUPS.Z (SI), K1, Z0
	REDUCE16
	VCVTSS2SD X0, X0, X0
	VADDSD    X0, X4, X4

expsum_done:
	VMOVSD X4, ret+16(FP)
	VZEROUPPER
	RET

// func ggmlScaleF16AVX512(n int, e *float32, inv float32)
// e[j] = float16(e[j]·inv) for j < n (the product rounded to float32,
// then to float16, nearest even, as f16Round).
TEXT ·ggmlScaleF16AVX512(SB), NOSPLIT, $0-20
	MOVQ         n+0(FP), CX
	MOVQ         e+8(FP), SI
	VBROADCASTSS inv+16(FP), Z1

scalef16_loop:
	CMPQ CX, $16
	JLT  scalef16_tail
	VMULPS    (SI), Z1, Z0
	VCVTPS2PH $0, Z0, Y0
	VCVTPH2PS Y0, Z0
	VMOVUPS   Z0, (SI)
	ADDQ      $64, SI
	SUBQ      $16, CX
	JMP       scalef16_loop

scalef16_tail:
	TESTQ CX, CX
	JZ    scalef16_done
	MOVQ  $1, AX
	SHLQ  CX, AX
	DECQ  AX
	KMOVW AX, K1
	VMOVUPS.Z (SI), K1, Z0
	VMULPS    Z0, Z1, Z0
	VCVTPS2PH $0, Z0, Y0
	VCVTPH2PS Y0, Z0
	VMOVUPS   Z0, K1, (SI)

scalef16_done:
	VZEROUPPER
	RET

// func ggmlF16ScoresGAVX512(n, nq int, k *uint16, q *float32, out *float32, os int)
// ggmlF16ScoresAVX512 for a head size of 64 and nq queries (q: nq rows of
// 64) sharing the keys: out[i·os + j] = dotGGML(float32(k[j·64 :
// j·64+64]), q[i·64 : i·64+64]), each key row widened once.
TEXT ·ggmlF16ScoresGAVX512(SB), NOSPLIT, $0-48
	MOVQ n+0(FP), CX
	MOVQ nq+8(FP), DX
	MOVQ k+16(FP), SI
	MOVQ q+24(FP), DI
	MOVQ out+32(FP), R8
	MOVQ os+40(FP), R9
	SHLQ $2, R9 // bytes between the heads' scores
	TESTQ CX, CX
	JZ   scoresg_done
	TESTQ DX, DX
	JZ   scoresg_done

scoresg_row:
	VCVTPH2PS (SI), Z8
	VCVTPH2PS 32(SI), Z9
	VCVTPH2PS 64(SI), Z10
	VCVTPH2PS 96(SI), Z11
	MOVQ      DI, R10 // head i's query
	MOVQ      R8, R11 // head i's score of this key
	MOVQ      DX, R12

scoresg_head:
	VPXORD      Z0, Z0, Z0
	VPXORD      Z5, Z5, Z5
	VPXORD      Z6, Z6, Z6
	VPXORD      Z7, Z7, Z7
	VFMADD231PS (R10), Z8, Z0
	VFMADD231PS 64(R10), Z9, Z5
	VFMADD231PS 128(R10), Z10, Z6
	VFMADD231PS 192(R10), Z11, Z7
	VADDPS      Z6, Z0, Z0
	VADDPS      Z7, Z5, Z5
	VADDPS      Z5, Z0, Z0
	REDUCE16
	VMOVSS      X0, (R11)
	ADDQ        $256, R10
	ADDQ        R9, R11
	DECQ        R12
	JNZ         scoresg_head

	ADDQ $4, R8
	ADDQ $128, SI
	DECQ CX
	JNZ  scoresg_row

scoresg_done:
	VZEROUPPER
	RET
