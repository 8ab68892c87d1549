// Command asmgenlayout generates the amd64 assembly of the native
// backend's layout kernels for channels-last models (layout.go): the
// NHWC→NCHW split of a three-channel image (TFLite's inputs) and the 2×2
// stride-2 max pooling of whole tensors of short rows, both with
// AVX-512F. It is a build-time tool; TestGeneratedAssemblyIsCurrent
// checks the committed output.
//
//	go run ./plugins/native/internal/asmgenlayout -out layout_amd64.s -stubs layout_stubs_amd64.go -pkg native
package main

import (
	"encoding/binary"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"

	"github.com/switchyard-hal/switchyard/plugins/native/internal/avokit"
)

func main() {
	deinterleave3()
	maxPool2x2Rows()
	lerp()
	upsample2()
	resizeRows()
	lerpRows()
	interleave2()
	Generate()
}

// idx declares a 64-byte table of 16 int32 lanes v(j).
func idx(name string, v func(j int) int) Mem {
	var b [64]byte
	for j := 0; j < 16; j++ {
		binary.LittleEndian.PutUint32(b[4*j:], uint32(v(j)))
	}
	return avokit.Bytes(name, 64, func(i int) byte { return b[i] })
}

// deinterleave3 emits deinterleave3AVX512: y0[j] = x[3j], y1[j] =
// x[3j+1], y2[j] = x[3j+2] for j < n&^15. Sixteen pixels are three
// vectors A, B, C of x; channel c's lanes 3j+c below 32 come from A:B
// (one two-table permute), the rest from C (a second permute with the
// first result as its other table).
func deinterleave3() {
	var first, second [3]Mem
	for c := 0; c < 3; c++ {
		first[c] = idx([]string{"di3a0", "di3a1", "di3a2"}[c], func(j int) int {
			if s := 3*j + c; s < 32 {
				return s
			}
			return 0
		})
		second[c] = idx([]string{"di3b0", "di3b1", "di3b2"}[c], func(j int) int {
			if s := 3*j + c; s >= 32 {
				return 16 + s - 32
			}
			return j
		})
	}
	TEXT("deinterleave3AVX512", NOSPLIT, "func(n int, x, y0, y1, y2 *float32)")
	Doc("deinterleave3AVX512 computes y0[j] = x[3j], y1[j] = x[3j+1], y2[j] = x[3j+2] for j < n&^15.")
	Pragma("noescape")
	n := Load(Param("n"), GP64())
	x := Load(Param("x"), GP64())
	ys := []Register{Load(Param("y0"), GP64()), Load(Param("y1"), GP64()), Load(Param("y2"), GP64())}
	var ia, ib [3]VecVirtual
	for c := 0; c < 3; c++ {
		ia[c], ib[c] = ZMM(), ZMM()
		VMOVUPS(first[c], ia[c])
		VMOVUPS(second[c], ib[c])
	}
	a, b, cc, t := ZMM(), ZMM(), ZMM(), ZMM()
	Label("di3_loop")
	CMPQ(n, U8(16))
	JLT(LabelRef("di3_done"))
	VMOVUPS(Mem{Base: x}, a)
	VMOVUPS(Mem{Base: x, Disp: 64}, b)
	VMOVUPS(Mem{Base: x, Disp: 128}, cc)
	for c := 0; c < 3; c++ {
		// t = (a:b)[ia], then (t:cc)[ib]
		VMOVAPS(a, t)
		VPERMT2PS(b, ia[c], t)
		VPERMT2PS(cc, ib[c], t)
		VMOVUPS(t, Mem{Base: ys[c]})
		ADDQ(U8(64), ys[c])
	}
	ADDQ(U32(192), x)
	SUBQ(U8(16), n)
	JMP(LabelRef("di3_loop"))
	Label("di3_done")
	VZEROUPPER()
	RET()
}

