#include "textflag.h"

// func dotRowsI8(w *int8, x *int16, chunks, rows, stride int, acc *int32)
TEXT ·dotRowsI8(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DX
	MOVQ chunks+16(FP), CX
	MOVQ rows+24(FP), BX
	MOVQ stride+32(FP), R8
	MOVQ acc+40(FP), DI
	TESTQ BX, BX
	JLE  done
	TESTQ CX, CX
	JLE  done

row:
	VPXOR Y0, Y0, Y0
	VPXOR Y2, Y2, Y2
	MOVQ  SI, R9
	MOVQ  DX, R10
	MOVQ  CX, R11

pair:
	CMPQ R11, $2
	JLT  single
	VPMOVSXBW (R9), Y1
	VPMADDWD  (R10), Y1, Y1
	VPADDD    Y1, Y0, Y0
	VPMOVSXBW 16(R9), Y3
	VPMADDWD  32(R10), Y3, Y3
	VPADDD    Y3, Y2, Y2
	ADDQ      $32, R9
	ADDQ      $64, R10
	SUBQ      $2, R11
	JMP       pair

single:
	TESTQ     R11, R11
	JE        reduce
	VPMOVSXBW (R9), Y1
	VPMADDWD  (R10), Y1, Y1
	VPADDD    Y1, Y0, Y0

reduce:
	VPADDD       Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0x4e, X0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0xb1, X0, X1
	VPADDD       X1, X0, X0
	VMOVD        X0, AX
	ADDL         AX, (DI)
	ADDQ         $4, DI
	ADDQ         R8, SI
	DECQ         BX
	JNE          row

done:
	VZEROUPPER
	RET
