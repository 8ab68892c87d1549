package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
	"github.com/switchyard-hal/switchyard/plugins/native/internal/avokit"
)

// AVX-512 vectors of 16 lanes (nt tiles of R×16V side by side).
func depthwiseTile512(R, V int) {
	name := fmt.Sprintf("dw512x%dx%d", R, V)
	TEXT(name, NOSPLIT, "func(nt, taps int, offs *int, w, x *float32, ldx int, y *float32, ldy int, bias float32, doClamp int, lo, hi float32)")
	Doc(fmt.Sprintf("%s computes nt %d×%d tiles of a depthwise convolution (AVX-512; see depthwiseTile in the package asmgen).", name, R, 16*V))
	Pragma("noescape")
	nt := Load(Param("nt"), GP64())
	x := Load(Param("x"), GP64())
	y := Load(Param("y"), GP64())
	ldx := Load(Param("ldx"), GP64())
	SHLQ(U8(2), ldx)
	ldy := Load(Param("ldy"), GP64())
	SHLQ(U8(2), ldy)
	var ldx3 Register
	if R > 2 {
		ldx3 = GP64()
		LEAQ(Mem{Base: ldx, Index: ldx, Scale: 2}, ldx3)
	}
	doClamp := Load(Param("doClamp"), GP64())
	acc := make([]VecVirtual, R*V)
	for i := range acc {
		acc[i] = ZMM()
	}
	taps, offs, w := GP64(), GP64(), GP64()
	p, off, wv := GP64(), GP64(), ZMM()
	Label(name + "_tile")
	TESTQ(nt, nt)
	JEQ(LabelRef(name + "_end"))
	Load(Param("taps"), taps)
	Load(Param("offs"), offs)
	Load(Param("w"), w)
	VBROADCASTSS(avokit.ParamAddr("bias"), acc[0])
	for i := 1; i < len(acc); i++ {
		VMOVAPS(acc[0], acc[i])
	}
	Label(name + "_tap")
	TESTQ(taps, taps)
	JEQ(LabelRef(name + "_done"))
	MOVQ(Mem{Base: offs}, off)
	LEAQ(Mem{Base: x, Index: off, Scale: 4}, p)
	VBROADCASTSS(Mem{Base: w}, wv)
	var p4 Register
	if R > 4 {
		p4 = GP64()
		LEAQ(Mem{Base: p, Index: ldx, Scale: 4}, p4)
	}
	for r := 0; r < R; r++ {
		var m Mem
		var base Register = p
		if r >= 4 {
			base = p4
		}
		switch r % 4 {
		case 0:
			m = Mem{Base: base}
		case 1:
			m = Mem{Base: base, Index: ldx, Scale: 1}
		case 2:
			m = Mem{Base: base, Index: ldx, Scale: 2}
		default:
			m = Mem{Base: base, Index: ldx3, Scale: 1}
		}
		for v := 0; v < V; v++ {
			mv := m
			mv.Disp = 64 * v
			VFMADD231PS(mv, wv, acc[r*V+v])
		}
	}
	ADDQ(U8(8), offs)
	ADDQ(U8(4), w)
	DECQ(taps)
	JMP(LabelRef(name + "_tap"))

	Label(name + "_done")
	TESTQ(doClamp, doClamp)
	JEQ(LabelRef(name + "_store"))
	lo, hi := ZMM(), ZMM()
	VBROADCASTSS(avokit.ParamAddr("lo"), lo)
	VBROADCASTSS(avokit.ParamAddr("hi"), hi)
	for i := range acc {
		VMAXPS(acc[i], lo, acc[i])
		VMINPS(acc[i], hi, acc[i])
	}
	Label(name + "_store")
	MOVQ(y, p)
	for r := 0; r < R; r++ {
		for v := 0; v < V; v++ {
			VMOVUPS(acc[r*V+v], Mem{Base: p, Disp: 64 * v})
		}
		if r < R-1 {
			ADDQ(ldy, p)
		}
	}
	ADDQ(U32(64*V), x)
	ADDQ(U32(64*V), y)
	DECQ(nt)
	JMP(LabelRef(name + "_tile"))
	Label(name + "_end")
	VZEROUPPER()
	RET()
}

