package main

// The four-row kernels of Q4_0 and Q8_0 on ZMM (AVX-512 BW + VNNI),
// decode's hottest products: one 512-bit register holds what the YMM
// kernels (dot32) take four, so a block of the four rows costs about half
// the instructions. Each row's arithmetic is dot32's, operation for
// operation: the block's eight int32 lane sums (lane l: elements
// 4l..4l+3), converted, times float32(d_w·d_a), added into the row's
// eight float32 lane accumulators by a fused multiply-add block after
// block, reduced at the end as ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7))
// (llama.cpp's x86 order, as Dot). Q4_0 differs, as Dot does (llama.cpp's
// repacked Q4_0): a set's lanes summed exactly per row each block
// (repBlockZ), converted, and added times float32(d·d_a) by one fused
// multiply-add into one accumulator of all the rows (row r of set st in
// dword st of lane r), no reduction at the end; its offset 8 is taken
// off each row's block sum as 8·Σx (xs: core/ggml's Act.Sum, one a
// block), the other types' off their lane sums (xs: Act.Lanes).
//
// Q4_0: the four rows' 16 quant bytes side by side (one 128-bit lane a
// row); the low nibbles (elements 0..15) against x[0..15] broadcast to
// every lane make lanes 0..3 of each row, the high nibbles against
// x[16..31] lanes 4..7, so two registers of accumulators hold the four
// rows ([l0..l3] and [l4..l7] in lane r) (Q5_0; Q4_0 sums the two into
// one). Q5_0's offset 16 is taken off with the activations' lane sums
// (−16·Σ, as the accumulators' start), Q4_0's as said above.
//
// Q8_0: two rows a register (one 256-bit half a row); the signed quants
// made unsigned (q XOR 0x80 = q+128) for VPDPBUSD, the excess 128·Σx
// taken off with the lane sums.
//
// The scales: the rows' float16 d broadcast into the words their lanes
// use (merge-masked VPBROADCASTW), converted by VCVTPH2PS, times d_a.
//
// Q4_0's eight-row kernel has a leaner twin for rows of a multiple of 128
// elements where the CPU has AVX-512 VBMI: bqkQ4_0Dot8V (q4dec.go), four
// blocks of a row in one register, the same bits.
//
// The rows of a group are not adjacent: the caller cuts its rows into
// four (eight) runs of consecutive rows and a group takes the next row of
// each run (sig32s), so that each of the group's rows reads memory in
// order for the whole call. The hardware's prefetchers follow those long
// streams (each also prefetched zPrefetch bytes ahead); a group of
// adjacent rows (a row of Qwen2.5-0.5B is 952 bytes in Q8_0) is eight
// streams too short to train them, and even with software prefetching of
// the next group the kernels streamed about 20 GB/s on Zen 5 where a
// float32 dot product streams 33 (as these do now).

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
	"github.com/switchyard-hal/switchyard/plugins/native/internal/avokit"
)

var z80, zQhLo, zQhHi, zIdx8 Mem

func constsZ() {
	z80 = avokit.Bytes("bqk_z80", 64, func(int) byte { return 0x80 })
	// Q5_0: byte j of each 128-bit lane takes bit j (low nibbles'
	// elements) or 16+j (high ones') of its qword, the row's qh
	zQhLo = avokit.Bytes("bqk_zqhlo", 64, func(i int) byte { return byte(i % 16) })
	zQhHi = avokit.Bytes("bqk_zqhhi", 64, func(i int) byte { return byte(16 + i%16) })
	// dwords 0, 4, 8, 12, 1, 5, 9, 13: each lane's first two
	zIdx8 = avokit.Bytes("bqk_zidx8", 64, func(i int) byte {
		if i%4 != 0 || i >= 32 {
			return 0
		}
		return byte(i/4%4*4 + i/16)
	})
}

// vpshufbitqmb is avokit.Vpshufbitqmb.
var vpshufbitqmb = avokit.Vpshufbitqmb

// maskW is avokit.MaskW.
var maskW = avokit.MaskW