// maxPool2x2Rows emits maxPool2x2RowsAVX512: for each of rows output rows
// k, y[k·ow + j] = the largest of x[r + 2j], x[r + 2j+1], x[r + iw + 2j],
// x[r + iw + 2j+1] (r = 2k·iw, iw = 2·ow) for every j < ow, a NaN never
// winning (all NaN: ninf): a 2×2 stride-2 MaxPool of planes of even
// sizes, all of them one run of row pairs, 16 outputs a step and the
// last ow%16 of each row masked (no row is too short for the vectors).
func maxPool2x2Rows() {
	ev := idx("mp2ev", func(j int) int { return 2 * j })
	od := idx("mp2od", func(j int) int { return 2*j + 1 })
	TEXT("maxPool2x2RowsAVX512", NOSPLIT, "func(rows, ow int, x, y *float32, ninf float32, mlo, mhi, mout int)")
	Doc("maxPool2x2RowsAVX512 computes the 2×2 stride-2 max pooling of rows row pairs of 2·ow floats into rows of ow, a NaN never winning; mlo, mhi and mout are the masks of a row's last ow%16 outputs' inputs (low and high vector) and outputs.")
	Pragma("noescape")
	rows := Load(Param("rows"), GP64())
	ow := Load(Param("ow"), GP64())
	x := Load(Param("x"), GP64())
	y := Load(Param("y"), GP64())
	klo, khi, kout := K(), K(), K()
	for _, mk := range []struct {
		p string
		k OpmaskVirtual
	}{{"mlo", klo}, {"mhi", khi}, {"mout", kout}} {
		g := GP64()
		Load(Param(mk.p), g)
		KMOVW(g.As32(), mk.k)
	}
	ninf := ZMM()
	VBROADCASTSS(NewParamAddr("ninf", 32), ninf)
	iev, iod := ZMM(), ZMM()
	VMOVUPS(ev, iev)
	VMOVUPS(od, iod)
	// bytes: a row pair in (2·iw floats = 4·ow), a row of x (2·ow), a row
	// of y (ow)
	pairB, iwB, owB := GP64(), GP64(), GP64()
	MOVQ(ow, owB)
	SHLQ(U8(2), owB)
	MOVQ(ow, iwB)
	SHLQ(U8(3), iwB)
	MOVQ(ow, pairB)
	SHLQ(U8(4), pairB)
	r0, r1, yp, j := GP64(), GP64(), GP64(), GP64()
	a0, a1, b0, b1, e := ZMM(), ZMM(), ZMM(), ZMM(), ZMM()
	// pool computes a0 = the 16 outputs of a0:a1 (row 0) and b0:b1 (row 1)
	pool := func() {
		// Intel max returns its second source when either is NaN: each
		// new value first, the running maximum second
		VMAXPS(ninf, a0, a0)
		VMAXPS(ninf, a1, a1)
		VMAXPS(a0, b0, a0)
		VMAXPS(a1, b1, a1)
		VMOVAPS(a0, e)
		VPERMT2PS(a1, iev, e)
		VPERMT2PS(a1, iod, a0)
		VMAXPS(e, a0, a0)
	}
	Label("mpr_row")
	TESTQ(rows, rows)
	JEQ(LabelRef("mpr_done"))
	MOVQ(x, r0)
	LEAQ(Mem{Base: x, Index: iwB, Scale: 1}, r1)
	MOVQ(y, yp)
	MOVQ(ow, j)
	Label("mpr_blk")
	CMPQ(j, U8(16))
	JLT(LabelRef("mpr_tail"))
	VMOVUPS(Mem{Base: r0}, a0)
	VMOVUPS(Mem{Base: r0, Disp: 64}, a1)
	VMOVUPS(Mem{Base: r1}, b0)
	VMOVUPS(Mem{Base: r1, Disp: 64}, b1)
	pool()
	VMOVUPS(a0, Mem{Base: yp})
	ADDQ(U32(128), r0)
	ADDQ(U32(128), r1)
	ADDQ(U8(64), yp)
	SUBQ(U8(16), j)
	JMP(LabelRef("mpr_blk"))
	Label("mpr_tail")
	TESTQ(j, j)
	JEQ(LabelRef("mpr_next"))
	VMOVUPS_Z(Mem{Base: r0}, klo, a0)
	VMOVUPS_Z(Mem{Base: r0, Disp: 64}, khi, a1)
	VMOVUPS_Z(Mem{Base: r1}, klo, b0)
	VMOVUPS_Z(Mem{Base: r1, Disp: 64}, khi, b1)
	pool()
	VMOVUPS(a0, kout, Mem{Base: yp})
	Label("mpr_next")
	ADDQ(pairB, x)
	ADDQ(owB, y)
	DECQ(rows)
	JMP(LabelRef("mpr_row"))
	Label("mpr_done")
	VZEROUPPER()
	RET()
}

