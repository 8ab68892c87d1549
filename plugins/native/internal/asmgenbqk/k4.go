package main

// The four-row kernels of the K types (decode: one activation row, four
// weight rows ldw bytes apart; each activation load serves the four
// rows). They compute, per row, exactly core/ggml's Dot: each
// super-block's integer sums S (and M, the minimums' term) are exact
// int32 whatever the order of their additions, and the float32 steps are
// done lane-wise for the four rows, in Dot's order: acc_r += float32(S_r)
// · float32(d_r·d_a), then acc_r −= float32(M_r) · float32(dmin_r·d_a).
//
// VNNI (AVX-512 BW + VNNI on ZMM): 64 quants a register; the int16 pair
// sums of VPMADDUBSW (unsigned quant × signed activation: at most
// 2·63·127, no saturation) are multiplied by their 16- or 32-element
// group's scale and summed into int32 by VPDPWSSD, the scale words placed
// per 128-bit lane by VPERMW. AVX2: the same sums with VPMADDUBSW,
// VPMADDWD by the scale word and VPADDD, 32 quants a register.
//
// The rows' sums are reduced together: VPHADDD pairs each row's S and M
// vectors into one register [S0 M0 S1 M1 | S2 M2 S3 M3] (Q6_K: [S0 S1 S2
// S3]), converted and multiplied by the rows' d and dmin (VCVTPH2PS of
// the four rows' float16 pairs) times d_a.
//
// Prefetch: the next four rows (the next call's), 4·bs bytes a
// super-block, as dot32's four-row kernels.

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
	"github.com/switchyard-hal/switchyard/plugins/native/internal/avokit"
)

// vpdpwssd: acc += s16(a)·s16(b) pairwise into int32 lanes (AVX-512
// VNNI; emitted raw: not in avo's table, Go's assembler knows it).
func vpdpwssd(a, b, acc Op) {
	Instruction(&ir.Instruction{Opcode: "VPDPWSSD", Operands: []Op{a, b, acc}, Inputs: []Op{a, b, acc}, Outputs: []Op{acc}})
}

var (
	z0F, z30, zShQ4, zShL6, zShR6, wM32  Mem
	zHdrP, zHdrQ, zHdrSh, zHdrMask       Mem // Q4_K's header decoding
	zScW, zMinW, dIdx4, dmIdx4, gfHi4    Mem
	zScQ4, zShQ5                         [4]Mem
	zScQ4w                               [4]Mem // Q4_K's 64-byte loads (q4k4VNNI)
	z10                                  Mem
	zIdxQ6                               [4]Mem // half h, planes 01 (2h) and 23 (2h+1)
	gfQ6                                 [2]Mem // Q6_K's planes 01 and 23 (GFNI)
	zShQ2, zShQ3h                        [4]Mem // Q2_K/Q3_K: (h, k) = 2h+k
	z03, z04, wLo4, wM4, q3HiIdx, q3HiSh Mem
)

// words64 is a 64-byte constant of 32 little-endian words.
func words64(name string, f func(i int) uint16) Mem {
	return avokit.Bytes(name, 64, func(i int) byte { return byte(f(i/2) >> (8 * (i % 2))) })
}

