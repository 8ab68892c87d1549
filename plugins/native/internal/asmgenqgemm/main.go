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
// lane converted to float32 and added times float32(d_w·d_a) by a fused
// multiply-add into the pair's own eight float32 accumulators (the
// sixteen of a 4×4 tile live in Y16–Y31), reduced at the end as Dot does,
// ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)), into the output.
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
	"github.com/switchyard-hal/switchyard/plugins/native/internal/avokit"
)

func main() {
	consts()
	for _, t := range []string{"Q4_0", "Q5_0", "Q8_0"} {
		for r := 1; r <= 4; r++ {
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

var c0F, c30, c10, c80, qhShuf, qhBits Mem

// bytes32 is avokit.Bytes32.
var bytes32 = avokit.Bytes32

func consts() {
	c0F = bytes32("qgemm_c0f", func(int) byte { return 0x0F })
	c30 = bytes32("qgemm_c30", func(int) byte { return 0x30 })
	c10 = bytes32("qgemm_c10", func(int) byte { return 0x10 })
	c80 = bytes32("qgemm_c80", func(int) byte { return 0x80 })
	// bit j of a broadcast uint32 to byte j: byte j takes source byte j/8
	qhShuf = bytes32("qgemm_qhshuf", func(i int) byte { return byte(i / 8) })
	qhBits = bytes32("qgemm_qhbits", func(i int) byte { return 1 << (i % 8) })
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

// unpack32 sets q (a YMM) to block disp's 32 unsigned quants of type t
// at weight row mem m (X14, Y15 scratch; Q8_0 takes c80 in Y15).
func unpack32(t string, q VecPhysical, m func(disp int) Mem, disp int) {
	switch t {
	case "Q8_0":
		VPXOR(m(disp+2), Y15, q)
	case "Q4_0":
		VMOVDQU(m(disp+2), q.AsX())
		VPSRLW(U8(4), q.AsX(), X14)
		VINSERTI128(U8(1), X14, q, q)
		VPAND(c0F, q, q)
	default:
		VMOVDQU(m(disp+6), q.AsX())
		VPSRLW(U8(4), q.AsX(), X14)
		VINSERTI128(U8(1), X14, q, q)
		VPAND(c0F, q, q)
		VPBROADCASTD(m(disp+2), Y13)
		VPSHUFB(qhShuf, Y13, Y13)
		VPAND(qhBits, Y13, Y13)
		VPCMPEQB(qhBits, Y13, Y13)
		VPAND(c10, Y13, Y13)
		VPOR(Y13, q, q)
	}
}

// tilePairs is the kernel's loop over pairs of blocks, while two are
// left: ZMM registers hold the two blocks side by side (block b in the
// low 256 bits, b+1 in the high), so one VPDPBUSD, conversion and the two
// multiplications serve both; the high half is then added into the
// accumulator after the low one, keeping Dot's order. The activations
// are packed by pairs there: per row 64 values, then per row 16
// corrections, then per row the two scales (136·R bytes a pair).
func tilePairs(t string, R int, p string, nb, w, a, pf Register, row func(n, disp int) Mem, acc func(n, r int) VecPhysical) {
	bs := map[string]int{"Q4_0": 18, "Q5_0": 22, "Q8_0": 34}[t]
	Label(p + "pair")
	CMPQ(nb, U8(2))
	JB(LabelRef(p + "block"))
	for o := 0; o < 8*bs; o += 64 {
		PREFETCHT0(Mem{Base: pf, Disp: o})
	}
	ADDQ(U32(uint32(8*bs)), pf)
	for n := 0; n < 4; n++ {
		m := func(d int) Mem { return row(n, d) }
		unpack32(t, ys[n], m, 0)
		unpack32(t, Y12, m, bs)
		VINSERTI32X8(U8(1), Y12, zs[n], zs[n])
		VPBROADCASTW(row(n, 0), X14)
		VCVTPH2PS(X14, ys[4+n])
		VPBROADCASTW(row(n, bs), X14)
		VCVTPH2PS(X14, Y12)
		VINSERTF32X8(U8(1), Y12, zs[4+n], zs[4+n])
	}
	for r := 0; r < R; r++ {
		VMOVDQU64(Mem{Base: a, Disp: 64*R + 64*r}, Z8)
		VBROADCASTSS(Mem{Base: a, Disp: 128*R + 8*r}, Y9)
		VBROADCASTSS(Mem{Base: a, Disp: 128*R + 8*r + 4}, Y12)
		VINSERTF32X8(U8(1), Y12, Z9, Z9)
		for n := 0; n < 4; n++ {
			tt, sc := zs[10+n%2], zs[12+n%2]
			VMOVDQA64(Z8, tt)
			vpdpbusd(Mem{Base: a, Disp: 64 * r}, zs[n], tt)
			VCVTDQ2PS(tt, tt)
			VMULPS(Z9, zs[4+n], sc) // d_w·d_a, one rounding
			VFMADD231PS(sc.AsY(), tt.AsY(), acc(n, r))
			VEXTRACTF32X8(U8(1), tt, tt.AsY())
			VEXTRACTF32X8(U8(1), sc, sc.AsY())
			VFMADD231PS(sc.AsY(), tt.AsY(), acc(n, r))
		}
	}
	ADDQ(U32(uint32(2*bs)), w)
	ADDQ(U32(uint32(136*R)), a)
	SUBQ(U8(2), nb)
	JMP(LabelRef(p + "pair"))
}

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
	row := avokit.Rows4(w, ldw, ldw3)
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
	tilePairs(t, R, p, nb, w, a, pf, row, acc)
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
			VFMADD231PS(s, tt, acc(n, r))
		}
	}
	ADDQ(U8(int8(bs)), w)
	ADDQ(U32(uint32(68*R)), a)
	DECQ(nb)
	JMP(LabelRef(p + "block"))
	Label(p + "done")
	// each pair's eight lanes reduced as ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)),
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
			VMOVHLPS(X11, X11, X10)
			VADDPS(X10, X11, X11)
			VMOVSHDUP(X11, X10)
			VADDSS(X10, X11, X11)
			VMOVSS(X11, out(n, r))
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