// lerp emits lerpAVX512: y[i] = a[i] + w·(b[i] − a[i]) for i < n&^15,
// rounded after each operation (a subtraction, a product, a sum: no
// fused multiply-add), as the Go expression computes it: the vertical
// pass of a bilinear Resize.
func lerp() {
	TEXT("lerpAVX512", NOSPLIT, "func(n int, a, b, y *float32, w float32)")
	Doc("lerpAVX512 computes y[i] = a[i] + w·(b[i] − a[i]) for i < n&^15, each operation rounded.")
	Pragma("noescape")
	n := Load(Param("n"), GP64())
	a := Load(Param("a"), GP64())
	b := Load(Param("b"), GP64())
	y := Load(Param("y"), GP64())
	w := ZMM()
	VBROADCASTSS(NewParamAddr("w", 32), w)
	va, vb := ZMM(), ZMM()
	Label("lerp_loop")
	CMPQ(n, U8(16))
	JLT(LabelRef("lerp_done"))
	VMOVUPS(Mem{Base: a}, va)
	VMOVUPS(Mem{Base: b}, vb)
	VSUBPS(va, vb, vb)
	VMULPS(w, vb, vb)
	VADDPS(vb, va, va)
	VMOVUPS(va, Mem{Base: y})
	ADDQ(U8(64), a)
	ADDQ(U8(64), b)
	ADDQ(U8(64), y)
	SUBQ(U8(16), n)
	JMP(LabelRef("lerp_loop"))
	Label("lerp_done")
	VZEROUPPER()
	RET()
}

// upsample2 emits upsample2AVX512, the horizontal pass of a bilinear
// Resize by 2 away from the edges: for j < n&^15, y[2j] = xe[j] +
// w0·(xe[j+1] − xe[j]) and y[2j+1] = xo[j] + w1·(xo[j+1] − xo[j]), each
// operation rounded (xe = xo, or xe one column before xo, by the
// coordinate transform). The even and odd outputs are computed as
// vectors and interleaved.
func upsample2() {
	lo, hi := interleaveIdx()
	TEXT("upsample2AVX512", NOSPLIT, "func(n int, xe, xo, y *float32, w0, w1 float32)")
	Doc("upsample2AVX512 computes y[2j] = xe[j] + w0·(xe[j+1] − xe[j]) and y[2j+1] = xo[j] + w1·(xo[j+1] − xo[j]) for j < n&^15, each operation rounded.")
	Pragma("noescape")
	n := Load(Param("n"), GP64())
	xe := Load(Param("xe"), GP64())
	xo := Load(Param("xo"), GP64())
	y := Load(Param("y"), GP64())
	w0, w1 := ZMM(), ZMM()
	VBROADCASTSS(NewParamAddr("w0", 32), w0)
	VBROADCASTSS(NewParamAddr("w1", 36), w1)
	ilo, ihi := ZMM(), ZMM()
	VMOVUPS(lo, ilo)
	VMOVUPS(hi, ihi)
	e0, e1, o0, o1, ev, od, t := ZMM(), ZMM(), ZMM(), ZMM(), ZMM(), ZMM(), ZMM()
	Label("up2_loop")
	CMPQ(n, U8(16))
	JLT(LabelRef("up2_done"))
	VMOVUPS(Mem{Base: xe}, e0)
	VMOVUPS(Mem{Base: xe, Disp: 4}, e1)
	VMOVUPS(Mem{Base: xo}, o0)
	VMOVUPS(Mem{Base: xo, Disp: 4}, o1)
	// even: e0 + w0·(e1 − e0); odd: o0 + w1·(o1 − o0)
	VSUBPS(e0, e1, ev)
	VMULPS(w0, ev, ev)
	VADDPS(ev, e0, ev)
	VSUBPS(o0, o1, od)
	VMULPS(w1, od, od)
	VADDPS(od, o0, od)
	VMOVAPS(ev, t)
	VPERMT2PS(od, ilo, t)
	VPERMT2PS(od, ihi, ev)
	VMOVUPS(t, Mem{Base: y})
	VMOVUPS(ev, Mem{Base: y, Disp: 64})
	ADDQ(U8(64), xe)
	ADDQ(U8(64), xo)
	ADDQ(U32(128), y)
	SUBQ(U8(16), n)
	JMP(LabelRef("up2_loop"))
	Label("up2_done")
	VZEROUPPER()
	RET()
}

var ilo, ihi Mem
var haveIdx bool

// interleaveIdx are the two permutes' tables that interleave two vectors
// (even lanes from the first, odd from the second), declared once.
func interleaveIdx() (Mem, Mem) {
	if !haveIdx {
		ilo = idx("up2lo", func(j int) int { return j/2 + 16*(j%2) })
		ihi = idx("up2hi", func(j int) int { return 8 + j/2 + 16*(j%2) })
		haveIdx = true
	}
	return ilo, ihi
}

