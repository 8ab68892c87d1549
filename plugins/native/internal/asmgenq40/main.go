// Command asmgenq40 generates the amd64 assembly of the native backend's
// Q4_0 GEMM tiles (see the package native's qgemm_q40.go) with avo
// (github.com/mmcloughlin/avo). It writes its own pair of files; the
// package's TestGeneratedAssemblyIsCurrent runs it and fails when they are
// stale.
//
//	go run ./plugins/native/internal/asmgenq40 -out plugins/native/qgemm_q40_amd64.s -stubs plugins/native/qgemm_q40_stubs_amd64.go -pkg native
//
// Q4_0's arithmetic is llama.cpp's repacked one (core/ggml's Dot): per
// block the exact int32 sum of the 32 products, converted, and added
// times float32(d_w·d_a) into one float32 accumulator by a fused
// multiply-add. That needs each output's whole block sum in one lane, so
// these tiles put activation rows, not weights, across the lanes: the
// activations are packed interleaved (per block, per group of four
// elements g, the L rows' four int8 values side by side: one register
// holds group g of every row), and each weight row's four bytes of a
// group are broadcast to every lane (embedded broadcast), masked (low
// nibbles: elements 4j..4j+3) or shifted and masked (high nibbles:
// 16+4j..16+4j+3), and multiplied by VPDPBUSD into the row's int32 sums:
// eight VPDPBUSD a block leave lane i holding the block's sum for
// activation row i, no reduction. The offset 8 is the packed correction
// −8·Σq the sums start from. A tile is 8 weight rows × L activation rows
// (L = 16 on ZMM, 8 on YMM), eight float32 accumulators (one a weight
// row), transposed at the end into the L output rows (R ≤ L of them
// stored).
//
// It also generates the panels (qgemmQ40Pack16, qgemmQ40P16R1..16: see
// pack16 and panel), which the package native uses from two activation
// rows on: 16 weight rows packed per call into the x16 layout, the
// weight rows across the lanes, the activations broadcast.
package main

import (
	"flag"
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
	"github.com/switchyard-hal/switchyard/plugins/native/internal/avokit"
)

var c0F, idxLo, idxHi Mem

func main() {
	flag.Parse()
	c0F = avokit.Bytes("q40_c0f", 64, func(int) byte { return 0x0F })
	// VPERMT2PS indices: dwords [0..3, 16..19, 8..11, 24..27] and
	// [4..7, 20..23, 12..15, 28..31]
	perm := func(name string, base int) Mem {
		return avokit.Bytes(name, 64, func(i int) byte {
			if i%4 != 0 {
				return 0
			}
			d := i / 4
			v := base + 8*(d/8) + d%4
			if d%8 >= 4 {
				v += 16
			}
			return byte(v)
		})
	}
	idxLo = perm("q40_idxlo", 0)
	idxHi = perm("q40_idxhi", 4)
	tile(16)
	tile(8)
	pack16()
	for r := 1; r <= panelRows; r++ {
		panel(r)
	}
	Generate()
}

