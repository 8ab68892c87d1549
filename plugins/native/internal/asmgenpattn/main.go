// Command asmgenpattn generates the amd64 assembly of the native
// backend's many-row dot16 and dotGGML (see the package native's
// pattn_amd64.go)
// with avo (github.com/mmcloughlin/avo): out[j] = dot16(x row j, y), the
// rows h float32 values apart, h a multiple of 16, bit for bit what one
// dot16AVX512 call a row gives (gqa_ggml_amd64.s): one accumulator of
// sixteen lanes a row, VFMADD231PS with the row in a register and y from
// memory, reduced as _mm512_reduce_add_ps (halves, quarters, pairs) by
// the same instructions. Four rows share each pass over y, which removes
// the call per row and keeps four independent chains in flight. The
// dotGGML kernel likewise repeats dotGGMLAVX512 (four accumulators a
// row over each 64 values, added (0+2)+(1+3), then REDUCE16) for four
// rows at once. The
// package's TestGeneratedAssemblyIsCurrent runs it and fails when its
// files are stale.
//
//	go run ./plugins/native/internal/asmgenpattn -out plugins/native/pattn_amd64.s -stubs plugins/native/pattn_stubs_amd64.go -pkg native
package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	"github.com/mmcloughlin/avo/reg"
)

func main() {
	dots()
	dotsGGML()
	Generate()
}

// reduce16 stores the sum of z's sixteen lanes at dst in dot16AVX512's
// REDUCE16 order (VEXTRACTF32X4 for its VEXTRACTF128: the same lanes,
// EVEX-encoded so any register will do).
func reduce16(z reg.VecVirtual, dst Mem) {
	y1, x2, x3, x0 := YMM(), XMM(), XMM(), XMM()
	VEXTRACTF32X8(U8(1), z, y1)
	VADDPS(z.AsY(), y1, y1)
	VEXTRACTF32X4(U8(1), y1, x2)
	VADDPS(y1.AsX(), x2, x2)
	VPERMILPS(U8(0x4e), x2, x3)
	VADDPS(x3, x2, x2)
	VMOVSHDUP(x2, x3)
	VADDSS(x3, x2, x0)
	VMOVSS(x0, dst)
}

// dots: out[j] = dot16(x[j·h : j·h+h], y[:h]) for j < n, h > 0 a
// multiple of 16.
func dots() {
	TEXT("pattnDots16AVX512", NOSPLIT, "func(out, x, y *float32, n, h int)")
	Doc("pattnDots16AVX512 sets out[j] to dot16 of row j of x (h values a row, h > 0 a multiple of 16) with y, for j < n (AVX-512 F).")
	Pragma("noescape")
	out := Load(Param("out"), GP64())
	x := Load(Param("x"), GP64())
	y := Load(Param("y"), GP64())
	n := Load(Param("n"), GP64())
	hb := Load(Param("h"), GP64())
	SHLQ(U8(2), hb) // bytes a row
	p1, p2, p3 := GP64(), GP64(), GP64()
	off := GP64()

	Label("rows4")
	CMPQ(n, U8(4))
	JB(LabelRef("rows1"))
	LEAQ(Mem{Base: x, Index: hb, Scale: 1}, p1)
	LEAQ(Mem{Base: p1, Index: hb, Scale: 1}, p2)
	LEAQ(Mem{Base: p2, Index: hb, Scale: 1}, p3)
	bases := []reg.Register{x, p1, p2, p3}
	var acc [4]reg.VecVirtual
	for r := range acc {
		acc[r] = ZMM()
		VPXORD(acc[r], acc[r], acc[r])
	}
	XORQ(off, off)
	Label("loop4")
	for r := range acc {
		t := ZMM()
		VMOVUPS(Mem{Base: bases[r], Index: off, Scale: 1}, t)
		VFMADD231PS(Mem{Base: y, Index: off, Scale: 1}, t, acc[r])
	}
	ADDQ(U8(64), off)
	CMPQ(off, hb)
	JB(LabelRef("loop4"))
	for r := range acc {
		reduce16(acc[r], Mem{Base: out, Disp: 4 * r})
	}
	LEAQ(Mem{Base: p3, Index: hb, Scale: 1}, x)
	ADDQ(U8(16), out)
	SUBQ(U8(4), n)
	JMP(LabelRef("rows4"))

	Label("rows1")
	TESTQ(n, n)
	JZ(LabelRef("done"))
	a := ZMM()
	VPXORD(a, a, a)
	XORQ(off, off)
	Label("loop1")
	t := ZMM()
	VMOVUPS(Mem{Base: x, Index: off, Scale: 1}, t)
	VFMADD231PS(Mem{Base: y, Index: off, Scale: 1}, t, a)
	ADDQ(U8(64), off)
	CMPQ(off, hb)
	JB(LabelRef("loop1"))
	reduce16(a, Mem{Base: out})
	ADDQ(hb, x)
	ADDQ(U8(4), out)
	DECQ(n)
	JMP(LabelRef("rows1"))

	Label("done")
	VZEROUPPER()
	RET()
}