func consts4() {
	z0F = avokit.Bytes("bqk_z0f", 64, func(int) byte { return 0x0F })
	z30 = avokit.Bytes("bqk_z30", 64, func(int) byte { return 0x30 })
	// Q4_K: low nibbles in the low 256 bits, high ones (shifted 4) above
	zShQ4 = words64("bqk_zshq4", func(i int) uint16 { return uint16(4 * (i / 16)) })
	// Q6_K: the 2-bit high parts of planes 0 and 1 (bits 0-1, 2-3 of qh)
	// moved to bits 4-5 (left 4, left 2), of planes 2 and 3 (bits 4-5,
	// 6-7) by right 0 and 2
	zShL6 = words64("bqk_zshl6", func(i int) uint16 { return uint16(4 - 2*(i/16)) })
	zShR6 = words64("bqk_zshr6", func(i int) uint16 { return uint16(2 * (i / 16)) })
	wM32 = words64("bqk_wm32", func(int) uint16 { return 0xFFE0 }) // −32
	// Q4_K's 16-byte header (d, dmin, twelve scale bytes s0..s11 at
	// 4..15), four rows a register (one a 128-bit lane), decoded to the
	// bytes [sc0..sc7, m0..m7]: P picks s0-3, s8-11, s4-7, s8-11 (shifted
	// 0, 0, 0, 4 bits, masked 3F, 0F, 3F, 0F), Q the top two bits of
	// s0-3 and s4-7 for sc4-7 and m4-7 (shifted right 2, masked 30)
	lane16 := func(name string, f func(i int) byte) Mem {
		return avokit.Bytes(name, 64, func(i int) byte { return f(i % 16) })
	}
	zHdrP = lane16("bqk_zhdrp", func(i int) byte { return []byte{4, 5, 6, 7, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15}[i] })
	zHdrQ = lane16("bqk_zhdrq", func(i int) byte {
		return []byte{0x80, 0x80, 0x80, 0x80, 4, 5, 6, 7, 0x80, 0x80, 0x80, 0x80, 8, 9, 10, 11}[i]
	})
	zHdrSh = lane16("bqk_zhdrsh", func(i int) byte { return []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0}[i] })
	zHdrMask = lane16("bqk_zhdrmask", func(i int) byte { return []byte{0x3F, 0x0F, 0x3F, 0x0F}[i/4] })
	// the scales (bytes 0-7) and the mins (8-15) zero-extended to words
	zScW = lane16("bqk_zscw", func(i int) byte {
		if i%2 == 1 {
			return 0x80
		}
		return byte(i / 2)
	})
	zMinW = lane16("bqk_zminw", func(i int) byte {
		if i%2 == 1 {
			return 0x80
		}
		return byte(8 + i/2)
	})
	// dwords 0, 4, 8, 12: each lane's first
	dIdx4 = avokit.Bytes("bqk_didx4", 64, func(i int) byte {
		if i%4 != 0 || i >= 16 {
			return 0
		}
		return byte(i)
	})
	// words 0, 8, 16, 24 (each lane's d) then 1, 9, 17, 25 (dmin)
	dmIdx4 = words64("bqk_dmidx4", func(i int) uint16 {
		if i >= 8 {
			return 0
		}
		return uint16(8*(i%4) + i/4)
	})
	// GF2P8AFFINEQB's matrix taking a byte's high nibble to its low bits
	// (output bit i, row byte 7−i, is input bit i+4; the top four zero)
	gfHi4 = avokit.Bytes("bqk_gfhi4", 64, func(i int) byte {
		if o := 7 - i%8; o < 4 {
			return 1 << (o + 4)
		}
		return 0
	})
	// Q6_K's high bits to bits 4-5 for planes 0 (bits 0-1 of qh) and 1
	// (bits 2-3) in the low and high 256 bits, and planes 2 (4-5) and 3
	// (6-7), as GF2P8AFFINEQB matrices (output bit o, row byte 7−o)
	for i := 0; i < 2; i++ {
		ii := i
		gfQ6[i] = avokit.Bytes(fmt.Sprintf("bqk_gfq6_%d", i), 64, func(j int) byte {
			plane := 2*ii + j/32
			if o := 7 - j%8; o == 4 || o == 5 {
				return 1 << (2*plane + o - 4)
			}
			return 0
		})
	}
	// chunk c: lanes 0-1 take scale word 2c, lanes 2-3 word 2c+1
	for c := 0; c < 4; c++ {
		cc := c
		zScQ4[c] = avokit.Bytes(fmt.Sprintf("bqk_zscq4_%d", c), 64, func(i int) byte { return byte(2*(2*cc+i/32) + i%2) })
		// Q4_K read 64 quant bytes at a time (half h = c/2; low nibbles
		// p = 0, high p = 1): lanes 0-1 take the scale word of sub-block
		// 4h+p, lanes 2-3 that of 4h+2+p
		zScQ4w[c] = avokit.Bytes(fmt.Sprintf("bqk_zscq4w_%d", c), 64, func(i int) byte { return byte(2*(4*(cc/2)+cc%2+2*(i/32)) + i%2) })
	}
	// Q2_K and Q3_K, half h (32 quant bytes), pair k: the 2-bit fields
	// 2k and 2k+1 (shift 4k, 4k+2) in the low and high 256 bits
	for i := 0; i < 4; i++ {
		k := i % 2
		zShQ2[i] = words64(fmt.Sprintf("bqk_zshq2_%d", i), func(w int) uint16 { return uint16(4*k + 2*(w/16)) })
		// Q3_K's high bit 4h+j (j = 2k, 2k+1) to bit 2: left 2−b or
		// right b−2 (i = 0 takes left shifts, the others right)
		h := i / 2
		zShQ3h[i] = words64(fmt.Sprintf("bqk_zshq3h_%d", i), func(w int) uint16 {
			b := 4*h + 2*k + w/16
			if i == 0 {
				return uint16(2 - b)
			}
			return uint16(b - 2)
		})
	}
	z03 = avokit.Bytes("bqk_z03", 64, func(int) byte { return 0x03 })
	z04 = avokit.Bytes("bqk_z04", 64, func(int) byte { return 0x04 })
	wLo4 = words64("bqk_wlo4", func(int) uint16 { return 0x000F })
	wM4 = words64("bqk_wm4", func(int) uint16 { return 0xFFFC }) // −4
	// Q3_K's scales: the high two bits of scale j are bits 2(j/4) of
	// byte 8 + j%4
	q3HiIdx = avokit.Bytes("bqk_q3hiidx", 64, func(i int) byte { return byte(8 + i%4) })
	q3HiSh = avokit.Bytes("bqk_q3hish", 64, func(i int) byte {
		if i%4 == 0 && i < 16 {
			return byte(2 * (i / 4))
		}
		return 0
	})
	// Q5_K chunk c: bit 2c of each qh byte to bit 4 in the low 256 bits,
	// bit 2c+1 in the high ones (word shifts: left 4−s, or right s−4)
	z10 = avokit.Bytes("bqk_z10", 64, func(int) byte { return 0x10 })
	for c := 0; c < 4; c++ {
		cc := c
		zShQ5[c] = words64(fmt.Sprintf("bqk_zshq5_%d", c), func(i int) uint16 {
			s := 2*cc + i/16
			if s <= 4 && cc < 2 {
				return uint16(4 - s)
			}
			return uint16(s - 4)
		})
	}
	// Q6_K half h: 128-bit lane j of planes 0-1 takes group scale 8h+j,
	// of planes 2-3 group 8h+4+j (of the row's sixteen words)
	for h := 0; h < 2; h++ {
		for p := 0; p < 2; p++ {
			hh, pp := h, p
			zIdxQ6[2*h+p] = words64(fmt.Sprintf("bqk_zidxq6_%d", 2*h+p), func(i int) uint16 { return uint16(8*hh + 4*pp + i/8) })
		}
	}
}

// pairSM reduces row vectors s (S) and m (M, or s again) to a: per
// 128-bit lane [s01, s23, m01, m23].
func pairSM(s, m VecVirtual) VecVirtual {
	a := YMM()
	VPHADDD(m, s, a)
	return a
}

// combine4 is the four rows' [S0 M0 S1 M1 | S2 M2 S3 M3] from their
// pairSM registers.
func combine4(a0, a1, a2, a3 VecVirtual) VecVirtual {
	b0, b1 := YMM(), YMM()
	VPHADDD(a1, a0, b0)
	VPHADDD(a3, a2, b1)
	lo, hi := YMM(), YMM()
	VPERM2I128(U8(0x20), b1, b0, lo)
	VPERM2I128(U8(0x31), b1, b0, hi)
	VPADDD(hi, lo, lo)
	return lo
}

// k4head loads the four-row kernels' arguments and sets the prefetch
// pointer to the next four rows.
type k4args struct {
	nb, w, ldw, ldw3, x, xd, xs, pf Register
	row                             func(r, disp int) Mem
	y, ng, ldy, ldy3                Register // k4headN's group loop (ldy in bytes)
}

