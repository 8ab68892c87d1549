package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"

	"github.com/switchyard-hal/switchyard/plugins/native/internal/avokit"
)

// # Depthwise at stride 2 (dws2)
//
// handDWSplit2AVX512 splits planes planes of ih×iw floats (both even)
// into their four parity planes of oh×ow = ih/2×iw/2: plane q = 2r+s
// holds the rows ≡ r and columns ≡ s (mod 2), written at dst + q·xs
// floats, one plane's four at 4·xs floats from the previous one's. Each
// input row of 32 columns is loaded once (masked, masks: three 16-bit
// masks per 32 columns, the two loads' and the store's) and split with
// VPERMI2PS/VPERMT2PS.
//
// handDWS2k{k}t{pt}l{pl}AVX512 then computes a k×k depthwise convolution
// at stride 2 with pt rows and pl columns of padding at the top and the
// left (oh = ih/2, ow = iw/2) over the parity planes as the flat kernels
// do at stride 1: tap (dy, dx) reads parity plane 2·((dy−pt) mod 2) +
// (dx−pl) mod 2 at the output's flat position plus ⌊(dy−pt)/2⌋·ow +
// ⌊(dx−pl)/2⌋, so every tap is again one multiply-add with the input
// as its memory operand, at offsets of −1, 0 or 1 rows and columns: the
// caller leaves ow+1 zeros before, between and after the parity planes
// (and a vector's slack after the last), masks are handDWMasksOf(oh, ow,
// 3)'s, the column masks of −1 and +1 and the store's. The taps go parity
// plane by parity plane, the offset register moving xs floats between
// them. Arguments as the flat kernels', x the first parity plane, the
// planes 4·xs floats apart.

const splitSig = "func(x *float32, planes, ih, iw int, dst *float32, xs int, masks *uint16, nc int)"

