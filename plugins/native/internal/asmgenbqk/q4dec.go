package main

// bqkQ4_0Dot8V: Q4_0's eight-row ZMM kernel with four blocks of a row in
// one register (AVX-512 VBMI, VNNI, GFNI), the same bits as
// bqkQ4_0Dot8G (z32.go) in fewer instructions a block.
//
// A row's four blocks (72 bytes) come in as two overlapping 64-byte
// loads (bytes 0..63 and 8..71 of the four blocks: nothing read past
// them) and one VPERMI2B gathers their 64 quant bytes, block k in
// 128-bit lane k; GF2P8AFFINEQB moves the high nibbles down, VPANDD
// keeps the low ones. The activations are gathered the same way once
// for the eight rows (x's low halves of the four blocks against the low
// nibbles, the high halves against the high ones), and two VPDPBUSD (the
// nibbles unsigned, x signed) add a row's four blocks' products into
// sixteen int32, lane k block k's four partial sums, starting from −8
// times the same partial sums of x (the offset 8, folded in once for
// the eight rows). The eight rows' registers are reduced together
// (unpack and add: 4·3 + 2·3 instructions, then two VPERMI2Q) into two
// registers of [block k: rows 0..7 | block k+1: rows 0..7] — each value
// a row's exact int32 block sum less 8·Σx, as repBlockZ's — and the
// rows' float16 d of the four blocks (words 0, 9, 18, 27 of the first
// load) are gathered into the same order by four VPERMT2W and three
// VPBLENDMW. Then, as Dot8G, block after block: the sums converted and
// added times float32(d)·d_a by one fused multiply-add into one YMM
// accumulator of the eight rows.
//
// Per four blocks of eight rows about 130 instructions against Dot8G's
// 190 (Dot8G: each block's rows' 16 quant bytes loaded and inserted one
// row at a time, eight masked word broadcasts for the scales, a
// reduction a block). nb must be a multiple of 4 (the caller keeps
// Dot8G for other counts).

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
	"github.com/switchyard-hal/switchyard/plugins/native/internal/avokit"
)

var vIdxQ, vIdxXLo, vIdxXHi, vIdxW, vIdx01, vIdx23, z08 Mem

func constsV() {
	// quant byte j of block k (bytes 18k+2+j of the four blocks) to byte
	// 16k+j: blocks 0..2 from the first load, block 3 from the second
	// (bytes 56..71, its 48..63)
	vIdxQ = avokit.Bytes("bqk_vidxq", 64, func(i int) byte {
		k, j := i/16, i%16
		if k < 3 {
			return byte(18*k + 2 + j)
		}
		return byte(112 + j)
	})
	// x[32k+j] (low halves) and x[32k+16+j] (high) to byte 16k+j, from
	// x[0..63] and x[64..127]
	vIdxXLo = avokit.Bytes("bqk_vidxxlo", 64, func(i int) byte { return byte(32*(i/16) + i%16) })
	vIdxXHi = avokit.Bytes("bqk_vidxxhi", 64, func(i int) byte { return byte(32*(i/16) + 16 + i%16) })
	// word 8k+r: block k's d (word 9k) of the pair's first row (r even)
	// or second (odd)
	vIdxW = words64("bqk_vidxw", func(i int) uint16 {
		k, r := i/8, i%8
		if r%2 == 0 {
			return uint16(9 * k)
		}
		return uint16(32 + 9*k)
	})
	// 128-bit lanes [u0.0 u1.0 u0.1 u1.1] and [u0.2 u1.2 u0.3 u1.3] (as
	// qwords, u1's from 8 on)
	qw := func(name string, q [8]uint64) Mem {
		return avokit.Bytes(name, 64, func(i int) byte { return byte(q[i/8] >> (8 * (i % 8))) })
	}
	vIdx01 = qw("bqk_vidx01", [8]uint64{0, 1, 8, 9, 2, 3, 10, 11})
	vIdx23 = qw("bqk_vidx23", [8]uint64{4, 5, 12, 13, 6, 7, 14, 15})
	z08 = avokit.Bytes("bqk_z08", 64, func(int) byte { return 0x08 })
}

