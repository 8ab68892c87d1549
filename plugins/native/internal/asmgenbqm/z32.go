package main

// The integer path's few-row kernels of ggml Q5_0 and Q8_0 on ZMM
// (AVX-512 BW, BITALG and VNNI): a batched decode step's 2 to 4
// activation rows against groups of four or eight weight rows (one or
// two quads), each quad in the single-row kernel's layout (asmgenbqk's
// z32.go): one 128-bit lane a weight row, its elements 0..15 (Q5_0: the
// low nibbles) making lanes 0..3, its elements 16..31 lanes 4..7. The
// weight block is unpacked once for the R rows, and so are its scales
// (four float16 d a quad, converted). VPDPBUSD multiplies unsigned by
// signed bytes: the weights come unsigned (Q5_0: its 5-bit quants q as
// they are, 0..31; Q8_0: q+128) and the activations x signed, so
// VPDPBUSD sums q·x ((q+128)·x) and each lane starts at −16·Σx
// (−128·Σx) over its four activations, which the caller packs beside
// them (once a step, not once a weight block): a lane thus holds exactly
// core/ggml's Dot lane sum Σx·(q−16) (Q8_0: Σx·q), then as Dot:
// converted, times float32(d_w·d_a) by a fused multiply-add into the
// row's eight float32 lane accumulators block after block, reduced at
// the end as ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)). The scale product of
// row r is d_w (the quad's four d, converted once) times d_a(r)
// broadcast: one multiplication a row, block and quad.
//
// The activations come packed (the caller's, blockquant_few_amd64.go),
// 64-byte aligned: per block, per row its 32 signed bytes x, then the
// eight lanes' starts (int32); then the rows' float32 d_a (64 bytes,
// rows ≥ R zero): 64·R+64 bytes a block. The kernels broadcast x and the
// starts to the four 128-bit lanes (VBROADCASTI32X4) as they load them.
//
// Measured (Zen 5 VM, shared, BenchmarkFewKernel in L1 and
// BenchmarkSrv4FewMem streaming 64 MB of weights, least CPU time): the
// former kernels took x unsigned (x+128) in registers and the starts
// −128·Σ(q−16) from the weights (two more VPDPBUSD, copies and Q5_0's
// two subtractions a block); the starts packed four times wide and x
// four times wide (256·R+64 bytes a block, loaded whole, no broadcast)
// ran 10–15% faster in L1 than this compact layout but 5–25% slower
// streaming from memory (the activations crowd the weights out of L1);
// eight weight rows a group took 5–12% less time than four (each
// activation load serves two quads), Q8_0's eight runs included. Each
// activation row's x and starts loaded once for the two quads (the starts
// copied for the second, d_a broadcast once instead of a broadcast
// operand of each quad's multiplication: 5 loads a row and block where
// 8 were) took 5% (Q5_0) and 9% (Q8_0) less time at R = 4 in L1, 7–8%
// less streaming (BenchmarkSrv5FewVariants, alternating; Q8_0's four
// rows loaded 32 bytes at a time and split by VSHUFI64X2 were 2% slower;
// dropping the conversions, for scale, 12% faster; the
// multiplications, 6%).

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
	"github.com/switchyard-hal/switchyard/plugins/native/internal/avokit"
)

var zC0F, zC10, zC80, zQhLo, zQhHi, zDIdx4, zDW8 Mem

