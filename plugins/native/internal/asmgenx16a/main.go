// Command asmgenx16a generates the amd64 assembly of the native backend's
// Q4_0 kernel in the x16 layout (see the package native's
// blockquant_x16.go and blockquant_x16q40.go) with avo
// (github.com/mmcloughlin/avo). It writes its own pair of files; the
// package's TestGeneratedAssemblyIsCurrent runs it and fails when they are
// stale.
//
//	go run ./plugins/native/internal/asmgenx16a -out plugins/native/blockquant_x16_amd64.s -stubs plugins/native/blockquant_x16_stubs_amd64.go -pkg native
//
// A group is 16 weight rows, one a dword lane of every ZMM register: per
// block the rows' 16 float16 scales (one VCVTPH2PS, times the block's
// activation scale d_a broadcast), then four vectors of quant bytes,
// vector t the bytes 4t..4t+3 of each row. Their low nibbles multiply the
// activation dword t and their high nibbles the dword 4+t, each broadcast
// from memory into VPDPBUSD: eight VPDPBUSD a block give each row's exact
// int32 sum Σu·x of the unsigned nibbles u, started from −8·Σx (the
// offset 8; Σx is core/ggml's Act.Sum, one a block), in two chains of
// four summed at the end. Then, as core/ggml's Dot (llama.cpp's repacked
// Q4_0), the sum converted and added times float32(d_w·d_a) into the
// row's one float32 accumulator by a fused multiply-add, block after
// block; no reduction (the rows are the lanes).
package main

import (
	"flag"
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
	"github.com/switchyard-hal/switchyard/plugins/native/internal/avokit"
)

// blockBytes is a Q4_0 block of a group: 16 scales, four 64-byte vectors.
const blockBytes = 32 + 4*64

var c0F, gfHi4 Mem

func main() {
	flag.Parse()
	c0F = avokit.Bytes("x16_c0f", 64, func(int) byte { return 0x0F })
	// GF2P8AFFINEQB's matrix taking a byte's high nibble to its low bits
	// (output bit o is row byte 7−o; input bit o+4; the top four zero)
	gfHi4 = avokit.Bytes("x16_gfhi4", 64, func(i int) byte {
		if o := 7 - i%8; o < 4 {
			return 1 << (o + 4)
		}
		return 0
	})
	for nr := 1; nr <= 4; nr++ {
		q40(nr, false)
		q40(nr, true)
	}
	Generate()
}

// vgf2p8affineqb: each byte of x to the bit matrix of its qword in m
// (GF2P8AFFINEQB with no constant; emitted raw: not in avo's table).
func vgf2p8affineqb(m, x, dst Op) {
	Instruction(&ir.Instruction{Opcode: "VGF2P8AFFINEQB", Operands: []Op{U8(0), m, x, dst}, Inputs: []Op{m, x}, Outputs: []Op{dst}})
}