// tile generates qgemmQ40x8L<L>: 8 weight rows × L activation rows.
func tile(L int) {
	name := fmt.Sprintf("qgemmQ40x8L%d", L)
	TEXT(name, NOSPLIT, "func(nb int, w *uint8, ldw int, a *int8, y *float32, ldy int, r int)")
	Doc(fmt.Sprintf("%s computes the tile of 8 weight rows (nb Q4_0 blocks, ldw bytes apart at w) × %d interleaved activation rows at a (see qgemm_q40.go): output (n, i) to y + i·ldy + 4n bytes for the first r rows i (see the package asmgenq40).", name, L))
	Pragma("noescape")
	vec := func() VecVirtual {
		if L == 16 {
			return ZMM()
		}
		return YMM()
	}
	nb := Load(Param("nb"), GP64())
	w0 := Load(Param("w"), GP64())
	ldw := Load(Param("ldw"), GP64())
	a := Load(Param("a"), GP64())
	ldw3, w4 := GP64(), GP64()
	LEAQ(Mem{Base: ldw, Index: ldw, Scale: 2}, ldw3)
	LEAQ(Mem{Base: w0, Index: ldw, Scale: 4}, w4)
	rows := []func(r, disp int) Mem{avokit.Rows4(w0, ldw, ldw3), avokit.Rows4(w4, ldw, ldw3)}
	row := func(n, disp int) Mem { return rows[n/4](n%4, disp) }
	mask := vec()
	if L == 16 {
		VMOVDQU64(c0F, mask)
	} else {
		VMOVDQU32(c0F.Offset(0), mask)
	}
	acc := make([]VecVirtual, 8)
	for n := range acc {
		acc[n] = vec()
		VXORPS(acc[n], acc[n], acc[n])
	}
	gb := 4 * L // bytes of a group of four elements
	p := name + "_"
	Label(p + "block")
	TESTQ(nb, nb)
	JZ(LabelRef(p + "done"))
	x := make([]VecVirtual, 8)
	for g := range x {
		x[g] = vec()
		if L == 16 {
			VMOVDQU64(Mem{Base: a, Disp: g * gb}, x[g])
		} else {
			VMOVDQU32(Mem{Base: a, Disp: g * gb}, x[g])
		}
	}
	corr, da := Mem{Base: a, Disp: 8 * gb}, Mem{Base: a, Disp: 8*gb + 4*L}
	for n := 0; n < 8; n++ {
		s := vec()
		if L == 16 {
			VMOVDQU64(corr, s)
		} else {
			VMOVDQU32(corr, s)
		}
		for j := 0; j < 4; j++ {
			lo, hi := vec(), vec()
			VPANDD_BCST(row(n, 2+4*j), mask, lo)
			VPSRLD_BCST(U8(4), row(n, 2+4*j), hi)
			VPANDD(mask, hi, hi)
			avokit.Vpdpbusd(x[j], lo, s)
			avokit.Vpdpbusd(x[4+j], hi, s)
		}
		VCVTDQ2PS(s, s)
		h := vec()
		if L == 16 {
			VPBROADCASTW(row(n, 0), h.AsY())
			VCVTPH2PS(h.AsY(), h)
		} else {
			VPBROADCASTW(row(n, 0), h.AsX())
			VCVTPH2PS(h.AsX(), h)
		}
		VMULPS(da, h, h)          // d_w·d_a (exact: two float16 values)
		VFMADD231PS(h, s, acc[n]) // acc += sum·(d_w·d_a), one rounding
	}
	ADDQ(U8(18), w0)
	ADDQ(U8(18), w4)
	ADDQ(U32(uint32(8*gb+8*L)), a)
	DECQ(nb)
	JMP(LabelRef(p + "block"))
	Label(p + "done")
	// transpose: per 128-bit lane k, u[c] holds weight rows 0..3 of
	// activation row 4k+c, u[4+c] rows 4..7
	var u [8]VecVirtual
	for h := 0; h < 2; h++ {
		b := acc[4*h : 4*h+4]
		t0, t1, t2, t3 := vec(), vec(), vec(), vec()
		VUNPCKLPS(b[1], b[0], t0) // [r0_0 r1_0 r0_1 r1_1]
		VUNPCKHPS(b[1], b[0], t1) // [r0_2 r1_2 r0_3 r1_3]
		VUNPCKLPS(b[3], b[2], t2)
		VUNPCKHPS(b[3], b[2], t3)
		for c := 0; c < 4; c++ {
			u[4*h+c] = vec()
		}
		VSHUFPS(U8(0x44), t2, t0, u[4*h+0])
		VSHUFPS(U8(0xEE), t2, t0, u[4*h+1])
		VSHUFPS(U8(0x44), t3, t1, u[4*h+2])
		VSHUFPS(U8(0xEE), t3, t1, u[4*h+3])
	}
	// out[i]: activation row i's eight outputs (a YMM, or a ZMM's
	// upper half: upper[i])
	out := make([]VecVirtual, L)
	upper := make([]bool, L)
	for c := 0; c < 4; c++ {
		if L == 8 {
			lo, hi := YMM(), YMM()
			VSHUFF32X4(U8(0), u[4+c], u[c], lo) // [act c's rows 0..3 | 4..7]
			VSHUFF32X4(U8(3), u[4+c], u[c], hi) // act 4+c
			out[c], out[4+c] = lo, hi
			continue
		}
		z1, z2 := ZMM(), ZMM()
		VMOVDQU64(idxLo, z1)
		VMOVDQU64(idxHi, z2)
		VPERMI2PS(u[4+c], u[c], z1) // [act c | act 8+c]
		VPERMI2PS(u[4+c], u[c], z2) // [act 4+c | act 12+c]
		out[c], out[8+c], out[4+c], out[12+c] = z1, z1, z2, z2
		upper[8+c], upper[12+c] = true, true
	}
	y := Load(Param("y"), GP64())
	ldy := Load(Param("ldy"), GP64())
	r := Load(Param("r"), GP64())
	for i := 0; i < L; i++ {
		CMPQ(r, U8(i))
		JLE(LabelRef(p + "end"))
		if upper[i] {
			VEXTRACTF64X4(U8(1), out[i], Mem{Base: y})
		} else if L == 16 {
			VMOVUPS(out[i].AsY(), Mem{Base: y})
		} else {
			VMOVUPS(out[i], Mem{Base: y})
		}
		ADDQ(ldy, y)
	}
	Label(p + "end")
	VZEROUPPER()
	RET()
}

