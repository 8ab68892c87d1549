// Command asmgenqgemm generates the amd64 assembly of the native backend's
// tiled integer GEMM for ggml's 32-element block types Q5_0 and Q8_0 (Q4_0
// has its own tiles in llama.cpp's repacked order: asmgenq40; see the
// package native's qgemm.go) with avo
// (github.com/mmcloughlin/avo). It writes its own pair of files; the
// package's TestGeneratedAssemblyIsCurrent runs it and fails when they are
// stale.
//
//	go run ./plugins/native/internal/asmgenqgemm -out plugins/native/qgemm_amd64.s -stubs plugins/native/qgemm_stubs_amd64.go -pkg native
//
// A 32-element type's kernel computes a tile of 4 weight rows × R
// activation rows (R = 1…8, in pairs: see tile) over nb blocks of 32;
// a K type's 4 × R (R = 1…4; see tileK) over nb super-blocks. Each weight
// block is unpacked once to unsigned bytes (Q5_0: the
// nibbles and the 5th bits, Q8_0: the int8 values plus 128) and its scale
// converted once, then used for the R activation rows: VPDPBUSD (AVX-512
// VNNI) sums the 32 products in eight exact int32 lanes of four, into the
// lanes' offset correction (−16 or −128 times the activations' lane
// sums, packed beside them), so a lane holds exactly core/ggml's Dot lane
// sum. Then, as Dot: the lane converted to float32 and added times
// float32(d_w·d_a) by a fused multiply-add into the pair's own eight
// float32 accumulators, reduced at the end as Dot does (llama.cpp's x86
// order), ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)), into the output.
//
// Weight rows are ldw bytes apart; the next tile's rows are prefetched at
// the pace these are read.
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
	consts()
	for _, t := range []string{"Q5_0", "Q8_0"} { // Q4_0: asmgenq40, in llama.cpp's repacked order
		for r := 1; r <= tileRows; r++ {
			tile(t, r)
		}
	}
	constsK()
	for _, t := range []string{"Q4_K", "Q6_K"} {
		for r := 1; r <= 4; r++ {
			tileKZ(t, r)
		}
	}
	Generate()
}

// the 32-element tiles' 64-byte tables: 0x0F, 0x10, 0x80 bytes and the
// word shifts 0, 4, 0, 4 of the four 128-bit lanes
var c0Fz, c10z, c80z, shiftZ Mem

func consts() {
	c0Fz = avokit.Bytes("qgemm_c0fz", 64, func(int) byte { return 0x0F })
	c10z = avokit.Bytes("qgemm_c10z", 64, func(int) byte { return 0x10 })
	c80z = avokit.Bytes("qgemm_c80z", 64, func(int) byte { return 0x80 })
	shiftZ = avokit.Bytes("qgemm_shiftz", 64, func(i int) byte {
		if i%2 == 0 && (i/16)%2 == 1 {
			return 4
		}
		return 0
	})
}

// raw emits an instruction avo's table lacks (Go's assembler knows it).
func raw(op string, ops ...Op) {
	Instruction(&ir.Instruction{Opcode: op, Operands: ops, Inputs: ops, Outputs: ops[len(ops)-1:]})
}

// vpdpbusd: acc += u8(u) · s8(sg), four products a lane (AVX-512 VNNI on
// YMM; not in avo's table, emitted raw: Go's assembler knows it).
func vpdpbusd(sg, u, acc Op) {
	Instruction(&ir.Instruction{Opcode: "VPDPBUSD", Operands: []Op{sg, u, acc}, Inputs: []Op{sg, u, acc}, Outputs: []Op{acc}})
}

var ys = []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15,
	Y16, Y17, Y18, Y19, Y20, Y21, Y22, Y23, Y24, Y25, Y26, Y27, Y28, Y29, Y30, Y31}

const sig = "func(nb int, w *uint8, ldw int, a *int8, y *float32, ldy int)"

var zs = []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15}

var zs32 = append(zs[:16:16], Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31)

// tileRows is the most activation rows a 32-element type's tile takes.
const tileRows = 8

