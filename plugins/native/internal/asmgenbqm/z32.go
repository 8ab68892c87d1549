package main

// The integer path's few-row kernels of ggml Q5_0 and Q8_0 on ZMM
// (AVX-512 BW, BITALG and VNNI): a batched decode step's 2 to 4
// activation rows against groups of four weight rows, in the single-row
// kernels' layout (asmgenbqk's z32.go): one 128-bit lane a weight row,
// its elements 0..15 making lanes 0..3 of one register, 16..31 lanes
// 4..7 of another. The weight block is unpacked once for the R rows, and
// so are its scales (four float16 d, converted).
//
// The weights are the unsigned bytes (Q5_0 its quants q, 0..31; Q8_0
// q+128, q XOR 0x80) and the activations the signed bytes x, so VPDPBUSD
// takes the activations straight from memory; a lane starts at the
// activations' −off·Σx (off 16 or 128, the lane sums of core/ggml's Act,
// packed by the caller), so it holds exactly core/ggml's Dot lane sum
// Σx·(q−off), then as Dot: converted, times float32(d_w·d_a) by a fused
// multiply-add into the row's eight float32 lane accumulators block
// after block, reduced at the end as ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)).
// The scale product of row r is d_w (the four rows' d, converted once)
// times d_a(r) broadcast: one multiplication a row and block for the
// four weight rows. Per block and activation row that is two VPDPBUSD,
// two conversions, one multiplication and two FMAs; the unpacking
// (shared) is a quarter of it at four rows.
//
// Row q of group g is at w + g·adv + q·ldw and its output at
// y + 4(g·yg + q·ys): the four rows adjacent (ldw one row, adv four, ys
// 1, yg 4),
// or, as the single-row kernels' sig32s, with ldw a run of S rows and
// adv one row (ys S, yg 1), each of the four rows streaming through its own S
// consecutive rows, which the hardware's prefetchers follow. Each row is
// also prefetched zPrefetch bytes ahead. (The caller picks the order by
// type, by measurement.)
//
// The activations come packed (the caller's, blockquant_few_amd64.go),
// 64-byte aligned: per block, per row the bytes x of elements 0..15 four
// times (one a weight row's lane), then of 16..31 four times, then the
// int32 starts −off·Σ of lanes 0..3 four times, then of lanes 4..7 four
// times; then the rows' float32 d_a (64 bytes, rows ≥ R zero): 256·R+64
// bytes a block. Loaded whole, not broadcast from 16 bytes: the
// broadcasts' shuffles cost more (measured on Zen 5) than the bytes.

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
	"github.com/switchyard-hal/switchyard/plugins/native/internal/avokit"
)

var zC0F, zC10, zC80, zQhLo, zQhHi, zDIdx4 Mem

func constsZ() {
	zC0F = avokit.Bytes("bqm_zc0f", 64, func(int) byte { return 0x0F })
	zC10 = avokit.Bytes("bqm_zc10", 64, func(int) byte { return 0x10 })
	zC80 = avokit.Bytes("bqm_zc80", 64, func(int) byte { return 0x80 })
	// byte j of each 128-bit lane takes bit j (low nibbles' elements) or
	// 16+j (high ones') of its qword, the row's qh
	zQhLo = avokit.Bytes("bqm_zqhlo", 64, func(i int) byte { return byte(i % 16) })
	zQhHi = avokit.Bytes("bqm_zqhhi", 64, func(i int) byte { return byte(16 + i%16) })
	// dwords 0, 4, 8, 12: each lane's first
	zDIdx4 = avokit.Bytes("bqm_zdidx4", 64, func(i int) byte {
		if i%4 != 0 || i >= 16 {
			return 0
		}
		return byte(i)
	})
}

// vpdpbusd: acc += u8(u) · s8(sg), four products a lane (AVX-512 VNNI;
// emitted raw: not in avo's table, Go's assembler knows it).
func vpdpbusd(sg, u, acc Op) {
	Instruction(&ir.Instruction{Opcode: "VPDPBUSD", Operands: []Op{sg, u, acc}, Inputs: []Op{sg, u, acc}, Outputs: []Op{acc}})
}