// panelRows is the most activation rows a panel kernel takes.
const panelRows = 16

// panelBlock is a block's bytes in a panel of 16 weight rows (the x16
// layout of the package native's blockquant_x16q40.go): the rows' 16
// float16 scales, then four 64-byte vectors, vector t holding in dword i
// the quant bytes 4t..4t+3 of row i.
const panelBlock = 32 + 4*64

// pack16 generates qgemmQ40Pack16: 16 raw Q4_0 rows into a panel. Per
// block, register A_j gets in its 128-bit lane l the 16 quant bytes of
// row 4l+j; a 4×4 dword transpose within the lanes across A_0..A_3
// leaves vector t's dword 4l+j = row 4l+j's dword t.
func pack16() {
	TEXT("qgemmQ40Pack16", NOSPLIT, "func(nb int, w *uint8, ldw int, dst *uint8)")
	Doc("qgemmQ40Pack16 packs nb Q4_0 blocks of the 16 weight rows ldw bytes apart at w into a panel at dst (the x16 layout; see the package asmgenq40).")
	Pragma("noescape")
	nb := Load(Param("nb"), GP64())
	w0 := Load(Param("w"), GP64())
	ldw := Load(Param("ldw"), GP64())
	dst := Load(Param("dst"), GP64())
	ldw3 := GP64()
	LEAQ(Mem{Base: ldw, Index: ldw, Scale: 2}, ldw3)
	base := []Register{w0, GP64(), GP64(), GP64()}
	for l := 1; l < 4; l++ {
		LEAQ(Mem{Base: base[l-1], Index: ldw, Scale: 4}, base[l])
	}
	rows := make([]func(r, disp int) Mem, 4)
	for l := range rows {
		rows[l] = avokit.Rows4(base[l], ldw, ldw3)
	}
	row := func(i, disp int) Mem { return rows[i/4](i%4, disp) }
	TESTQ(nb, nb)
	JZ(LabelRef("qgemmQ40Pack16_done"))
	Label("qgemmQ40Pack16_block")
	var A [4]VecVirtual
	for j := range A {
		A[j] = ZMM()
		VMOVDQU32(row(j, 2), A[j].AsX())
		for l := 1; l < 4; l++ {
			VINSERTI32X4(U8(l), row(4*l+j, 2), A[j], A[j])
		}
	}
	t0, t1, t2, t3 := ZMM(), ZMM(), ZMM(), ZMM()
	VPUNPCKLDQ(A[1], A[0], t0) // [A0.0 A1.0 A0.1 A1.1]
	VPUNPCKHDQ(A[1], A[0], t1) // [A0.2 A1.2 A0.3 A1.3]
	VPUNPCKLDQ(A[3], A[2], t2)
	VPUNPCKHDQ(A[3], A[2], t3)
	for t, src := range [4][2]VecVirtual{{t2, t0}, {t2, t0}, {t3, t1}, {t3, t1}} {
		v := ZMM()
		if t%2 == 0 {
			VPUNPCKLQDQ(src[0], src[1], v)
		} else {
			VPUNPCKHQDQ(src[0], src[1], v)
		}
		VMOVDQU64(v, Mem{Base: dst, Disp: 32 + 64*t})
	}
	for i := 0; i < 16; i++ {
		g := GP32()
		MOVWLZX(row(i, 0), g)
		MOVW(g.As16(), Mem{Base: dst, Disp: 2 * i})
	}
	for _, b := range base {
		ADDQ(U8(18), b)
	}
	ADDQ(U32(panelBlock), dst)
	DECQ(nb)
	JNZ(LabelRef("qgemmQ40Pack16_block"))
	Label("qgemmQ40Pack16_done")
	VZEROUPPER()
	RET()
}