// sigK4 is the signature of the K types' ZMM four-row kernels: ng
// groups of four rows; group g's rows start at w + g·rb + r·ldw (rb =
// nb·bs, the row's bytes; r = 0..3) and its outputs go to y[g + r·ldy].
// Decode gives a task's rows as four quarters (ldw = ng·rb, ldy = ng):
// each of the four rows a group reads walks its own quarter of the
// weights from start to end, four long sequential streams that the
// hardware's prefetcher follows (four adjacent rows a group, streams of
// one row's bytes each, needed software prefetches, which were measured
// to hold the kernel near 18 GB/s where the same work on quarters
// streams over 30 here).
const sigK4 = "func(nb int, w *uint8, ldw int, x *int8, xd *float32, xs *int32, y *float32, ng int, ldy int)"

// k4headN is k4head for a kernel of ng groups of four rows (sigK4);
// k4groupStart and k4groupEnd enclose a group's super-block loop.
func k4headN(name, doc string) k4args {
	TEXT(name, NOSPLIT, sigK4)
	Doc(doc)
	Pragma("noescape")
	var a k4args
	a.nb, a.w, a.x, a.xd, a.xs = GP64(), GP64(), GP64(), GP64(), GP64()
	Load(Param("w"), a.w)
	a.ldw = Load(Param("ldw"), GP64())
	a.y = Load(Param("y"), GP64())
	a.ng = Load(Param("ng"), GP64())
	a.ldy = Load(Param("ldy"), GP64())
	SHLQ(U8(2), a.ldy)
	a.ldy3 = GP64()
	LEAQ(Mem{Base: a.ldy, Index: a.ldy, Scale: 2}, a.ldy3)
	a.ldw3 = GP64()
	LEAQ(Mem{Base: a.ldw, Index: a.ldw, Scale: 2}, a.ldw3)
	a.row = avokit.Rows4(a.w, a.ldw, a.ldw3)
	return a
}

// k4groupStart opens a group: the activations' pointers reloaded; w
// runs on (a group's rows end where the next group's begin).
func k4groupStart(a k4args, lab string) {
	Label(lab + "group")
	TESTQ(a.ng, a.ng)
	JZ(LabelRef(lab + "end"))
	Load(Param("nb"), a.nb)
	Load(Param("x"), a.x)
	Load(Param("xd"), a.xd)
	Load(Param("xs"), a.xs)
}

// k4groupEnd closes a group (its four outputs, the lanes of o, stored at
// y, y+ldy, y+2·ldy, y+3·ldy): the next group.
func k4groupEnd(a k4args, lab string, o VecVirtual) {
	VMOVSS(o, Mem{Base: a.y})
	VEXTRACTPS(U8(1), o, Mem{Base: a.y, Index: a.ldy, Scale: 1})
	VEXTRACTPS(U8(2), o, Mem{Base: a.y, Index: a.ldy, Scale: 2})
	VEXTRACTPS(U8(3), o, Mem{Base: a.y, Index: a.ldy3, Scale: 1})
	ADDQ(U8(4), a.y)
	DECQ(a.ng)
	JMP(LabelRef(lab + "group"))
	Label(lab + "end")
}

// k4Doc is a four-row kernel's doc line (n: the group-loop form).
func k4Doc(name, ty string, n bool) string {
	if n {
		return name + " is core/ggml's Dot of nb " + ty + " super-blocks for ng groups of 4 weight rows ldw bytes apart (group g's first row the g-th after w), into y[g], y[g+ldy], y[g+2·ldy], y[g+3·ldy] (see sigK4 in k4.go of the package asmgenbqk)."
	}
	return name + " is core/ggml's Dot of nb " + ty + " super-blocks for 4 weight rows ldw bytes apart, into y[0..3] (see k4.go of the package asmgenbqk)."
}

func k4head(name, doc string) k4args {
	TEXT(name, NOSPLIT, sig32)
	Doc(doc)
	Pragma("noescape")
	var a k4args
	a.nb = Load(Param("nb"), GP64())
	a.w = Load(Param("w"), GP64())
	a.ldw = Load(Param("ldw"), GP64())
	a.x = Load(Param("x"), GP64())
	a.xd = Load(Param("xd"), GP64())
	a.xs = Load(Param("xs"), GP64())
	a.ldw3 = GP64()
	LEAQ(Mem{Base: a.ldw, Index: a.ldw, Scale: 2}, a.ldw3)
	a.pf = GP64()
	MOVQ(a.ldw, a.pf)
	SHLQ(U8(k4AheadLog), a.pf)
	ADDQ(a.w, a.pf)
	a.row = avokit.Rows4(a.w, a.ldw, a.ldw3)
	return a
}

// k4AheadLog: the four-row kernels prefetch the rows 1<<k4AheadLog rows
// ahead (two calls: one call's four rows, about 5 KB at K 2048, were too
// short a distance to hide the memory's latency here).
const k4AheadLog = 3

// prefetch4 prefetches the same super-block of four rows k4Ahead rows
// ahead (a later call's), in the order that call reads them.
func prefetch4(a k4args, bs int) {
	next := avokit.Rows4(a.pf, a.ldw, a.ldw3)
	for r := 0; r < 4; r++ {
		for o := 0; o < bs; o += 64 {
			PREFETCHT0(next(r, o))
		}
	}
	ADDQ(U32(uint32(bs)), a.pf)
}