// tile generates the 4×R kernel of the 32-element type t (R = 1…8).
//
// The activation rows go in pairs: a ZMM accumulator holds the eight
// float32 lanes of weight row n with activation row 2p in its low half
// and with row 2p+1 in its high half, so one VPDPBUSD, conversion,
// product of scales, multiplication and addition serve two (n, r) pairs
// of one block, each lane in Dot's order (blocks one after the other).
// The weight block is unpacked once to 32 unsigned bytes repeated in both
// halves (Q5_0: the 16 bytes broadcast, the high nibbles of lanes 1 and 3
// shifted down, masked, then 0x10 added under the mask of its
// 32 high bits twice; Q8_0: the 32 bytes broadcast, xor 0x80), its
// float16 scale converted to 16 float32s.
//
// The activations come packed by the caller for the group of R rows
// (P = ⌈R/2⌉ pairs; an odd R's last pair has a zero row): per block, per
// pair the two rows' 32 int8 values (64 bytes), then per pair the two
// rows' eight int32 corrections (−16 or −128 times the lane sums),
// then per pair the two rows' scales, each repeated eight times as
// float32: 192·P bytes a block.
func tile(t string, R int) {
	name := fmt.Sprintf("qgemm%s4x%dZ", t, R)
	bs := map[string]int{"Q5_0": 22, "Q8_0": 34}[t]
	P := (R + 1) / 2
	TEXT(name, NOSPLIT, sig)
	Doc(fmt.Sprintf("%s computes the 4×%d tile of nb %s blocks (weight rows ldw bytes apart, %d packed activation rows at a): output (n, r) to y + r·ldy + 4n bytes (see the package asmgenqgemm).", name, R, t, R))
	Pragma("noescape")
	nb := Load(Param("nb"), GP64())
	w := Load(Param("w"), GP64())
	ldw := Load(Param("ldw"), GP64())
	a := Load(Param("a"), GP64())
	ldw3 := GP64()
	LEAQ(Mem{Base: ldw, Index: ldw, Scale: 2}, ldw3)
	row := avokit.Rows4(w, ldw, ldw3)
	acc := func(n, p int) VecPhysical { return zs32[16+4*p+n] }
	for n := 0; n < 4; n++ {
		for p := 0; p < P; p++ {
			VPXORD(acc(n, p), acc(n, p), acc(n, p))
		}
	}
	pf := GP64()
	LEAQ(Mem{Base: w, Index: ldw, Scale: 4}, pf)
	switch t {
	case "Q8_0":
		VMOVDQU64(c80z, Z15)
	default:
		VMOVDQU64(c0Fz, Z15)
		VMOVDQU64(shiftZ, Z14)
	}
	xq := func(p int) Mem { return Mem{Base: a, Disp: 64 * p} }
	corr := func(p int) Mem { return Mem{Base: a, Disp: 64*P + 64*p} }
	da := func(p int) Mem { return Mem{Base: a, Disp: 128*P + 64*p} }
	p := name + "_"
	Label(p + "block")
	TESTQ(nb, nb)
	JZ(LabelRef(p + "done"))
	for o := 0; o < 4*bs; o += 64 {
		PREFETCHT0(Mem{Base: pf, Disp: o})
	}
	ADDQ(U32(uint32(4*bs)), pf)
	// the four weight blocks, unsigned and repeated, in Z0–Z3; their
	// scales in Z4–Z7
	for n := 0; n < 4; n++ {
		q := zs[n]
		switch t {
		case "Q8_0":
			VBROADCASTI32X8(row(n, 2), q)
			VPXORD(Z15, q, q)
		default:
			VBROADCASTI32X4(row(n, 6), q)
			VPSRLVW(Z14, q, q)
			VPANDD(Z15, q, q)
			KMOVD(row(n, 2), K1)
			KUNPCKDQ(K1, K1, K1)
			VPADDB(c10z, q, K1, q)
		}
		VPBROADCASTW(row(n, 0), Y8)
		VCVTPH2PS(Y8, zs[4+n])
	}
	for pp := 0; pp < P; pp++ {
		VMOVDQU64(corr(pp), Z12)
		VMOVUPS(da(pp), Z13)
		for n := 0; n < 4; n++ {
			tt, sc := zs[8+n%2], zs[10+n%2]
			VMOVDQA64(Z12, tt)
			vpdpbusd(xq(pp), zs[n], tt)
			VCVTDQ2PS(tt, tt)
			VMULPS(Z13, zs[4+n], sc)        // d_w·d_a, one rounding
			VFMADD231PS(sc, tt, acc(n, pp)) // acc += lanes·(d_w·d_a), one rounding
		}
	}
	ADDQ(U8(int8(bs)), w)
	ADDQ(U32(uint32(192*P)), a)
	DECQ(nb)
	JMP(LabelRef(p + "block"))
	Label(p + "done")
	// each pair's eight lanes reduced as ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)),
	// output (n, r) to y + r·ldy + 4n
	y := Load(Param("y"), GP64())
	ldy := Load(Param("ldy"), GP64())
	ldy3 := GP64()
	LEAQ(Mem{Base: ldy, Index: ldy, Scale: 2}, ldy3)
	y4 := GP64()
	LEAQ(Mem{Base: y, Index: ldy, Scale: 4}, y4)
	out := func(n, r int) Mem {
		b := Register(y)
		if r >= 4 {
			b = y4
		}
		switch r % 4 {
		case 0:
			return Mem{Base: b, Disp: 4 * n}
		case 1:
			return Mem{Base: b, Index: ldy, Scale: 1, Disp: 4 * n}
		case 2:
			return Mem{Base: b, Index: ldy, Scale: 2, Disp: 4 * n}
		}
		return Mem{Base: b, Index: ldy3, Scale: 1, Disp: 4 * n}
	}
	reduce := func(v VecPhysical, o Mem) {
		VEXTRACTF128(U8(1), v, X12)
		VADDPS(X12, v.AsX(), X12) // l0+l4, l1+l5, l2+l6, l3+l7
		VMOVHLPS(X12, X12, X13)
		VADDPS(X13, X12, X12) // (l0+l4)+(l2+l6), (l1+l5)+(l3+l7)
		VMOVSHDUP(X12, X13)
		VADDSS(X13, X12, X12)
		VMOVSS(X12, o)
	}
	for n := 0; n < 4; n++ {
		for pp := 0; pp < P; pp++ {
			VMOVAPS(acc(n, pp).AsY(), Y10)
			reduce(Y10, out(n, 2*pp))
			if 2*pp+1 < R {
				VEXTRACTF32X8(U8(1), acc(n, pp), Y11)
				reduce(Y11, out(n, 2*pp+1))
			}
		}
	}
	VZEROUPPER()
	RET()
}