// dotsGGML: out[j] = dotGGML's sum over the first np values of row j of
// x (rows ld float32 values apart) with y, for j < n, np > 0 a multiple
// of 64: dotGGMLAVX512's instructions, four rows a pass.
func dotsGGML() {
	TEXT("pattnDotsGGMLAVX512", NOSPLIT, "func(out, x, y *float32, n, ld, np int)")
	Doc("pattnDotsGGMLAVX512 sets out[j] to dotGGML's sum over the first np values (np > 0 a multiple of 64) of row j of x (rows ld values apart) with y, for j < n (AVX-512 F).")
	Pragma("noescape")
	out := Load(Param("out"), GP64())
	x := Load(Param("x"), GP64())
	y := Load(Param("y"), GP64())
	n := Load(Param("n"), GP64())
	lb := Load(Param("ld"), GP64())
	SHLQ(U8(2), lb) // bytes a row
	nb := Load(Param("np"), GP64())
	SHLQ(U8(2), nb) // bytes summed a row
	p1, p2, p3 := GP64(), GP64(), GP64()
	off := GP64()

	// sum4 leaves acc[0] = (acc[0]+acc[2]) + (acc[1]+acc[3]) as
	// dotGGMLAVX512's sum4 adds them.
	sum4 := func(acc []reg.VecVirtual) {
		VADDPS(acc[2], acc[0], acc[0])
		VADDPS(acc[3], acc[1], acc[1])
		VADDPS(acc[1], acc[0], acc[0])
	}

	Label("g_rows4")
	CMPQ(n, U8(4))
	JB(LabelRef("g_rows1"))
	LEAQ(Mem{Base: x, Index: lb, Scale: 1}, p1)
	LEAQ(Mem{Base: p1, Index: lb, Scale: 1}, p2)
	LEAQ(Mem{Base: p2, Index: lb, Scale: 1}, p3)
	bases := []reg.Register{x, p1, p2, p3}
	var acc [4][4]reg.VecVirtual
	for r := range acc {
		for k := range acc[r] {
			acc[r][k] = ZMM()
			VPXORD(acc[r][k], acc[r][k], acc[r][k])
		}
	}
	XORQ(off, off)
	Label("g_loop4")
	for r := range acc {
		for k := range acc[r] {
			t := ZMM()
			VMOVUPS(Mem{Base: bases[r], Index: off, Scale: 1, Disp: 64 * k}, t)
			VFMADD231PS(Mem{Base: y, Index: off, Scale: 1, Disp: 64 * k}, t, acc[r][k])
		}
	}
	ADDQ(U32(256), off)
	CMPQ(off, nb)
	JB(LabelRef("g_loop4"))
	for r := range acc {
		sum4(acc[r][:])
		reduce16(acc[r][0], Mem{Base: out, Disp: 4 * r})
	}
	LEAQ(Mem{Base: p3, Index: lb, Scale: 1}, x)
	ADDQ(U8(16), out)
	SUBQ(U8(4), n)
	JMP(LabelRef("g_rows4"))

	Label("g_rows1")
	TESTQ(n, n)
	JZ(LabelRef("g_done"))
	var a [4]reg.VecVirtual
	for k := range a {
		a[k] = ZMM()
		VPXORD(a[k], a[k], a[k])
	}
	XORQ(off, off)
	Label("g_loop1")
	for k := range a {
		t := ZMM()
		VMOVUPS(Mem{Base: x, Index: off, Scale: 1, Disp: 64 * k}, t)
		VFMADD231PS(Mem{Base: y, Index: off, Scale: 1, Disp: 64 * k}, t, a[k])
	}
	ADDQ(U32(256), off)
	CMPQ(off, nb)
	JB(LabelRef("g_loop1"))
	sum4(a[:])
	reduce16(a[0], Mem{Base: out})
	ADDQ(lb, x)
	ADDQ(U8(4), out)
	DECQ(n)
	JMP(LabelRef("g_rows1"))

	Label("g_done")
	VZEROUPPER()
	RET()
}