// q4k4 generates the four-row Q4_K (five: Q5_K) kernel of family fam
// (VNNI, AVX2).
func q4k4(fam string, five bool) {
	if fam == "VNNI" {
		q4k4VNNI(five, false)
		if !five {
			q4k4VNNI(false, true)
		}
		return
	}
	name, ty, bs, qs := "bqkQ4KDot4"+fam, "Q4_K", 144, 16
	if five {
		name, ty, bs, qs = "bqkQ5KDot4"+fam, "Q5_K", 176, 48
	}
	a := k4head(name, name+" is core/ggml's Dot of nb "+ty+" super-blocks for 4 weight rows ldw bytes apart, into y[0..3] (see k4.go of the package asmgenbqk).")
	lab := name + "_"
	row := a.row
	local := AllocLocal(64 + 32)
	facc := YMM()
	VXORPS(facc, facc, facc)
	Label(lab + "block")
	TESTQ(a.nb, a.nb)
	JZ(LabelRef(lab + "done"))
	prefetch4(a, bs)
	for r := 0; r < 4; r++ {
		scLo, scHi, mLo, mHi := avokit.K4Scales(row(r, 4))
		// the mins' bytes to the stack (used after the sums)
		MOVL(mLo, local.Offset(64+8*r))
		MOVL(mHi, local.Offset(64+8*r+4))
		sx := XMM()
		VMOVD(scLo, sx)
		VPINSRD(U8(1), scHi, sx, sx)
		VPMOVZXBW(sx, sx) // the eight scales as int16
		VMOVDQU(sx, local.Offset(16*r))
	}
	var isum [4]VecVirtual
	for r := range isum {
		isum[r] = YMM()
		VPXOR(isum[r], isum[r], isum[r])
	}
	for c := 0; c < 4; c++ {
		x0, x1 := YMM(), YMM()
		VMOVDQU(Mem{Base: a.x, Disp: 64 * c}, x0)
		VMOVDQU(Mem{Base: a.x, Disp: 64*c + 32}, x1)
		for r := 0; r < 4; r++ {
			q, n0, n1 := YMM(), YMM(), YMM()
			VMOVDQU(row(r, qs+32*c), q)
			VPAND(c0F, q, n0)
			VPSRLW(U8(4), q, n1)
			VPAND(c0F, n1, n1)
			if five { // the 5th bits: bits 2c and 2c+1 of qh's bytes
				for i, n := range []VecVirtual{n0, n1} {
					sb := 2*c + i
					hb := YMM()
					VMOVDQU(row(r, 16), hb)
					if sb != 0 {
						VPSRLW(U8(sb), hb, hb)
					}
					VPAND(c01, hb, hb)
					VPSLLW(U8(4), hb, hb)
					VPOR(hb, n, n)
				}
			}
			VPMADDUBSW(x0, n0, n0)
			VPMADDUBSW(x1, n1, n1)
			s0, s1 := YMM(), YMM()
			VPBROADCASTW(local.Offset(16*r+4*c), s0)
			VPBROADCASTW(local.Offset(16*r+4*c+2), s1)
			VPMADDWD(s0, n0, n0)
			VPMADDWD(s1, n1, n1)
			VPADDD(n0, isum[r], isum[r])
			VPADDD(n1, isum[r], isum[r])
		}
	}
	// the mins' term: m_s · Σx_s, eight lanes a row
	xsum := YMM()
	VMOVDQU(Mem{Base: a.xs}, xsum)
	var pr [4]VecVirtual
	for r := 0; r < 4; r++ {
		m := YMM()
		VPMOVZXBD(local.Offset(64+8*r), m)
		VPMULLD(xsum, m, m)
		pr[r] = pairSM(isum[r], m)
	}
	sm := combine4(pr[0], pr[1], pr[2], pr[3])
	k4float(a, row, sm, facc)
	ADDQ(U32(uint32(bs)), a.w)
	ADDQ(U32(256), a.x)
	ADDQ(U8(4), a.xd)
	ADDQ(U8(32), a.xs)
	DECQ(a.nb)
	JMP(LabelRef(lab + "block"))
	Label(lab + "done")
	store4even(facc)
	VZEROUPPER()
	RET()
}

// k4float does the float32 steps of four rows with minimums: sm holds
// [S0 M0 S1 M1 | S2 M2 S3 M3], each row's block starts with d and dmin
// (float16); facc's even lanes are the rows' accumulators.
func k4float(a k4args, row func(r, disp int) Mem, sm, facc VecVirtual) {
	k4floatAt(a, row, 0, sm, facc)
}

// k4floatAt is k4float with d and dmin at byte dOff of the block.
func k4floatAt(a k4args, row func(r, disp int) Mem, dOff int, sm, facc VecVirtual) {
	dd := XMM()
	VMOVD(row(0, dOff), dd)
	for r := 1; r < 4; r++ {
		VPINSRD(U8(r), row(r, dOff), dd, dd)
	}
	df := YMM()
	VCVTPH2PS(dd, df) // d0 dmin0 d1 dmin1 | d2 dmin2 d3 dmin3
	da := YMM()
	VBROADCASTSS(Mem{Base: a.xd}, da)
	VMULPS(da, df, df) // d·d_a, dmin·d_a
	f := YMM()
	VCVTDQ2PS(sm, f)
	VMULPS(df, f, f)
	VADDPS(f, facc, facc)
	g := YMM()
	VMOVSHDUP(f, g)
	VSUBPS(g, facc, facc)
}

// store4even stores the even lanes of facc to y[0..3].
func store4even(facc VecVirtual) {
	y := Load(Param("y"), GP64())
	hi := XMM()
	VEXTRACTF128(U8(1), facc, hi)
	o := XMM()
	VSHUFPS(U8(0x88), hi, facc.AsX(), o)
	VMOVUPS(o, Mem{Base: y})
}