// the K types' ZMM tables: word shifts 0 (low 256 bits) and 4 (high);
// Q6_K's high-bit shifts (left 4 and 2; right 0 and 2); 0x30 bytes; the
// in-lane byte shuffles that spread Q4_K's scale word 2c over the low
// 256 bits and 2c+1 over the high ones (chunk c = 0…3) and Q6_K's four
// group scales over eight bytes each
var shift256, q6shl, q6shr, c30z, c0Fk Mem
var k4ctl [4]Mem
var q6ctl Mem

// Q4_K's vector scale unpacking (k4ScalesZ): the byte shuffles making P
// and Q, and the masks of the three terms
var k4P, k4Q, k4M1, k4M2, k4M3 Mem

func constsK() {
	word := func(name string, f func(w int) int) Mem {
		return avokit.Bytes(name, 64, func(i int) byte {
			if i%2 == 1 {
				return 0
			}
			return byte(f(i / 2))
		})
	}
	shift256 = word("qgemm_shift256", func(w int) int { return 4 * (w / 16) })
	q6shl = word("qgemm_q6shl", func(w int) int { return 4 - 2*(w/16) })
	q6shr = word("qgemm_q6shr", func(w int) int { return 2 * (w / 16) })
	c30z = avokit.Bytes("qgemm_c30z", 64, func(int) byte { return 0x30 })
	c0Fk = avokit.Bytes("qgemm_c0fk", 64, func(int) byte { return 0x0F })
	for c := 0; c < 4; c++ {
		k4ctl[c] = avokit.Bytes(fmt.Sprintf("qgemm_k4ctl%d", c), 64, func(i int) byte {
			s := 2*c + i/32 // the scale word of this byte's half
			return byte(2*s + i%2)
		})
	}
	q6ctl = avokit.Bytes("qgemm_q6ctl", 64, func(i int) byte { return byte((i % 32) / 8) })
	lane16 := func(name string, f func(j int) byte) Mem {
		return avokit.Bytes(name, 64, func(i int) byte { return f(i % 16) })
	}
	k4P = lane16("qgemm_k4p", func(j int) byte { return [16]byte{0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11}[j] })
	k4Q = lane16("qgemm_k4q", func(j int) byte {
		return [16]byte{0x80, 0x80, 0x80, 0x80, 0, 1, 2, 3, 0x80, 0x80, 0x80, 0x80, 4, 5, 6, 7}[j]
	})
	k4M1 = lane16("qgemm_k4m1", func(j int) byte { return [4]byte{0x3f, 0x0f, 0x3f, 0}[j/4] })
	k4M2 = lane16("qgemm_k4m2", func(j int) byte { return [4]byte{0, 0, 0, 0x0f}[j/4] })
	k4M3 = lane16("qgemm_k4m3", func(j int) byte { return [4]byte{0, 0x30, 0, 0x30}[j/4] })
}

