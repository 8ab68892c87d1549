// Package avokit holds what the native backend's avo generators share
// (plugins/native/internal/asmgen*): read-only data tables, the four
// weight rows' addresses and Q4_K's scale unpacking.
package avokit

import (
	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Bytes declares an n-byte read-only table (n a multiple of 8) named name
// whose byte i is f(i).
func Bytes(name string, n int, f func(i int) byte) Mem {
	m := GLOBL(name, RODATA|NOPTR)
	for i := 0; i < n; i += 8 {
		var v uint64
		for b := 7; b >= 0; b-- {
			v = v<<8 | uint64(f(i+b))
		}
		DATA(i, U64(v))
	}
	return m
}

// Bytes32 is a 32-byte table, for loading into a YMM register.
func Bytes32(name string, f func(i int) byte) Mem { return Bytes(name, 32, f) }

// Rows4 gives the address of weight row r (0..3) plus disp: w, w+ldw,
// w+2·ldw, w+ldw3 (ldw3 = 3·ldw).
func Rows4(w, ldw, ldw3 Register) func(r, disp int) Mem {
	return func(r, disp int) Mem {
		switch r {
		case 0:
			return Mem{Base: w, Disp: disp}
		case 1:
			return Mem{Base: w, Index: ldw, Scale: 1, Disp: disp}
		case 2:
			return Mem{Base: w, Index: ldw, Scale: 2, Disp: disp}
		}
		return Mem{Base: w, Index: ldw3, Scale: 1, Disp: disp}
	}
}

// K4Scales unpacks the twelve scale bytes of a Q4_K/Q5_K block at m (the
// block's address + 4) into its eight 6-bit scales (sc) and eight mins
// (m), each as two GP32 registers of four bytes.
func K4Scales(m Mem) (scLo, scHi, mLo, mHi GPVirtual) {
	u0, u1, u2 := GP32(), GP32(), GP32()
	MOVL(m, u0)
	MOVL(m.Offset(4), u1)
	MOVL(m.Offset(8), u2)
	scLo, scHi, mLo, mHi = GP32(), GP32(), GP32(), GP32()
	t := GP32()
	MOVL(u0, scLo)
	ANDL(U32(0x3f3f3f3f), scLo)
	MOVL(u0, t)
	SHRL(U8(6), t)
	ANDL(U32(0x03030303), t)
	SHLL(U8(4), t)
	MOVL(u2, scHi)
	ANDL(U32(0x0f0f0f0f), scHi)
	ORL(t, scHi)
	MOVL(u1, mLo)
	ANDL(U32(0x3f3f3f3f), mLo)
	MOVL(u1, t)
	SHRL(U8(6), t)
	ANDL(U32(0x03030303), t)
	SHLL(U8(4), t)
	MOVL(u2, mHi)
	SHRL(U8(4), mHi)
	ANDL(U32(0x0f0f0f0f), mHi)
	ORL(t, mHi)
	return
}

// Vpdpbusd emits acc += u8(u) · s8(sg), four products a 32-bit lane
// (AVX-512 VNNI, on XMM/YMM/ZMM; not in avo's instruction table, so
// emitted raw: Go's assembler knows it).
func Vpdpbusd(sg, u, acc Op) {
	Instruction(&ir.Instruction{Opcode: "VPDPBUSD", Operands: []Op{sg, u, acc}, Inputs: []Op{sg, u, acc}, Outputs: []Op{acc}})
}

// Vpshufbitqmb emits k bit i = bit (idx byte i) of src's qword i/8
// (AVX-512 BITALG; emitted raw like Vpdpbusd).
func Vpshufbitqmb(idx, src Op, k Op) {
	Instruction(&ir.Instruction{Opcode: "VPSHUFBITQMB", Operands: []Op{idx, src, k}, Inputs: []Op{idx, src}, Outputs: []Op{k}})
}

// MaskW is a new mask register holding the 16 bits v.
func MaskW(v uint16) OpmaskVirtual {
	g := GP32()
	MOVL(U32(uint32(v)), g)
	k := K()
	KMOVW(g, k)
	return k
}

// BytesToFloats8 widens the eight bytes lo|hi (zero-extended) to eight
// float32 lanes of a new YMM register.
func BytesToFloats8(lo, hi GPVirtual) VecVirtual {
	x := XMM()
	VMOVD(lo, x)
	VPINSRD(U8(1), hi, x, x)
	y := YMM()
	VPMOVZXBD(x, y)
	VCVTDQ2PS(y, y)
	return y
}

// ParamAddr is the memory operand of the current function's parameter
// name (for instructions that take it directly, without a Load).
func ParamAddr(name string) Mem {
	b, err := Param(name).Resolve()
	if err != nil {
		panic(err)
	}
	return b.Addr
}

// Mask16 sets k to the lanes of a 16-column vector from column col that lie
// below lim (all, some or none).
func Mask16(name string, lim, col, t, m GPVirtual, k Op) {
	MOVQ(lim, t)
	SUBQ(col, t)
	CMPQ(t, U8(16))
	JGE(LabelRef(name + "_all"))
	TESTQ(t, t)
	JLE(LabelRef(name + "_none"))
	MOVL(U32(0xffff), m)
	BZHIL(t.As32(), m, m)
	KMOVW(m, k)
	JMP(LabelRef(name + "_end"))
	Label(name + "_all")
	KXNORW(k, k, k)
	JMP(LabelRef(name + "_end"))
	Label(name + "_none")
	KXORW(k, k, k)
	Label(name + "_end")
}
