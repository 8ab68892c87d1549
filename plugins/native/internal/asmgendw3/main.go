// Command asmgendw3 generates the amd64 assembly of the native backend's
// 3×3 depthwise row kernels (dw3.go) with avo
// (github.com/mmcloughlin/avo). It writes its own pair of files; the
// package's TestGeneratedAssemblyIsCurrent runs it and fails when they are
// stale.
//
//	go run ./plugins/native/internal/asmgendw3 -out plugins/native/dw3_amd64.s -stubs plugins/native/dw3_stubs_amd64.go -pkg native
//
// A kernel computes rows output rows of one channel's 3×3 convolution
// (stride s, dilation d: 1 at stride 2; 1, 2 or 4 at stride 1) with d
// columns of zero padding on the left (or none at stride 2), reading the unpadded input
// in place: output row i reads the three input rows x0, x1 and x2 plus
// i·step floats (a row that lies in the padding is a row of zeros the
// caller passes, with step 0 through a single-row call), and writes ow
// floats at y + i·ldy. Output column j reads input columns s·j-d, s·j and
// s·j+d, those at or past iw read as zero: every load of the
// input is masked to the columns below iw, every store to those below ow,
// so nothing outside the rows is touched and no column is a special case.
//
// Stride 1: a row's vectors of 16 columns are loaded once each; the left
// and right taps are the vector shifted by d lanes with its neighbour
// (VALIGND), the first vector's left neighbour zero. Stride 2: the 32
// input columns of 16 outputs are split into their even and odd columns
// (VPERMI2PS/VPERMT2PS); the left tap is the odd vector shifted by one
// lane with the previous odd vector. Stride 2 with no left padding (as
// TensorFlow's SAME pads an even width): the taps are the even, the odd
// and the even columns from two on (a second split of the row, from
// column 2).
//
//	y[j] = clamp(bias + Σ_{r,k} w[3r+k] · x_r[s·j + (k-1)·d])
//
// flags&4 clamps to [lo, hi] (NaN kept).
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"

	"github.com/switchyard-hal/switchyard/plugins/native/internal/avokit"
)

const signature = "func(x0, x1, x2 *float32, step, rows int, y *float32, ldy, iw, ow int, w *float32, bias float32, flags int, lo, hi float32)"

func main() {
	ConstraintExpr("amd64")
	idx := func(odd int) Mem {
		return avokit.Bytes(fmt.Sprintf("dw3perm%d", odd), 64, func(i int) byte {
			if i%4 != 0 {
				return 0
			}
			return byte(2*(i/4) + odd)
		})
	}
	even, odd := idx(0), idx(1)
	kernel("dw3s1AVX512", 1, 1, 1, even, odd)
	kernel("dw3s1d2AVX512", 1, 2, 2, even, odd)
	kernel("dw3s1d4AVX512", 1, 4, 4, even, odd)
	kernel("dw3s2AVX512", 2, 1, 1, even, odd)
	kernel("dw3s2p0AVX512", 2, 1, 0, even, odd)
	Generate()
}

