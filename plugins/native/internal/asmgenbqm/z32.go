package main

// The integer path's few-row kernels of ggml Q5_0 and Q8_0 on ZMM
// (AVX-512 BW, BITALG and VNNI): a batched decode step's 2 to 4
// activation rows against groups of four weight rows, in the single-row
// kernel's layout (asmgenbqk's z32.go): one 128-bit lane a weight row,
// its elements 0..15 (Q5_0: the low nibbles) making lanes 0..3, its
// elements 16..31 lanes 4..7. The
// weight block is unpacked once for the R rows, and so are its scales
// (four float16 d, converted) and its offset's correction: the
// activations come as unsigned bytes x+128 and the weights as signed
// q−16, so VPDPBUSD sums (x+128)·(q−16) and the lanes start at
// −128·Σ(q−16), computed once a block for every row (one VPDPBUSD of the
// unsigned quants by −128 from 16·128·4). A lane thus holds exactly
// core/ggml's Dot lane sum Σx·(q−16) (Q8_0: the quants q as they are,
// the start −128·Σq from their unsigned q+128 by −128 from 65536 =
// 128·128·4; Dot's lane sum Σx·q), then as Dot: converted, times
// float32(d_w·d_a) by a fused multiply-add into the row's eight float32
// lane accumulators block after block, reduced at the end as
// ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)). The scale product of row r is
// d_w (the four rows' d, converted once) times d_a(r) broadcast: one
// multiplication a row and block for the four weight rows.
//
// The activations come packed (the caller's, blockquant_few_amd64.go),
// 64-byte aligned: per block, per row the bytes x+128 of elements 0..15
// four times (one a weight row's lane), then of 16..31 four times; then
// the rows' float32 d_a (64 bytes, rows ≥ R zero): 128·R+64 bytes a
// block. Loaded whole, not broadcast from 16 bytes: the broadcasts' shuffles
// cost more (measured on Zen 5, BenchmarkFewKernel) than the bytes.

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
	"github.com/switchyard-hal/switchyard/plugins/native/internal/avokit"
)

var zC0F, zC10, zC80, zQhLo, zQhHi, zDIdx4, zC8192, zC65536 Mem

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
	// 8192 = 16·128·4 in every dword: with −128·Σq (q the unsigned
	// quants) a lane's −128·Σ(q−16)
	zC8192 = avokit.Bytes("bqm_zc8192", 64, func(i int) byte {
		if i%4 == 1 {
			return 0x20
		}
		return 0
	})
	// 65536 = 128·128·4 in every dword: with −128·Σ(q+128) a Q8_0
	// lane's −128·Σq
	zC65536 = avokit.Bytes("bqm_zc65536", 64, func(i int) byte {
		if i%4 == 2 {
			return 1
		}
		return 0
	})
}

// vpdpbusd is avokit.Vpdpbusd.
var vpdpbusd = avokit.Vpdpbusd

// vpshufbitqmb is avokit.Vpshufbitqmb.
var vpshufbitqmb = avokit.Vpshufbitqmb

// maskW is avokit.MaskW.
var maskW = avokit.MaskW

const sigZ = "func(nb int, w *uint8, ldw int, a *uint8, y *float32, ldy int, ng int, gw int, gy int, ldo int)"

// zPrefetch is how far ahead in its run each row of a group is
// prefetched, every block (asmgenbqk's z32.go measured 256 best for the
// single-row kernels' runs).
const zPrefetch = 256

// zType is a 32-element type's part of the few-row kernels: its block
// bytes and the unpacking of the four weight rows' block (row(r, disp)
// addresses row r's block) into the signed quants' low and high lanes
// (elements 0..15 and 16..31 of row n in 128-bit lane n) and each lane's
// start, −128·Σq of its four quants, for the activations' +128.
type zType struct {
	name  string
	bytes int
	// runs: the groups take a row of each of four runs (see fewZ), each
	// row prefetched zPrefetch bytes ahead in its run; else a group's
	// rows are adjacent and the next group's are prefetched
	runs bool
	// setup loads the constants (once a function) and returns the
	// unpacking of a block
	setup func() zUnpack
}

// zUnpack unpacks a block of the four rows at row(r, disp); km[r] masks
// the dwords of 128-bit lane r.
type zUnpack func(row func(r, disp int) Mem, km [4]OpmaskVirtual) (q, h, ol, oh VecVirtual)