// panel generates qgemmQ40P16R<R>: a panel of 16 weight rows (the lanes)
// × R activation rows packed for it (per block: the R rows' 32 int8
// values, then their R corrections −8·Σq as int32, then their R scales
// d_a as float32: 40·R bytes). Per block the panel's four vectors are
// unpacked once into eight (low nibbles: weights 4t..4t+3, high:
// 16+4t..16+4t+3) and the 16 scales converted once; then for each
// activation row its sum starts from its correction, takes eight
// VPDPBUSD with the row's dwords broadcast from memory, is converted,
// and is added times float32(d_w·d_a) into the row's accumulator by one
// fused multiply-add (core/ggml's Dot's steps, each row's outputs in
// its own register: no reduction, no transpose). Activation row k's 16
// outputs go to y + k·ldy bytes. Each block also prefetches the pfn
// cache lines at pf on into the L2 cache and moves pf past them (pfn 0:
// none): the caller spreads the next panel's raw rows (16 rows of 18
// bytes a block, contiguous), which its packing then finds there, over
// the calls of the panel's last activation groups.
func panel(R int) {
	name := fmt.Sprintf("qgemmQ40P16R%d", R)
	TEXT(name, NOSPLIT, "func(nb int, w *uint8, a *int8, y *float32, ldy int, pf uintptr, pfn int)")
	Doc(fmt.Sprintf("%s computes a panel of 16 weight rows (nb Q4_0 blocks at w, the x16 layout) × %d activation rows packed at a into y (row k at y + k·ldy bytes; see the package asmgenq40).", name, R))
	Pragma("noescape")
	nb := Load(Param("nb"), GP64())
	w := Load(Param("w"), GP64())
	a := Load(Param("a"), GP64())
	pf := Load(Param("pf"), GP64())
	pfn := Load(Param("pfn"), GP64())
	mask := ZMM()
	VMOVDQU64(c0F, mask)
	acc := make([]VecVirtual, R)
	for k := range acc {
		acc[k] = ZMM()
		VXORPS(acc[k], acc[k], acc[k])
	}
	p := name + "_"
	TESTQ(nb, nb)
	JZ(LabelRef(p + "done"))
	Label(p + "block")
	var q, h [4]VecVirtual
	for t := 0; t < 4; t++ {
		q[t], h[t] = ZMM(), ZMM()
		VMOVDQU64(Mem{Base: w, Disp: 32 + 64*t}, q[t])
		VPSRLW(U8(4), q[t], h[t])
		VPANDD(mask, h[t], h[t])
		VPANDD(mask, q[t], q[t])
	}
	d := ZMM()
	VCVTPH2PS(Mem{Base: w}, d)
	for k := 0; k < R; k++ {
		s, f := ZMM(), ZMM()
		VPBROADCASTD(Mem{Base: a, Disp: 32*R + 4*k}, s)
		for t := 0; t < 4; t++ {
			avokit.VpdpbusdBcst(Mem{Base: a, Disp: 32*k + 4*t}, q[t], s)
			avokit.VpdpbusdBcst(Mem{Base: a, Disp: 32*k + 16 + 4*t}, h[t], s)
		}
		VCVTDQ2PS(s, s)
		VMULPS_BCST(Mem{Base: a, Disp: 36*R + 4*k}, d, f) // d_w·d_a (exact: two float16 values)
		VFMADD231PS(s, f, acc[k])                         // acc += sum·(d_w·d_a), one rounding
	}
	n := GP64()
	MOVQ(pfn, n)
	TESTQ(n, n)
	JZ(LabelRef(p + "nopf"))
	Label(p + "pf")
	PREFETCHT1(Mem{Base: pf})
	ADDQ(U8(64), pf)
	DECQ(n)
	JNZ(LabelRef(p + "pf"))
	Label(p + "nopf")
	ADDQ(U32(panelBlock), w)
	ADDQ(U32(uint32(40*R)), a)
	DECQ(nb)
	JNZ(LabelRef(p + "block"))
	Label(p + "done")
	y := Load(Param("y"), GP64())
	ldy := Load(Param("ldy"), GP64())
	for k := 0; k < R; k++ {
		VMOVUPS(acc[k], Mem{Base: y})
		if k < R-1 {
			ADDQ(ldy, y)
		}
	}
	VZEROUPPER()
	RET()
}