// vpshufbitqmb: k bit i = bit (idx byte i) of src's qword i/8 (AVX-512
// BITALG; emitted raw).
func vpshufbitqmb(idx, src Op, k Op) {
	Instruction(&ir.Instruction{Opcode: "VPSHUFBITQMB", Operands: []Op{idx, src, k}, Inputs: []Op{idx, src}, Outputs: []Op{k}})
}

// maskW is a mask register holding v.
func maskW(v uint16) OpmaskVirtual {
	g := GP32()
	MOVL(U32(uint32(v)), g)
	k := K()
	KMOVW(g, k)
	return k
}

const sigZ = "func(nb int, w *uint8, ldw int, a *uint8, y *float32, ldy int, ng int, adv int, ys int, yg int)"

// zPrefetch is how far ahead in its stream (bytes) each weight row of a
// group is prefetched, every block: the kernels take about four times
// as long a block as the single-row ones (asmgenbqk: 256 bytes), so
// four times as far.
const zPrefetch = 1024

// few32Z generates bqm<t>x<R>Z (t Q5_0 or Q8_0): ng groups of four
// weight rows, row q of group g at w + g·adv + q·ldw, against R packed
// activation rows at a; output (g, q, r) to y + r·ldy + 4(g·yg + q·ys)
// bytes.
func few32Z(t string, R int) {
	name := fmt.Sprintf("bqm%sx%dZ", t, R)
	bs := map[string]int{"Q5_0": 22, "Q8_0": 34}[t]
	TEXT(name, NOSPLIT, sigZ)
	Doc(fmt.Sprintf("%s computes ng groups of four %s weight rows (row q of group g at w + g·adv + q·ldw) against %d packed activation rows at a: output (g, q, r) to y + r·ldy + 4(g·yg + q·ys) bytes (see z32.go of the package asmgenbqm).", name, t, R))
	Pragma("noescape")
	wg := Load(Param("w"), GP64())
	ldw := Load(Param("ldw"), GP64())
	y := Load(Param("y"), GP64())
	ng := Load(Param("ng"), GP64())
	nb, w, a := GP64(), GP64(), GP64()
	ldw3 := GP64()
	LEAQ(Mem{Base: ldw, Index: ldw, Scale: 2}, ldw3)
	var c0F, c10, iLo, iHi, c80 VecVirtual
	if t == "Q5_0" {
		c0F, c10, iLo, iHi = ZMM(), ZMM(), ZMM(), ZMM()
		VMOVDQU64(zC0F, c0F)
		VMOVDQU64(zC10, c10)
		VMOVDQU64(zQhLo, iLo)
		VMOVDQU64(zQhHi, iHi)
	} else {
		c80 = ZMM()
		VMOVDQU64(zC80, c80)
	}
	var km [4]OpmaskVirtual
	for r := 1; r < 4; r++ {
		km[r] = maskW(0xF << (4 * r))
	}
	acc := make([][2]VecVirtual, R)
	for r := range acc {
		acc[r] = [2]VecVirtual{ZMM(), ZMM()}
	}
	stride, do := 256*R+64, 256*R
	p := name + "_"
	Label(p + "group")
	TESTQ(ng, ng)
	JZ(LabelRef(p + "end"))
	Load(Param("nb"), nb)
	Load(Param("a"), a)
	MOVQ(wg, w)
	for r := range acc {
		VXORPS(acc[r][0], acc[r][0], acc[r][0])
		VXORPS(acc[r][1], acc[r][1], acc[r][1])
	}
	TESTQ(nb, nb)
	JZ(LabelRef(p + "done"))
	Label(p + "block") // tested at its end
	row := avokit.Rows4(w, ldw, ldw3)
	for r := 0; r < 4; r++ {
		PREFETCHT0(row(r, zPrefetch))
	}
	// the four rows' unsigned quants: elements 0..15 in q, 16..31 in h
	q, h := ZMM(), ZMM()
	if t == "Q5_0" {
		VMOVDQU32(row(0, 6), q.AsX())
		for r := 1; r < 4; r++ {
			VINSERTI32X4(U8(r), row(r, 6), q, q)
		}
		VPSRLW(U8(4), q, h)
		VPANDD(c0F, q, q)
		VPANDD(c0F, h, h)
		qh := ZMM()
		VPBROADCASTD(row(0, 2), qh)
		for r := 1; r < 4; r++ {
			VPBROADCASTD(row(r, 2), km[r], qh)
		}
		kl, kh := K(), K()
		vpshufbitqmb(iLo, qh, kl)
		vpshufbitqmb(iHi, qh, kh)
		VPADDB(c10, q, kl, q)
		VPADDB(c10, h, kh, h)
	} else {
		VMOVDQU32(row(0, 2), q.AsX())
		VMOVDQU32(row(0, 18), h.AsX())
		for r := 1; r < 4; r++ {
			VINSERTI32X4(U8(r), row(r, 2), q, q)
			VINSERTI32X4(U8(r), row(r, 18), h, h)
		}
		VPXORD(c80, q, q)
		VPXORD(c80, h, h)
	}
	// the four rows' d as float32 (row n's in lane n)
	hv := YMM()
	VPBROADCASTW(row(0, 0), hv)
	for r := 1; r < 4; r++ {
		VPBROADCASTW(row(r, 0), km[r], hv)
	}
	dw := ZMM()
	VCVTPH2PS(hv, dw)
	for r := 0; r < R; r++ {
		sl, sh := ZMM(), ZMM()
		VMOVDQA64(Mem{Base: a, Disp: 256*r + 128}, sl) // −off·Σx of the lanes
		VMOVDQA64(Mem{Base: a, Disp: 256*r + 192}, sh)
		vpdpbusd(Mem{Base: a, Disp: 256 * r}, q, sl)
		vpdpbusd(Mem{Base: a, Disp: 256*r + 64}, h, sh)
		VCVTDQ2PS(sl, sl)
		VCVTDQ2PS(sh, sh)
		sc := ZMM()
		VMULPS_BCST(Mem{Base: a, Disp: do + 4*r}, dw, sc) // d_w·d_a, one rounding
		VFMADD231PS(sc, sl, acc[r][0])                    // acc += lanes·(d_w·d_a), one rounding
		VFMADD231PS(sc, sh, acc[r][1])
	}
	ADDQ(U8(int8(bs)), w)
	ADDQ(U32(uint32(stride)), a)
	DECQ(nb)
	JNZ(LabelRef(p + "block"))
	Label(p + "done")
	// per 128-bit lane [t0 t1 t2 t3], t_i = l_i + l_{i+4}: then
	// (t0+t2)+(t1+t3) in its first element, row q's to y + r·ldy + 4q·ys
	ysb, ys3 := Load(Param("ys"), GP64()), GP64()
	SHLQ(U8(2), ysb)
	LEAQ(Mem{Base: ysb, Index: ysb, Scale: 2}, ys3)
	ldy := Load(Param("ldy"), GP64())
	yr := GP64()
	MOVQ(y, yr)
	idx := ZMM()
	VMOVDQU64(zDIdx4, idx)
	for r := 0; r < R; r++ {
		s, u := ZMM(), ZMM()
		VADDPS(acc[r][1], acc[r][0], s)
		VPERMILPS(U8(0x4E), s, u) // [2 3 0 1]
		VADDPS(u, s, s)
		VPERMILPS(U8(0xB1), s, u) // [1 0 3 2]
		VADDPS(u, s, s)
		VPERMD(s, idx, s)
		yq := avokit.Rows4(yr, ysb, ys3)
		VMOVSS(s.AsX(), yq(0, 0))
		for q := 1; q < 4; q++ {
			VEXTRACTPS(U8(q), s.AsX(), yq(q, 0))
		}
		if r < R-1 {
			ADDQ(ldy, yr)
		}
	}
	yg := Load(Param("yg"), GP64())
	LEAQ(Mem{Base: y, Index: yg, Scale: 4}, y)
	ADDQ(Load(Param("adv"), GP64()), wg)
	DECQ(ng)
	JMP(LabelRef(p + "group"))
	Label(p + "end")
	VZEROUPPER()
	RET()
}