// interleave2 emits interleave2AVX512: y[2j] = a[j], y[2j+1] = b[j] for
// j < n&^15 (DepthToSpace of block size 2: one output row from the rows
// of two channels).
func interleave2() {
	lo, hi := interleaveIdx()
	TEXT("interleave2AVX512", NOSPLIT, "func(n int, a, b, y *float32)")
	Doc("interleave2AVX512 computes y[2j] = a[j], y[2j+1] = b[j] for j < n&^15.")
	Pragma("noescape")
	n := Load(Param("n"), GP64())
	a := Load(Param("a"), GP64())
	b := Load(Param("b"), GP64())
	y := Load(Param("y"), GP64())
	il, ih := ZMM(), ZMM()
	VMOVUPS(lo, il)
	VMOVUPS(hi, ih)
	va, vb, t := ZMM(), ZMM(), ZMM()
	Label("il2_loop")
	CMPQ(n, U8(16))
	JLT(LabelRef("il2_done"))
	VMOVUPS(Mem{Base: a}, va)
	VMOVUPS(Mem{Base: b}, vb)
	VMOVAPS(va, t)
	VPERMT2PS(vb, il, t)
	VPERMT2PS(vb, ih, va)
	VMOVUPS(t, Mem{Base: y})
	VMOVUPS(va, Mem{Base: y, Disp: 64})
	ADDQ(U8(64), a)
	ADDQ(U8(64), b)
	ADDQ(U32(128), y)
	SUBQ(U8(16), n)
	JMP(LabelRef("il2_loop"))
	Label("il2_done")
	VZEROUPPER()
	RET()
}

// resizeRows emits resizeRowsAVX512, the horizontal pass of a bilinear
// Resize over a whole tensor of short rows: for each of rows input rows
// (iw floats apart) and j < ow, y[r·ow + j] = a + w[j]·(b − a) with a =
// x[r·iw + i0[j]] and b = x[r·iw + i1[j]] (gathered, 16 lanes a step,
// the last ow%16 masked by mask), each operation rounded.
func resizeRows() {
	TEXT("resizeRowsAVX512", NOSPLIT, "func(rows, iw, ow int, x, y *float32, i0, i1 *int32, w *float32, mask int)")
	Doc("resizeRowsAVX512 computes y[r·ow + j] = a + w[j]·(b − a), a = x[r·iw + i0[j]], b = x[r·iw + i1[j]], for r < rows and j < ow; mask: the lanes of a row's last ow%16.")
	Pragma("noescape")
	rows := Load(Param("rows"), GP64())
	iw := Load(Param("iw"), GP64())
	ow := Load(Param("ow"), GP64())
	x := Load(Param("x"), GP64())
	y := Load(Param("y"), GP64())
	pi0 := Load(Param("i0"), GP64())
	pi1 := Load(Param("i1"), GP64())
	pw := Load(Param("w"), GP64())
	mk := GP64()
	Load(Param("mask"), mk)
	ktail, kg := K(), K()
	KMOVW(mk.As32(), ktail)
	SHLQ(U8(2), iw)
	j, off := GP64(), GP64()
	ia, ib, wv, a, b := ZMM(), ZMM(), ZMM(), ZMM(), ZMM()
	all := GP32()
	MOVL(U32(0xffff), all)
	Label("rr_row")
	TESTQ(rows, rows)
	JEQ(LabelRef("rr_done"))
	XORQ(off, off)
	MOVQ(ow, j)
	Label("rr_blk")
	CMPQ(j, U8(16))
	JLT(LabelRef("rr_tail"))
	VMOVDQU32(Mem{Base: pi0, Index: off, Scale: 4}, ia)
	VMOVDQU32(Mem{Base: pi1, Index: off, Scale: 4}, ib)
	VMOVUPS(Mem{Base: pw, Index: off, Scale: 4}, wv)
	KMOVW(all, kg)
	VGATHERDPS(Mem{Base: x, Index: ia, Scale: 4}, kg, a)
	KMOVW(all, kg)
	VGATHERDPS(Mem{Base: x, Index: ib, Scale: 4}, kg, b)
	VSUBPS(a, b, b)
	VMULPS(wv, b, b)
	VADDPS(b, a, a)
	VMOVUPS(a, Mem{Base: y, Index: off, Scale: 4})
	ADDQ(U8(16), off)
	SUBQ(U8(16), j)
	JMP(LabelRef("rr_blk"))
	Label("rr_tail")
	TESTQ(j, j)
	JEQ(LabelRef("rr_next"))
	VMOVDQU32_Z(Mem{Base: pi0, Index: off, Scale: 4}, ktail, ia)
	VMOVDQU32_Z(Mem{Base: pi1, Index: off, Scale: 4}, ktail, ib)
	VMOVUPS_Z(Mem{Base: pw, Index: off, Scale: 4}, ktail, wv)
	KMOVW(ktail, kg)
	VGATHERDPS(Mem{Base: x, Index: ia, Scale: 4}, kg, a)
	KMOVW(ktail, kg)
	VGATHERDPS(Mem{Base: x, Index: ib, Scale: 4}, kg, b)
	VSUBPS(a, b, b)
	VMULPS(wv, b, b)
	VADDPS(b, a, a)
	VMOVUPS(a, ktail, Mem{Base: y, Index: off, Scale: 4})
	Label("rr_next")
	ADDQ(iw, x)
	LEAQ(Mem{Base: y, Index: ow, Scale: 4}, y)
	DECQ(rows)
	JMP(LabelRef("rr_row"))
	Label("rr_done")
	VZEROUPPER()
	RET()
}