// maskD is a new mask register holding the 32 bits v.
func maskD(v uint32) OpmaskVirtual {
	g := GP32()
	MOVL(U32(v), g)
	k := K()
	KMOVD(g, k)
	return k
}

// dot32Q4V generates bqkQ4_0Dot8V (see above; sig32s's arguments, xs
// unused: the offset comes from x itself).
func dot32Q4V() {
	const name = "bqkQ4_0Dot8V"
	TEXT(name, NOSPLIT, sig32s)
	Doc(name + " is bqkQ4_0Dot8G (core/ggml's Dot of nb Q4_0 blocks for ng groups of 8 weight rows, row q of group g at w+g·adv+q·ldw, into y[g+q·ys]) with four blocks of a row a register; nb a multiple of 4 (see q4dec.go of the package asmgenbqk).")
	Pragma("noescape")
	wg := Load(Param("w"), GP64())
	ldw := Load(Param("ldw"), GP64())
	y := Load(Param("y"), GP64())
	ng := Load(Param("ng"), GP64())
	nb, x, xd := GP64(), GP64(), GP64()
	w0, w1 := GP64(), GP64()
	ldw3 := GP64()
	LEAQ(Mem{Base: ldw, Index: ldw, Scale: 2}, ldw3)
	ysb, ys3 := Load(Param("ys"), GP64()), GP64()
	SHLQ(U8(2), ysb)
	LEAQ(Mem{Base: ysb, Index: ysb, Scale: 2}, ys3)
	c0f, gf, iq, iw, c8, zero := ZMM(), ZMM(), ZMM(), ZMM(), ZMM(), ZMM()
	VMOVDQU64(z0F, c0f)
	VMOVDQU64(gfHi4, gf)
	VMOVDQU64(vIdxQ, iq)
	VMOVDQU64(vIdxW, iw)
	VMOVDQU64(z08, c8)
	VPXORD(zero, zero, zero)
	k2 := maskD(0xCCCCCCCC) // words 8k+r, r mod 4 ≥ 2
	k4 := maskD(0xF0F0F0F0) // r ≥ 4
	acc := YMM()
	p := name + "_"
	Label(p + "group")
	TESTQ(ng, ng)
	JZ(LabelRef(p + "end"))
	Load(Param("nb"), nb)
	MOVQ(wg, w0)
	LEAQ(Mem{Base: wg, Index: ldw, Scale: 4}, w1)
	Load(Param("x"), x)
	Load(Param("xd"), xd)
	VXORPS(acc, acc, acc)
	rowsets := [2]func(r, disp int) Mem{avokit.Rows4(w0, ldw, ldw3), avokit.Rows4(w1, ldw, ldw3)}
	row := func(r, disp int) Mem { return rowsets[r/4](r%4, disp) }

	Label(p + "chunk")
	TESTQ(nb, nb)
	JZ(LabelRef(p + "done"))
	for r := 0; r < 8; r++ {
		PREFETCHT0(row(r, zPrefetch))
	}
	// x's halves of the four blocks, and the offset: −8 times their
	// partial sums (as the rows' accumulators will hold them)
	x0, xl, xh, o := ZMM(), ZMM(), ZMM(), ZMM()
	VMOVDQU64(Mem{Base: x}, x0)
	VMOVDQU64(vIdxXLo, xl)
	VPERMI2B(Mem{Base: x, Disp: 64}, x0, xl)
	VMOVDQU64(vIdxXHi, xh)
	VPERMI2B(Mem{Base: x, Disp: 64}, x0, xh)
	VPXORD(o, o, o)
	vpdpbusd(xl, c8, o)
	vpdpbusd(xh, c8, o)
	VPSUBD(o, zero, o)
	// the rows: their four blocks' partial sums (a[r]) and, a pair of
	// rows at a time, their d in words 8k+r (t[r/2])
	var a [8]VecVirtual
	var t [4]VecVirtual
	var ld [8]VecVirtual
	for r := 0; r < 8; r++ {
		ld[r] = ZMM()
		VMOVDQU64(row(r, 0), ld[r])
		q, h := ZMM(), ZMM()
		VMOVDQA64(iq, q)
		VPERMI2B(row(r, 8), ld[r], q)
		vgf2p8affineqb(gf, q, h)
		VPANDD(c0f, q, q)
		a[r] = ZMM()
		VMOVDQA64(o, a[r])
		vpdpbusd(xl, q, a[r])
		vpdpbusd(xh, h, a[r])
		if r%2 == 1 {
			VPERMT2W(ld[r], iw, ld[r-1])
			t[r/2] = ld[r-1]
		}
	}
	// the scales: word 8k+r block k's d of row r
	VPBLENDMW(t[1], t[0], k2, t[0])
	VPBLENDMW(t[3], t[2], k2, t[2])
	VPBLENDMW(t[2], t[0], k4, t[0])
	s01, s23, wh := ZMM(), ZMM(), YMM()
	VCVTPH2PS(t[0].AsY(), s01)
	VEXTRACTI64X4(U8(1), t[0], wh)
	VCVTPH2PS(wh, s23)
	// the sums: rows (r, r+1) → [r02 r+1,02 r13 r+1,13] a lane
	var u [4]VecVirtual
	for i := 0; i < 4; i++ {
		lo := ZMM()
		VPUNPCKLDQ(a[2*i+1], a[2*i], lo)
		VPUNPCKHDQ(a[2*i+1], a[2*i], a[2*i])
		VPADDD(lo, a[2*i], a[2*i])
		u[i] = a[2*i]
	}
	// → rows 0..3 (4..7) of block k in lane k
	var v [2]VecVirtual
	for i := 0; i < 2; i++ {
		lo := ZMM()
		VPUNPCKLQDQ(u[2*i+1], u[2*i], lo)
		VPUNPCKHQDQ(u[2*i+1], u[2*i], u[2*i])
		VPADDD(lo, u[2*i], u[2*i])
		v[i] = u[2*i]
	}
	// → [block 0 rows 0..7 | block 1 rows 0..7], blocks 2, 3
	z01, z23 := ZMM(), ZMM()
	VMOVDQU64(vIdx01, z01)
	VPERMI2Q(v[1], v[0], z01)
	VMOVDQU64(vIdx23, z23)
	VPERMI2Q(v[1], v[0], z23)
	VCVTDQ2PS(z01, z01)
	VCVTDQ2PS(z23, z23)
	// block after block: acc += sum·(d·d_a), one rounding
	for k := 0; k < 4; k++ {
		s, z := s01, z01
		if k >= 2 {
			s, z = s23, z23
		}
		sy, zy := s.AsY(), z.AsY()
		if k%2 == 1 {
			sy, zy = YMM(), YMM()
			VEXTRACTF32X8(U8(1), s, sy)
			VEXTRACTF32X8(U8(1), z, zy)
		}
		sc := YMM()
		VMULPS_BCST(Mem{Base: xd, Disp: 4 * k}, sy, sc)
		VFMADD231PS(sc, zy, acc)
	}
	ADDQ(U8(72), w0)
	ADDQ(U8(72), w1)
	SUBQ(I8(-128), x)
	ADDQ(U8(16), xd)
	SUBQ(U8(4), nb)
	JMP(LabelRef(p + "chunk"))

	Label(p + "done")
	// row r's output at y + r·ysb
	ys := avokit.Rows4(y, ysb, ys3)
	y4 := GP64()
	LEAQ(Mem{Base: y, Index: ysb, Scale: 4}, y4)
	ys4 := avokit.Rows4(y4, ysb, ys3)
	VMOVSS(acc.AsX(), ys(0, 0))
	for r := 1; r < 4; r++ {
		VEXTRACTPS(U8(r), acc.AsX(), ys(r, 0))
	}
	hi := XMM()
	VEXTRACTF128(U8(1), acc, hi)
	VMOVSS(hi, ys4(0, 0))
	for r := 1; r < 4; r++ {
		VEXTRACTPS(U8(r), hi, ys4(r, 0))
	}
	ADDQ(U8(4), y)
	ADDQ(Load(Param("adv"), GP64()), wg)
	DECQ(ng)
	JMP(LabelRef(p + "group"))
	Label(p + "end")
	VZEROUPPER()
	RET()
}
