// Command asmgenqact generates the amd64 assembly of the native backend's
// activation quantizer for the integer path (core/ggml's Act: llama.cpp's
// Q8_0 and Q8_K rule; see the package native's quantact.go) with avo
// (github.com/mmcloughlin/avo). It writes its own pair of files; the
// package's TestGeneratedAssemblyIsCurrent runs it and fails when they are
// stale.
//
//	go run ./plugins/native/internal/asmgenqact -out plugins/native/quantact_amd64.s -stubs plugins/native/quantact_stubs_amd64.go -pkg native
//
// A block of 32 or 256 float32 values (AVX-512, one ZMM register for 16)
// is quantized as ggml.QuantizeBlock does, operation for operation: the
// largest |x| found by its bits (VPMAXUD of the values less their sign
// bit, so NaN and ±Inf, the patterns from 0x7f800000 up, are seen), d =
// amax/127 and the multiplier 127/amax (0 for an all-zero block) each one
// float32 division, q = x·multiplier in float32, converted to int32 by
// VCVTPS2DQ in the default rounding mode (to nearest, ties to even:
// math.RoundToEven of the float32 product), held within ±127 and
// narrowed to int8. A block with a NaN or an infinity gets q = 0 and d =
// NaN (0x7fc00000, the float32 of math.NaN()).
//
// The lane sums of four values come from VPDPBUSD of q with bytes of 1.
// For 32-value blocks (Q8_0) the kernel also writes Act's other fields:
// the scale rounded to float16 and back (VCVTPS2PH to nearest even), the
// block's sum and float16(sum·d) (a bad block: d and NaN unrounded, sum
// 0). For 256-value blocks (Q8_K) it writes q, d (float32, unrounded)
// and the 64 lane sums; the caller adds them into sums of 16 and 32.
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
	"github.com/switchyard-hal/switchyard/plugins/native/internal/avokit"
)

func main() {
	ConstraintExpr("amd64")
	consts()
	block(32)
	block(256)
	Generate()
}

var absMask, c127f, cM127, cP127, ones Mem

func dwords(name string, v uint32) Mem {
	return avokit.Bytes(name, 4, func(i int) byte { return byte(v >> (8 * i)) })
}

func consts() {
	absMask = dwords("qact_abs", 0x7fffffff)
	c127f = dwords("qact_127f", 0x42fe0000) // 127.0
	cM127 = dwords("qact_m127", uint32(0xffffff81))
	cP127 = dwords("qact_p127", 127)
	ones = dwords("qact_ones", 0x01010101)
}

// vpdpbusd: acc += u8(u) · s8(sg), four products a lane (AVX-512 VNNI;
// emitted raw: Go's assembler knows it).
func vpdpbusd(sg, u, acc Op) {
	Instruction(&ir.Instruction{Opcode: "VPDPBUSD", Operands: []Op{sg, u, acc}, Inputs: []Op{sg, u, acc}, Outputs: []Op{acc}})
}

var zs = []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15,
	Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31}

