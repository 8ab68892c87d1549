// Command asmgenbqi generates the amd64 assembly of the native backend's
// integer path for BlockQuantMatMul (opt-in under hal.PrecisionInt8, see
// the package native's blockquant_int.go) with avo
// (github.com/mmcloughlin/avo). It writes its own pair of files; the
// package's TestBlockQuantIntAssemblyIsCurrent runs it and fails when they
// are stale.
//
//	go run ./plugins/native/internal/asmgenbqi -out plugins/native/blockquant_int_amd64.s -stubs plugins/native/blockquant_int_stubs_amd64.go -pkg native
//
// Every kernel computes nr (1 or 4) outputs of one activation row x,
// quantized to int8 in blocks of 32 with one float32 scale xd[b] each,
// against nr weight rows (q, q+ldq, … bytes apart; their scales s, s+lds,
// …), writing y[0..nr-1]:
//
//	y[r] = reduce_l Σ_b float32(P_rbl) · (s_r[b]·xd[b])
//
// P_rbl is the exact integer sum of block b's elements 4l..4l+3 (lane l
// of a YMM register) of x·w, w the int8 weight (bits 8) or the nibble
// less 8 (bits 4: q packed two to a byte, element i in byte i/2, the low
// nibble for even i); each lane's products are added block after block in
// float32 (multiply, then add: no FMA), and the lanes reduced as
// ((l0+l4)+(l1+l5))+((l2+l6)+(l3+l7)). The Go kernel computes the same
// bits.
//
// The integer sums: bits 8 make the weight unsigned and move its sign to
// x (|w| ≤ 128 unsigned, x·sign(w) within ±127, VPSIGNB), bits 4 take the
// nibbles (0..15) as the unsigned operand and add ns (−8·Σ of the lane's
// four x, computed with the quantized row). The AVX-512 VNNI kernels sum
// with VPDPBUSD on YMM (AVX512VL); the AVX2 ones with VPMADDUBSW (pairs of
// products, at most 2·128·127 or 2·15·127: no int16 saturation) and
// VPMADDWD by ones.
//
// VPDPBUSD is not in avo's instruction table; it is emitted as a raw
// instruction (Go's assembler knows it).
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	for _, fam := range []string{"VNNI", "AVX2"} {
		for _, bits := range []int{8, 4} {
			for _, nr := range []int{4, 1} {
				dot(fam, bits, nr)
			}
		}
	}
	Generate()
}

// vpdpbusd: acc += u8(a) · s8(w), four products a lane.
func vpdpbusd(w, a, acc Op) {
	Instruction(&ir.Instruction{Opcode: "VPDPBUSD", Operands: []Op{w, a, acc}, Inputs: []Op{w, a, acc}, Outputs: []Op{acc}})
}