// zQ5_0: the nibbles and the 5th bits of qh, less 16.
var zQ5_0 = zType{name: "Q5_0", bytes: 22, setup: func() zUnpack {
	c0F, c10, iLo, iHi, c8192 := ZMM(), ZMM(), ZMM(), ZMM(), ZMM()
	VMOVDQU64(zC0F, c0F)
	VMOVDQU64(zC10, c10)
	VMOVDQU64(zQhLo, iLo)
	VMOVDQU64(zQhHi, iHi)
	VMOVDQU64(zC8192, c8192)
	return func(row func(r, disp int) Mem, km [4]OpmaskVirtual) (q, h, ol, oh VecVirtual) {
		// the four rows' unsigned 5-bit quants: low nibbles in q, high in h
		q, h = ZMM(), ZMM()
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
		// the lanes' start −128·Σ(q−16) = 8192 − 128·Σq, then q−16 signed
		ol, oh = ZMM(), ZMM()
		VMOVDQA64(c8192, ol)
		VMOVDQA64(c8192, oh)
		vpdpbusd(zC80, q, ol)
		vpdpbusd(zC80, h, oh)
		VPSUBB(c10, q, q)
		VPSUBB(c10, h, h)
		return
	}
}}

// zQ8_0: the int8 quants as they are; the starts from q+128 (unsigned):
// 65536 − 128·Σ(q+128) = −128·Σq.
var zQ8_0 = zType{name: "Q8_0", bytes: 34, runs: true, setup: func() zUnpack {
	c80, c65536 := ZMM(), ZMM()
	VMOVDQU64(zC80, c80)
	VMOVDQU64(zC65536, c65536)
	return func(row func(r, disp int) Mem, _ [4]OpmaskVirtual) (q, h, ol, oh VecVirtual) {
		q, h = ZMM(), ZMM()
		VMOVDQU32(row(0, 2), q.AsX())
		VMOVDQU32(row(0, 18), h.AsX())
		for r := 1; r < 4; r++ {
			VINSERTI32X4(U8(r), row(r, 2), q, q)
			VINSERTI32X4(U8(r), row(r, 18), h, h)
		}
		uq, uh := ZMM(), ZMM()
		VPXORD(c80, q, uq)
		VPXORD(c80, h, uh)
		ol, oh = ZMM(), ZMM()
		VMOVDQA64(c65536, ol)
		VMOVDQA64(c65536, oh)
		vpdpbusd(c80, uq, ol)
		vpdpbusd(c80, uh, oh)
		return
	}
}}

