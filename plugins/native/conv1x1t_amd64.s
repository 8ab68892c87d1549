#include "textflag.h"

// func packXTAVX512(x *float32, hw int, dst *float32, c int, c0 int, c1 int, tiles int, mr int, h int)
// Requires: AVX512F. Channels [c0, c1) of x (rows of hw floats) into
// packed-A tiles of dst (tile t at t·mr·c floats, channel ci of a tile at
// ci·mr): tiles full tiles, mr floats a copy, one masked load and store;
// then, where h > 0, a partial tile of h floats and mr − h zeros.
TEXT ·packXTAVX512(SB), NOSPLIT, $0-72
	MOVQ x+0(FP), SI
	MOVQ hw+8(FP), R8
	SHLQ $2, R8            // bytes between channels of x
	MOVQ dst+16(FP), DI
	MOVQ c+24(FP), R9
	MOVQ c0+32(FP), AX
	MOVQ c1+40(FP), BX
	MOVQ tiles+48(FP), R10
	MOVQ mr+56(FP), R11
	MOVQ $1, DX
	MOVQ R11, CX
	SHLQ CX, DX
	DECQ DX
	KMOVW DX, K1           // the mr lanes
	MOVQ R11, R12
	IMULQ R9, R12
	SHLQ $2, R12           // bytes between tiles of dst
	SHLQ $2, R11           // mr floats in bytes
	MOVQ h+64(FP), CX
	MOVQ $1, DX
	SHLQ CX, DX
	DECQ DX
	KMOVW DX, K2           // the partial tile's h lanes
	MOVQ h+64(FP), R15

packxt_channel:
	CMPQ AX, BX
	JGE  packxt_done
	MOVQ AX, CX
	IMULQ R8, CX
	ADDQ SI, CX            // x's row ci
	MOVQ AX, R13
	IMULQ R11, R13
	ADDQ DI, R13           // channel ci of tile 0
	MOVQ R10, R14

packxt_tile:
	TESTQ R14, R14
	JEQ   packxt_part
	VMOVUPS (CX), K1, Z0
	VMOVUPS Z0, K1, (R13)
	ADDQ R11, CX
	ADDQ R12, R13
	DECQ R14
	JMP  packxt_tile

packxt_part:
	TESTQ R15, R15
	JEQ   packxt_next
	VMOVUPS.Z (CX), K2, Z0
	VMOVUPS Z0, K1, (R13)

packxt_next:
	INCQ AX
	JMP  packxt_channel

packxt_done:
	VZEROUPPER
	RET
