#include "textflag.h"

// func transpose8xN(dst *int8, ldd int, src *int8, lds int, n int, flip *byte)
//
// Transposes n blocks of 8 rows × 16 bytes (rows lds bytes apart, the
// blocks side by side) into 16 rows × 8 bytes each (ldd bytes apart, the
// blocks one below the other), each byte xor the 16 bytes at flip: three
// rounds of unpacking (bytes, words, dwords) leave two output rows in
// each register. AVX (VEX-encoded 128-bit operations).
TEXT ·transpose8xN(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ ldd+8(FP), DX
	MOVQ src+16(FP), SI
	MOVQ lds+24(FP), BX
	MOVQ n+32(FP), CX
	MOVQ flip+40(FP), AX
	VMOVDQU (AX), X15
	LEAQ (BX)(BX*2), R8
	LEAQ (DX)(DX*2), R9
	TESTQ CX, CX
	JZ done

loop:
	LEAQ (SI)(BX*4), R10
	VPXOR (SI), X15, X0
	VPXOR (SI)(BX*1), X15, X1
	VPXOR (SI)(BX*2), X15, X2
	VPXOR (SI)(R8*1), X15, X3
	VPXOR (R10), X15, X4
	VPXOR (R10)(BX*1), X15, X5
	VPXOR (R10)(BX*2), X15, X6
	VPXOR (R10)(R8*1), X15, X7

	// bytes: row pairs (0,1) (2,3) (4,5) (6,7), columns 0-7 and 8-15
	VPUNPCKLBW X1, X0, X8
	VPUNPCKHBW X1, X0, X9
	VPUNPCKLBW X3, X2, X10
	VPUNPCKHBW X3, X2, X11
	VPUNPCKLBW X5, X4, X12
	VPUNPCKHBW X5, X4, X13
	VPUNPCKLBW X7, X6, X14
	VPUNPCKHBW X7, X6, X0

	// words: rows 0-3 and 4-7, four columns per register
	VPUNPCKLWD X10, X8, X1
	VPUNPCKHWD X10, X8, X2
	VPUNPCKLWD X14, X12, X3
	VPUNPCKHWD X14, X12, X4
	VPUNPCKLWD X11, X9, X5
	VPUNPCKHWD X11, X9, X6
	VPUNPCKLWD X0, X13, X7
	VPUNPCKHWD X0, X13, X8

	// dwords: rows 0-7, two columns per register
	VPUNPCKLDQ X3, X1, X9
	VPUNPCKHDQ X3, X1, X10
	VPUNPCKLDQ X4, X2, X11
	VPUNPCKHDQ X4, X2, X12
	VPUNPCKLDQ X7, X5, X13
	VPUNPCKHDQ X7, X5, X14
	VPUNPCKLDQ X8, X6, X0
	VPUNPCKHDQ X8, X6, X1

	MOVQ DI, R11
	MOVQ X9, (R11)
	MOVHPS X9, (R11)(DX*1)
	MOVQ X10, (R11)(DX*2)
	MOVHPS X10, (R11)(R9*1)
	LEAQ (R11)(DX*4), R11
	MOVQ X11, (R11)
	MOVHPS X11, (R11)(DX*1)
	MOVQ X12, (R11)(DX*2)
	MOVHPS X12, (R11)(R9*1)
	LEAQ (R11)(DX*4), R11
	MOVQ X13, (R11)
	MOVHPS X13, (R11)(DX*1)
	MOVQ X14, (R11)(DX*2)
	MOVHPS X14, (R11)(R9*1)
	LEAQ (R11)(DX*4), R11
	MOVQ X0, (R11)
	MOVHPS X0, (R11)(DX*1)
	MOVQ X1, (R11)(DX*2)
	MOVHPS X1, (R11)(R9*1)
	LEAQ (R11)(DX*4), DI

	ADDQ $16, SI
	DECQ CX
	JNZ loop

done:
	VZEROUPPER
	RET
