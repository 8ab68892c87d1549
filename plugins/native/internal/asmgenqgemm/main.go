// Command asmgenqgemm generates the amd64 assembly of the native backend's
// tiled integer GEMM for ggml's 32-element block types (Q4_0, Q5_0, Q8_0;
// see the package native's qgemm.go) with avo
// (github.com/mmcloughlin/avo). It writes its own pair of files; the
// package's TestGeneratedAssemblyIsCurrent runs it and fails when they are
// stale.
//
//	go run ./plugins/native/internal/asmgenqgemm -out plugins/native/qgemm_amd64.s -stubs plugins/native/qgemm_stubs_amd64.go -pkg native
//
// A 32-element type's kernel computes a tile of 4 weight rows × R
// activation rows (R = 1…8, in pairs: see tile) over nb blocks of 32;
// a K type's 4 × R (R = 1…4; see tileK) over nb super-blocks. Each weight
// block is unpacked once to unsigned bytes (Q4_0: the nibbles, Q5_0: the
// nibbles and the 5th bits, Q8_0: the int8 values plus 128) and its scale
// converted once, then used for the R activation rows: VPDPBUSD (AVX-512
// VNNI) sums the 32 products in eight exact int32 lanes of four, into the
// lanes' offset correction (−8, −16 or −128 times the activations' lane
// sums, packed beside them), so a lane holds exactly core/ggml's Dot lane
// sum. Then, as Dot: the lane converted to float32, times
// float32(d_w·d_a), added (no FMA) into the pair's own eight float32
// accumulators, reduced at the end as Dot does,
// ((l0+l4)+(l1+l5))+((l2+l6)+(l3+l7)), into the output.
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
	for _, t := range []string{"Q4_0", "Q5_0", "Q8_0"} {
		for r := 1; r <= tileRows; r++ {
			tile(t, r)
		}
	}
	for _, t := range []string{"Q4_K", "Q6_K"} {
		for r := 1; r <= 4; r++ {
			tileK(t, r)
		}
	}
	Generate()
}

var c0F, c30 Mem

// the 32-element tiles' 64-byte tables: 0x0F, 0x10, 0x80 bytes and the
// word shifts 0, 4, 0, 4 of the four 128-bit lanes
var c0Fz, c10z, c80z, shiftZ Mem

// bytes32 is avokit.Bytes32.
var bytes32 = avokit.Bytes32

func consts() {
	c0F = bytes32("qgemm_c0f", func(int) byte { return 0x0F })
	c30 = bytes32("qgemm_c30", func(int) byte { return 0x30 })
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
// halves (Q4_0: the 16 bytes broadcast, the high nibbles of lanes 1 and 3
// shifted down, masked; Q5_0: then 0x10 added under the mask of its
// 32 high bits twice; Q8_0: the 32 bytes broadcast, xor 0x80), its
// float16 scale converted to 16 float32s.
//
// The activations come packed by the caller for the group of R rows
// (P = ⌈R/2⌉ pairs; an odd R's last pair has a zero row): per block, per
// pair the two rows' 32 int8 values (64 bytes), then per pair the two
// rows' eight int32 corrections (−8, −16 or −128 times the lane sums),
// then per pair the two rows' scales, each repeated eight times as
// float32: 192·P bytes a block.
func tile(t string, R int) {
	name := fmt.Sprintf("qgemm%s4x%dZ", t, R)
	bs := map[string]int{"Q4_0": 18, "Q5_0": 22, "Q8_0": 34}[t]
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
		case "Q4_0":
			VBROADCASTI32X4(row(n, 2), q)
			VPSRLVW(Z14, q, q)
			VPANDD(Z15, q, q)
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
			VMULPS(Z13, zs[4+n], sc) // d_w·d_a, one rounding
			VMULPS(sc, tt, tt)
			VADDPS(tt, acc(n, pp), acc(n, pp))
		}
	}
	ADDQ(U8(int8(bs)), w)
	ADDQ(U32(uint32(192*P)), a)
	DECQ(nb)
	JMP(LabelRef(p + "block"))
	Label(p + "done")
	// each pair's eight lanes reduced as ((l0+l4)+(l1+l5))+((l2+l6)+(l3+l7)),
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
		VADDPS(X12, v.AsX(), X12)
		VHADDPS(X12, X12, X12)
		VHADDPS(X12, X12, X12)
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