func kernel(name string, s, d, pl int, even, odd Mem) {
	TEXT(name, NOSPLIT, signature)
	Doc(fmt.Sprintf("%s computes rows output rows of a 3×3 depthwise convolution at stride %d, dilation %d, left padding %d (see the package asmgendw3).", name, s, d, pl))
	Pragma("noescape")
	xs := []GPVirtual{GP64(), GP64(), GP64()}
	for r, n := range []string{"x0", "x1", "x2"} {
		Load(Param(n), xs[r])
	}
	step := Load(Param("step"), GP64())
	SHLQ(U8(2), step)
	rows := Load(Param("rows"), GP64())
	y := Load(Param("y"), GP64())
	ldy := Load(Param("ldy"), GP64())
	SHLQ(U8(2), ldy)
	iw := GP64()
	Load(Param("iw"), iw)
	ow := GP64()
	Load(Param("ow"), ow)
	wp := Load(Param("w"), GP64())
	W := []VecPhysical{Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24}
	for i, z := range W {
		VBROADCASTSS(Mem{Base: wp, Disp: 4 * i}, z)
	}
	bias, lo, hi := Z25, Z26, Z27
	VBROADCASTSS(avokit.ParamAddr("bias"), bias)
	VBROADCASTSS(avokit.ParamAddr("lo"), lo)
	VBROADCASTSS(avokit.ParamAddr("hi"), hi)
	idxE, idxO := Z28, Z29
	if s == 2 {
		VMOVUPS(even, idxE)
		VMOVUPS(odd, idxO)
	}
	// stride 1: prev, cur, next per row; stride 2: the previous odd
	// vector and the odd one per row
	prev := []VecPhysical{Z0, Z1, Z2}
	cur := []VecPhysical{Z3, Z4, Z5}
	next := []VecPhysical{Z6, Z7, Z8}
	left, right, tmp := Z9, Z10, Z14
	acc := []VecPhysical{Z11, Z12, Z13}
	oc := GP64()
	t, m := GP64(), GP32()

	Label(name + "_row")
	TESTQ(rows, rows)
	JEQ(LabelRef(name + "_done"))
	XORQ(oc, oc)
	for r := 0; r < 3; r++ {
		VXORPS(prev[r], prev[r], prev[r])
	}
	at := func(r int, disp int) Mem { return Mem{Base: xs[r], Index: oc, Scale: uint8(4 * s), Disp: disp} }
	if s == 1 {
		avokit.Mask16(name+"_m0", iw, oc, t, m, K1)
		for r := 0; r < 3; r++ {
			VMOVUPS_Z(at(r, 0), K1, cur[r])
		}
	}
	Label(name + "_col")
	if s == 1 {
		// the next vector's columns: oc+16 on
		ADDQ(U8(16), oc)
		avokit.Mask16(name+"_mn", iw, oc, t, m, K1)
		SUBQ(U8(16), oc)
		for r := 0; r < 3; r++ {
			VMOVUPS_Z(at(r, 64), K1, next[r])
		}
		for r := 0; r < 3; r++ {
			VALIGND(U8(16-d), prev[r], cur[r], left)
			VALIGND(U8(d), cur[r], next[r], right)
			if r == 0 {
				VMOVAPS(bias, acc[0])
				VFMADD231PS(left, W[0], acc[0])
			} else {
				VMULPS(left, W[3*r], acc[r])
			}
			VFMADD231PS(cur[r], W[3*r+1], acc[r])
			VFMADD231PS(right, W[3*r+2], acc[r])
		}
		for r := 0; r < 3; r++ {
			VMOVAPS(cur[r], prev[r])
			VMOVAPS(next[r], cur[r])
		}
	} else {
		// input columns 2·oc to 2·oc+32: odd ones into cur, even ones
		// into next, as the (low, high) halves go; with no left padding
		// also the even ones from 2·oc+2 (the right tap) into right
		t2 := GP64()
		MOVQ(oc, t2)
		SHLQ(U8(1), t2)
		avokit.Mask16(name+"_ma", iw, t2, t, m, K1)
		ADDQ(U8(16), t2)
		avokit.Mask16(name+"_mb", iw, t2, t, m, K2)
		if pl == 0 {
			SUBQ(U8(14), t2)
			avokit.Mask16(name+"_mc", iw, t2, t, m, K4)
			ADDQ(U8(16), t2)
			avokit.Mask16(name+"_md", iw, t2, t, m, K5)
		}
		for r := 0; r < 3; r++ {
			VMOVUPS_Z(at(r, 0), K1, cur[r])
			VMOVUPS_Z(at(r, 64), K2, tmp)
			VMOVAPS(idxE, next[r])
			VPERMI2PS(tmp, cur[r], next[r])
			VPERMT2PS(tmp, idxO, cur[r])
			// taps: (left, centre, right)
			taps := [3]VecPhysical{left, next[r], cur[r]}
			if pl == 0 {
				VMOVUPS_Z(at(r, 8), K4, left)
				VMOVUPS_Z(at(r, 72), K5, tmp)
				VMOVAPS(idxE, right)
				VPERMI2PS(tmp, left, right)
				taps = [3]VecPhysical{next[r], cur[r], right}
			} else {
				VALIGND(U8(15), prev[r], cur[r], left)
			}
			if r == 0 {
				VMOVAPS(bias, acc[0])
				VFMADD231PS(taps[0], W[0], acc[0])
			} else {
				VMULPS(taps[0], W[3*r], acc[r])
			}
			VFMADD231PS(taps[1], W[3*r+1], acc[r])
			VFMADD231PS(taps[2], W[3*r+2], acc[r])
			if pl == 1 {
				VMOVAPS(cur[r], prev[r])
			}
		}
	}
	VADDPS(acc[1], acc[0], acc[0])
	VADDPS(acc[2], acc[0], acc[0])
	TESTQ(U32(4), avokit.ParamAddr("flags"))
	JEQ(LabelRef(name + "_store"))
	VMAXPS(acc[0], lo, acc[0])
	VMINPS(acc[0], hi, acc[0])
	Label(name + "_store")
	avokit.Mask16(name+"_ms", ow, oc, t, m, K3)
	VMOVUPS(acc[0], K3, Mem{Base: y, Index: oc, Scale: 4})
	ADDQ(U8(16), oc)
	CMPQ(oc, ow)
	JLT(LabelRef(name + "_col"))
	for r := 0; r < 3; r++ {
		ADDQ(step, xs[r])
	}
	ADDQ(ldy, y)
	DECQ(rows)
	JMP(LabelRef(name + "_row"))

	Label(name + "_done")
	VZEROUPPER()
	RET()
}
