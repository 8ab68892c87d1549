// Command asmgenqgemm generates the amd64 assembly of the native backend's
// tiled integer GEMM for ggml's 32-element block types (Q4_0, Q5_0, Q8_0;
// see the package native's qgemm.go) with avo
// (github.com/mmcloughlin/avo). It writes its own pair of files; the
// package's TestGeneratedAssemblyIsCurrent runs it and fails when they are
// stale.
//
//	go run ./plugins/native/internal/asmgenqgemm -out plugins/native/qgemm_amd64.s -stubs plugins/native/qgemm_stubs_amd64.go -pkg native
//
// A kernel computes a tile of 4 weight rows × R activation rows (R = 1…4)
// over nb blocks of 32. Each weight block is unpacked once to 32 unsigned
// bytes (Q4_0: the nibbles, Q5_0: the nibbles and the 5th bits, Q8_0: the
// int8 values plus 128) and its scale converted once, then used for the R
// activation rows: VPDPBUSD (AVX-512 VNNI on YMM) sums the 32 products in
// eight exact int32 lanes of four, into the lanes' offset correction
// (−8, −16 or −128 times the activations' lane sums, packed beside them),
// so a lane holds exactly core/ggml's Dot lane sum. Then, as Dot: the
// lane converted to float32, times float32(d_w·d_a), added (no FMA) into
// the pair's own eight float32 accumulators (the sixteen of a 4×4 tile
// live in Y16–Y31), reduced at the end as Dot does,
// ((l0+l4)+(l1+l5))+((l2+l6)+(l3+l7)), into the output.
//
// The activations come packed by the caller for a group of R rows: per
// block R×32 int8 values, R×8 int32 corrections, R float32 scales
// (68·R bytes a block), one stream. Weight rows are ldw bytes apart; the
// next tile's rows are prefetched at the pace these are read.
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	consts()
	for _, t := range []string{"Q4_0", "Q5_0", "Q8_0"} {
		for r := 1; r <= 4; r++ {
			tile(t, r)
		}
	}
	Generate()
}

var c0F, c10, c80, qhShuf, qhBits Mem

func bytes32(name string, f func(i int) byte) Mem {
	m := GLOBL(name, RODATA|NOPTR)
	for i := 0; i < 32; i += 8 {
		var v uint64
		for b := 7; b >= 0; b-- {
			v = v<<8 | uint64(f(i+b))
		}
		DATA(i, U64(v))
	}
	return m
}

func consts() {
	c0F = bytes32("qgemm_c0f", func(int) byte { return 0x0F })
	c10 = bytes32("qgemm_c10", func(int) byte { return 0x10 })
	c80 = bytes32("qgemm_c80", func(int) byte { return 0x80 })
	// bit j of a broadcast uint32 to byte j: byte j takes source byte j/8
	qhShuf = bytes32("qgemm_qhshuf", func(i int) byte { return byte(i / 8) })
	qhBits = bytes32("qgemm_qhbits", func(i int) byte { return 1 << (i % 8) })
}

// vpdpbusd: acc += u8(u) · s8(sg), four products a lane (AVX-512 VNNI on
// YMM; not in avo's table, emitted raw: Go's assembler knows it).
func vpdpbusd(sg, u, acc Op) {
	Instruction(&ir.Instruction{Opcode: "VPDPBUSD", Operands: []Op{sg, u, acc}, Inputs: []Op{sg, u, acc}, Outputs: []Op{acc}})
}

var ys = []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15,
	Y16, Y17, Y18, Y19, Y20, Y21, Y22, Y23, Y24, Y25, Y26, Y27, Y28, Y29, Y30, Y31}

const sig = "func(nb int, w *uint8, ldw int, a *int8, y *float32, ldy int)"

