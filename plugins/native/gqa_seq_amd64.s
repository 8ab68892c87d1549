// Written by hand: sequential float32 fused multiply-add chains (see
// gqa_seq.go), one VFMADD231SS (a single rounding) a step.

#include "textflag.h"

// func seqDotsFMA(n, h int, k, q, out *float32)
// out[j] = fma(k[j·h+h−1], q[h−1], … fma(k[j·h], q[0], +0)) for j < n.
TEXT ·seqDotsFMA(SB), NOSPLIT, $0-40
	MOVQ n+0(FP), CX
	MOVQ h+8(FP), DX
	MOVQ k+16(FP), SI
	MOVQ q+24(FP), DI
	MOVQ out+32(FP), R8
	TESTQ CX, CX
	JZ   seqdots_done
	LEAQ (DX*4), R9

seqdots_key:
	VXORPS X0, X0, X0
	XORQ AX, AX
	CMPQ AX, DX
	JGE  seqdots_store

seqdots_elem:
	VMOVSS (DI)(AX*4), X1
	VFMADD231SS (SI)(AX*4), X1, X0
	INCQ AX
	CMPQ AX, DX
	JLT  seqdots_elem

seqdots_store:
	VMOVSS X0, (R8)
	ADDQ $4, R8
	ADDQ R9, SI
	DECQ CX
	JNZ  seqdots_key

seqdots_done:
	RET

// func fmaSeqFMA(n int, x, y *float32, s float32) float32
// s = fma(x[i], y[i], s) for i = 0..n−1, in order.
TEXT ·fmaSeqFMA(SB), NOSPLIT, $0-36
	MOVQ  n+0(FP), CX
	MOVQ  x+8(FP), SI
	MOVQ  y+16(FP), DI
	VMOVSS s+24(FP), X0
	XORQ  AX, AX
	CMPQ  AX, CX
	JGE   fmaseq_done

fmaseq_loop:
	VMOVSS (DI)(AX*4), X1
	VFMADD231SS (SI)(AX*4), X1, X0
	INCQ AX
	CMPQ AX, CX
	JLT  fmaseq_loop

fmaseq_done:
	VMOVSS X0, ret+32(FP)
	RET