// q6k4 generates the four-row Q6_K kernel of family fam (fam "GFNI":
// VNNI with the high bits' planes moved into place by GF2P8AFFINEQB, a bit
// matrix a byte, instead of a shift and an AND each).
func q6k4(fam string) {
	name := "bqkQ6KDot4" + fam
	gfni := fam == "GFNI"
	if gfni {
		fam = "VNNI"
	}
	var a k4args
	if fam == "VNNI" {
		a = k4headN(name, k4Doc(name, "Q6_K", true))
	} else {
		a = k4head(name, k4Doc(name, "Q6_K", false))
	}
	lab := name + "_"
	row := a.row
	var idx [4]VecVirtual
	if fam == "VNNI" {
		for i := range idx {
			idx[i] = ZMM()
			VMOVDQU64(zIdxQ6[i], idx[i])
		}
	}
	facc := XMM()
	if fam != "VNNI" {
		VXORPS(facc, facc, facc)
	}
	// VNNI: the tables in registers (a memory operand each would be a
	// load for every 64 quant bytes of every row)
	var shl6, shr6, c30, c0f VecVirtual
	if fam == "VNNI" {
		shl6, shr6, c30, c0f = ZMM(), ZMM(), ZMM(), ZMM()
		if gfni { // the matrices: planes 0|1, 2|3, the high nibble
			VMOVDQU64(gfQ6[0], shl6)
			VMOVDQU64(gfQ6[1], shr6)
			VMOVDQU64(gfHi4, c30)
		} else {
			VMOVDQU64(zShL6, shl6)
			VMOVDQU64(zShR6, shr6)
			VMOVDQU64(z30, c30)
		}
		VMOVDQU64(z0F, c0f)
		k4groupStart(a, lab)
		VXORPS(facc, facc, facc)
	}
	Label(lab + "block")
	TESTQ(a.nb, a.nb)
	JZ(LabelRef(lab + "done"))
	if fam != "VNNI" {
		prefetch4(a, 210)
	}
	// VNNI: the super-block's activations, for the four rows
	var xv [4]VecVirtual
	if fam == "VNNI" {
		for c := range xv {
			xv[c] = ZMM()
			VMOVDQU64(Mem{Base: a.x, Disp: 64 * c}, xv[c])
		}
	}
	// the sixteen 16-value sums of x as int16 (|Σ| ≤ 16·127)
	s16 := YMM()
	if fam == "VNNI" {
		s := ZMM()
		VMOVDQU32(Mem{Base: a.xs}, s)
		VPMOVDW(s, s16)
	} else {
		VMOVDQU(Mem{Base: a.xs}, s16)
		VPACKSSDW(Mem{Base: a.xs, Disp: 32}, s16, s16)
		VPERMQ(U8(0xD8), s16, s16)
	}
	var isum [4]VecVirtual
	// the offset 32 of row r: −32·sc_g·Σx_g, the sums' starting value
	offset := func(r int, sc VecVirtual, acc Op) {
		VPMOVSXBW(row(r, 192), sc)
		t := YMM()
		VPMULLW(wM32.Offset(0), sc, t)
		VPMADDWD(s16, t, acc)
	}
	if fam == "AVX2" {
		for r := 0; r < 4; r++ {
			isum[r] = YMM()
			offset(r, YMM(), isum[r])
		}
	}
	if fam == "VNNI" {
		for r := 0; r < 4; r++ {
			acc, sc := ZMM(), YMM()
			offset(r, sc, acc.AsY()) // the upper half zero
			isum[r] = YMM()
			for h := 0; h < 2; h++ {
				q, hb := ZMM(), ZMM()
				VMOVDQU64(row(r, 64*h), q)
				VBROADCASTI64X4(row(r, 128+32*h), hb)
				z01, z23 := ZMM(), ZMM()
				if gfni {
					vgf2p8affineqb(shl6, hb, z01)
					VPTERNLOGD(U8(0xF8), c0f, q, z01) // z01 |= q & 0x0F
					vgf2p8affineqb(shr6, hb, z23)
					vgf2p8affineqb(c30, q, q)
					VPORD(q, z23, z23)
				} else {
					VPSLLVW(shl6, hb, z01)
					VPANDD(c30, z01, z01)
					VPTERNLOGD(U8(0xF8), c0f, q, z01) // z01 |= q & 0x0F
					VPSRLVW(shr6, hb, z23)
					VPANDD(c30, z23, z23)
					VPSRLW(U8(4), q, q)
					VPTERNLOGD(U8(0xF8), c0f, q, z23)
				}
				VPMADDUBSW(xv[2*h], z01, z01)
				VPMADDUBSW(xv[2*h+1], z23, z23)
				s01, s23 := ZMM(), ZMM()
				VPERMW(sc.AsZ(), idx[2*h], s01)
				VPERMW(sc.AsZ(), idx[2*h+1], s23)
				vpdpwssd(s01, z01, acc)
				vpdpwssd(s23, z23, acc)
			}
			isum[r] = acc
		}
	} else {
		m0F, m03 := YMM(), YMM()
		VMOVDQU(c0F, m0F)
		VMOVDQU(c03, m03)
		for h := 0; h < 2; h++ {
			var T [4]VecVirtual
			for r := 0; r < 4; r++ {
				T[r] = YMM()
				VPMOVSXBW(row(r, 192), T[r])
				if h == 0 {
					VPERMQ(U8(0x44), T[r], T[r])
				} else {
					VPERMQ(U8(0xEE), T[r], T[r])
				}
			}
			for k := 0; k < 4; k++ {
				xv := YMM()
				VMOVDQU(Mem{Base: a.x, Disp: 128*h + 32*k}, xv)
				for r := 0; r < 4; r++ {
					p, hi := YMM(), YMM()
					src := row(r, 64*h+32*(k&1))
					if k < 2 {
						VPAND(src, m0F, p)
					} else {
						VMOVDQU(src, p)
						VPSRLW(U8(4), p, p)
						VPAND(m0F, p, p)
					}
					hm := row(r, 128+32*h)
					if k == 0 {
						VPAND(hm, m03, hi)
					} else {
						VMOVDQU(hm, hi)
						VPSRLW(U8(2*k), hi, hi)
						VPAND(m03, hi, hi)
					}
					VPSLLW(U8(4), hi, hi)
					VPOR(hi, p, p)
					VPMADDUBSW(xv, p, p)
					s := YMM()
					VPSHUFB(q6Shuf[k], T[r], s)
					VPMADDWD(s, p, p)
					VPADDD(p, isum[r], isum[r])
				}
			}
		}
	}
	// [S0 S1 S2 S3]
	var S VecVirtual
	if fam == "VNNI" {
		S = k4reduce4(isum)
	} else {
		p01, p23 := YMM(), YMM()
		S = XMM()
		VPHADDD(isum[1], isum[0], p01)
		VPHADDD(isum[3], isum[2], p23)
		VPHADDD(p23, p01, p01)
		VEXTRACTI128(U8(1), p01, S)
		VPADDD(p01.AsX(), S, S)
	}
	// d of the four rows
	dd := XMM()
	h := GP32()
	MOVWLZX(row(0, 208), h)
	VMOVD(h, dd)
	for r := 1; r < 4; r++ {
		VPINSRW(U8(r), row(r, 208), dd, dd)
	}
	VCVTPH2PS(dd, dd)
	da := XMM()
	VBROADCASTSS(Mem{Base: a.xd}, da)
	VMULPS(da, dd, dd)
	VCVTDQ2PS(S, S)
	VMULPS(dd, S, S)
	VADDPS(S, facc, facc)
	ADDQ(U32(210), a.w)
	ADDQ(U32(256), a.x)
	ADDQ(U8(4), a.xd)
	ADDQ(U8(64), a.xs)
	DECQ(a.nb)
	JMP(LabelRef(lab + "block"))
	Label(lab + "done")
	if fam == "VNNI" {
		k4groupEnd(a, lab, facc)
	} else {
		y := Load(Param("y"), GP64())
		VMOVUPS(facc, Mem{Base: y})
	}
	VZEROUPPER()
	RET()
}