// lerpRows emits lerpRowsAVX512, the vertical pass of a bilinear Resize
// over a whole tensor of short rows: for each of planes planes (hs
// floats of h and oh·ow of y apart), output row oy and j < ow, y[oy·ow +
// j] = a + wy[oy]·(b − a) with a = h[r0[oy] + j], b = h[r1[oy] + j] (r0,
// r1: row offsets in floats), 16 lanes a step, the last ow%16 masked.
func lerpRows() {
	TEXT("lerpRowsAVX512", NOSPLIT, "func(planes, oh, ow, hs int, h, y *float32, r0, r1 *int32, wy *float32, mask int)")
	Doc("lerpRowsAVX512 computes y[(p·oh + oy)·ow + j] = a + wy[oy]·(b − a), a = h[p·hs + r0[oy] + j], b = h[p·hs + r1[oy] + j]; mask: the lanes of a row's last ow%16.")
	Pragma("noescape")
	planes := Load(Param("planes"), GP64())
	oh := Load(Param("oh"), GP64())
	ow := Load(Param("ow"), GP64())
	hs := Load(Param("hs"), GP64())
	h := Load(Param("h"), GP64())
	y := Load(Param("y"), GP64())
	pr0 := Load(Param("r0"), GP64())
	pr1 := Load(Param("r1"), GP64())
	pwy := Load(Param("wy"), GP64())
	mk := GP64()
	Load(Param("mask"), mk)
	ktail := K()
	KMOVW(mk.As32(), ktail)
	SHLQ(U8(2), hs)
	oy, j, pa, pb, t := GP64(), GP64(), GP64(), GP64(), GP64()
	a, b, wv := ZMM(), ZMM(), ZMM()
	Label("lr_plane")
	TESTQ(planes, planes)
	JEQ(LabelRef("lr_done"))
	XORQ(oy, oy)
	Label("lr_row")
	CMPQ(oy, oh)
	JGE(LabelRef("lr_next"))
	MOVLQSX(Mem{Base: pr0, Index: oy, Scale: 4}, t)
	LEAQ(Mem{Base: h, Index: t, Scale: 4}, pa)
	MOVLQSX(Mem{Base: pr1, Index: oy, Scale: 4}, t)
	LEAQ(Mem{Base: h, Index: t, Scale: 4}, pb)
	VBROADCASTSS(Mem{Base: pwy, Index: oy, Scale: 4}, wv)
	MOVQ(ow, j)
	Label("lr_blk")
	CMPQ(j, U8(16))
	JLT(LabelRef("lr_tail"))
	VMOVUPS(Mem{Base: pa}, a)
	VMOVUPS(Mem{Base: pb}, b)
	VSUBPS(a, b, b)
	VMULPS(wv, b, b)
	VADDPS(b, a, a)
	VMOVUPS(a, Mem{Base: y})
	ADDQ(U8(64), pa)
	ADDQ(U8(64), pb)
	ADDQ(U8(64), y)
	SUBQ(U8(16), j)
	JMP(LabelRef("lr_blk"))
	Label("lr_tail")
	TESTQ(j, j)
	JEQ(LabelRef("lr_rowend"))
	VMOVUPS_Z(Mem{Base: pa}, ktail, a)
	VMOVUPS_Z(Mem{Base: pb}, ktail, b)
	VSUBPS(a, b, b)
	VMULPS(wv, b, b)
	VADDPS(b, a, a)
	VMOVUPS(a, ktail, Mem{Base: y})
	LEAQ(Mem{Base: y, Index: j, Scale: 4}, y)
	Label("lr_rowend")
	INCQ(oy)
	JMP(LabelRef("lr_row"))
	Label("lr_next")
	ADDQ(hs, h)
	DECQ(planes)
	JMP(LabelRef("lr_plane"))
	Label("lr_done")
	VZEROUPPER()
	RET()
}
