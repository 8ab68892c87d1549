// Command asmgenk4few generates the amd64 assembly of the native
// backend's few-row products of ggml Q4_K and Q6_K (a batched decode
// step: 2 to 4 activation rows; the package native's k4few_amd64.go)
// with avo (github.com/mmcloughlin/avo). It writes its own pair of
// files; the package's TestGeneratedAssemblyIsCurrent runs it and fails
// when they are stale.
//
// A kernel computes ng groups of four weight rows against R packed
// activation rows, one weight row a 128-bit lane (the layout of
// asmgenbqm's few-row kernels of Q5_0 and Q8_0): 16 quant bytes of each
// of the four rows in one register (a load and three inserts), their
// quants unpacked once for the R rows, each activation row's matching 16
// values broadcast to the four lanes (VBROADCASTI32X4). VPDPBUSD
// (unsigned quant × signed activation) sums four products a dword; Q4_K
// sums a sub-block's two halves into the same dwords (8 products: at
// most 8·15·127), Q6_K one 16-value group (4 products: at most
// 4·63·127); the dwords of two sub-blocks (groups) are packed to words
// (VPACKSSDW, exact: they fit) and multiplied by their scales, a word per
// lane (row n's, by an in-lane byte shuffle of the decoded scales), into
// the row's int32 lanes by VPDPWSSD: five multiplications for 64 quants
// of four rows and two activation rows where VPMADDUBSW and VPDPWSSD took
// eight (the tiles of asmgenqgemm and the single-row kernels). Per
// super-block each lane of activation row r's accumulator holds a part of
// S(n, r) = Σ_s sc_s·Σ q·x, exact in int32 whatever the order. The four
// parts of a 128-bit lane are then added across the R accumulators at
// once (unpacks: nine instructions for R = 4, where the tiles, one weight
// row a register, add sixteen registers across) into one vector, element
// 4n+r holding S(n, r); Q4_K's M(n, r) = Σ_s m_s·Σx_s (VPMADDWD of the
// mins with the 32-value sums) likewise. Then as core/ggml's Dot, for
// the sixteen (n, r) at once: acc += float32(S)·float32(d·d_a), Q4_K's
// acc −= float32(M)·float32(dmin·d_a), in float32, so that each output
// has the bits of Dot of its row alone.
//
// The activations are the tiles' packing (the package native's packK):
// per super-block the R rows' 256 int8 values; Q4_K: the rows' 32-value
// sums as int16 (row r at bytes 16r of 64); Q6_K: per row its sixteen
// 16-value sums as int16 and 32 zero bytes; then the rows' d_a (row r's
// four times at bytes 16r of 64).
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
	"github.com/switchyard-hal/switchyard/plugins/native/internal/avokit"
)

// vpdpbusd is avokit.Vpdpbusd: acc += u8(u)·s8(sg), four products a lane.
var vpdpbusd = avokit.Vpdpbusd

func main() {
	consts()
	for _, r := range []int{2, 3, 4} {
		q4kFew(r)
		q6kFew(r)
	}
	Generate()
}

// vpdpwssd: acc += s16(a)·s16(b) pairwise into int32 lanes (AVX-512
// VNNI; emitted raw: not in avo's table, Go's assembler knows it).
func vpdpwssd(a, b, acc Op) {
	Instruction(&ir.Instruction{Opcode: "VPDPWSSD", Operands: []Op{a, b, acc}, Inputs: []Op{a, b, acc}, Outputs: []Op{acc}})
}

var c0F, hdrP, hdrQ, hdrSh, hdrMask, c30, minW, dIdx, dmIdx, daIdx Mem
var scIdx [4]Mem

// Q6_K's tables
var q6ScW [2]Mem
var q6ScIdx [2][2]Mem