// dot32Z generates bqk<t>Dot4Z (sets 1) or bqk<t>Dot8Z (sets 2: eight
// rows a group, two sets of four sharing each block's activations, lane
// sums and d_a), t Q4_0, Q5_0 or Q8_0.
// zPrefetch is how far ahead in its stream (bytes) each row of a group
// is prefetched, every block: the hardware's prefetchers follow the
// streams once trained, but each call (a task: 256 KB at 2 threads)
// starts eight new ones; measured on Zen 5 (chunks of 256 KiB and 1 MiB,
// alternating) 256 streamed 10-20% faster than none, 128 and 512 less.
const zPrefetch = 256

func dot32Z(t string, sets int) { dot32ZG(t, sets, false) }

// dot32ZG is dot32Z; gfni (Q4_0): the high nibbles moved down by one
// GF2P8AFFINEQB instead of a shift and an AND (bqkQ4_0Dot<nr>G), a
// vector instruction fewer a set of four rows a block.
func dot32ZG(t string, sets int, gfni bool) {
	nr := 4 * sets
	name := fmt.Sprintf("bqk%sDot%dZ", t, nr)
	if gfni {
		name = fmt.Sprintf("bqk%sDot%dG", t, nr)
	}
	bs := map[string]int{"Q4_0": 18, "Q5_0": 22, "Q8_0": 34}[t]
	TEXT(name, NOSPLIT, sig32s)
	Doc(fmt.Sprintf("%s is core/ggml's Dot of nb %s blocks for ng groups of %d weight rows, row q of group g at w+g·adv+q·ldw, into y[g+q·ys], on ZMM (see z32.go of the package asmgenbqk).", name, t, nr))
	Pragma("noescape")
	wg := Load(Param("w"), GP64())
	ldw := Load(Param("ldw"), GP64())
	y := Load(Param("y"), GP64())
	ng := Load(Param("ng"), GP64())
	nb, w, x, xd, xs := GP64(), GP64(), GP64(), GP64(), GP64()
	ldw3 := GP64()
	LEAQ(Mem{Base: ldw, Index: ldw, Scale: 2}, ldw3)
	// the outputs' stride in bytes (ysb) and three of it
	ysb, ys3 := Load(Param("ys"), GP64()), GP64()
	SHLQ(U8(2), ysb)
	LEAQ(Mem{Base: ysb, Index: ysb, Scale: 2}, ys3)
	ws := []Register{w}
	if sets == 2 {
		ws = append(ws, GP64()) // rows 4..7
	}
	zero := ZMM()
	VPXORD(zero, zero, zero)
	c := ZMM()
	// Q4_0 (llama.cpp's repacked order): one accumulator for all the
	// rows, row r of set st in dword st of 128-bit lane r
	rep := t == "Q4_0"
	acc := make([][2]VecVirtual, sets)
	var racc VecVirtual
	if rep {
		racc = ZMM()
	} else {
		for st := range acc {
			for i := range acc[st] {
				acc[st][i] = ZMM()
			}
		}
	}
	var km [4]OpmaskVirtual
	var c10, iLo, iHi VecVirtual
	if t != "Q8_0" {
		VMOVDQU64(z0F, c)
		for r := 1; r < 4; r++ {
			km[r] = maskW(0xF << (4 * r))
		}
	}
	if t == "Q5_0" {
		c10, iLo, iHi = ZMM(), ZMM(), ZMM()
		VMOVDQU64(z10, c10)
		VMOVDQU64(zQhLo, iLo)
		VMOVDQU64(zQhHi, iHi)
	}
	if t == "Q8_0" {
		VMOVDQU64(z80, c)
		km[1] = maskW(0xFF00)
	}
	p := name + "_"
	// group after group of rows, each from the rows' first block
	Label(p + "group")
	TESTQ(ng, ng)
	JZ(LabelRef(p + "end"))
	// the arguments reloaded
	Load(Param("nb"), nb)
	MOVQ(wg, w)
	if sets == 2 {
		LEAQ(Mem{Base: wg, Index: ldw, Scale: 4}, ws[1])
	}
	Load(Param("x"), x)
	Load(Param("xd"), xd)
	Load(Param("xs"), xs)
	if rep {
		VXORPS(racc, racc, racc)
	} else {
		for st := range acc {
			for i := range acc[st] {
				VXORPS(acc[st][i], acc[st][i], acc[st][i])
			}
		}
	}
	// each row of the group streams through its own run of consecutive
	// rows, which the hardware's prefetchers follow, helped by a
	// prefetch zPrefetch bytes ahead in each (with the rows of a group
	// adjacent, software prefetching the next group gave about 20 GB/s
	// on Zen 5 where these streams give about 33, as fast as a float32
	// dot product's single stream)
	// two blocks an iteration (the loop's own work and, for Q4_0 and
	// Q5_0, whose two blocks are under a cache line, the prefetches
	// shared), an odd last block alone
	xsb := 32 // Act.Lanes: eight lane sums a block
	if rep {
		xsb = 4 // Act.Sum: one a block
	}
	pf2 := 2*bs <= 64 // one prefetch a row covers both blocks' lines
	prefetch := func() {
		for st := range ws {
			row := avokit.Rows4(ws[st], ldw, ldw3)
			for r := 0; r < 4; r++ {
				PREFETCHT0(row(r, zPrefetch))
			}
		}
	}
	// blk is block b of the iteration (bytes b·bs on in each row)
	blk := func(b int) {
		xo, xdo, xso := 32*b, 4*b, xsb*b
		rows4 := func(st int) func(r, disp int) Mem {
			row := avokit.Rows4(ws[st], ldw, ldw3)
			return func(r, disp int) Mem { return row(r, disp+b*bs) }
		}
		var da VecVirtual // Q4_0 multiplies by d_a from memory (repBlockZ)
		if !rep {
			da = ZMM()
			VBROADCASTSS(Mem{Base: xd, Disp: xdo}, da)
		}
		// scale vector: the rows' d (words of hv) as float32, times d_a
		scales := func(row func(r, disp int) Mem, rows []int, words func(i int) OpmaskVirtual) VecVirtual {
			hv := YMM()
			VPBROADCASTW(row(rows[0], 0), hv)
			for i := 1; i < len(rows); i++ {
				VPBROADCASTW(row(rows[i], 0), words(i), hv)
			}
			sc := ZMM()
			VCVTPH2PS(hv, sc)
			VMULPS(da, sc, sc) // d·d_a, one rounding
			return sc
		}
		if t != "Q8_0" {
			shift, o := uint8(3), 2 // the offset 8: −8·Σ; the quants at 2
			if t == "Q5_0" {
				shift, o = 4, 6
			}
			xl, xh := ZMM(), ZMM()
			VBROADCASTI32X4(Mem{Base: x, Disp: xo}, xl)
			VBROADCASTI32X4(Mem{Base: x, Disp: xo + 16}, xh)
			// the accumulators' start: −8 (Q5_0 −16) times the lane sums;
			// Q4_0's lanes are summed before they are converted, so its
			// offset is taken off the sum (repBlockZ: −8·Σx of the block,
			// xs its Sum), the accumulators starting at zero
			var ol, oh VecVirtual
			if !rep {
				ol, oh = ZMM(), ZMM()
				VBROADCASTI32X4(Mem{Base: xs, Disp: xso}, ol)
				VBROADCASTI32X4(Mem{Base: xs, Disp: xso + 16}, oh)
				VPSLLD(U8(shift), ol, ol)
				VPSLLD(U8(shift), oh, oh)
				VPSUBD(ol, zero, ol)
				VPSUBD(oh, zero, oh)
			}
			var rsum []VecVirtual
			for st := 0; st < sets; st++ {
				row := rows4(st)
				sl, sh := ol, oh
				if rep {
					sl = ZMM()
					VPXORD(sl, sl, sl)
					sh = sl
				} else if st < sets-1 { // the offsets serve the next set too
					sl, sh = ZMM(), ZMM()
					VMOVDQA64(ol, sl)
					VMOVDQA64(oh, sh)
				}
				q, h := ZMM(), ZMM()
				VMOVDQU32(row(0, o), q.AsX())
				for r := 1; r < 4; r++ {
					VINSERTI32X4(U8(r), row(r, o), q, q)
				}
				if gfni {
					vgf2p8affineqb(gfHi4, q, h) // the matrix from memory: VPBLENDW needs Y0-Y15
				} else {
					VPSRLW(U8(4), q, h)
					VPANDD(c, h, h)
				}
				VPANDD(c, q, q)
				if t == "Q5_0" {
					// the 5th bits: qh of row r in each dword of lane r, its
					// bits picked into masks, 16 added where set
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
				}
				vpdpbusd(xl, q, sl)
				vpdpbusd(xh, h, sh)
				if rep {
					rsum = append(rsum, sl)
					continue
				}
				VCVTDQ2PS(sl, sl)
				VCVTDQ2PS(sh, sh)
				sc := scales(row, []int{0, 1, 2, 3}, func(i int) OpmaskVirtual { return km[i] })
				VFMADD231PS(sc, sl, acc[st][0]) // acc += lanes·(d·d_a), one rounding
				VFMADD231PS(sc, sh, acc[st][1])
			}
			if rep {
				repBlockZ(rsum, []func(r, disp int) Mem{rows4(0), rows4(min(1, sets-1))}[:sets], km, Mem{Base: xs, Disp: xso}, Mem{Base: xd, Disp: xdo}, racc)
			}
		} else {
			xa := ZMM()
			VBROADCASTI64X4(Mem{Base: x, Disp: xo}, xa)
			// the accumulators' start: −128 times the lane sums
			o := ZMM()
			VBROADCASTI64X4(Mem{Base: xs, Disp: xso}, o)
			VPSLLD(U8(7), o, o)
			VPSUBD(o, zero, o)
			for st := 0; st < sets; st++ {
				row := rows4(st)
				for pr := 0; pr < 2; pr++ {
					q := ZMM()
					VMOVDQU32(row(2*pr, 2), q.AsY())
					VINSERTI64X4(U8(1), row(2*pr+1, 2), q, q)
					VPXORD(c, q, q)
					s := ZMM()
					VMOVDQA64(o, s)
					vpdpbusd(xa, q, s)
					VCVTDQ2PS(s, s)
					sc := scales(row, []int{2 * pr, 2*pr + 1}, func(int) OpmaskVirtual { return km[1] })
					VFMADD231PS(sc, s, acc[st][pr]) // acc += lanes·(d·d_a), one rounding
				}
			}
		}
	}
	Label(p + "block")
	CMPQ(nb, U8(2))
	JL(LabelRef(p + "last"))
	prefetch()
	blk(0)
	if !pf2 {
		prefetch2 := func() {
			for st := range ws {
				row := avokit.Rows4(ws[st], ldw, ldw3)
				for r := 0; r < 4; r++ {
					PREFETCHT0(row(r, zPrefetch+bs))
				}
			}
		}
		prefetch2()
	}
	blk(1)
	for _, r := range ws {
		ADDQ(U8(int8(2*bs)), r)
	}
	ADDQ(U8(64), x)
	ADDQ(U8(8), xd)
	ADDQ(U8(int8(2*xsb)), xs)
	SUBQ(U8(2), nb)
	JMP(LabelRef(p + "block"))
	Label(p + "last")
	TESTQ(nb, nb)
	JZ(LabelRef(p + "done"))
	prefetch()
	blk(0)
	Label(p + "done")
	// per 128-bit lane [t0 t1 t2 t3], t_i = l_i + l_{i+4}: then
	// (t0+t2)+(t1+t3) in its first element
	reduce := func(t VecVirtual) {
		u := ZMM()
		VPERMILPS(U8(0x4E), t, u) // [2 3 0 1]
		VADDPS(u, t, t)
		VPERMILPS(U8(0xB1), t, u) // [1 0 3 2]
		VADDPS(u, t, t)
	}
	yrow := avokit.Rows4(y, ysb, ys3)
	var y4 Register // rows 4..7's outputs
	if sets == 2 {
		y4 = GP64()
		LEAQ(Mem{Base: y, Index: ysb, Scale: 4}, y4)
	}
	yrows := func(st int) func(r, disp int) Mem {
		if st == 1 {
			return avokit.Rows4(y4, ysb, ys3)
		}
		return yrow
	}
	// store4 stores the four float32 of x (rows 4·st..4·st+3) to their
	// outputs
	store4 := func(x Register, st int) {
		row := yrows(st)
		VMOVSS(x, row(0, 0))
		for r := 1; r < 4; r++ {
			VEXTRACTPS(U8(r), x, row(r, 0))
		}
	}
	if rep {
		// row r of set st at dword st of lane r
		idx := ZMM()
		if sets == 2 {
			VMOVDQU64(zIdx8, idx)
			VPERMD(racc, idx, racc)
			store4(racc.AsX(), 0)
			hi := XMM()
			VEXTRACTF32X4(U8(1), racc, hi)
			store4(hi, 1)
		} else {
			VMOVDQU64(dIdx4, idx)
			VPERMD(racc, idx, racc)
			store4(racc.AsX(), 0)
		}
	}
	for st := 0; st < sets && !rep; st++ {
		if t != "Q8_0" {
			// lane r: row r's [l0..l3] in acc[0], [l4..l7] in acc[1]
			s := ZMM()
			VADDPS(acc[st][1], acc[st][0], s)
			reduce(s)
			idx := ZMM()
			VMOVDQU64(dIdx4, idx)
			VPERMD(s, idx, s)
			store4(s.AsX(), st)
		} else {
			// 256-bit half: a row's [l0..l7]
			for pr := 0; pr < 2; pr++ {
				s := ZMM()
				VSHUFF32X4(U8(0xB1), acc[st][pr], acc[st][pr], s) // 128-bit lanes [1 0 3 2]
				VADDPS(s, acc[st][pr], s)
				reduce(s)
				VMOVSS(s.AsX(), yrows(st)(2*pr, 0))
				u := XMM()
				VEXTRACTF32X4(U8(2), s, u)
				VMOVSS(u, yrows(st)(2*pr+1, 0))
			}
		}
	}
	// the next group: its rows adv bytes on, its outputs one float on
	ADDQ(U8(4), y)
	ADDQ(Load(Param("adv"), GP64()), wg)
	DECQ(ng)
	JMP(LabelRef(p + "group"))
	Label(p + "end")
	VZEROUPPER()
	RET()
}