// fewZ generates bqm<type>x<R>Z: ng groups of four weight rows of type
// t against R packed activation rows. A group's rows are ldw bytes apart
// and the next group's gw bytes after them; output (i, r) of group g
// (its row i) goes to y + r·ldy + g·gy + i·ldo bytes.
//
// With t.runs the caller cuts its rows into four runs of consecutive
// rows (ldw a run's bytes, gw a row's, gy 4, ldo a run's outputs), so
// that each row of a group streams through memory in order for the
// whole call, as the single-row kernels' groups do (asmgenbqk's z32.go:
// groups of adjacent rows, streams too short for the hardware's
// prefetchers, streamed about 20 GB/s on Zen 5 where runs stream about
// 33). Q8_0's four-row kernel on the tied classifier of Qwen2.5-0.5B
// (151936 × 896) took 15–20% less time so (BenchmarkFewShapes); Q5_0's,
// which computes more a byte, took 10–25% more (with or without
// prefetching in the runs) than with groups of adjacent rows and the
// next group prefetched at the pace these are read, which it keeps: it
// assumes gw = 4·ldw, gy = 16 and ldo = 4.
func fewZ(t zType, R int) {
	name := fmt.Sprintf("bqm%sx%dZ", t.name, R)
	TEXT(name, NOSPLIT, sigZ)
	Doc(fmt.Sprintf("%s computes ng groups of four %s weight rows (ldw bytes apart, groups gw bytes apart) against %d packed activation rows at a: output (i, r) of group g to y + r·ldy + g·gy + i·ldo bytes (see fewZ in z32.go of the package asmgenbqm).", name, t.name, R))
	Pragma("noescape")
	wg := Load(Param("w"), GP64())
	ldw := Load(Param("ldw"), GP64())
	y := Load(Param("y"), GP64())
	ldy := Load(Param("ldy"), GP64())
	ng := Load(Param("ng"), GP64())
	nb, w, a := GP64(), GP64(), GP64()
	ldw3 := GP64()
	LEAQ(Mem{Base: ldw, Index: ldw, Scale: 2}, ldw3)
	unpack := t.setup()
	var km [4]OpmaskVirtual
	for r := 1; r < 4; r++ {
		km[r] = maskW(0xF << (4 * r))
	}
	acc := make([][2]VecVirtual, R)
	for r := range acc {
		acc[r] = [2]VecVirtual{ZMM(), ZMM()}
	}
	stride, xo, do := 128*R+64, 128, 128*R
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
	var pf GPVirtual
	if !t.runs {
		// the next group's rows, at the pace these are read
		pf = GP64()
		LEAQ(Mem{Base: w, Index: ldw, Scale: 4}, pf)
	}
	TESTQ(nb, nb)
	JZ(LabelRef(p + "done"))
	Label(p + "block") // tested at its end
	row := avokit.Rows4(w, ldw, ldw3)
	if t.runs {
		for r := 0; r < 4; r++ {
			PREFETCHT0(row(r, zPrefetch))
		}
	} else {
		for o := 0; o < 4*t.bytes; o += 64 {
			PREFETCHT0(Mem{Base: pf, Disp: o})
		}
		ADDQ(U8(4*t.bytes), pf)
	}
	q, h, ol, oh := unpack(row, km)
	// the four rows' d as float32 (row n's in lane n)
	hv := YMM()
	VPBROADCASTW(row(0, 0), hv)
	for r := 1; r < 4; r++ {
		VPBROADCASTW(row(r, 0), km[r], hv)
	}
	dw := ZMM()
	VCVTPH2PS(hv, dw)
	for r := 0; r < R; r++ {
		xl, xh := ZMM(), ZMM()
		VMOVDQU64(Mem{Base: a, Disp: xo * r}, xl) // plain loads: a broadcast costs a shuffle
		VMOVDQU64(Mem{Base: a, Disp: xo*r + 64}, xh)
		sl, sh := ol, oh // the last row takes the starts themselves
		if r < R-1 {
			sl, sh = ZMM(), ZMM()
			VMOVDQA64(ol, sl)
			VMOVDQA64(oh, sh)
		}
		vpdpbusd(q, xl, sl)
		vpdpbusd(h, xh, sh)
		VCVTDQ2PS(sl, sl)
		VCVTDQ2PS(sh, sh)
		sc := ZMM()
		VMULPS_BCST(Mem{Base: a, Disp: do + 4*r}, dw, sc) // d_w·d_a, one rounding
		VFMADD231PS(sc, sl, acc[r][0])                    // acc += lanes·(d_w·d_a), one rounding
		VFMADD231PS(sc, sh, acc[r][1])
	}
	ADDQ(U8(t.bytes), w)
	ADDQ(U32(uint32(stride)), a)
	DECQ(nb)
	JNZ(LabelRef(p + "block"))
	Label(p + "done")
	// per 128-bit lane [t0 t1 t2 t3], t_i = l_i + l_{i+4}: then
	// (t0+t2)+(t1+t3) in its first element, the four to y + r·ldy
	yr := GP64()
	MOVQ(y, yr)
	var ldo, y3 GPVirtual
	if t.runs {
		ldo, y3 = GP64(), GP64()
		Load(Param("ldo"), ldo)
	}
	for r := 0; r < R; r++ {
		s, u := ZMM(), ZMM()
		VADDPS(acc[r][1], acc[r][0], s)
		VPERMILPS(U8(0x4E), s, u) // [2 3 0 1]
		VADDPS(u, s, s)
		VPERMILPS(U8(0xB1), s, u) // [1 0 3 2]
		VADDPS(u, s, s)
		idx := ZMM()
		VMOVDQU64(zDIdx4, idx)
		VPERMD(s, idx, s)
		if t.runs {
			VMOVSS(s.AsX(), Mem{Base: yr})
			VEXTRACTPS(U8(1), s.AsX(), Mem{Base: yr, Index: ldo, Scale: 1})
			VEXTRACTPS(U8(2), s.AsX(), Mem{Base: yr, Index: ldo, Scale: 2})
			LEAQ(Mem{Base: yr, Index: ldo, Scale: 2}, y3)
			VEXTRACTPS(U8(3), s.AsX(), Mem{Base: y3, Index: ldo, Scale: 1})
		} else {
			VMOVUPS(s.AsX(), Mem{Base: yr})
		}
		if r < R-1 {
			ADDQ(ldy, yr)
		}
	}
	if t.runs {
		ADDQ(avokit.ParamAddr("gy"), y)
		ADDQ(avokit.ParamAddr("gw"), wg)
	} else {
		ADDQ(U8(16), y)
		LEAQ(Mem{Base: wg, Index: ldw, Scale: 4}, wg)
	}
	DECQ(ng)
	JMP(LabelRef(p + "group"))
	Label(p + "end")
	VZEROUPPER()
	RET()
}
