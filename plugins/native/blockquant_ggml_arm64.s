// Code written by hand for arm64 (Go assembly has no mnemonics for SDOT
// and the vector float conversions: they are WORD-encoded, each with the
// instruction it is in a comment). See blockquant_ggml_arm64.go.

#include "textflag.h"

// func bqkQ8_0DotNEON(nb int, w *uint8, x *int8, xd *float32) float32
TEXT ·bqkQ8_0DotNEON(SB), NOSPLIT, $0-36
	MOVD nb+0(FP), R0
	MOVD w+8(FP), R1
	MOVD x+16(FP), R2
	MOVD xd+24(FP), R3
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	CBZ R0, done
loop:
	MOVHU (R1), R4
	FMOVS (R3), F18
	FMOVS R4, F19
	WORD $0x1EE24273 // FCVT S19, H19: d_w
	FMULS F18, F19, F19 // sc = d_w·d_a, rounded
	VDUP V19.S[0], V19.S4
	ADD $2, R1
	VLD1.P 32(R1), [V4.B16, V5.B16]
	VLD1.P 32(R2), [V0.B16, V1.B16]
	VEOR V2.B16, V2.B16, V2.B16
	VEOR V3.B16, V3.B16, V3.B16
	WORD $0x4E849402 // SDOT V2.4S, V0.16B, V4.16B: lanes 0..3
	WORD $0x4E859423 // SDOT V3.4S, V1.16B, V5.16B: lanes 4..7
	WORD $0x4E21D842 // SCVTF V2.4S, V2.4S
	WORD $0x4E21D863 // SCVTF V3.4S, V3.4S
	WORD $0x6E33DC42 // FMUL V2.4S, V2.4S, V19.4S
	WORD $0x6E33DC63 // FMUL V3.4S, V3.4S, V19.4S
	WORD $0x4E22D610 // FADD V16.4S, V16.4S, V2.4S
	WORD $0x4E23D631 // FADD V17.4S, V17.4S, V3.4S
	ADD $4, R3
	SUBS $1, R0, R0
	BNE loop
done:
	WORD $0x4E31D610 // FADD V16.4S, V16.4S, V17.4S: l0+l4, l1+l5, l2+l6, l3+l7
	WORD $0x6E30D610 // FADDP V16.4S, V16.4S, V16.4S
	WORD $0x7E30DA10 // FADDP S16, V16.2S: ((l0+l4)+(l1+l5))+((l2+l6)+(l3+l7))
	FMOVS F16, ret+32(FP)
	RET

// func bqkQ4_0DotNEON(nb int, w *uint8, x *int8, xd *float32) float32
TEXT ·bqkQ4_0DotNEON(SB), NOSPLIT, $0-36
	MOVD nb+0(FP), R0
	MOVD w+8(FP), R1
	MOVD x+16(FP), R2
	MOVD xd+24(FP), R3
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	VMOVI $15, V30.B16
	VMOVI $8, V31.B16
	CBZ R0, done
loop:
	MOVHU (R1), R4
	FMOVS (R3), F18
	FMOVS R4, F19
	WORD $0x1EE24273 // FCVT S19, H19: d_w
	FMULS F18, F19, F19 // sc = d_w·d_a, rounded
	VDUP V19.S[0], V19.S4
	ADD $2, R1
	VLD1.P 16(R1), [V6.B16]
	VAND V30.B16, V6.B16, V4.B16 // low nibbles: elements 0..15
	VUSHR $4, V6.B16, V5.B16 // high nibbles: elements 16..31
	VSUB V31.B16, V4.B16, V4.B16 // q − 8
	VSUB V31.B16, V5.B16, V5.B16
	VLD1.P 32(R2), [V0.B16, V1.B16]
	VEOR V2.B16, V2.B16, V2.B16
	VEOR V3.B16, V3.B16, V3.B16
	WORD $0x4E849402 // SDOT V2.4S, V0.16B, V4.16B: lanes 0..3
	WORD $0x4E859423 // SDOT V3.4S, V1.16B, V5.16B: lanes 4..7
	WORD $0x4E21D842 // SCVTF V2.4S, V2.4S
	WORD $0x4E21D863 // SCVTF V3.4S, V3.4S
	WORD $0x6E33DC42 // FMUL V2.4S, V2.4S, V19.4S
	WORD $0x6E33DC63 // FMUL V3.4S, V3.4S, V19.4S
	WORD $0x4E22D610 // FADD V16.4S, V16.4S, V2.4S
	WORD $0x4E23D631 // FADD V17.4S, V17.4S, V3.4S
	ADD $4, R3
	SUBS $1, R0, R0
	BNE loop
done:
	WORD $0x4E31D610 // FADD V16.4S, V16.4S, V17.4S: l0+l4, l1+l5, l2+l6, l3+l7
	WORD $0x6E30D610 // FADDP V16.4S, V16.4S, V16.4S
	WORD $0x7E30DA10 // FADDP S16, V16.2S: ((l0+l4)+(l1+l5))+((l2+l6)+(l3+l7))
	FMOVS F16, ret+32(FP)
	RET

