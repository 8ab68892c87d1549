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
	lo := idx("up2lo", func(j int) int { return j/2 + 16*(j%2) })
	hi := idx("up2hi", func(j int) int { return 8 + j/2 + 16*(j%2) })
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
