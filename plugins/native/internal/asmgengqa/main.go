// Command asmgengqa generates the amd64 assembly of the native backend's
// attention over a float16 key/value cache (see the package native's
// gqa_cache.go) with avo (github.com/mmcloughlin/avo): the cache rows
// widened to float32 (VCVTPH2PS) and float32 values rounded to float16
// and back (VCVTPS2PH to nearest even, then VCVTPH2PS), sixteen values a
// step, F16C on YMM. Both are exact conversions, bit for bit what the
// package's Go code gives (graph.F16's rounding, nearest even), NaN
// payloads aside. The package's TestGeneratedAssemblyIsCurrent runs it
// and fails when its files are stale.
//
//	go run ./plugins/native/internal/asmgengqa -out plugins/native/gqa_amd64.s -stubs plugins/native/gqa_stubs_amd64.go -pkg native
package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
)

func main() {
	widen()
	round()
	Generate()
}

// widen: dst[i] = float32(src[i]) for i < n (n a multiple of 16).
func widen() {
	TEXT("f16WidenF16C", NOSPLIT, "func(dst *float32, src *uint16, n int)")
	Doc("f16WidenF16C widens n float16 values (n a multiple of 16) at src to float32 at dst (F16C).")
	Pragma("noescape")
	dst := Load(Param("dst"), GP64())
	src := Load(Param("src"), GP64())
	n := Load(Param("n"), GP64())
	Label("widen_loop")
	CMPQ(n, U8(16))
	JB(LabelRef("widen_done"))
	a, b := YMM(), YMM()
	VCVTPH2PS(Mem{Base: src}, a)
	VCVTPH2PS(Mem{Base: src, Disp: 16}, b)
	VMOVUPS(a, Mem{Base: dst})
	VMOVUPS(b, Mem{Base: dst, Disp: 32})
	ADDQ(U8(32), src)
	ADDQ(U8(64), dst)
	SUBQ(U8(16), n)
	JMP(LabelRef("widen_loop"))
	Label("widen_done")
	VZEROUPPER()
	RET()
}

// round: x[i] = float32(float16(x[i])) for i < n (n a multiple of 16),
// to nearest even.
func round() {
	TEXT("f16RoundF16C", NOSPLIT, "func(x *float32, n int)")
	Doc("f16RoundF16C rounds n float32 values (n a multiple of 16) at x to float16, nearest even, in place (F16C).")
	Pragma("noescape")
	x := Load(Param("x"), GP64())
	n := Load(Param("n"), GP64())
	Label("round_loop")
	CMPQ(n, U8(16))
	JB(LabelRef("round_done"))
	for o := 0; o < 64; o += 32 {
		v, h := YMM(), XMM()
		VMOVUPS(Mem{Base: x, Disp: o}, v)
		VCVTPS2PH(U8(0), v, h) // imm 0: nearest even
		VCVTPH2PS(h, v)
		VMOVUPS(v, Mem{Base: x, Disp: o})
	}
	ADDQ(U8(64), x)
	SUBQ(U8(16), n)
	JMP(LabelRef("round_loop"))
	Label("round_done")
	VZEROUPPER()
	RET()
}