// sideBytes is the per-row, per-super-block side data the caller unpacks
// for a K-type tile (see tileK).
const sideBytes = 384

const sigK = "func(nb int, w *uint8, ldw int, a *int8, side *uint32, y *float32, ldy int)"

// tileK generates the 4×R kernel of a K type (Q4_K, Q6_K). Per
// super-block each pair's exact int32 S = Σ scale·Σ q·x is summed in the
// lanes of one of Y16–Y31: VPMADDUBSW of the unsigned quants with x (pairs
// of products, within int16), then VPDPWSSD with the scales as words;
// Q6_K's offset 32 joins S as −32·Σ_g sc_g·Σx_g (VPDPWSSD of the rows'
// 16-value sums with the side's −32·sc_g). Then as core/ggml's Dot: acc +=
// float32(S)·float32(d·d_a), and for Q4_K acc −= float32(M)·float32(dmin·d_a)
// with M = Σ m_s·Σx_s (VPMULLD of the side's minimums with the rows'
// 32-value sums), in float32, the accumulator being the output itself.
//
// side: per super-block, per weight row (sideBytes each, the four rows
// one after the other): eight 32-byte scale vectors as int16 words (Q4_K:
// sub-block s's scale in every word of vector s; Q6_K: vector 4h+k holds
// group 8h+2k's scale in its low 16 bytes and group 8h+2k+1's in the high
// ones), at 256 the minimums (Q4_K, 8 int32) or −32·sc_g (Q6_K, 16 int32
// with zero high words), at 320 d and at 324 dmin (float32).
//
// a: per super-block, per row of the group, 256 int8 values, then per row
// 16 int32 sums (Q4_K: the eight 32-value sums; Q6_K: the sixteen
// 16-value sums), then per row the float32 scale: 324·R bytes.
func tileK(t string, R int) {
	name := fmt.Sprintf("qgemm%s4x%dVNNI", t, R)
	bs := map[string]int{"Q4_K": 144, "Q6_K": 210}[t]
	TEXT(name, NOSPLIT, sigK)
	Doc(fmt.Sprintf("%s computes the 4×%d tile of nb %s super-blocks (weight rows ldw bytes apart, their unpacked scales at side, %d packed activation rows at a): output (n, r) to y + r·ldy + 4n bytes (see the package asmgenqgemm).", name, R, t, R))
	Pragma("noescape")
	nb := Load(Param("nb"), GP64())
	w := Load(Param("w"), GP64())
	ldw := Load(Param("ldw"), GP64())
	a := Load(Param("a"), GP64())
	side := Load(Param("side"), GP64())
	y := Load(Param("y"), GP64())
	ldy := Load(Param("ldy"), GP64())
	ldw3 := GP64()
	LEAQ(Mem{Base: ldw, Index: ldw, Scale: 2}, ldw3)
	row := avokit.Rows4(w, ldw, ldw3)
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
	sd := func(n, disp int) Mem { return Mem{Base: side, Disp: n*sideBytes + disp} }
	xq := func(r, disp int) Mem { return Mem{Base: a, Disp: 256*r + disp} }
	xsum := func(r, disp int) Mem { return Mem{Base: a, Disp: 256*R + 64*r + disp} }
	xd := func(r int) Mem { return Mem{Base: a, Disp: 320*R + 4*r} }
	acc := func(n, r int) VecPhysical { return ys[16+4*n+r] }
	// the outputs are the float32 accumulators: zero them
	VXORPS(X14, X14, X14)
	for n := 0; n < 4; n++ {
		for r := 0; r < R; r++ {
			VMOVSS(X14, out(n, r))
		}
	}
	pf := GP64()
	LEAQ(Mem{Base: w, Index: ldw, Scale: 4}, pf)
	VMOVDQU(c0F, Y15)
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
	tt := []VecPhysical{Y8, Y9}
	ti := 0
	madd := func(x Mem, q VecPhysical, scv Mem, n, r int) {
		u := tt[ti%2]
		ti++
		VPMADDUBSW(x, q, u)
		raw("VPDPWSSD", scv, u, acc(n, r))
	}
	if t == "Q4_K" {
		for c := 0; c < 4; c++ {
			for n := 0; n < 4; n++ {
				lo, hi := ys[2*n], ys[2*n+1]
				VMOVDQU(row(n, 16+32*c), lo)
				VPSRLW(U8(4), lo, hi)
				VPAND(Y15, lo, lo)
				VPAND(Y15, hi, hi)
			}
			for half := 0; half < 2; half++ {
				s := 2*c + half
				for r := 0; r < R; r++ {
					for n := 0; n < 4; n++ {
						madd(xq(r, 32*s), ys[2*n+half], sd(n, 32*s), n, r)
					}
				}
			}
		}
	} else {
		VMOVDQU(c30, Y14)
		for h := 0; h < 2; h++ {
			for k := 0; k < 4; k++ {
				for n := 0; n < 4; n++ {
					u := ys[n]
					VMOVDQU(row(n, 64*h+32*(k&1)), u)
					if k >= 2 {
						VPSRLW(U8(4), u, u)
					}
					VPAND(Y15, u, u)
					// ((qh >> 2k) & 3) << 4 as one shift and a mask
					VMOVDQU(row(n, 128+32*h), Y12)
					switch k {
					case 0, 1:
						VPSLLW(U8(4-2*k), Y12, Y12)
					case 3:
						VPSRLW(U8(2), Y12, Y12)
					}
					VPAND(Y14, Y12, Y12)
					VPOR(Y12, u, u)
				}
				for r := 0; r < R; r++ {
					for n := 0; n < 4; n++ {
						madd(xq(r, 128*h+32*k), ys[n], sd(n, 32*(4*h+k)), n, r)
					}
				}
			}
		}
		// the offset: S += Σ_g (−32·sc_g)·Σx_g
		for r := 0; r < R; r++ {
			VMOVDQU(xsum(r, 0), Y10)
			VMOVDQU(xsum(r, 32), Y11)
			for n := 0; n < 4; n++ {
				raw("VPDPWSSD", sd(n, 256), Y10, acc(n, r))
				raw("VPDPWSSD", sd(n, 288), Y11, acc(n, r))
			}
		}
	}
	// S (and M) of each pair to float32 and into the output
	for r := 0; r < R; r++ {
		VBROADCASTSS(xd(r), X13)
		if t == "Q4_K" {
			VMOVDQU(xsum(r, 0), Y11)
		}
		for n := 0; n < 4; n++ {
			VMOVDQA64(acc(n, r), Y10)
			if t == "Q4_K" {
				VPMULLD(sd(n, 256), Y11, Y12)
			} else {
				VPXOR(Y12, Y12, Y12)
			}
			// [S0+S1, S2+S3, M0+M1, M2+M3 | …] then [S, M, S, M]
			VPHADDD(Y12, Y10, Y10)
			VEXTRACTI128(U8(1), Y10, X12)
			VPADDD(X12, X10, X10)
			VPHADDD(X10, X10, X10)
			VCVTDQ2PS(X10, X10)
			VMOVSD(sd(n, 320), X12)
			VMULPS(X13, X12, X12) // d·d_a, dmin·d_a: one rounding each
			VMULPS(X12, X10, X10)
			VMOVSS(out(n, r), X12)
			VADDSS(X10, X12, X12)
			if t == "Q4_K" {
				VMOVSHDUP(X10, X10)
				VSUBSS(X10, X12, X12)
			}
			VMOVSS(X12, out(n, r))
		}
	}
	ADDQ(U32(uint32(bs)), w)
	ADDQ(U32(uint32(324*R)), a)
	ADDQ(U32(uint32(4*sideBytes)), side)
	DECQ(nb)
	JMP(LabelRef(p + "block"))
	Label(p + "done")
	VZEROUPPER()
	RET()
}