// tile generates the 4×R kernel of type t.
func tile(t string, R int) {
	name := fmt.Sprintf("qgemm%s4x%dVNNI", t, R)
	bs := map[string]int{"Q4_0": 18, "Q5_0": 22, "Q8_0": 34}[t]
	TEXT(name, NOSPLIT, sig)
	Doc(fmt.Sprintf("%s computes the 4×%d tile of nb %s blocks (weight rows ldw bytes apart, %d packed activation rows at a): output (n, r) to y + r·ldy + 4n bytes (see the package asmgenqgemm).", name, R, t, R))
	Pragma("noescape")
	nb := Load(Param("nb"), GP64())
	w := Load(Param("w"), GP64())
	ldw := Load(Param("ldw"), GP64())
	a := Load(Param("a"), GP64())
	ldw3 := GP64()
	LEAQ(Mem{Base: ldw, Index: ldw, Scale: 2}, ldw3)
	row := func(n, disp int) Mem {
		switch n {
		case 0:
			return Mem{Base: w, Disp: disp}
		case 1:
			return Mem{Base: w, Index: ldw, Scale: 1, Disp: disp}
		case 2:
			return Mem{Base: w, Index: ldw, Scale: 2, Disp: disp}
		}
		return Mem{Base: w, Index: ldw3, Scale: 1, Disp: disp}
	}
	acc := func(n, r int) VecPhysical { return ys[16+4*n+r] }
	for n := 0; n < 4; n++ {
		for r := 0; r < R; r++ {
			VXORPS(acc(n, r), acc(n, r), acc(n, r))
		}
	}
	pf := GP64()
	LEAQ(Mem{Base: w, Index: ldw, Scale: 4}, pf)
	qs := 2 // the quants' offset in a block (Q5_0: after qh)
	switch t {
	case "Q8_0":
		VMOVDQU(c80, Y15)
	case "Q5_0":
		qs = 6
	}
	p := name + "_"
	Label(p + "block")
	TESTQ(nb, nb)
	JZ(LabelRef(p + "done"))
	for o := 0; o < 4*bs; o += 64 {
		PREFETCHT0(Mem{Base: pf, Disp: o})
	}
	ADDQ(U32(uint32(4*bs)), pf)
	// the four weight blocks, unsigned, in Y0–Y3; their scales in Y4–Y7
	for n := 0; n < 4; n++ {
		q := ys[n]
		switch t {
		case "Q8_0":
			VPXOR(row(n, 2), Y15, q)
		default:
			VMOVDQU(row(n, qs), q.AsX())
			VPSRLW(U8(4), q.AsX(), X14)
			VINSERTI128(U8(1), X14, q, q)
			VPAND(c0F, q, q)
			if t == "Q5_0" {
				VPBROADCASTD(row(n, 2), Y15)
				VPSHUFB(qhShuf, Y15, Y15)
				VPAND(qhBits, Y15, Y15)
				VPCMPEQB(qhBits, Y15, Y15)
				VPAND(c10, Y15, Y15)
				VPOR(Y15, q, q)
			}
		}
		VPBROADCASTW(row(n, 0), X14)
		VCVTPH2PS(X14, ys[4+n])
	}
	for r := 0; r < R; r++ {
		VMOVDQU(Mem{Base: a, Disp: 32*R + 32*r}, Y8)
		VBROADCASTSS(Mem{Base: a, Disp: 64*R + 4*r}, Y9)
		for n := 0; n < 4; n++ {
			tt, s := ys[10+n%2], ys[12+n%2]
			VMOVDQA(Y8, tt)
			vpdpbusd(Mem{Base: a, Disp: 32 * r}, ys[n], tt)
			VCVTDQ2PS(tt, tt)
			VMULPS(Y9, ys[4+n], s) // d_w·d_a, one rounding
			VMULPS(s, tt, tt)
			VADDPS(tt, acc(n, r), acc(n, r))
		}
	}
	ADDQ(U8(int8(bs)), w)
	ADDQ(U32(uint32(68*R)), a)
	DECQ(nb)
	JMP(LabelRef(p + "block"))
	Label(p + "done")
	// each pair's eight lanes reduced as ((l0+l4)+(l1+l5))+((l2+l6)+(l3+l7)),
	// output (n, r) to y + r·ldy + 4n
	y := Load(Param("y"), GP64())
	ldy := Load(Param("ldy"), GP64())
	ldy3 := GP64()
	LEAQ(Mem{Base: ldy, Index: ldy, Scale: 2}, ldy3)
	out := func(n, r int) Mem {
		switch r {
		case 0:
			return Mem{Base: y, Disp: 4 * n}
		case 1:
			return Mem{Base: y, Index: ldy, Scale: 1, Disp: 4 * n}
		case 2:
			return Mem{Base: y, Index: ldy, Scale: 2, Disp: 4 * n}
		}
		return Mem{Base: y, Index: ldy3, Scale: 1, Disp: 4 * n}
	}
	for n := 0; n < 4; n++ {
		for r := 0; r < R; r++ {
			VMOVAPS(acc(n, r), Y10)
			VEXTRACTF128(U8(1), Y10, X11)
			VADDPS(X11, X10, X11)
			VHADDPS(X11, X11, X11)
			VHADDPS(X11, X11, X11)
			VMOVSS(X11, out(n, r))
		}
	}
	VZEROUPPER()
	RET()
}