// q4k4VNNI generates the four-row Q4_K kernel on ZMM: the four rows'
// headers decoded together (one row a 128-bit lane), the scales applied
// by VPDPWSSD (the scale words per lane by VPSHUFB of the row's lane
// broadcast), the minimums' term by one VPMADDWD for the four rows.
// Q4_K takes its quants 64 bytes a load (both nibbles of two 32-byte
// chunks: an AND and a shift for 128 quants), the activations shuffled
// once a super-block to match; Q5_K broadcasts each 32-byte chunk to
// both halves (its fifth bits come per chunk). gfni (Q4_K): the high
// nibbles moved down by one GF2P8AFFINEQB (a bit matrix a byte) instead
// of a shift and an AND (the kernel bqkQ4KDot4GFNI).
//
// The four rows' int32 sums stay in ZMM to the end of the super-block
// and are reduced together (k4reduce4); the float32 steps take the rows'
// S and M as two vectors of four lanes (k4floatSM).
func q4k4VNNI(five, gfni bool) {
	name, ty, bs, qs := "bqkQ4KDot4VNNI", "Q4_K", 144, 16
	if five {
		name, ty, bs, qs = "bqkQ5KDot4VNNI", "Q5_K", 176, 48
	} else if gfni {
		name = "bqkQ4KDot4GFNI"
	}
	a := k4headN(name, k4Doc(name, ty, true))
	lab := name + "_"
	row := a.row
	didx, dmw := ZMM(), ZMM()
	VMOVDQU64(dIdx4, didx)
	VMOVDQU64(dmIdx4, dmw)
	facc := XMM()
	// the tables the quants' loop takes, in registers (a memory operand
	// each would be a load for every 32 quant bytes of every row)
	shq4, c0f, c10, hiq := ZMM(), ZMM(), ZMM(), ZMM()
	if five {
		VMOVDQU64(zShQ4, shq4)
	}
	VMOVDQU64(z0F, c0f)
	if gfni {
		VMOVDQU64(gfHi4, hiq)
	}
	var scq4, shq5 [4]VecVirtual
	for c := range scq4 {
		scq4[c] = ZMM()
		if five {
			VMOVDQU64(zScQ4[c], scq4[c])
		} else {
			VMOVDQU64(zScQ4w[c], scq4[c])
		}
		if five {
			shq5[c] = ZMM()
			VMOVDQU64(zShQ5[c], shq5[c])
		}
	}
	if five {
		VMOVDQU64(z10, c10)
	}
	k4groupStart(a, lab)
	VXORPS(facc, facc, facc)
	Label(lab + "block")
	TESTQ(a.nb, a.nb)
	JZ(LabelRef(lab + "done"))
	// the super-block's activations, for the four rows
	var xv [4]VecVirtual
	for c := range xv {
		xv[c] = ZMM()
		VMOVDQU64(Mem{Base: a.x, Disp: 64 * c}, xv[c])
	}
	if !five {
		// Q4_K reads 64 quant bytes (chunks 2h and 2h+1) at a time: its
		// low nibbles are elements 128h+0..31 and 128h+64..95, the high
		// ones 128h+32..63 and 128h+96..127; the activations in that
		// order, xv[2h] the low nibbles' and xv[2h+1] the high ones'
		for h := 0; h < 2; h++ {
			lo, hi := ZMM(), ZMM()
			VSHUFI64X2(U8(0x44), xv[2*h+1], xv[2*h], lo)
			VSHUFI64X2(U8(0xEE), xv[2*h+1], xv[2*h], hi)
			xv[2*h], xv[2*h+1] = lo, hi
		}
	}
	R := ZMM()
	VMOVDQU32(row(0, 0), R.AsX())
	for r := 1; r < 4; r++ {
		VINSERTI32X4(U8(r), row(r, 0), R, R)
	}
	P, Q := ZMM(), ZMM()
	VPSHUFB(zHdrP, R, P)
	VPSHUFB(zHdrQ, R, Q)
	VPSRLVD(zHdrSh, P, P)
	VPSRLD(U8(2), Q, Q)
	VPANDD(z30, Q, Q)
	VPTERNLOGD(U8(0xF8), zHdrMask, P, Q) // Q |= P & mask: [sc0..7, m0..7] a lane
	scw, mw := ZMM(), ZMM()
	VPSHUFB(zScW, Q, scw)
	VPSHUFB(zMinW, Q, mw)
	// the mins' term: the 32-value sums as words in every lane
	s16 := ZMM()
	VMOVDQU32(Mem{Base: a.xs}, s16.AsY())
	VPMOVDW(s16.AsY(), s16.AsX())
	VSHUFI32X4(U8(0), s16, s16, s16)
	mv := ZMM()
	VPMADDWD(s16, mw, mv) // lane r: row r's four pair sums
	var S [4]VecVirtual
	for r := 0; r < 4; r++ {
		t := ZMM()
		VSHUFI32X4(U8(r*0x55), scw, scw, t) // row r's scale words in every lane
		acc := ZMM()
		first := true
		// acc += s·n (the first product acc = s·n)
		dp := func(s, n VecVirtual) {
			if first {
				VPMADDWD(s, n, acc)
				first = false
				return
			}
			vpdpwssd(s, n, acc)
		}
		var qh VecVirtual
		if five {
			qh = ZMM()
			VBROADCASTI64X4(row(r, 16), qh)
		}
		if !five {
			for h := 0; h < 2; h++ {
				q, n, s := ZMM(), ZMM(), ZMM()
				VMOVDQU64(row(r, qs+64*h), q)
				VPANDD(c0f, q, n)
				if gfni {
					vgf2p8affineqb(hiq, q, q)
				} else {
					VPSRLW(U8(4), q, q)
					VPANDD(c0f, q, q)
				}
				VPMADDUBSW(xv[2*h], n, n)
				VPSHUFB(scq4[2*h], t, s)
				dp(s, n)
				VPMADDUBSW(xv[2*h+1], q, q)
				s = ZMM()
				VPSHUFB(scq4[2*h+1], t, s)
				dp(s, q)
			}
		}
		for c := 0; c < 4 && five; c++ {
			n, s := ZMM(), ZMM()
			VBROADCASTI64X4(row(r, qs+32*c), n)
			VPSRLVW(shq4, n, n)
			VPANDD(c0f, n, n)
			if five { // bits 2c, 2c+1 of qh's bytes to bit 4
				h := ZMM()
				if c < 2 {
					VPSLLVW(shq5[c], qh, h)
				} else {
					VPSRLVW(shq5[c], qh, h)
				}
				VPTERNLOGD(U8(0xF8), c10, h, n) // n |= h & 0x10
			}
			VPMADDUBSW(xv[c], n, n)
			VPSHUFB(scq4[c], t, s)
			dp(s, n)
		}
		S[r] = acc
	}
	s4 := k4reduce4(S)
	// [M0 M1 M2 M3]
	t1 := ZMM()
	VPSHUFD(U8(0x4E), mv, t1)
	VPADDD(t1, mv, mv)
	VPSHUFD(U8(0xB1), mv, t1)
	VPADDD(t1, mv, mv)
	VPERMD(mv, didx, mv)
	k4floatSM(a, R, dmw, s4, mv.AsX(), facc)
	ADDQ(U32(uint32(bs)), a.w)
	ADDQ(U32(256), a.x)
	ADDQ(U8(4), a.xd)
	ADDQ(U8(32), a.xs)
	DECQ(a.nb)
	JMP(LabelRef(lab + "block"))
	Label(lab + "done")
	k4groupEnd(a, lab, facc)
	VZEROUPPER()
	RET()
}