func dwSplit2(even, odd Mem) {
	name := "handDWSplit2AVX512"
	TEXT(name, NOSPLIT, splitSig)
	Doc(name + " splits planes planes of ih×iw floats into their four parity planes of ih/2×iw/2, xs floats apart (see the package asmgenhand).")
	Pragma("noescape")
	x := Load(Param("x"), GP64())
	planes := Load(Param("planes"), GP64())
	dst := Load(Param("dst"), GP64())
	xs4 := Load(Param("xs"), GP64())
	SHLQ(U8(2), xs4)
	iw4 := Load(Param("iw"), GP64())
	SHLQ(U8(2), iw4)
	idxE, idxO := Z30, Z31
	VMOVUPS(even, idxE)
	VMOVUPS(odd, idxO)
	row, d0, d2, col, oc, mp, c, t := GP64(), GP64(), GP64(), GP64(), GP64(), GP64(), GP64(), GP64()

	Label(name + "_plane")
	TESTQ(planes, planes)
	JEQ(LabelRef(name + "_done"))
	MOVQ(dst, d0)
	MOVQ(avokit.ParamAddr("ih"), row)
	SHRQ(U8(1), row)
	Label(name + "_row")
	LEAQ(Mem{Base: d0, Index: xs4, Scale: 2}, d2)
	XORQ(col, col)
	XORQ(oc, oc)
	MOVQ(avokit.ParamAddr("masks"), mp)
	MOVQ(avokit.ParamAddr("nc"), c)
	Label(name + "_col")
	KMOVW(Mem{Base: mp}, K1)
	KMOVW(Mem{Base: mp, Disp: 2}, K2)
	KMOVW(Mem{Base: mp, Disp: 4}, K3)
	// rows 2y' (parity planes 0, 1 at d0) and 2y'+1 (2, 3 at d2)
	for r, d := range []GPVirtual{d0, d2} {
		var src Mem
		if r == 0 {
			src = Mem{Base: x, Index: col, Scale: 1}
		} else {
			LEAQ(Mem{Base: x, Index: iw4, Scale: 1}, t)
			src = Mem{Base: t, Index: col, Scale: 1}
		}
		a, b, e := Z0, Z1, Z2
		VMOVUPS_Z(src, K1, a)
		src.Disp = 64
		VMOVUPS_Z(src, K2, b)
		VMOVAPS(idxE, e)
		VPERMI2PS(b, a, e)
		VPERMT2PS(b, idxO, a)
		VMOVUPS(e, K3, Mem{Base: d, Index: oc, Scale: 1})
		ADDQ(xs4, d)
		VMOVUPS(a, K3, Mem{Base: d, Index: oc, Scale: 1})
		SUBQ(xs4, d)
	}
	ADDQ(U8(128), col)
	ADDQ(U8(64), oc)
	ADDQ(U8(6), mp)
	DECQ(c)
	JNE(LabelRef(name + "_col"))
	// next row pair: two input rows, one parity row of iw/2 floats
	LEAQ(Mem{Base: x, Index: iw4, Scale: 2}, x)
	MOVQ(iw4, t)
	SHRQ(U8(1), t)
	ADDQ(t, d0)
	DECQ(row)
	JNE(LabelRef(name + "_row"))
	LEAQ(Mem{Base: dst, Index: xs4, Scale: 4}, dst)
	DECQ(planes)
	JMP(LabelRef(name + "_plane"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

func floorDiv2(c int) int {
	if c < 0 {
		return -((-c + 1) / 2)
	}
	return c / 2
}

func dwS2(k, pt, pl int) {
	name := fmt.Sprintf("handDWS2k%dt%dl%dAVX512", k, pt, pl)
	taps := k * k
	TEXT(name, NOSPLIT, "func(x *float32, planes, xs, hw, w int, wt, b, y *float32, masks *uint16, nv, flags int, lo, hi float32)")
	Doc(fmt.Sprintf("%s computes planes planes of a %d×%d depthwise convolution at stride 2, padding %d at the top and %d at the left, over their parity planes (see the package asmgenhand).", name, k, k, pt, pl))
	Pragma("noescape")
	x := Load(Param("x"), GP64())
	planes := Load(Param("planes"), GP64())
	wt := Load(Param("wt"), GP64())
	b := Load(Param("b"), GP64())
	y := Load(Param("y"), GP64())
	lo, hi := Z30, Z31
	VBROADCASTSS(avokit.ParamAddr("lo"), lo)
	VBROADCASTSS(avokit.ParamAddr("hi"), hi)
	all := []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15, Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29}
	W := all[:taps]
	bias := all[taps]
	acc := all[taps+1 : taps+1+min(3, 30-taps-1)]
	// the taps by parity plane: row offset a ∈ {−1, 0, 1}, column offset
	// bb ∈ {−1, 0, 1}
	type tap struct{ i, a, bb int }
	var byQ [4][]tap
	for dy := 0; dy < k; dy++ {
		for dx := 0; dx < k; dx++ {
			c, e := dy-pt, dx-pl
			q := 2*(c&1) + e&1
			byQ[q] = append(byQ[q], tap{dy*k + dx, floorDiv2(c), floorDiv2(e)})
		}
	}
	vo, yo, mp, v, t, xs4 := GP64(), GP64(), GP64(), GP64(), GP64(), GP64()
	rows := map[int]GPVirtual{}
	for q := range byQ {
		for _, tp := range byQ[q] {
			if _, ok := rows[tp.a]; !ok {
				rows[tp.a] = GP64()
			}
		}
	}
	Load(Param("xs"), xs4)
	SHLQ(U8(2), xs4)

	Label(name + "_plane")
	TESTQ(planes, planes)
	JEQ(LabelRef(name + "_done"))
	for i, z := range W {
		VBROADCASTSS(Mem{Base: wt, Disp: 4 * i}, z)
	}
	VBROADCASTSS(Mem{Base: b}, bias)
	MOVQ(avokit.ParamAddr("w"), t)
	SHLQ(U8(2), t)
	for a := -1; a <= 1; a++ {
		if r, ok := rows[a]; ok {
			MOVQ(x, r)
			switch a {
			case -1:
				SUBQ(t, r)
			case 1:
				ADDQ(t, r)
			}
		}
	}
	XORQ(vo, vo)
	MOVQ(y, yo)
	MOVQ(avokit.ParamAddr("masks"), mp)
	MOVQ(avokit.ParamAddr("nv"), v)
	Label(name + "_vec")
	KMOVW(Mem{Base: mp}, K1)
	KMOVW(Mem{Base: mp, Disp: 2}, K2)
	VMOVAPS(bias, acc[0])
	for _, a := range acc[1:] {
		VXORPS(a, a, a)
	}
	n := 0
	for q := range byQ {
		if q > 0 {
			ADDQ(xs4, vo)
		}
		for _, tp := range byQ[q] {
			a := acc[n*len(acc)/taps]
			n++
			m := Mem{Base: rows[tp.a], Index: vo, Scale: 1, Disp: 4 * tp.bb}
			switch tp.bb {
			case 0:
				VFMADD231PS(m, W[tp.i], a)
			case -1:
				VFMADD231PS(m, W[tp.i], K1, a)
			default:
				VFMADD231PS(m, W[tp.i], K2, a)
			}
		}
	}
	// back to parity plane 0, one vector on
	LEAQ(Mem{Base: xs4, Index: xs4, Scale: 2}, t)
	SUBQ(t, vo)
	for _, a := range acc[1:] {
		VADDPS(a, acc[0], acc[0])
	}
	TESTQ(U32(4), avokit.ParamAddr("flags"))
	JEQ(LabelRef(name + "_store"))
	VMAXPS(acc[0], lo, acc[0])
	VMINPS(acc[0], hi, acc[0])
	Label(name + "_store")
	KMOVW(Mem{Base: mp, Disp: 4}, K7)
	VMOVUPS(acc[0], K7, Mem{Base: yo})
	ADDQ(U8(64), vo)
	ADDQ(U8(64), yo)
	ADDQ(U8(6), mp)
	DECQ(v)
	JNE(LabelRef(name + "_vec"))
	LEAQ(Mem{Base: x, Index: xs4, Scale: 4}, x)
	MOVQ(avokit.ParamAddr("hw"), t)
	SHLQ(U8(2), t)
	ADDQ(t, y)
	ADDQ(U8(4*taps), wt)
	ADDQ(U8(4), b)
	DECQ(planes)
	JMP(LabelRef(name + "_plane"))

	Label(name + "_done")
	VZEROUPPER()
	RET()
}
