package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
	"github.com/switchyard-hal/switchyard/plugins/native/internal/avokit"
)

// depthwisePacked emits dwc<L>x<N>s<S>: the depthwise convolution over a
// block of L channels packed channels-last (one vector of L lanes per
// position, zero padding included), N output positions of a row at a time
// with column stride S, every tap one FMA per position. Small planes keep
// every lane busy this way (a plane of 10 columns fills no 8-column tile
// of the planar kernels twice), and no edge of the plane is special.
//
//	for r < rows, i < nt, j < N:
//	  y[r·ldy + (i·N+j)·L + l] = clamp(bias[l] + Σ_t w[t·L+l] ·
//	      x[r·ldx + (i·N+j)·S·L + offs[t] + l])
//
// (ldx, ldy and offs in floats; L = 16 with AVX-512, 8 with AVX2).
func depthwisePacked(L, N, S int) {
	name := fmt.Sprintf("dwc%dx%ds%d", L, N, S)
	TEXT(name, NOSPLIT, "func(rows, nt, taps int, offs *int, w, bias, x *float32, ldx int, y *float32, ldy int, doClamp int, lo, hi float32)")
	Doc(fmt.Sprintf("%s computes rows × nt groups of %d packed depthwise outputs of %d channels at column stride %d (see depthwisePacked in the package asmgen).", name, N, L, S))
	Pragma("noescape")
	vec := func() VecVirtual {
		if L == 16 {
			return ZMM()
		}
		return YMM()
	}
	rows := Load(Param("rows"), GP64())
	x := Load(Param("x"), GP64())
	y := Load(Param("y"), GP64())
	ldx := Load(Param("ldx"), GP64())
	SHLQ(U8(2), ldx)
	ldy := Load(Param("ldy"), GP64())
	SHLQ(U8(2), ldy)
	acc := make([]VecVirtual, N)
	for i := range acc {
		acc[i] = vec()
	}
	xr, yr, n := GP64(), GP64(), GP64()
	taps, offs, w, p, off := GP64(), GP64(), GP64(), GP64(), GP64()
	wv := vec()
	bias := GP64()
	Load(Param("bias"), bias)
	Label(name + "_row")
	TESTQ(rows, rows)
	JEQ(LabelRef(name + "_end"))
	MOVQ(x, xr)
	MOVQ(y, yr)
	Load(Param("nt"), n)
	Label(name + "_tile")
	TESTQ(n, n)
	JEQ(LabelRef(name + "_rowdone"))
	for i := range acc {
		VMOVUPS(Mem{Base: bias}, acc[i])
	}
	Load(Param("taps"), taps)
	Load(Param("offs"), offs)
	Load(Param("w"), w)
	Label(name + "_tap")
	MOVQ(Mem{Base: offs}, off)
	LEAQ(Mem{Base: xr, Index: off, Scale: 4}, p)
	VMOVUPS(Mem{Base: w}, wv)
	for j := range acc {
		VFMADD231PS(Mem{Base: p, Disp: 4 * j * S * L}, wv, acc[j])
	}
	ADDQ(U8(8), offs)
	ADDQ(U8(4*L), w)
	DECQ(taps)
	JNE(LabelRef(name + "_tap"))

	doClamp := GP64()
	Load(Param("doClamp"), doClamp)
	TESTQ(doClamp, doClamp)
	JEQ(LabelRef(name + "_store"))
	lo, hi := vec(), vec()
	VBROADCASTSS(avokit.ParamAddr("lo"), lo)
	VBROADCASTSS(avokit.ParamAddr("hi"), hi)
	for i := range acc {
		VMAXPS(acc[i], lo, acc[i])
		VMINPS(acc[i], hi, acc[i])
	}
	Label(name + "_store")
	for j := range acc {
		VMOVUPS(acc[j], Mem{Base: yr, Disp: 4 * j * L})
	}
	ADDQ(U32(4*N*S*L), xr)
	ADDQ(U32(4*N*L), yr)
	DECQ(n)
	JMP(LabelRef(name + "_tile"))
	Label(name + "_rowdone")
	ADDQ(ldx, x)
	ADDQ(ldy, y)
	DECQ(rows)
	JMP(LabelRef(name + "_row"))
	Label(name + "_end")
	VZEROUPPER()
	RET()
}