// k4reduce4 sums each of the four rows' sixteen int32 lanes (acc[r]) to
// [S0 S1 S2 S3]: the rows interleaved pairwise and added (per 128-bit
// lane four partial sums a row, in row order), then the lanes added.
func k4reduce4(acc [4]VecVirtual) VecVirtual {
	var t [2]VecVirtual
	for i := range t {
		lo, hi := ZMM(), ZMM()
		VPUNPCKLDQ(acc[2*i+1], acc[2*i], lo) // a0 b0 a1 b1
		VPUNPCKHDQ(acc[2*i+1], acc[2*i], hi) // a2 b2 a3 b3
		VPADDD(hi, lo, lo)
		t[i] = lo
	}
	lo, hi := ZMM(), ZMM()
	VPUNPCKLQDQ(t[1], t[0], lo)
	VPUNPCKHQDQ(t[1], t[0], hi)
	VPADDD(hi, lo, lo) // per lane [r0 r1 r2 r3]
	VSHUFI64X2(U8(0xEE), lo, lo, hi)
	VPADDD(hi, lo, lo)
	s4 := XMM()
	VEXTRACTI32X4(U8(1), lo.AsY(), s4)
	VPADDD(lo.AsX(), s4, s4)
	return s4
}

// k4floatSM does the float32 steps of four rows with minimums, lane r
// row r: facc += float32(S)·(d·d_a), then facc −= float32(M)·(dmin·d_a);
// R holds the rows' first 16 bytes (d, dmin at 0 and 2) one a 128-bit
// lane, dmw the word indices picking d0..d3, dmin0..dmin3 (dmIdx4).
func k4floatSM(a k4args, R, dmw, s4 VecVirtual, m4 Op, facc VecVirtual) {
	dd := ZMM()
	VPERMW(R, dmw, dd)
	df := YMM()
	VCVTPH2PS(dd.AsX(), df) // d0..d3 | dmin0..dmin3
	da := YMM()
	VBROADCASTSS(Mem{Base: a.xd}, da)
	VMULPS(da, df, df)
	sm := YMM()
	VINSERTI32X4(U8(1), m4, s4.AsY(), sm)
	f := YMM()
	VCVTDQ2PS(sm, f)
	VMULPS(df, f, f)
	VADDPS(f.AsX(), facc, facc)
	g := XMM()
	VEXTRACTF32X4(U8(1), f, g)
	VSUBPS(g, facc, facc)
}

// vgf2p8affineqb: each byte of x to the bit matrix of its qword in m
// (GF2P8AFFINEQB with no constant; emitted raw: not in avo's table).
func vgf2p8affineqb(m, x, dst Op) {
	Instruction(&ir.Instruction{Opcode: "VGF2P8AFFINEQB", Operands: []Op{U8(0), m, x, dst}, Inputs: []Op{m, x}, Outputs: []Op{dst}})
}

