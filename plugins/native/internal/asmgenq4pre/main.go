// Command asmgenq4pre generates the amd64 assembly of the native
// backend's rotary rotation in ggml's float32 arithmetic (the package
// native's q4pre_rope.go: rotateRowFMA's steps, sixteen lanes at a time)
// with avo (github.com/mmcloughlin/avo). The package's
// TestGeneratedAssemblyIsCurrent runs it and fails when its files are
// stale.
//
//	go run ./plugins/native/internal/asmgenq4pre -out plugins/native/q4pre_rope_amd64.s -stubs plugins/native/q4pre_rope_stubs_amd64.go -pkg native
//
// Each output is one fused multiply-add of a rounded product, as the Go
// code computes it: x1·c − x2·s as fma(x1, c, −(x2·s)) and x1·s + x2·c as
// fma(x1, s, x2·c), the inner products rounded to float32 first, so every
// lane has the bits of the scalar steps.
package main

import (
	"flag"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"

	"github.com/switchyard-hal/switchyard/plugins/native/internal/avokit"
)

func main() {
	flag.Parse()
	half()
	pairs()
	Generate()
}

// half generates q4preRopeHalfAVX512: the pairs (x1[i], x2[i]) for i < n
// (n a multiple of 16), rotated in place by (c[i], s[i]).
func half() {
	TEXT("q4preRopeHalfAVX512", NOSPLIT, "func(n int, x1, x2, c, s *float32)")
	Doc("q4preRopeHalfAVX512 rotates the pairs (x1[i], x2[i]), i < n (a multiple of 16), by (c[i], s[i]) in place: x1·c − x2·s and x1·s + x2·c, each one fused multiply-add of a rounded product (see the package asmgenq4pre).")
	Pragma("noescape")
	n := Load(Param("n"), GP64())
	x1 := Load(Param("x1"), GP64())
	x2 := Load(Param("x2"), GP64())
	c := Load(Param("c"), GP64())
	s := Load(Param("s"), GP64())
	TESTQ(n, n)
	JZ(LabelRef("q4preRopeHalf_done"))
	Label("q4preRopeHalf_loop")
	a, b, cv, sv, t, u := ZMM(), ZMM(), ZMM(), ZMM(), ZMM(), ZMM()
	VMOVUPS(Mem{Base: x1}, a)
	VMOVUPS(Mem{Base: x2}, b)
	VMOVUPS(Mem{Base: c}, cv)
	VMOVUPS(Mem{Base: s}, sv)
	VMULPS(sv, b, t)      // x2·s, rounded
	VMULPS(cv, b, u)      // x2·c, rounded
	VFMSUB231PS(cv, a, t) // x1·c − x2·s
	VFMADD231PS(sv, a, u) // x1·s + x2·c
	VMOVUPS(t, Mem{Base: x1})
	VMOVUPS(u, Mem{Base: x2})
	for _, r := range []Register{x1, x2, c, s} {
		ADDQ(U8(64), r)
	}
	SUBQ(U8(16), n)
	JNZ(LabelRef("q4preRopeHalf_loop"))
	Label("q4preRopeHalf_done")
	VZEROUPPER()
	RET()
}

// pairs generates q4preRopePairsAVX512: the interleaved pairs (x[2i],
// x[2i+1]) for i < n (n a multiple of 8), rotated in place by (c[i],
// s[i]). Per eight pairs: e = the even elements doubled, o = the odd
// ones, q = (c0, s0, c1, s1, ...), r = (s0, c0, s1, c1, ...); p = o·r
// rounded, and one VFMADDSUB231PS gives e·q − p in the even lanes (x1·c
// − x2·s) and e·q + p in the odd ones (x1·s + x2·c).
func pairs() {
	TEXT("q4preRopePairsAVX512", NOSPLIT, "func(n int, x, c, s *float32)")
	Doc("q4preRopePairsAVX512 rotates the interleaved pairs (x[2i], x[2i+1]), i < n (a multiple of 8), by (c[i], s[i]) in place, as q4preRopeHalfAVX512 does (see the package asmgenq4pre).")
	Pragma("noescape")
	// VPERMT2PS indices: lane 2i takes the first table's element i, lane
	// 2i+1 the second's (16 + i)
	idx := avokit.Bytes("q4pre_ropeidx", 64, func(i int) byte {
		if i%4 != 0 {
			return 0
		}
		l := i / 4
		if l%2 == 0 {
			return byte(l / 2)
		}
		return byte(16 + l/2)
	})
	n := Load(Param("n"), GP64())
	x := Load(Param("x"), GP64())
	c := Load(Param("c"), GP64())
	s := Load(Param("s"), GP64())
	ix := ZMM()
	VMOVDQU32(idx, ix)
	TESTQ(n, n)
	JZ(LabelRef("q4preRopePairs_done"))
	Label("q4preRopePairs_loop")
	v, cv, sv, q, r, e, o := ZMM(), ZMM(), ZMM(), ZMM(), ZMM(), ZMM(), ZMM()
	VMOVUPS(Mem{Base: x}, v)
	VMOVUPS(Mem{Base: c}, cv.AsY())
	VMOVUPS(Mem{Base: s}, sv.AsY())
	VMOVAPS(ix, q)
	VPERMI2PS(sv, cv, q) // (c0, s0, c1, s1, ...)
	VMOVAPS(ix, r)
	VPERMI2PS(cv, sv, r) // (s0, c0, s1, c1, ...)
	VMOVSLDUP(v, e)
	VMOVSHDUP(v, o)
	VMULPS(r, o, o)         // (x2·s, x2·c) rounded
	VFMADDSUB231PS(q, e, o) // even: x1·c − x2·s; odd: x1·s + x2·c
	VMOVUPS(o, Mem{Base: x})
	ADDQ(U8(64), x)
	ADDQ(U8(32), c)
	ADDQ(U8(32), s)
	SUBQ(U8(8), n)
	JNZ(LabelRef("q4preRopePairs_loop"))
	Label("q4preRopePairs_done")
	VZEROUPPER()
	RET()
}