func consts() {
	lane16 := func(name string, f func(i int) byte) Mem {
		return avokit.Bytes(name, 64, func(i int) byte { return f(i % 16) })
	}
	words := func(name string, f func(i int) uint16) Mem {
		return avokit.Bytes(name, 64, func(i int) byte { return byte(f(i/2) >> (8 * (i % 2))) })
	}
	c0F = avokit.Bytes("k4few_c0f", 64, func(int) byte { return 0x0F })
	c30 = avokit.Bytes("k4few_c30", 64, func(int) byte { return 0x30 })
	// Q4_K's 16-byte header (d, dmin, twelve scale bytes s0..s11 at
	// 4..15), a row a 128-bit lane, decoded to the bytes [sc0..sc7,
	// m0..m7]: P picks s0-3, s8-11, s4-7, s8-11 (shifted 0, 0, 0, 4 bits,
	// masked 3F, 0F, 3F, 0F), Q the top two bits of s0-3 and s4-7 for
	// sc4-7 and m4-7 (shifted right 2, masked 30)
	hdrP = lane16("k4few_hdrp", func(i int) byte { return []byte{4, 5, 6, 7, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15}[i] })
	hdrQ = lane16("k4few_hdrq", func(i int) byte {
		return []byte{0x80, 0x80, 0x80, 0x80, 4, 5, 6, 7, 0x80, 0x80, 0x80, 0x80, 8, 9, 10, 11}[i]
	})
	hdrSh = lane16("k4few_hdrsh", func(i int) byte { return []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0}[i] })
	hdrMask = lane16("k4few_hdrmask", func(i int) byte { return []byte{0x3F, 0x0F, 0x3F, 0x0F}[i/4] })
	// chunk c's scales, words 0-3 of each lane sub-block 2c's (byte 2c of
	// the decoded header), 4-7 2c+1's
	for c := range scIdx {
		scIdx[c] = lane16(fmt.Sprintf("k4few_scidx%d", c), func(i int) byte {
			if i%2 == 1 {
				return 0x80
			}
			return byte(2*c + i/8)
		})
	}
	// Q6_K: scale bytes 8h..8h+7 of a lane to the high bytes of its words
	// (then shifted right 8, sign-extended)
	for h := range q6ScW {
		q6ScW[h] = lane16(fmt.Sprintf("k4few_q6scw%d", h), func(i int) byte {
			if i%2 == 0 {
				return 0x80
			}
			return byte(8*h + i/2)
		})
	}
	// Q6_K (j, half): words 0-3 of a lane group 2j+half's scale word (of
	// its half's eight), 4-7 group 2(j+2)+half's
	for j := range q6ScIdx {
		for half := range q6ScIdx[j] {
			q6ScIdx[j][half] = lane16(fmt.Sprintf("k4few_q6scidx%d%d", j, half), func(i int) byte {
				g := 2*j + half
				if i >= 8 {
					g += 4
				}
				return byte(2*g + i%2)
			})
		}
	}
	// the mins (bytes 8-15) zero-extended to words
	minW = lane16("k4few_minw", func(i int) byte {
		if i%2 == 1 {
			return 0x80
		}
		return byte(8 + i/2)
	})
	// word j ← word 8·(j/4) (row j/4's d), 8·(j/4)+1 (its dmin)
	dIdx = words("k4few_didx", func(j int) uint16 { return uint16(8 * (j / 4)) })
	dmIdx = words("k4few_dmidx", func(j int) uint16 { return uint16(8*(j/4) + 1) })
	// dword j ← dword 4·(j%4): activation row j%4's d_a
	daIdx = avokit.Bytes("k4few_daidx", 64, func(i int) byte {
		if i%4 != 0 {
			return 0
		}
		return byte(4 * (i / 4 % 4))
	})
}

const sig = "func(nb int, w *uint8, ldw int, a *int8, y *float32, ldy int, ng int, gw int, gy int, ldo int)"

// prefetchAhead is how far ahead in its run each weight row is
// prefetched, every super-block (the caller cuts its rows into four runs
// of consecutive rows, each row of a group streaming through memory in
// order for the whole call, as the single-row kernels' quarters).
const prefetchAhead = 768