// depthwiseMasked512 emits dwMask512x<R>x1: depthwiseMasked's contract
// for an R×16 tile (the masks as for V = 2: 16 int32 per masked tap and
// in smask) with AVX-512 vectors, the masks moved into opmask registers:
// masked-off lanes of a load touch no memory (fault suppression) and keep
// the accumulator, as adding zero does.
func depthwiseMasked512(R int) {
	name := fmt.Sprintf("dwMask512x%dx1", R)
	TEXT(name, NOSPLIT, "func(np int, plain *int, nm int, masked *int, masks *int32, w, x *float32, xoff, ldx int, y *float32, ldy int, bias float32, doClamp int, lo, hi float32, smask *int32)")
	Doc(fmt.Sprintf("%s computes a %d×16 tile of a depthwise convolution from the unpadded input, some taps masked (AVX-512; see depthwiseMasked512 in the package asmgen).", name, R))
	Pragma("noescape")
	w := Load(Param("w"), GP64())
	x := Load(Param("x"), GP64())
	xoff := Load(Param("xoff"), GP64())
	LEAQ(Mem{Base: x, Index: xoff, Scale: 4}, x)
	ldx := Load(Param("ldx"), GP64())
	SHLQ(U8(2), ldx)
	acc := make([]VecVirtual, R)
	for i := range acc {
		acc[i] = ZMM()
	}
	VBROADCASTSS(avokit.ParamAddr("bias"), acc[0])
	for i := 1; i < len(acc); i++ {
		VMOVAPS(acc[0], acc[i])
	}
	p, off, ti, wv, t := GP64(), GP64(), GP64(), ZMM(), ZMM()
	k := K()
	n := Load(Param("np"), GP64())
	list := Load(Param("plain"), GP64())
	Label(name + "_plain")
	TESTQ(n, n)
	JEQ(LabelRef(name + "_masked"))
	MOVQ(Mem{Base: list}, off)
	MOVQ(Mem{Base: list, Disp: 8}, ti)
	LEAQ(Mem{Base: x, Index: off, Scale: 4}, p)
	VBROADCASTSS(Mem{Base: w, Index: ti, Scale: 4}, wv)
	for r := 0; r < R; r++ {
		VFMADD231PS(Mem{Base: p}, wv, acc[r])
		if r < R-1 {
			ADDQ(ldx, p)
		}
	}
	ADDQ(U8(16), list)
	DECQ(n)
	JMP(LabelRef(name + "_plain"))

	Label(name + "_masked")
	Load(Param("nm"), n)
	Load(Param("masked"), list)
	masks := Load(Param("masks"), GP64())
	Label(name + "_mtap")
	TESTQ(n, n)
	JEQ(LabelRef(name + "_done"))
	MOVQ(Mem{Base: list}, off)
	MOVQ(Mem{Base: list, Disp: 8}, ti)
	LEAQ(Mem{Base: x, Index: off, Scale: 4}, p)
	VBROADCASTSS(Mem{Base: w, Index: ti, Scale: 4}, wv)
	VMOVDQU32(Mem{Base: masks}, t)
	VPMOVD2M(t, k)
	for r := 0; r < R; r++ {
		VFMADD231PS(Mem{Base: p}, wv, k, acc[r])
		if r < R-1 {
			ADDQ(ldx, p)
		}
	}
	ADDQ(U8(16), list)
	ADDQ(U8(64), masks)
	DECQ(n)
	JMP(LabelRef(name + "_mtap"))

	Label(name + "_done")
	doClamp := Load(Param("doClamp"), GP64())
	TESTQ(doClamp, doClamp)
	JEQ(LabelRef(name + "_store"))
	lo, hi := ZMM(), ZMM()
	VBROADCASTSS(avokit.ParamAddr("lo"), lo)
	VBROADCASTSS(avokit.ParamAddr("hi"), hi)
	for i := range acc {
		VMAXPS(acc[i], lo, acc[i])
		VMINPS(acc[i], hi, acc[i])
	}
	Label(name + "_store")
	y := Load(Param("y"), GP64())
	ldy := Load(Param("ldy"), GP64())
	SHLQ(U8(2), ldy)
	smask := Load(Param("smask"), GP64())
	TESTQ(smask, smask)
	JEQ(LabelRef(name + "_full"))
	VMOVDQU32(Mem{Base: smask}, t)
	VPMOVD2M(t, k)
	for r := 0; r < R; r++ {
		VMOVUPS(acc[r], k, Mem{Base: y})
		if r < R-1 {
			ADDQ(ldy, y)
		}
	}
	VZEROUPPER()
	RET()
	Label(name + "_full")
	for r := 0; r < R; r++ {
		VMOVUPS(acc[r], Mem{Base: y})
		if r < R-1 {
			ADDQ(ldy, y)
		}
	}
	VZEROUPPER()
	RET()
}

// copyRows32 emits copyRows32AVX512: k rows of 32 floats, ldb floats
// apart in src, to dst one after another (packing a panel of B of 32
// columns), two 512-bit loads and stores a row instead of a memmove call.
func copyRows32() {
	TEXT("copyRows32AVX512", NOSPLIT, "func(k int, src *float32, ldb int, dst *float32)")
	Doc("copyRows32AVX512 copies k rows of 32 floats, ldb floats apart in src, to dst one after another.")
	Pragma("noescape")
	k := Load(Param("k"), GP64())
	src := Load(Param("src"), GP64())
	ldb := Load(Param("ldb"), GP64())
	SHLQ(U8(2), ldb)
	dst := Load(Param("dst"), GP64())
	a, b, c, d := ZMM(), ZMM(), ZMM(), ZMM()
	Label("copyRows32_two")
	CMPQ(k, U8(2))
	JLT(LabelRef("copyRows32_one"))
	VMOVUPS(Mem{Base: src}, a)
	VMOVUPS(Mem{Base: src, Disp: 64}, b)
	VMOVUPS(Mem{Base: src, Index: ldb, Scale: 1}, c)
	VMOVUPS(Mem{Base: src, Index: ldb, Scale: 1, Disp: 64}, d)
	VMOVUPS(a, Mem{Base: dst})
	VMOVUPS(b, Mem{Base: dst, Disp: 64})
	VMOVUPS(c, Mem{Base: dst, Disp: 128})
	VMOVUPS(d, Mem{Base: dst, Disp: 192})
	LEAQ(Mem{Base: src, Index: ldb, Scale: 2}, src)
	ADDQ(U32(256), dst)
	SUBQ(U8(2), k)
	JMP(LabelRef("copyRows32_two"))
	Label("copyRows32_one")
	TESTQ(k, k)
	JEQ(LabelRef("copyRows32_done"))
	VMOVUPS(Mem{Base: src}, a)
	VMOVUPS(Mem{Base: src, Disp: 64}, b)
	VMOVUPS(a, Mem{Base: dst})
	VMOVUPS(b, Mem{Base: dst, Disp: 64})
	Label("copyRows32_done")
	VZEROUPPER()
	RET()
}
