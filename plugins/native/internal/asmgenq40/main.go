// Command asmgenq40 generates the amd64 assembly of the native backend's
// Q4_0 GEMM panels (see the package native's qgemm_q40.go) with avo
// (github.com/mmcloughlin/avo). It writes its own pair of files; the
// package's TestGeneratedAssemblyIsCurrent runs it and fails when they are
// stale.
//
//	go run ./plugins/native/internal/asmgenq40 -out plugins/native/qgemm_q40_amd64.s -stubs plugins/native/qgemm_q40_stubs_amd64.go -pkg native
//
// Q4_0's arithmetic is llama.cpp's repacked one (core/ggml's Dot): per
// block the exact int32 sum of the 32 products, converted, and added
// times float32(d_w·d_a) into one float32 accumulator by a fused
// multiply-add. That needs each output's whole block sum in one lane:
// the panels (qgemmQ40Pack16, qgemmQ40P16R1..16: see pack16 and panel),
// which the package native uses from two activation rows on, pack 16
// weight rows per call into the x16 layout, the weight rows across the
// lanes, and broadcast the activations.
package main

import (
	"flag"
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
	"github.com/switchyard-hal/switchyard/plugins/native/internal/avokit"
)

var c0F Mem

func main() {
	flag.Parse()
	c0F = avokit.Bytes("q40_c0f", 64, func(int) byte { return 0x0F })
	pack16()
	for r := 1; r <= panelRows; r++ {
		panel(r)
	}
	Generate()
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