func constsZ() {
	zC0F = avokit.Bytes("bqm_zc0f", 64, func(int) byte { return 0x0F })
	zC10 = avokit.Bytes("bqm_zc10", 64, func(int) byte { return 0x10 })
	zC80 = avokit.Bytes("bqm_zc80", 64, func(int) byte { return 0x80 })
	// byte j of each 128-bit lane takes bit 16+j (low nibbles' elements)
	// or 32+j (high ones') of its qword, the row's first eight bytes: bit
	// j (16+j) of qh
	zQhLo = avokit.Bytes("bqm_zqhlo", 64, func(i int) byte { return byte(16 + i%16) })
	zQhHi = avokit.Bytes("bqm_zqhhi", 64, func(i int) byte { return byte(32 + i%16) })
	// words 8·(i/4): row i/4's d, word 0 of its lane's first qword
	zDW8 = avokit.Bytes("bqm_zdw8", 64, func(i int) byte {
		if i%2 == 1 {
			return 0
		}
		return byte(8 * (i / 2 / 4))
	})
	// dwords 0, 4, 8, 12: each lane's first
	zDIdx4 = avokit.Bytes("bqm_zdidx4", 64, func(i int) byte {
		if i%4 != 0 || i >= 16 {
			return 0
		}
		return byte(i)
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
// prefetched, every block. asmgenbqk's z32.go measured 256 best for the
// single-row kernels' runs; these spend longer on a block (2 to 4
// activation rows), and Q8_0's streaming 64 MB (the classifier's shape,
// one thread, alternating in one process) took 2–8% less time at 768
// than at 256 (R = 4 and R = 2), 2–7% less than at 1536, about the same
// as at 512.
const zPrefetch = 768

// zType is a 32-element type's part of the few-row kernels: its block
// bytes and the unpacking of the four weight rows' block (row(r, disp)
// addresses row r's block) into the unsigned quants' low and high lanes
// (elements 0..15 and 16..31 of row n in 128-bit lane n).
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

// zUnpack unpacks a block of the four rows at row(r, disp): the quants
// and the rows' d as float32 (row n's in 128-bit lane n).
type zUnpack func(row func(r, disp int) Mem) (q, h, dw VecVirtual)

// zScales4 is the four rows' float16 d at row(r, 0) as float32, row n's
// in 128-bit lane n (km[r] masks the dwords of lane r).
func zScales4(row func(r, disp int) Mem, km [4]OpmaskVirtual) VecVirtual {
	hv := YMM()
	VPBROADCASTW(row(0, 0), hv)
	for r := 1; r < 4; r++ {
		VPBROADCASTW(row(r, 0), km[r], hv)
	}
	dw := ZMM()
	VCVTPH2PS(hv, dw)
	return dw
}

// zQ5_0: the nibbles and the 5th bits of qh, 0..31 (the lanes' starts
// −16·Σx take the offset). A row's first eight bytes (d, qh, two quant
// bytes) broadcast to both qwords of its lane serve both the 5th bits
// (VPSHUFBITQMB picks bits 16+j of a qword) and d (word 0 of each qword,
// spread by VPERMW): four loads where qh and d took eight.
var zQ5_0 = zType{name: "Q5_0", bytes: 22, setup: func() zUnpack {
	c0F, c10, iLo, iHi := ZMM(), ZMM(), ZMM(), ZMM()
	VMOVDQU64(zC0F, c0F)
	VMOVDQU64(zC10, c10)
	VMOVDQU64(zQhLo, iLo)
	VMOVDQU64(zQhHi, iHi)
	var kq [4]OpmaskVirtual // the qwords of 128-bit lane r
	for r := 1; r < 4; r++ {
		kq[r] = maskW(3 << (2 * r))
	}
	return func(row func(r, disp int) Mem) (q, h, dw VecVirtual) {
		// the four rows' unsigned 5-bit quants: low nibbles in q, high in h
		q, h = ZMM(), ZMM()
		VMOVDQU32(row(0, 6), q.AsX())
		for r := 1; r < 4; r++ {
			VINSERTI32X4(U8(r), row(r, 6), q, q)
		}
		VPSRLW(U8(4), q, h)
		VPANDD(c0F, q, q)
		VPANDD(c0F, h, h)
		hd := ZMM()
		VPBROADCASTQ(row(0, 0), hd)
		for r := 1; r < 4; r++ {
			VPBROADCASTQ(row(r, 0), kq[r], hd)
		}
		kl, kh := K(), K()
		vpshufbitqmb(iLo, hd, kl)
		vpshufbitqmb(iHi, hd, kh)
		VPADDB(c10, q, kl, q)
		VPADDB(c10, h, kh, h)
		// d: word 8n of hd (row n's qword 2n) to words 4n..4n+3
		idx := ZMM()
		VMOVDQU64(zDW8, idx)
		VPERMW(hd, idx, hd)
		dw = ZMM()
		VCVTPH2PS(hd.AsY(), dw)
		return
	}
}}

// zQ8_0: the int8 quants plus 128, unsigned (the lanes' starts −128·Σx
// take the offset).
var zQ8_0 = zType{name: "Q8_0", bytes: 34, runs: true, setup: func() zUnpack {
	c80 := ZMM()
	VMOVDQU64(zC80, c80)
	var km [4]OpmaskVirtual
	for r := 1; r < 4; r++ {
		km[r] = maskW(0xF << (4 * r))
	}
	return func(row func(r, disp int) Mem) (q, h, dw VecVirtual) {
		q, h = ZMM(), ZMM()
		VMOVDQU32(row(0, 2), q.AsX())
		VMOVDQU32(row(0, 18), h.AsX())
		for r := 1; r < 4; r++ {
			VINSERTI32X4(U8(r), row(r, 2), q, q)
			VINSERTI32X4(U8(r), row(r, 18), h, h)
		}
		VPXORD(c80, q, q)
		VPXORD(c80, h, h)
		dw = zScales4(row, km)
		return
	}
}}

// fewZ generates bqm<type>x<R>Z (G = 1) and bqm<type>x<R>Z8 (G = 2): ng
// groups of 4·G weight rows of type t against R packed activation rows.
// A group's rows are ldw bytes apart and the next group's gw bytes after
// them; output (i, r) of group g (its row i) goes to y + r·ldy + g·gy +
// i·ldo bytes.
//
// With t.runs the caller cuts its rows into 4·G runs of consecutive
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
// assumes gw = 4·G·ldw, gy = 16·G and ldo = 4.
func fewZ(t zType, R, G int) {
	name := fmt.Sprintf("bqm%sx%dZ", t.name, R)
	if G > 1 {
		name += fmt.Sprint(4 * G)
	}
	TEXT(name, NOSPLIT, sigZ)
	Doc(fmt.Sprintf("%s computes ng groups of %d %s weight rows (ldw bytes apart, groups gw bytes apart) against %d packed activation rows at a: output (i, r) of group g to y + r·ldy + g·gy + i·ldo bytes (see fewZ in z32.go of the package asmgenbqm).", name, 4*G, t.name, R))
	Pragma("noescape")
	wg := Load(Param("w"), GP64())
	ldw := Load(Param("ldw"), GP64())
	y := Load(Param("y"), GP64())
	ldy := Load(Param("ldy"), GP64())
	ng := Load(Param("ng"), GP64())
	nb, a := GP64(), GP64()
	ws := make([]GPVirtual, G) // each quad's first row
	for g := range ws {
		ws[g] = GP64()
	}
	ldw3 := GP64()
	LEAQ(Mem{Base: ldw, Index: ldw, Scale: 2}, ldw3)
	unpack := t.setup()
	// acc[r][g]: activation row r's lanes 0..3 and 4..7 of quad g
	acc := make([][][2]VecVirtual, R)
	for r := range acc {
		acc[r] = make([][2]VecVirtual, G)
		for g := range acc[r] {
			acc[r][g] = [2]VecVirtual{ZMM(), ZMM()}
		}
	}
	stride, xo, do := 64*R+64, 64, 64*R
	p := name + "_"
	Label(p + "group")
	TESTQ(ng, ng)
	JZ(LabelRef(p + "end"))
	Load(Param("nb"), nb)
	Load(Param("a"), a)
	MOVQ(wg, ws[0])
	for g := 1; g < G; g++ {
		LEAQ(Mem{Base: ws[g-1], Index: ldw, Scale: 4}, ws[g])
	}
	for r := range acc {
		for g := range acc[r] {
			VXORPS(acc[r][g][0], acc[r][g][0], acc[r][g][0])
			VXORPS(acc[r][g][1], acc[r][g][1], acc[r][g][1])
		}
	}
	var pf GPVirtual
	if !t.runs {
		// the next group's rows, at the pace these are read
		pf = GP64()
		LEAQ(Mem{Base: ws[G-1], Index: ldw, Scale: 4}, pf)
	}
	TESTQ(nb, nb)
	JZ(LabelRef(p + "done"))
	Label(p + "block") // tested at its end
	rows := make([]func(r, disp int) Mem, G)
	for g := range rows {
		rows[g] = avokit.Rows4(ws[g], ldw, ldw3)
	}
	if t.runs {
		for g := range rows {
			for r := 0; r < 4; r++ {
				PREFETCHT0(rows[g](r, zPrefetch))
			}
		}
	} else {
		for o := 0; o < 4*G*t.bytes; o += 64 {
			PREFETCHT0(Mem{Base: pf, Disp: o})
		}
		ADDQ(U32(uint32(4*G*t.bytes)), pf)
	}
	qs, hs, dws := make([]VecVirtual, G), make([]VecVirtual, G), make([]VecVirtual, G)
	for g := range rows {
		qs[g], hs[g], dws[g] = unpack(rows[g])
	}
	for r := 0; r < R; r++ {
		// x and the lanes' starts to every 128-bit lane, loaded once for
		// the quads (the starts copied for each quad after the first),
		// d_a broadcast once
		xl, xh := ZMM(), ZMM()
		VBROADCASTI32X4(Mem{Base: a, Disp: xo * r}, xl)
		VBROADCASTI32X4(Mem{Base: a, Disp: xo*r + 16}, xh)
		sl, sh := make([]VecVirtual, G), make([]VecVirtual, G)
		sl[0], sh[0] = ZMM(), ZMM()
		VBROADCASTI32X4(Mem{Base: a, Disp: xo*r + 32}, sl[0])
		VBROADCASTI32X4(Mem{Base: a, Disp: xo*r + 48}, sh[0])
		for g := 1; g < G; g++ {
			sl[g], sh[g] = ZMM(), ZMM()
			VMOVDQA64(sl[0], sl[g])
			VMOVDQA64(sh[0], sh[g])
		}
		// the lanes' starts += q·x, converted
		for g := range G {
			vpdpbusd(xl, qs[g], sl[g])
			vpdpbusd(xh, hs[g], sh[g])
		}
		for g := range G {
			VCVTDQ2PS(sl[g], sl[g])
			VCVTDQ2PS(sh[g], sh[g])
		}
		da := ZMM()
		VBROADCASTSS(Mem{Base: a, Disp: do + 4*r}, da)
		for g := range G {
			sc := ZMM()
			VMULPS(da, dws[g], sc)               // d_w·d_a, one rounding
			VFMADD231PS(sc, sl[g], acc[r][g][0]) // acc += lanes·(d_w·d_a), one rounding
			VFMADD231PS(sc, sh[g], acc[r][g][1])
		}
	}
	for g := range ws {
		ADDQ(U8(t.bytes), ws[g])
	}
	ADDQ(U32(uint32(stride)), a)
	DECQ(nb)
	JNZ(LabelRef(p + "block"))
	Label(p + "done")
	// per 128-bit lane [t0 t1 t2 t3], t_i = l_i + l_{i+4}: then
	// (t0+t2)+(t1+t3) in its first element, quad g's four to y + r·ldy
	// + 4g·ldo
	yr := GP64()
	MOVQ(y, yr)
	var ldo, y3, yq GPVirtual
	if t.runs {
		ldo, y3, yq = GP64(), GP64(), GP64()
		Load(Param("ldo"), ldo)
	}
	idx := ZMM()
	VMOVDQU64(zDIdx4, idx)
	for r := 0; r < R; r++ {
		for g := range G {
			s, u := ZMM(), ZMM()
			VADDPS(acc[r][g][1], acc[r][g][0], s)
			VPERMILPS(U8(0x4E), s, u) // [2 3 0 1]
			VADDPS(u, s, s)
			VPERMILPS(U8(0xB1), s, u) // [1 0 3 2]
			VADDPS(u, s, s)
			VPERMD(s, idx, s)
			if t.runs {
				ys := yr
				if g > 1 {
					LEAQ(Mem{Base: yq, Index: ldo, Scale: 4}, yq)
				}
				if g > 0 {
					ys = yq
				} else if G > 1 {
					LEAQ(Mem{Base: yr, Index: ldo, Scale: 4}, yq)
				}
				VMOVSS(s.AsX(), Mem{Base: ys})
				VEXTRACTPS(U8(1), s.AsX(), Mem{Base: ys, Index: ldo, Scale: 1})
				VEXTRACTPS(U8(2), s.AsX(), Mem{Base: ys, Index: ldo, Scale: 2})
				LEAQ(Mem{Base: ys, Index: ldo, Scale: 2}, y3)
				VEXTRACTPS(U8(3), s.AsX(), Mem{Base: y3, Index: ldo, Scale: 1})
			} else {
				VMOVUPS(s.AsX(), Mem{Base: yr, Disp: 16 * g})
			}
		}
		if r < R-1 {
			ADDQ(ldy, yr)
		}
	}
	if t.runs {
		ADDQ(avokit.ParamAddr("gy"), y)
		ADDQ(avokit.ParamAddr("gw"), wg)
	} else {
		ADDQ(U8(uint8(16*G)), y)
		LEAQ(Mem{Base: wg, Index: ldw, Scale: uint8(4 * G)}, wg) // the next group's rows
	}
	DECQ(ng)
	JMP(LabelRef(p + "group"))
	Label(p + "end")
	VZEROUPPER()
	RET()
}