// q23k4VNNI generates the four-row Q2_K (three: Q3_K) kernel on ZMM.
// Both hold per 128 elements 32 bytes of 2-bit fields, field j of byte l
// the element 32j+l, sixteen-element groups each with its scale (a
// 128-bit lane of a register, the scale words placed by VPERMW as for
// Q6_K). Q2_K: unsigned quants, scale and minimum the low and high
// nibbles of a byte (the minimums' term with the 16-value sums), d and
// dmin at byte 80. Q3_K: the quant's third bit from hmask (bit 4h+j of
// byte l), the value that less 4 (taken off as −4·sc_g·Σx_g, the sums'
// starting value), signed 6-bit scales less 32, d at byte 108.
func q23k4VNNI(three bool) {
	name, ty, bs := "bqkQ2KDot4VNNI", "Q2_K", 84
	if three {
		name, ty, bs = "bqkQ3KDot4VNNI", "Q3_K", 110
	}
	a := k4head(name, name+" is core/ggml's Dot of nb "+ty+" super-blocks for 4 weight rows ldw bytes apart, into y[0..3] (see k4.go of the package asmgenbqk).")
	lab := name + "_"
	row := a.row
	var idx [4]VecVirtual
	for i := range idx {
		idx[i] = ZMM()
		VMOVDQU64(zIdxQ6[i], idx[i])
	}
	facc := YMM()
	if three {
		facc = XMM()
	}
	VXORPS(facc, facc, facc)
	Label(lab + "block")
	TESTQ(a.nb, a.nb)
	JZ(LabelRef(lab + "done"))
	prefetch4(a, bs)
	// the sixteen 16-value sums as words
	s16 := YMM()
	{
		s := ZMM()
		VMOVDQU32(Mem{Base: a.xs}, s)
		VPMOVDW(s, s16)
	}
	qs, sco := 16, 0
	if three {
		qs = 32
	}
	var S, M [4]VecVirtual
	for r := 0; r < 4; r++ {
		sc := YMM() // the sixteen scales as words
		acc := ZMM()
		if three {
			// lo | hi<<4, less 32, from the twelve bytes at 96
			p, t := XMM(), XMM()
			VMOVQ(row(r, 96), p)
			VPINSRD(U8(2), row(r, 104), p, p)
			VPSRLW(U8(4), p, t)
			VPUNPCKLQDQ(t, p, t) // p0..7, p0..7 >> 4
			VPANDD(c0F.Offset(0), t, t)
			hi := XMM()
			VPSHUFB(q3HiIdx, p, hi)
			VPSRLVD(q3HiSh, hi, hi)
			VPSLLD(U8(4), hi, hi)
			VPANDD(c30x(), hi, hi)
			VPORD(hi, t, t)
			VPSUBB(c20.Offset(0), t, t)
			VPMOVSXBW(t, sc)
			u := YMM()
			VPMULLW(wM4, sc, u)
			VPMADDWD(s16, u, acc.AsY()) // −4·sc_g·Σx_g; the upper half zero
		} else {
			VPMOVZXBW(row(r, sco), sc)
			M[r] = YMM()
			m := YMM()
			VPSRLW(U8(4), sc, m)
			VPMADDWD(s16, m, M[r])
			VPANDD(wLo4, sc, sc)
			VPXORD(acc, acc, acc)
		}
		var hm VecVirtual
		if three {
			hm = ZMM()
			VBROADCASTI64X4(row(r, 0), hm)
		}
		for h := 0; h < 2; h++ {
			q := ZMM()
			VBROADCASTI64X4(row(r, qs+32*h), q)
			for k := 0; k < 2; k++ {
				n, sv := ZMM(), ZMM()
				VPSRLVW(zShQ2[2*h+k], q, n)
				VPANDD(z03, n, n)
				if three {
					hb := ZMM()
					if h == 0 && k == 0 {
						VPSLLVW(zShQ3h[0], hm, hb)
					} else {
						VPSRLVW(zShQ3h[2*h+k], hm, hb)
					}
					VPTERNLOGD(U8(0xF8), z04, hb, n) // n |= hb & 4
				}
				VPMADDUBSW(Mem{Base: a.x, Disp: 128*h + 64*k}, n, n)
				VPERMW(sc.AsZ(), idx[2*h+k], sv)
				vpdpwssd(sv, n, acc)
			}
		}
		t := YMM()
		VEXTRACTI64X4(U8(1), acc, t)
		S[r] = YMM()
		VPADDD(t, acc.AsY(), S[r])
	}
	// the rows' sums, reduced in EVEX-encodable instructions (the
	// registers here may be any of the 32)
	var xr [4]VecVirtual
	for r := 0; r < 4; r++ {
		xr[r] = rowSM(S[r], M[r])
	}
	if three {
		a01, a23 := XMM(), XMM()
		VPUNPCKLDQ(xr[1], xr[0], a01)
		VPUNPCKLDQ(xr[3], xr[2], a23)
		s4 := XMM()
		VPUNPCKLQDQ(a23, a01, s4) // S0 S1 S2 S3
		dd := XMM()
		h := GP32()
		MOVWLZX(row(0, 108), h)
		VMOVD(h, dd)
		for r := 1; r < 4; r++ {
			VPINSRW(U8(r), row(r, 108), dd, dd)
		}
		VCVTPH2PS(dd, dd)
		da := XMM()
		VBROADCASTSS(Mem{Base: a.xd}, da)
		VMULPS(da, dd, dd)
		VCVTDQ2PS(s4, s4)
		VMULPS(dd, s4, s4)
		VADDPS(s4, facc, facc)
	} else {
		lo, hi := XMM(), XMM()
		VPUNPCKLQDQ(xr[1], xr[0], lo) // S0 M0 S1 M1
		VPUNPCKLQDQ(xr[3], xr[2], hi) // S2 M2 S3 M3
		sm := YMM()
		VINSERTI32X4(U8(1), hi, lo.AsY(), sm)
		k4floatAt(a, row, 80, sm, facc)
	}
	ADDQ(U32(uint32(bs)), a.w)
	ADDQ(U32(256), a.x)
	ADDQ(U8(4), a.xd)
	ADDQ(U8(64), a.xs)
	DECQ(a.nb)
	JMP(LabelRef(lab + "block"))
	Label(lab + "done")
	if three {
		y := Load(Param("y"), GP64())
		VMOVUPS(facc, Mem{Base: y})
	} else {
		store4even(facc)
	}
	VZEROUPPER()
	RET()
}

// rowSM reduces a row's sums S (eight int32) and M (eight, or nil) to
// [S M S M] (M nil: [S S S S]) with EVEX-encodable instructions.
func rowSM(S, M VecVirtual) VecVirtual {
	x := XMM()
	if M != nil {
		a, b := YMM(), YMM()
		VPUNPCKLDQ(M, S, a) // per lane S0 M0 S1 M1
		VPUNPCKHDQ(M, S, b) // S2 M2 S3 M3
		VPADDD(b, a, a)
		c := YMM()
		VPSHUFD(U8(0x4E), a, c)
		VPADDD(c, a, a)
		VEXTRACTI32X4(U8(1), a, x)
		VPADDD(a.AsX(), x, x)
		return x
	}
	VEXTRACTI32X4(U8(1), S, x)
	VPADDD(S.AsX(), x, x)
	c := XMM()
	VPSHUFD(U8(0x4E), x, c)
	VPADDD(c, x, x)
	VPSHUFD(U8(0xB1), x, c)
	VPADDD(c, x, x)
	return x
}

// c30x is the 0x30 bytes constant (its first 16 bytes used).
func c30x() Mem { return z30 }