// k4ScalesZ unpacks the four rows' Q4_K scales and mins at once (core/
// ggml's 6-bit packing of twelve bytes): with q the row's twelve bytes,
// scale j < 4 is q[j]&63, min j < 4 q[j+4]&63, scale j ≥ 4
// (q[j+4]&15) | (q[j-4]>>6)<<4, min j ≥ 4 (q[j+4]>>4) | (q[j]>>6)<<4.
// Row n's bytes in lane n of Z4; P (bytes q0–3, q8–11, q4–7, q8–11) and
// Q (0, q0–3, 0, q4–7) shuffled from them; then per lane the scales and
// mins as bytes, P&(63, 15, 63, 0) | (P>>4)&(0, 0, 0, 15) | (Q>>2)&(0,
// 0x30, 0, 0x30) by four bytes; widened to words (rows 0, 1 in Z5, rows 2,
// 3 in Z6: per row its scales, then its mins, in 128-bit lanes), row n's
// scales broadcast to every lane of Zn.
func k4ScalesZ(row func(r, disp int) Mem) {
	VMOVDQU32(row(0, 4), X4)
	for n := 1; n < 4; n++ {
		VINSERTI32X4(U8(n), row(n, 4), Z4, Z4)
	}
	VPSHUFB(k4P, Z4, Z5)
	VPSHUFB(k4Q, Z4, Z6)
	VPANDD(k4M1, Z5, Z7)
	VPSRLW(U8(4), Z5, Z5)
	VPANDD(k4M2, Z5, Z5)
	VPSRLW(U8(2), Z6, Z6)
	VPANDD(k4M3, Z6, Z6)
	VPTERNLOGD(U8(0xfe), Z6, Z5, Z7) // Z7 | Z5 | Z6
	VEXTRACTI64X4(U8(1), Z7, Y4)
	VPMOVZXBW(Y7, Z5)
	VPMOVZXBW(Y4, Z6)
	for n := 0; n < 4; n++ {
		VSHUFI32X4(U8(0x55*uint8(2*(n%2))), zs[5+n/2], zs[5+n/2], zs[n])
	}
}

