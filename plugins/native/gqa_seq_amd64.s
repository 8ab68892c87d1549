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

// seqLanes: 0..15, the key of each lane.
DATA ·seqLanes+0(SB)/4, $0
DATA ·seqLanes+4(SB)/4, $1
DATA ·seqLanes+8(SB)/4, $2
DATA ·seqLanes+12(SB)/4, $3
DATA ·seqLanes+16(SB)/4, $4
DATA ·seqLanes+20(SB)/4, $5
DATA ·seqLanes+24(SB)/4, $6
DATA ·seqLanes+28(SB)/4, $7
DATA ·seqLanes+32(SB)/4, $8
DATA ·seqLanes+36(SB)/4, $9
DATA ·seqLanes+40(SB)/4, $10
DATA ·seqLanes+44(SB)/4, $11
DATA ·seqLanes+48(SB)/4, $12
DATA ·seqLanes+52(SB)/4, $13
DATA ·seqLanes+56(SB)/4, $14
DATA ·seqLanes+60(SB)/4, $15
GLOBL ·seqLanes(SB), RODATA|NOPTR, $64

// func seqDots16AVX512(n, h int, k, q, out *float32)
// seqDotsFMA for n a multiple of 16, h ≥ 1, 16·h < 2³¹/4: sixteen keys a
// pass, lane j the chain of key j (element i of the sixteen gathered,
// VFMADD231PS with q[i] broadcast: each lane rounded once a step).
TEXT ·seqDots16AVX512(SB), NOSPLIT, $0-40
	MOVQ n+0(FP), CX
	MOVQ h+8(FP), DX
	MOVQ k+16(FP), SI
	MOVQ q+24(FP), DI
	MOVQ out+32(FP), R8
	SHRQ $4, CX
	JZ   seq16_done
	VPBROADCASTD DX, Z3
	VMOVDQU32 ·seqLanes(SB), Z4
	VPMULLD Z3, Z4, Z4
	MOVQ DX, R9
	SHLQ $6, R9

seq16_group:
	VXORPS Z0, Z0, Z0
	MOVQ SI, R10
	XORQ AX, AX

seq16_elem:
	KXNORW K1, K1, K1
	VGATHERDPS (R10)(Z4*4), K1, Z1
	VBROADCASTSS (DI)(AX*4), Z2
	VFMADD231PS Z2, Z1, Z0
	ADDQ $4, R10
	INCQ AX
	CMPQ AX, DX
	JLT  seq16_elem
	VMOVUPS Z0, (R8)
	ADDQ $64, R8
	ADDQ R9, SI
	DECQ CX
	JNZ  seq16_group
	VZEROUPPER

seq16_done:
	RET