// repBlockZ ends a block of Q4_0 in llama.cpp's repacked order for one
// or two sets of four rows (rsum: a set's int32 lane sums, four of row r
// in 128-bit lane r, without the offset; rows: a set's rows at the
// block): each row's four summed exactly (the two sets interleaved: row
// r of set st in dword st of lane r), 8·Σx taken off (xs: the block's
// sum of x), converted, and added times float32(d·d_a) (xd: d_a) into
// racc by one fused multiply-add.
func repBlockZ(rsum []VecVirtual, rows []func(r, disp int) Mem, km [4]OpmaskVirtual, xs, xd Mem, racc VecVirtual) {
	a := rsum[0]
	if len(rsum) == 2 {
		b, lo := rsum[1], ZMM()
		VPUNPCKLDQ(b, a, lo) // [a0 b0 a1 b1]
		VPUNPCKHDQ(b, a, a)  // [a2 b2 a3 b3]
		VPADDD(lo, a, a)
	} else {
		u := ZMM()
		VPSHUFD(U8(0xB1), a, u) // [a1 a0 a3 a2]
		VPADDD(u, a, a)
	}
	u := ZMM()
	VPSHUFD(U8(0x4E), a, u)
	VPADDD(u, a, a) // the sums in dword 0 (set 0) and 1 (set 1) of each lane
	o := ZMM()
	VPSLLD_BCST(U8(3), xs, o) // the offset 8: −8·Σx
	VPSUBD(o, a, a)
	VCVTDQ2PS(a, a)
	// the scales: row r's d in word 4r (set 0) and 4r+1 (set 1)
	// (two registers merged: each masked broadcast waits for the one
	// before it)
	var hv VecVirtual
	for st := range rows {
		h := YMM()
		VPBROADCASTW(rows[st](0, 0), h)
		for r := 1; r < 4; r++ {
			VPBROADCASTW(rows[st](r, 0), km[r], h)
		}
		if st == 0 {
			hv = h
		} else {
			VPBLENDW(U8(0x22), h, hv, hv)
		}
	}
	sc := ZMM()
	VCVTPH2PS(hv, sc)
	VMULPS_BCST(xd, sc, sc)  // d·d_a (exact: two float16 values)
	VFMADD231PS(sc, a, racc) // acc += sum·(d·d_a), one rounding
}

// sig32s is sig32 with ng groups of rows whose row q (of the 4 or 8) is
// at w + g·adv + q·ldw, its output at y[g + q·ys]: with ldw a stream's
// length (S rows of rb bytes), adv rb and ys S, the group's rows are S
// rows apart, so each row of the group reads its own long run of
// memory (S consecutive rows) as group follows group.
const sig32s = "func(nb int, w *uint8, ldw int, x *int8, xd *float32, xs *int32, y *float32, ng int, adv int, ys int)"