// reduce4 adds the four int32 of each 128-bit lane of v[0..3] (v[r] nil:
// zero) into one vector, element 4n+r the sum of lane n of v[r].
func reduce4(v [4]VecVirtual, zero VecVirtual) VecVirtual {
	for r := range v {
		if v[r] == nil {
			v[r] = zero
		}
	}
	pair := func(lo, hi func(a, b, d Op), x, y VecVirtual) VecVirtual {
		t1, t2 := ZMM(), ZMM()
		lo(y, x, t1)
		hi(y, x, t2)
		VPADDD(t2, t1, t1)
		return t1
	}
	ld := func(a, b, d Op) { VPUNPCKLDQ(a, b, d) }
	hd := func(a, b, d Op) { VPUNPCKHDQ(a, b, d) }
	lq := func(a, b, d Op) { VPUNPCKLQDQ(a, b, d) }
	hq := func(a, b, d Op) { VPUNPCKHQDQ(a, b, d) }
	// [x0+x2, y0+y2, x1+x3, y1+y3] a lane
	t01 := pair(ld, hd, v[0], v[1])
	t23 := pair(ld, hd, v[2], v[3])
	return pair(lq, hq, t01, t23)
}

// q4kFew generates k4fewQ4Kx<R>Z: ng groups of four Q4_K weight rows
// (row n of a group at w + n·ldw, the next group gw bytes on) against R
// packed activation rows at a; output (n, r) of a group to y + r·ldy +
// n·ldo bytes, the next group's gy bytes on.
func q4kFew(R int) {
	name := fmt.Sprintf("k4fewQ4Kx%dZ", R)
	const bs = 144
	TEXT(name, NOSPLIT, sig)
	Doc(fmt.Sprintf("%s computes ng groups of 4 Q4_K weight rows (ldw bytes apart, groups gw bytes apart) against %d packed activation rows at a: output (n, r) of group g to y + r·ldy + g·gy + n·ldo bytes (see the package asmgenk4few).", name, R))
	Pragma("noescape")
	wg := Load(Param("w"), GP64())
	ldw := Load(Param("ldw"), GP64())
	y := Load(Param("y"), GP64())
	ng := Load(Param("ng"), GP64())
	nb, a, w := GP64(), GP64(), GP64()
	ldw3 := GP64()
	LEAQ(Mem{Base: ldw, Index: ldw, Scale: 2}, ldw3)
	c0f, zero := ZMM(), ZMM()
	VMOVDQU64(c0F, c0f)
	VPXORD(zero, zero, zero)
	stride := 256*R + 128
	sums, das := 256*R, 256*R+64
	p := name + "_"
	Label(p + "group")
	TESTQ(ng, ng)
	JZ(LabelRef(p + "end"))
	Load(Param("nb"), nb)
	Load(Param("a"), a)
	MOVQ(wg, w)
	facc := ZMM()
	VXORPS(facc, facc, facc)
	TESTQ(nb, nb)
	JZ(LabelRef(p + "done"))
	Label(p + "block") // tested at its end
	row := avokit.Rows4(w, ldw, ldw3)
	for n := 0; n < 4; n++ {
		for o := 0; o < bs; o += 64 {
			PREFETCHT0(row(n, prefetchAhead+o))
		}
	}
	// the header: lane n row n's 16 bytes, decoded to [sc0..7, m0..7]
	hd := ZMM()
	VMOVDQU32(row(0, 0), hd.AsX())
	for n := 1; n < 4; n++ {
		VINSERTI32X4(U8(n), row(n, 0), hd, hd)
	}
	P, Q := ZMM(), ZMM()
	VPSHUFB(hdrP, hd, P)
	VPSHUFB(hdrQ, hd, Q)
	VPSRLVD(hdrSh, P, P)
	VPSRLD(U8(2), Q, Q)
	VPANDD(c30, Q, Q)
	VPTERNLOGD(U8(0xF8), hdrMask, P, Q) // Q |= P & mask
	var acc [4]VecVirtual
	for r := 0; r < R; r++ {
		acc[r] = ZMM()
		VPXORD(acc[r], acc[r], acc[r])
	}
	for c := 0; c < 4; c++ {
		// chunk c: 32 bytes a row, low nibbles sub-block 2c (elements
		// 64c..64c+31), high ones 2c+1 (64c+32..64c+63); its two halves'
		// nibbles, lo[h] and hi[h]
		var lo, hi [2]VecVirtual
		for h := 0; h < 2; h++ {
			lo[h], hi[h] = ZMM(), ZMM()
			VMOVDQU32(row(0, 16+32*c+16*h), lo[h].AsX())
			for n := 1; n < 4; n++ {
				VINSERTI32X4(U8(n), row(n, 16+32*c+16*h), lo[h], lo[h])
			}
			VPSRLW(U8(4), lo[h], hi[h])
			VPANDD(c0f, lo[h], lo[h])
			VPANDD(c0f, hi[h], hi[h])
		}
		// words 0-3 of a lane sub-block 2c's scale, 4-7 2c+1's
		sc := ZMM()
		VPSHUFB(scIdx[c], Q, sc)
		for r := 0; r < R; r++ {
			// sA, sB: sub-blocks 2c, 2c+1, each dword 8 products
			sA, sB := ZMM(), ZMM()
			VMOVDQA64(zero, sA) // (VPXORD sA, sA, sA would read sA, to avo's allocator)
			VMOVDQA64(zero, sB)
			for h := 0; h < 2; h++ {
				xl, xh := ZMM(), ZMM()
				VBROADCASTI32X4(Mem{Base: a, Disp: 256*r + 64*c + 16*h}, xl)
				VBROADCASTI32X4(Mem{Base: a, Disp: 256*r + 64*c + 32 + 16*h}, xh)
				vpdpbusd(xl, lo[h], sA)
				vpdpbusd(xh, hi[h], sB)
			}
			VPACKSSDW(sB, sA, sA) // [A0..A3 B0..B3] a lane, exact
			vpdpwssd(sc, sA, acc[r])
		}
	}
	S := reduce4(acc, zero)
	// M(n, r): the mins by the rows' 32-value sums
	mw := ZMM()
	VPSHUFB(minW, Q, mw)
	var mv [4]VecVirtual
	for r := 0; r < R; r++ {
		mv[r] = ZMM()
		VBROADCASTI32X4(Mem{Base: a, Disp: sums + 16*r}, mv[r])
		VPMADDWD(mv[r], mw, mv[r])
	}
	M := reduce4(mv, zero)
	// d·d_a and dmin·d_a, element 4n+r
	da, dv, dmv := ZMM(), ZMM(), ZMM()
	VMOVDQU64(daIdx, da)
	VPERMD(Mem{Base: a, Disp: das}, da, da)
	VMOVDQU64(dIdx, dv)
	VPERMW(hd, dv, dv)
	VCVTPH2PS(dv.AsY(), dv)
	VMOVDQU64(dmIdx, dmv)
	VPERMW(hd, dmv, dmv)
	VCVTPH2PS(dmv.AsY(), dmv)
	VMULPS(da, dv, dv)   // d·d_a, one rounding
	VMULPS(da, dmv, dmv) // dmin·d_a
	VCVTDQ2PS(S, S)
	VMULPS(dv, S, S)
	VADDPS(S, facc, facc)
	VCVTDQ2PS(M, M)
	VMULPS(dmv, M, M)
	VSUBPS(M, facc, facc)
	ADDQ(U8(bs), w)
	ADDQ(U32(uint32(stride)), a)
	DECQ(nb)
	JNZ(LabelRef(p + "block"))
	Label(p + "done")
	storeOut(facc, y, R)
	ADDQ(avokit.ParamAddr("gy"), y)
	ADDQ(avokit.ParamAddr("gw"), wg)
	DECQ(ng)
	JMP(LabelRef(p + "group"))
	Label(p + "end")
	VZEROUPPER()
	RET()
}

