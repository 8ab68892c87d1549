// Written by hand: the float16 cache's attention rows (gqa_cache.go),
// reading the cache's float16 rows as they are (VCVTPH2PS, exact) in
// the arithmetic order of dotAVX2 and axpyAVX2 (kernels_amd64.s), so
// that the results are those of a decoded cache bit for bit.

#include "textflag.h"

// func f16DotRowsAVX512(n, h int, k *uint16, q *float32, out *float32)
// out[j] = dot(q, float32(k[j·h : j·h+h])) for j < n, h a multiple of
// 32, summed as dotAVX2 sums: four 8-lane sums (elements 0–7, 8–15,
// 16–23, 24–31 of every 32) from +0 by fused multiply-adds, then
// (s0+s1)+(s2+s3), its halves added and reduced by two VHADDPS.
TEXT ·f16DotRowsAVX512(SB), NOSPLIT, $0-40
	MOVQ n+0(FP), CX
	MOVQ h+8(FP), DX
	MOVQ k+16(FP), SI
	MOVQ q+24(FP), DI
	MOVQ out+32(FP), R8
	LEAQ (DX*2), R9
	TESTQ CX, CX
	JZ   dotrows_done

dotrows_row:
	VPXORD Z0, Z0, Z0 // s0 | s1
	VPXORD Z1, Z1, Z1 // s2 | s3
	XORQ   AX, AX

dotrows_blk:
	VCVTPH2PS   (SI)(AX*2), Z2
	VCVTPH2PS   32(SI)(AX*2), Z3
	VFMADD231PS (DI)(AX*4), Z2, Z0
	VFMADD231PS 64(DI)(AX*4), Z3, Z1
	ADDQ        $32, AX
	CMPQ        AX, DX
	JLT         dotrows_blk

	VEXTRACTF64X4 $1, Z0, Y2
	VADDPS        Y2, Y0, Y0 // s0 + s1
	VEXTRACTF64X4 $1, Z1, Y3
	VADDPS        Y3, Y1, Y1 // s2 + s3
	VADDPS        Y1, Y0, Y0
	VEXTRACTF128  $1, Y0, X1
	VADDPS        X1, X0, X1
	VHADDPS       X1, X1, X1
	VHADDPS       X1, X1, X1
	VMOVSS        X1, (R8)
	ADDQ          $4, R8
	ADDQ          R9, SI
	DECQ          CX
	JNZ           dotrows_row

dotrows_done:
	VZEROUPPER
	RET

// func f16WeighRowsAVX512(n, h int, e *float32, v *uint16, o *float32)
// o[i] = fma(e[n−1], v[n−1][i], … fma(e[0], v[0][i], +0)) for i < h (h
// a multiple of 16): axpyAVX2's chain over the rows, o in registers, 64
// columns a pass (16 for the rest).
TEXT ·f16WeighRowsAVX512(SB), NOSPLIT, $0-40
	MOVQ n+0(FP), CX
	MOVQ h+8(FP), DX
	MOVQ e+16(FP), SI
	MOVQ v+24(FP), DI
	MOVQ o+32(FP), R8
	LEAQ (DX*2), R9
	XORQ AX, AX // the pass's first column

weigh_cols64:
	MOVQ DX, R10
	SUBQ AX, R10
	CMPQ R10, $64
	JLT  weigh_cols16
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	LEAQ   (DI)(AX*2), R11
	MOVQ   SI, R12
	MOVQ   CX, BX
	TESTQ  BX, BX
	JZ     weigh_store64

weigh_rows64:
	VBROADCASTSS (R12), Z4
	VCVTPH2PS    (R11), Z5
	VCVTPH2PS    32(R11), Z6
	VCVTPH2PS    64(R11), Z7
	VCVTPH2PS    96(R11), Z8
	VFMADD231PS  Z5, Z4, Z0
	VFMADD231PS  Z6, Z4, Z1
	VFMADD231PS  Z7, Z4, Z2
	VFMADD231PS  Z8, Z4, Z3
	ADDQ         $4, R12
	ADDQ         R9, R11
	DECQ         BX
	JNZ          weigh_rows64

weigh_store64:
	VMOVUPS Z0, (R8)(AX*4)
	VMOVUPS Z1, 64(R8)(AX*4)
	VMOVUPS Z2, 128(R8)(AX*4)
	VMOVUPS Z3, 192(R8)(AX*4)
	ADDQ    $64, AX
	JMP     weigh_cols64

weigh_cols16:
	CMPQ   AX, DX
	JGE    weigh_done
	VPXORD Z0, Z0, Z0
	LEAQ   (DI)(AX*2), R11
	MOVQ   SI, R12
	MOVQ   CX, BX
	TESTQ  BX, BX
	JZ     weigh_store16

weigh_rows16:
	VBROADCASTSS (R12), Z4
	VCVTPH2PS    (R11), Z5
	VFMADD231PS  Z5, Z4, Z0
	ADDQ         $4, R12
	ADDQ         R9, R11
	DECQ         BX
	JNZ          weigh_rows16

weigh_store16:
	VMOVUPS Z0, (R8)(AX*4)
	ADDQ    $16, AX
	JMP     weigh_cols16

weigh_done:
	VZEROUPPER
	RET

// func f16NarrowF16C(dst *uint16, src *float32, n int)
// dst[i] = float16(src[i]), nearest even, for i < n (a multiple of 8).
TEXT ·f16NarrowF16C(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX

narrow_loop:
	CMPQ      CX, $8
	JLT       narrow_done
	VMOVUPS   (SI), Y0
	VCVTPS2PH $0x00, Y0, (DI)
	ADDQ      $32, SI
	ADDQ      $16, DI
	SUBQ      $8, CX
	JMP       narrow_loop

narrow_done:
	VZEROUPPER
	RET