// tileKZ generates the 4×R kernel (R = 1…4) of a K type (Q4_K, Q6_K) on
// ZMM, the scales unpacked in the kernel. Per super-block each (n, r)
// pair's exact int32 S = Σ scale·Σ q·x is summed in the sixteen lanes of
// one of Z16–Z31: 64 values at a time (Q4_K: a 32-byte chunk's low
// nibbles, sub-block 2c, in the low half and its high nibbles, sub-block
// 2c+1, in the high half; Q6_K: two of the four 32-value planes), the
// weight's unsigned quants by VPMADDUBSW with x (pairs of products, within
// int16), then VPDPWSSD with the scales as words (the 6-bit scales of
// Q4_K spread by an in-lane byte shuffle, Q6_K's signed group scales
// widened); Q6_K's offset 32 joins S as Σ_g (−32·sc_g)·Σx_g (VPDPWSSD
// with the rows' 16-value sums). The sixteen accumulators are then added
// across (unpacks and 128-bit shuffles: integer sums, exact in any order)
// into one vector, lane 4r+n holding S(n, r), and Q4_K's M = Σ m_s·Σx_s
// (VPMADDWD of the mins with the rows' 32-value sums) likewise. Then as
// core/ggml's Dot, for the sixteen pairs at once: acc += float32(S)·
// float32(d·d_a), and for Q4_K acc −= float32(M)·float32(dmin·d_a), in
// float32; acc's lanes r < R are stored at the end.
//
// a: per super-block, the R rows' 256 int8 values (256·R bytes), then
// Q4_K: the 32-value sums as int16, row r in bytes 16r…16r+15 of 64
// (zero for r ≥ R); Q6_K: per row the sixteen 16-value sums as int16 and
// 32 zero bytes (64·R bytes); then the rows' scales, row r's four times
// in bytes 16r…16r+15 of 64 (zero for r ≥ R).
func tileKZ(t string, R int) {
	name := fmt.Sprintf("qgemm%s4x%dKZ", t, R)
	bs := map[string]int{"Q4_K": 144, "Q6_K": 210}[t]
	TEXT(name, NOSPLIT, sig)
	Doc(fmt.Sprintf("%s computes the 4×%d tile of nb %s super-blocks (weight rows ldw bytes apart, %d packed activation rows at a): output (n, r) to y + r·ldy + 4n bytes (see the package asmgenqgemm).", name, R, t, R))
	Pragma("noescape")
	nb := Load(Param("nb"), GP64())
	w := Load(Param("w"), GP64())
	ldw := Load(Param("ldw"), GP64())
	a := Load(Param("a"), GP64())
	ldw3 := GP64()
	LEAQ(Mem{Base: ldw, Index: ldw, Scale: 2}, ldw3)
	row := avokit.Rows4(w, ldw, ldw3)
	acc := func(n, r int) VecPhysical { return zs32[16+4*r+n] }
	xq := func(r, disp int) Mem { return Mem{Base: a, Disp: 256*r + disp} }
	sums := func(r int) Mem { return Mem{Base: a, Disp: 256*R + 64*r} }
	nsums := 1
	if t == "Q6_K" {
		nsums = R
	}
	da := Mem{Base: a, Disp: 256*R + 64*nsums}
	step := 256*R + 64*nsums + 64
	Zo := Z15
	VPXORD(Zo, Zo, Zo)
	pf := GP64()
	LEAQ(Mem{Base: w, Index: ldw, Scale: 4}, pf)
	p := name + "_"
	Label(p + "block")
	TESTQ(nb, nb)
	JZ(LabelRef(p + "done"))
	for o := 0; o < 4*bs; o += 64 {
		PREFETCHT0(Mem{Base: pf, Disp: o})
	}
	ADDQ(U32(uint32(4*bs)), pf)
	for n := 0; n < 4; n++ {
		for r := 0; r < R; r++ {
			VPXORD(acc(n, r), acc(n, r), acc(n, r))
		}
	}
	// per row: Q4_K's scales as words in every 128-bit lane of Z0–Z3, its
	// mins as words kept in Z5 (rows 0, 1) and Z6 (rows 2, 3); Q6_K's
	// −32·sc_g as words in Z0–Z3
	if t == "Q4_K" {
		k4ScalesZ(row)
	}
	for n := 0; n < 4 && t == "Q6_K"; n++ {
		VPMOVSXBW(row(n, 192), ys[n])
		VPSLLW(U8(5), ys[n], ys[n])
		VPXOR(Y9, Y9, Y9)
		VPSUBW(ys[n], Y9, ys[n])
	}
	q, sc, u := Z8, Z9, []VecPhysical{Z10, Z11}
	ui := 0
	madd := func(x Mem, n, r int) {
		v := u[ui%2]
		ui++
		VPMADDUBSW(x, q, v)
		raw("VPDPWSSD", sc, v, acc(n, r))
	}
	for c := 0; c < 4; c++ {
		for n := 0; n < 4; n++ {
			if t == "Q4_K" {
				VBROADCASTI32X8(row(n, 16+32*c), q)
				VPSRLVW(shift256, q, q)
				VPANDD(c0Fk, q, q)
				VPSHUFB(k4ctl[c], zs[n], sc)
			} else {
				h, k := c/2, 2*(c%2)
				VMOVDQU64(row(n, 64*h), q)
				if k == 2 {
					VPSRLW(U8(4), q, q)
				}
				VPANDD(c0Fk, q, q)
				VBROADCASTI32X8(row(n, 128+32*h), Z12)
				if k == 0 {
					VPSLLVW(q6shl, Z12, Z12)
				} else {
					VPSRLVW(q6shr, Z12, Z12)
				}
				VPTERNLOGD(U8(0xf8), c30z, Z12, q) // q | (qh & 0x30)
				VPBROADCASTD(row(n, 192+4*c), sc)
				VPSHUFB(q6ctl, sc, sc)
				VPMOVSXBW(sc.AsY(), sc)
			}
			for r := 0; r < R; r++ {
				madd(xq(r, 64*c), n, r)
			}
		}
	}
	if t == "Q6_K" {
		for n := 0; n < 4; n++ {
			for r := 0; r < R; r++ {
				raw("VPDPWSSD", sums(r), zs[n], acc(n, r))
			}
		}
	}
	// add across: lane 4r+n of Z16 ← S(n, r)
	t1, t2 := Z12, Z13
	pairUnpack := func(lo, hi func(a, b, d Op), x, y VecPhysical) {
		lo(y, x, t1)
		hi(y, x, t2)
		VPADDD(t2, t1, x)
	}
	for r := 0; r < 4; r++ {
		if r >= R {
			VPXORD(acc(0, r), acc(0, r), acc(0, r))
			continue
		}
		pairUnpack(func(a, b, d Op) { VPUNPCKLDQ(a, b, d) }, func(a, b, d Op) { VPUNPCKHDQ(a, b, d) }, acc(0, r), acc(1, r))
		pairUnpack(func(a, b, d Op) { VPUNPCKLDQ(a, b, d) }, func(a, b, d Op) { VPUNPCKHDQ(a, b, d) }, acc(2, r), acc(3, r))
		pairUnpack(func(a, b, d Op) { VPUNPCKLQDQ(a, b, d) }, func(a, b, d Op) { VPUNPCKHQDQ(a, b, d) }, acc(0, r), acc(2, r))
	}
	cross := func(lo, hi uint8, x, y VecPhysical) {
		VSHUFI32X4(U8(lo), y, x, t1)
		VSHUFI32X4(U8(hi), y, x, t2)
		VPADDD(t2, t1, x)
	}
	cross(0x44, 0xee, acc(0, 0), acc(0, 1))
	cross(0x44, 0xee, acc(0, 2), acc(0, 3))
	cross(0x88, 0xdd, acc(0, 0), acc(0, 2))
	S := acc(0, 0)
	// the rows' d (and dmin) in every 128-bit lane
	dv := func(disp int, x VecPhysical) {
		for n := 0; n < 4; n++ {
			VPINSRW(U8(uint8(n)), row(n, disp), x.AsX(), x.AsX())
		}
		VCVTPH2PS(x.AsX(), x.AsX())
		VSHUFF32X4(U8(0), x, x, x)
	}
	dv(map[string]int{"Q4_K": 0, "Q6_K": 208}[t], Z8)
	VMULPS(da, Z8, Z8) // d·d_a, one rounding
	VCVTDQ2PS(S, S)
	VMULPS(Z8, S, S)
	VADDPS(S, Zo, Zo)
	if t == "Q4_K" {
		// M(n, r) = Σ m_s·Σx_s: lane 4r+n of Z17
		for n := 0; n < 4; n++ {
			v := zs32[17+n]
			VSHUFI32X4(U8(0x55*uint8(2*(n%2)+1)), zs[5+n/2], zs[5+n/2], v) // row n's mins: lane 1 or 3
			VPMADDWD(sums(0), v, v)
		}
		pairUnpack(func(a, b, d Op) { VPUNPCKLDQ(a, b, d) }, func(a, b, d Op) { VPUNPCKHDQ(a, b, d) }, Z17, Z18)
		pairUnpack(func(a, b, d Op) { VPUNPCKLDQ(a, b, d) }, func(a, b, d Op) { VPUNPCKHDQ(a, b, d) }, Z19, Z20)
		pairUnpack(func(a, b, d Op) { VPUNPCKLQDQ(a, b, d) }, func(a, b, d Op) { VPUNPCKHQDQ(a, b, d) }, Z17, Z19)
		dv(2, Z8)
		VMULPS(da, Z8, Z8) // dmin·d_a
		VCVTDQ2PS(Z17, Z17)
		VMULPS(Z8, Z17, Z17)
		VSUBPS(Z17, Zo, Zo)
	}
	ADDQ(U32(uint32(bs)), w)
	ADDQ(U32(uint32(step)), a)
	DECQ(nb)
	JMP(LabelRef(p + "block"))
	Label(p + "done")
	y := Load(Param("y"), GP64())
	ldy := Load(Param("ldy"), GP64())
	for r := 0; r < R; r++ {
		VEXTRACTF32X4(U8(uint8(r)), Zo, X8)
		VMOVUPS(X8, Mem{Base: y})
		if r+1 < R {
			ADDQ(ldy, y)
		}
	}
	VZEROUPPER()
	RET()
}