// block generates the kernel for blocks of B values.
func block(B int) {
	name := fmt.Sprintf("quantAct%d", B)
	nv := B / 16 // ZMM registers of values
	if B == 32 {
		TEXT(name, NOSPLIT, "func(nb int, x *float32, q *int8, d *float32, lanes *int32, sum *int32, sumd *float32)")
		Doc(name + " quantizes nb blocks of 32 values at x as ggml.Act.Quantize does (block 32): q, d (float16-rounded), the 8 lane sums, the sum and sumd of each block (see the package asmgenqact).")
	} else {
		TEXT(name, NOSPLIT, "func(nb int, x *float32, q *int8, d *float32, lanes *int32)")
		Doc(name + " quantizes nb blocks of 256 values at x as ggml.Act.Quantize does (block 256): q, d (float32) and the 64 lane sums of four of each block (see the package asmgenqact).")
	}
	Pragma("noescape")
	nb := Load(Param("nb"), GP64())
	x := Load(Param("x"), GP64())
	q := Load(Param("q"), GP64())
	d := Load(Param("d"), GP64())
	lanes := Load(Param("lanes"), GP64())
	var sum, sumd GPVirtual
	if B == 32 {
		sum = Load(Param("sum"), GP64()).(GPVirtual)
		sumd = Load(Param("sumd"), GP64()).(GPVirtual)
	}
	// values in Z0..Z(nv-1); Z16.. scratch
	VPBROADCASTD(absMask, Z16)
	VPBROADCASTD(ones, Z17)
	VPBROADCASTD(cM127, Z18)
	VPBROADCASTD(cP127, Z19)
	VMOVSS(c127f, X20)
	p := name + "_"
	amax := GP32()
	Label(p + "loop")
	TESTQ(nb, nb)
	JZ(LabelRef(p + "done"))
	for i := 0; i < nv; i++ {
		VMOVUPS(Mem{Base: x, Disp: 64 * i}, zs[i])
	}
	// the largest |x| by its bits
	VPANDD(Z16, Z0, Z21)
	for i := 1; i < nv; i++ {
		VPANDD(Z16, zs[i], Z22)
		VPMAXUD(Z22, Z21, Z21)
	}
	VEXTRACTI64X4(U8(1), Z21, Y22)
	VPMAXUD(Y22, Y21, Y21)
	VEXTRACTI32X4(U8(1), Y21, X22)
	VPMAXUD(X22, X21, X21)
	VPSHUFD(U8(0x4e), X21, X22)
	VPMAXUD(X22, X21, X21)
	VPSHUFD(U8(0xb1), X21, X22)
	VPMAXUD(X22, X21, X21)
	VMOVD(X21, amax)
	CMPL(amax, U32(0x7f800000))
	JAE(LabelRef(p + "bad"))
	// d = amax/127 in X23, the multiplier 127/amax (0 for amax 0) in Z24
	VDIVSS(X20, X21, X23)
	VXORPS(X24, X24, X24)
	TESTL(amax, amax)
	JZ(LabelRef(p + "zero"))
	VDIVSS(X21, X20, X24)
	Label(p + "zero")
	VBROADCASTSS(X24, Z24)
	for i := 0; i < nv; i++ {
		v := zs[i]
		VMULPS(Z24, v, v)
		VCVTPS2DQ(v, v)
		VPMAXSD(Z18, v, v)
		VPMINSD(Z19, v, v)
	}
	// narrowed to bytes, four registers (two for B = 32) a vector, stored;
	// the lane sums of four by VPDPBUSD with bytes of 1
	for g := 0; g < nv; g += 4 {
		VPMOVDB(zs[g], X28)
		VPMOVDB(zs[g+1], X29)
		if nv == 2 {
			VINSERTI32X4(U8(1), X29, Y28, Y28)
			VMOVDQU32(Y28, Mem{Base: q})
			VPXORD(Y25, Y25, Y25)
			vpdpbusd(Y28, Y17, Y25)
			VMOVDQU32(Y25, Mem{Base: lanes})
			break
		}
		VPMOVDB(zs[g+2], X30)
		VPMOVDB(zs[g+3], X31)
		VINSERTI32X4(U8(1), X29, Z28, Z28)
		VINSERTI32X4(U8(2), X30, Z28, Z28)
		VINSERTI32X4(U8(3), X31, Z28, Z28)
		VMOVDQU64(Z28, Mem{Base: q, Disp: 16 * g})
		VPXORD(Z25, Z25, Z25)
		vpdpbusd(Z28, Z17, Z25)
		VMOVDQU64(Z25, Mem{Base: lanes, Disp: 16 * g})
	}
	if B == 32 {
		// the sum, in lane order ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)):
		// exact integers, any order
		VEXTRACTI32X4(U8(1), Y25, X26)
		VPADDD(X26, X25, X25)
		VPSHUFD(U8(0x4e), X25, X26)
		VPADDD(X26, X25, X25)
		VPSHUFD(U8(0xb1), X25, X26)
		VPADDD(X26, X25, X25)
		VMOVD(X25, Mem{Base: sum})
		// sumd = float16(float32(sum)·d), d = float16(d)
		VCVTDQ2PS(X25, X25)
		VMULSS(X23, X25, X25)
		VCVTPS2PH(U8(0), X25, X25)
		VCVTPH2PS(X25, X25)
		VMOVSS(X25, Mem{Base: sumd})
		VCVTPS2PH(U8(0), X23, X23)
		VCVTPH2PS(X23, X23)
	}
	VMOVSS(X23, Mem{Base: d})
	Label(p + "next")
	ADDQ(U32(uint32(4*B)), x)
	ADDQ(U32(uint32(B)), q)
	ADDQ(U8(4), d)
	ADDQ(U32(uint32(B)), lanes)
	if B == 32 {
		ADDQ(U8(4), sum)
		ADDQ(U8(4), sumd)
	}
	DECQ(nb)
	JMP(LabelRef(p + "loop"))
	// a NaN or an infinity: q, the lane sums (and the sum) 0, d (and sumd) NaN
	Label(p + "bad")
	VPXORD(Z25, Z25, Z25)
	for i := 0; i < B/64; i++ {
		VMOVDQU64(Z25, Mem{Base: q, Disp: 64 * i})
	}
	if B == 32 {
		VMOVDQU32(Y25, Mem{Base: q})
		VMOVDQU32(Y25, Mem{Base: lanes})
		MOVL(U32(0), Mem{Base: sum})
		MOVL(U32(0x7fc00000), Mem{Base: sumd})
	} else {
		for i := 0; i < B/64; i++ {
			VMOVDQU64(Z25, Mem{Base: lanes, Disp: 64 * i})
		}
	}
	MOVL(U32(0x7fc00000), Mem{Base: d})
	JMP(LabelRef(p + "next"))
	Label(p + "done")
	VZEROUPPER()
	RET()
}