func dot(fam string, bits, nr int) {
	name := fmt.Sprintf("bqi%dDot%d%s", bits, nr, fam)
	qt := "int8"
	if bits == 4 {
		qt = "uint8"
	}
	TEXT(name, NOSPLIT, fmt.Sprintf("func(nb int, x *int8, xd *float32, ns *int32, q *%s, ldq int, s *float32, lds int, y *float32)", qt))
	Doc(fmt.Sprintf("%s computes %d outputs of the int8 path of BlockQuantMatMul (%d-bit weights; see the package asmgenbqi).", name, nr, bits))
	Pragma("noescape")
	nb := Load(Param("nb"), GP64())
	x := Load(Param("x"), GP64())
	xd := Load(Param("xd"), GP64())
	var ns Register
	if bits == 4 {
		ns = Load(Param("ns"), GP64())
	}
	q := Load(Param("q"), GP64())
	s := Load(Param("s"), GP64())
	var ldq, lds, ldq3, lds3 Register
	if nr == 4 {
		ldq = Load(Param("ldq"), GP64())
		lds = Load(Param("lds"), GP64())
		ldq3, lds3 = GP64(), GP64()
		LEAQ(Mem{Base: ldq, Index: ldq, Scale: 2}, ldq3)
		LEAQ(Mem{Base: lds, Index: lds, Scale: 2}, lds3)
	}
	// row r's address of base (stride ld, 3·ld in ld3) plus disp
	row := func(base, ld, ld3 Register, r int) Mem {
		switch r {
		case 0:
			return Mem{Base: base}
		case 1:
			return Mem{Base: base, Index: ld, Scale: 1}
		case 2:
			return Mem{Base: base, Index: ld, Scale: 2}
		}
		return Mem{Base: base, Index: ld3, Scale: 1}
	}
	acc := make([]VecVirtual, nr)
	for r := range acc {
		acc[r] = YMM()
		VXORPS(acc[r], acc[r], acc[r])
	}
	var ones, mask VecVirtual
	if fam == "AVX2" {
		ones = YMM()
		c := GP32()
		MOVL(U32(0x00010001), c)
		MOVD(c, ones.AsX())
		VPBROADCASTD(ones.AsX(), ones)
	}
	if bits == 4 {
		mask = XMM()
		c := GP32()
		MOVL(U32(0x0F0F0F0F), c)
		MOVD(c, mask)
		VPBROADCASTD(mask, mask)
	}
	p := name + "_"
	Label(p + "block")
	TESTQ(nb, nb)
	JZ(LabelRef(p + "done"))
	a := YMM()
	VMOVDQU(Mem{Base: x}, a)
	da := YMM()
	VBROADCASTSS(Mem{Base: xd}, da)
	for r := 0; r < nr; r++ {
		sum := YMM()
		if bits == 8 {
			w, uw, sa := YMM(), YMM(), YMM()
			VMOVDQU(row(q, ldq, ldq3, r), w)
			VPSIGNB(w, w, uw)
			VPSIGNB(w, a, sa)
			if fam == "VNNI" {
				VPXOR(sum, sum, sum)
				vpdpbusd(sa, uw, sum)
			} else {
				VPMADDUBSW(sa, uw, sum)
				VPMADDWD(ones, sum, sum)
			}
		} else {
			b, h, w := XMM(), XMM(), YMM()
			VMOVDQU(row(q, ldq, ldq3, r), b)
			VPSRLW(U8(4), b, h)
			VPAND(mask, b, b) // even elements
			VPAND(mask, h, h) // odd elements
			hi := XMM()
			VPUNPCKHBW(h, b, hi)      // elements 16..31
			VPUNPCKLBW(h, b, w.AsX()) // elements 0..15
			VINSERTI128(U8(1), hi, w, w)
			if fam == "VNNI" {
				VMOVDQU(Mem{Base: ns}, sum)
				vpdpbusd(a, w, sum)
			} else {
				VPMADDUBSW(a, w, sum)
				VPMADDWD(ones, sum, sum)
				VPADDD(Mem{Base: ns}, sum, sum)
			}
		}
		VCVTDQ2PS(sum, sum)
		sc := YMM()
		VBROADCASTSS(row(s, lds, lds3, r), sc)
		VMULPS(da, sc, sc)
		VMULPS(sc, sum, sum)
		VADDPS(sum, acc[r], acc[r])
	}
	ADDQ(U8(32), x)
	ADDQ(U8(4), xd)
	ADDQ(U8(4), s)
	if bits == 8 {
		ADDQ(U8(32), q)
	} else {
		ADDQ(U8(16), q)
		ADDQ(U8(32), ns)
	}
	DECQ(nb)
	JMP(LabelRef(p + "block"))
	Label(p + "done")
	y := Load(Param("y"), GP64())
	for r := 0; r < nr; r++ {
		t := XMM()
		VEXTRACTF128(U8(1), acc[r], t)
		VADDPS(t, acc[r].AsX(), t)
		VHADDPS(t, t, t)
		VHADDPS(t, t, t)
		VMOVSS(t, Mem{Base: y, Disp: 4 * r})
	}
	VZEROUPPER()
	RET()
}
