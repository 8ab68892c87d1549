// Command asmgenbq generates the amd64 assembly of the native backend's
// block-quantized matrix product (BlockQuantMatMul, see the package
// native's blockquant.go) with avo (github.com/mmcloughlin/avo). It is a
// build-time tool apart from internal/asmgen, writing its own pair of
// files; the package's TestBlockQuantAssemblyIsCurrent runs it and fails
// when they are stale.
//
//	go run ./plugins/native/internal/asmgenbq -out plugins/native/blockquant_amd64.s -stubs plugins/native/blockquant_stubs_amd64.go -pkg native
//
// Both kernels compute one output of the product, the dot product of a
// float32 row x with one weight row held quantized, dequantising on the
// fly (no integer arithmetic on x: the result is a float32 dot product
// of x with scale·q):
//
//	Σ_{b<nb} s[b] · Σ_{i<32·g} x[32·g·b+i] · q[32·g·b+i]
//
// nb blocks of block_size = 32·g elements, one float32 scale each; g ≥ 1.
// bq8DotAVX2 reads int8 q; bq4DotAVX2 reads q packed two to a byte,
// stored q+8, element i in byte i/2 (the low nibble for even i), 16·g
// bytes per block. Each block's products are summed in four 8-lane
// float32 accumulators (32 consecutive elements a step, FMA), the four
// added, multiplied by the block's scale and added lane-wise (FMA) into
// a running 8-lane total, which is reduced once at the end.
package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	bqDot(8)
	bqDot(4)
	Generate()
}

// bqDot emits bq8DotAVX2 or bq4DotAVX2.
func bqDot(bits int) {
	name := "bq8DotAVX2"
	sig := "func(nb, groups int, x *float32, q *int8, s *float32) float32"
	if bits == 4 {
		name = "bq4DotAVX2"
		sig = "func(nb, groups int, x *float32, q *uint8, s *float32) float32"
	}
	TEXT(name, NOSPLIT, sig)
	Doc(name + " returns Σ_b s[b]·Σ_i x[i]·q[i] over nb blocks of 32·g elements (see the package asmgenbq).")
	Pragma("noescape")
	nb := Load(Param("nb"), GP64())
	g := Load(Param("groups"), GP64())
	x := Load(Param("x"), GP64())
	q := Load(Param("q"), GP64())
	s := Load(Param("s"), GP64())
	i := GP64()
	tot := YMM()
	VXORPS(tot, tot, tot)
	acc := []VecVirtual{YMM(), YMM(), YMM(), YMM()}
	t := []VecVirtual{YMM(), YMM(), YMM(), YMM()}
	var mask, eight VecVirtual
	if bits == 4 {
		mask, eight = XMM(), XMM()
		c := GP32()
		MOVL(U32(0x0F0F0F0F), c)
		MOVD(c, mask)
		VPBROADCASTD(mask, mask)
		MOVL(U32(0x08080808), c)
		MOVD(c, eight)
		VPBROADCASTD(eight, eight)
	}
	p := name + "_"
	Label(p + "block")
	TESTQ(nb, nb)
	JZ(LabelRef(p + "done"))
	for _, a := range acc {
		VXORPS(a, a, a)
	}
	MOVQ(g, i)
	Label(p + "group")
	if bits == 8 {
		for k := range t {
			VPMOVSXBD(Mem{Base: q, Disp: 8 * k}, t[k])
		}
		ADDQ(U8(32), q)
	} else {
		b, h, lo, hi := XMM(), XMM(), XMM(), XMM()
		VMOVDQU(Mem{Base: q}, b)
		VPSRLW(U8(4), b, h)
		VPAND(mask, b, b)    // even elements
		VPAND(mask, h, h)    // odd elements
		VPUNPCKLBW(h, b, lo) // elements 0..15 in order
		VPUNPCKHBW(h, b, hi) // elements 16..31
		VPSUBB(eight, lo, lo)
		VPSUBB(eight, hi, hi)
		VPMOVSXBD(lo, t[0])
		VPSRLDQ(U8(8), lo, lo)
		VPMOVSXBD(lo, t[1])
		VPMOVSXBD(hi, t[2])
		VPSRLDQ(U8(8), hi, hi)
		VPMOVSXBD(hi, t[3])
		ADDQ(U8(16), q)
	}
	for k := range t {
		VCVTDQ2PS(t[k], t[k])
		VFMADD231PS(Mem{Base: x, Disp: 32 * k}, t[k], acc[k])
	}
	ADDQ(U32(128), x)
	DECQ(i)
	JNZ(LabelRef(p + "group"))
	VADDPS(acc[1], acc[0], acc[0])
	VADDPS(acc[3], acc[2], acc[2])
	VADDPS(acc[2], acc[0], acc[0])
	sc := YMM()
	VBROADCASTSS(Mem{Base: s}, sc)
	VFMADD231PS(acc[0], sc, tot)
	ADDQ(U8(4), s)
	DECQ(nb)
	JMP(LabelRef(p + "block"))
	Label(p + "done")
	r := XMM()
	VEXTRACTF128(U8(1), tot, r)
	VADDPS(r, tot.AsX(), r)
	VHADDPS(r, r, r)
	VHADDPS(r, r, r)
	VZEROUPPER()
	Store(r, ReturnIndex(0))
	RET()
}