// rows4 loads 16 bytes at row(n, disp) into lane n of a new register.
func rows4(row func(r, disp int) Mem, disp int) VecVirtual {
	v := ZMM()
	VMOVDQU32(row(0, disp), v.AsX())
	for n := 1; n < 4; n++ {
		VINSERTI32X4(U8(n), row(n, disp), v, v)
	}
	return v
}

// q6kFew generates k4fewQ6Kx<R>Z, q4kFew's kernel for Q6_K: per half h
// of the super-block and half of each 32-value plane, the four planes'
// 6-bit quants of the four rows (unsigned, 0..63) from two registers of
// low bits and one of high bits; VPDPBUSD sums four products a dword
// (at most 4·63·127, a word), two groups' dwords packed to words and
// multiplied by their signed scales (VPDPWSSD); the offset 32 joins S as
// Σ_g (−32·sc_g)·Σx_g (VPDPWSSD with the rows' 16-value sums). Then as
// Dot: acc += float32(S)·float32(d·d_a). The activations: the tiles'
// packing (per super-block the R rows' 256 values, per row its sixteen
// 16-value sums as int16 and 32 zero bytes, the rows' d_a).
func q6kFew(R int) {
	name := fmt.Sprintf("k4fewQ6Kx%dZ", R)
	const bs = 210
	TEXT(name, NOSPLIT, sig)
	Doc(fmt.Sprintf("%s computes ng groups of 4 Q6_K weight rows (ldw bytes apart, groups gw bytes apart) against %d packed activation rows at a: output (n, r) of group g to y + r·ldy + g·gy + n·ldo bytes (see the package asmgenk4few).", name, R))
	Pragma("noescape")
	wg := Load(Param("w"), GP64())
	ldw := Load(Param("ldw"), GP64())
	y := Load(Param("y"), GP64())
	ng := Load(Param("ng"), GP64())
	nb, a, w := GP64(), GP64(), GP64()
	ldw3 := GP64()
	LEAQ(Mem{Base: ldw, Index: ldw, Scale: 2}, ldw3)
	c0f, c30v, zero := ZMM(), ZMM(), ZMM()
	VMOVDQU64(c0F, c0f)
	VMOVDQU64(c30, c30v)
	VPXORD(zero, zero, zero)
	var km [4]OpmaskVirtual
	for r := 1; r < 4; r++ {
		km[r] = avokit.MaskW(0xF << (4 * r))
	}
	stride := 320*R + 64
	sums, das := 256*R, 320*R
	p := name + "_"
	Label(p + "group")
	TESTQ(ng, ng)
	JZ(LabelRef(p + "end"))
	Load(Param("nb"), nb)
	Load(Param("a"), a)
	MOVQ(wg, w)
	facc := ZMM()
	VXORPS(facc, facc, facc)
	TESTQ(nb, nb)
	JZ(LabelRef(p + "done"))
	Label(p + "block") // tested at its end
	row := avokit.Rows4(w, ldw, ldw3)
	for n := 0; n < 4; n++ {
		for o := 0; o < bs; o += 64 {
			PREFETCHT0(row(n, prefetchAhead+o))
		}
	}
	// the scales as words (row n's in lane n): G[h] groups 8h..8h+7, O[h]
	// their −32·sc
	scb := rows4(row, 192)
	var G, O [2]VecVirtual
	for h := 0; h < 2; h++ {
		G[h], O[h] = ZMM(), ZMM()
		VPSHUFB(q6ScW[h], scb, G[h])
		VPSRAW(U8(8), G[h], G[h])
		VPSLLW(U8(5), G[h], O[h])
		VPSUBW(O[h], zero, O[h])
	}
	var acc [4]VecVirtual
	for r := 0; r < R; r++ {
		acc[r] = ZMM()
		s0, s1 := ZMM(), ZMM()
		VBROADCASTI32X4(Mem{Base: a, Disp: sums + 64*r}, s0)
		VBROADCASTI32X4(Mem{Base: a, Disp: sums + 64*r + 16}, s1)
		VPMADDWD(s0, O[0], acc[r])
		vpdpwssd(O[1], s1, acc[r])
	}
	for h := 0; h < 2; h++ {
		for half := 0; half < 2; half++ {
			hb := rows4(row, 128+32*h+16*half)
			for j := 0; j < 2; j++ {
				// planes j (low nibbles) and j+2 (high ones)
				ql := rows4(row, 64*h+32*j+16*half)
				qa, qb := ZMM(), ZMM()
				VPSRLW(U8(4), ql, qb)
				VPANDD(c0f, ql, qa)
				VPANDD(c0f, qb, qb)
				// high bits 2k..2k+1 of hb to bits 4-5
				ha, hbb := ZMM(), ZMM()
				if j == 0 {
					VPSLLW(U8(4), hb, ha)
					VMOVDQA64(hb, hbb)
				} else {
					VPSLLW(U8(2), hb, ha)
					VPSRLW(U8(2), hb, hbb)
				}
				VPTERNLOGD(U8(0xF8), c30v, ha, qa)  // qa |= ha & 0x30
				VPTERNLOGD(U8(0xF8), c30v, hbb, qb) // qb |= hbb & 0x30
				sc := ZMM()
				VPSHUFB(q6ScIdx[j][half], G[h], sc)
				for r := 0; r < R; r++ {
					sA, sB := ZMM(), ZMM()
					VMOVDQA64(zero, sA)
					VMOVDQA64(zero, sB)
					xa, xb := ZMM(), ZMM()
					VBROADCASTI32X4(Mem{Base: a, Disp: 256*r + 128*h + 32*j + 16*half}, xa)
					VBROADCASTI32X4(Mem{Base: a, Disp: 256*r + 128*h + 32*(j+2) + 16*half}, xb)
					vpdpbusd(xa, qa, sA)
					vpdpbusd(xb, qb, sB)
					VPACKSSDW(sB, sA, sA) // exact: at most 4·63·127
					vpdpwssd(sc, sA, acc[r])
				}
			}
		}
	}
	S := reduce4(acc, zero)
	// d·d_a, element 4n+r
	da := ZMM()
	VMOVDQU64(daIdx, da)
	VPERMD(Mem{Base: a, Disp: das}, da, da)
	hv := YMM()
	VPBROADCASTW(row(0, 208), hv)
	for n := 1; n < 4; n++ {
		VPBROADCASTW(row(n, 208), km[n], hv)
	}
	dv := ZMM()
	VCVTPH2PS(hv, dv)
	VMULPS(da, dv, dv) // d·d_a, one rounding
	VCVTDQ2PS(S, S)
	VMULPS(dv, S, S)
	VADDPS(S, facc, facc)
	ADDQ(U8(bs), w)
	ADDQ(U32(uint32(stride)), a)
	DECQ(nb)
	JNZ(LabelRef(p + "block"))
	Label(p + "done")
	storeOut(facc, y, R)
	ADDQ(avokit.ParamAddr("gy"), y)
	ADDQ(avokit.ParamAddr("gw"), wg)
	DECQ(ng)
	JMP(LabelRef(p + "group"))
	Label(p + "end")
	VZEROUPPER()
	RET()
}

// storeOut stores element 4n+r of facc to y + r·ldy + n·ldo (r < R).
func storeOut(facc VecVirtual, y Register, R int) {
	ldy, ldo, yn, y3 := GP64(), GP64(), GP64(), GP64()
	Load(Param("ldy"), ldy)
	Load(Param("ldo"), ldo)
	MOVQ(y, yn)
	for n := 0; n < 4; n++ {
		x := XMM()
		VEXTRACTF32X4(U8(uint8(n)), facc, x)
		VMOVSS(x, Mem{Base: yn})
		if R > 1 {
			VEXTRACTPS(U8(1), x, Mem{Base: yn, Index: ldy, Scale: 1})
		}
		if R > 2 {
			VEXTRACTPS(U8(2), x, Mem{Base: yn, Index: ldy, Scale: 2})
		}
		if R > 3 {
			LEAQ(Mem{Base: yn, Index: ldy, Scale: 2}, y3)
			VEXTRACTPS(U8(3), x, Mem{Base: y3, Index: ldy, Scale: 1})
		}
		if n < 3 {
			ADDQ(ldo, yn)
		}
	}
}