// q40 generates x16Q40R<nr>Z (gfni: x16Q40R<nr>G, the high nibbles
// moved down by one GF2P8AFFINEQB instead of a shift and an AND): nr
// (1..4) activation rows against the same unpacked weights, activation
// row k's quants at x + k·32·nb, its scales and sums at xd, xs + k·4·nb
// (core/ggml's Act), its outputs at y + k·ldy floats.
func q40(nr int, gfni bool) {
	name := fmt.Sprintf("x16Q40R%dZ", nr)
	if gfni {
		name = fmt.Sprintf("x16Q40R%dG", nr)
	}
	TEXT(name, NOSPLIT, "func(nb int, w *uint8, x *int8, xd *float32, xs *int32, y *float32, ng int, ldy int)")
	Doc(fmt.Sprintf("%s is core/ggml's Dot of nb Q4_0 blocks for the 16·ng rows of ng x16 groups at w (consecutive) with %d activation rows, into y (see the package asmgenx16a).", name, nr))
	Pragma("noescape")
	w := Load(Param("w"), GP64())
	y := Load(Param("y"), GP64())
	ng := Load(Param("ng"), GP64())
	cnt, x, xd, xs := GP64(), GP64(), GP64(), GP64()
	// the activation rows' strides: quants 32·nb bytes, scales and sums
	// 4·nb; the outputs' ldy floats
	qs, ds, ys := GP64(), GP64(), GP64()
	Load(Param("nb"), qs)
	MOVQ(qs, ds)
	SHLQ(U8(5), qs)
	SHLQ(U8(2), ds)
	Load(Param("ldy"), ys)
	SHLQ(U8(2), ys)
	var qs3, ds3 GPVirtual
	if nr == 4 {
		qs3, ds3 = GP64(), GP64()
		LEAQ(Mem{Base: qs, Index: qs, Scale: 2}, qs3)
		LEAQ(Mem{Base: ds, Index: ds, Scale: 2}, ds3)
	}
	row := func(base, s, s3 Register, k, disp int) Mem {
		switch k {
		case 0:
			return Mem{Base: base, Disp: disp}
		case 1:
			return Mem{Base: base, Index: s, Scale: 1, Disp: disp}
		case 2:
			return Mem{Base: base, Index: s, Scale: 2, Disp: disp}
		}
		return Mem{Base: base, Index: s3, Scale: 1, Disp: disp}
	}
	zero, c := ZMM(), ZMM()
	VPXORD(zero, zero, zero)
	VMOVDQU64(c0F, c)
	var gm VecVirtual
	if gfni {
		gm = ZMM()
		VMOVDQU64(gfHi4, gm)
	}
	acc := make([]VecVirtual, nr)
	for k := range acc {
		acc[k] = ZMM()
	}
	p := name + "_"
	Label(p + "group")
	TESTQ(ng, ng)
	JZ(LabelRef(p + "end"))
	Load(Param("nb"), cnt)
	Load(Param("x"), x)
	Load(Param("xd"), xd)
	Load(Param("xs"), xs)
	for k := range acc {
		VXORPS(acc[k], acc[k], acc[k])
	}
	Label(p + "block")
	// the block's 16 rows unpacked once: q[t] the low nibbles of vector
	// t (weights 4t..4t+3), h[t] the high ones (16+4t..16+4t+3)
	var q, h [4]VecVirtual
	for t := 0; t < 4; t++ {
		q[t], h[t] = ZMM(), ZMM()
		VMOVDQU64(Mem{Base: w, Disp: 32 + 64*t}, q[t])
		if gfni {
			vgf2p8affineqb(gm, q[t], h[t])
		} else {
			VPSRLW(U8(4), q[t], h[t])
			VPANDD(c, h[t], h[t])
		}
		VPANDD(c, q[t], q[t])
	}
	d := ZMM()
	VCVTPH2PS(Mem{Base: w}, d)
	for k := 0; k < nr; k++ {
		// two chains of int32 sums: sa from −8·Σx, sb from 0
		sa, sb, s8 := ZMM(), ZMM(), ZMM()
		VPBROADCASTD(row(xs, ds, ds3, k, 0), s8)
		VPSLLD(U8(3), s8, s8)
		VPSUBD(s8, zero, sa)
		VPXORD(sb, sb, sb)
		for t := 0; t < 4; t++ {
			s := sa
			if t >= 2 {
				s = sb
			}
			avokit.VpdpbusdBcst(row(x, qs, qs3, k, 4*t), q[t], s)
			avokit.VpdpbusdBcst(row(x, qs, qs3, k, 16+4*t), h[t], s)
		}
		VPADDD(sb, sa, sa)
		VCVTDQ2PS(sa, sa)
		VMULPS_BCST(row(xd, ds, ds3, k, 0), d, s8)
		VFMADD231PS(sa, s8, acc[k]) // acc += sum·(d·d_a), one rounding
	}
	ADDQ(U32(blockBytes), w)
	ADDQ(U8(32), x)
	ADDQ(U8(4), xd)
	ADDQ(U8(4), xs)
	DECQ(cnt)
	JNZ(LabelRef(p + "block"))
	for k := 0; k < nr; k++ {
		switch k {
		case 0:
			VMOVUPS(acc[k], Mem{Base: y})
		case 1:
			VMOVUPS(acc[k], Mem{Base: y, Index: ys, Scale: 1})
		case 2:
			VMOVUPS(acc[k], Mem{Base: y, Index: ys, Scale: 2})
		case 3:
			LEAQ(Mem{Base: y, Index: ys, Scale: 2}, cnt)
			VMOVUPS(acc[k], Mem{Base: cnt, Index: ys, Scale: 1})
		}
	}
	ADDQ(U8(64), y)
	DECQ(ng)
	JMP(LabelRef(p + "group"))
	Label(p + "end")
	VZEROUPPER()
	RET()
}
