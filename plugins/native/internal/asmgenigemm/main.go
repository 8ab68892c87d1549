// Command asmgenigemm generates the amd64 assembly of the native backend's
// indirect GEMM micro-kernels (igemm.go) with avo
// (github.com/mmcloughlin/avo). It writes its own pair of files; the
// package's TestGeneratedAssemblyIsCurrent runs it and fails when they are
// stale.
//
//	go run ./plugins/native/internal/asmgenigemm -out plugins/native/igemm_amd64.s -stubs plugins/native/igemm_stubs_amd64.go -pkg native
//
// An indirect kernel of h rows (1 ≤ h ≤ 14) computes one h×32 tile of C
// from A packed as packA packs it for mr = 14 (the k-th column of the tile
// as 14 consecutive floats, 56 bytes from the next) and kc rows of B,
// each 32 floats at b + offs[k] bytes (int64 offsets: B's rows are
// anywhere, e.g. a convolution's taps over its padded input planes, read
// in place with no im2col):
//
//	C[i][j] = init[i][j] + Σ_k A[k·14+i] · B[b + offs[k] + 4j]
//
// init by flags&3: 0 zero, 1 the tile of C (accumulate), 3 a row bias
// (h floats at bias); flags&4 clamps to [lo, hi] (NaN kept). C's rows
// are ldc floats apart; only its columns j with bit j of mask set are
// read or written (a partial panel goes straight into C).
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
	"github.com/switchyard-hal/switchyard/plugins/native/internal/avokit"
)

const signature = "func(kc int, a *float32, b *float32, offs *int64, c *float32, ldc int, bias *float32, flags int, mask uint32, lo, hi float32)"

func main() {
	ConstraintExpr("amd64")
	zs := []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15,
		Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27}
	for h := 1; h <= 14; h++ {
		igemm(fmt.Sprintf("igemmAVX512x%dx32", h), h, zs[:2*h])
	}
	Generate()
}

// igemm emits the kernel of mr rows; acc holds the tile (two vectors a
// row), Z28-Z29 B's row, Z30-Z31 A's broadcasts.
func igemm(name string, mr int, acc []VecPhysical) {
	const step = 14 // packA's mr
	at := func(i, v int) VecPhysical { return acc[i*2+v] }
	bs := []VecPhysical{Z28, Z29}
	ts := []VecPhysical{Z30, Z31}
	TEXT(name, NOSPLIT, signature)
	Doc(fmt.Sprintf("%s computes one %d×32 tile of C from packed A and B's rows at offsets (see the package asmgenigemm).", name, mr))
	Pragma("noescape")
	kc := Load(Param("kc"), GP64())
	a := Load(Param("a"), GP64())
	b := Load(Param("b"), GP64())
	offs := Load(Param("offs"), GP64())
	c := Load(Param("c"), GP64())
	ldc := Load(Param("ldc"), GP64())
	SHLQ(U8(2), ldc)
	flags := Load(Param("flags"), GP64())
	mode := GP64()
	MOVQ(flags, mode)
	ANDQ(U8(3), mode)
	cp := GP64()
	off := GP64()
	m := GP32()
	Load(Param("mask"), m)
	KMOVW(m, K1)
	SHRL(U8(16), m)
	KMOVW(m, K2)
	ks := []Op{K1, K2}

	CMPQ(mode, U8(1))
	JEQ(LabelRef(name + "_loadc"))
	CMPQ(mode, U8(3))
	JEQ(LabelRef(name + "_rowbias"))
	for i := range acc {
		VXORPS(acc[i], acc[i], acc[i])
	}
	JMP(LabelRef(name + "_loop"))

	Label(name + "_loadc")
	MOVQ(c, cp)
	for i := 0; i < mr; i++ {
		for v := 0; v < 2; v++ {
			VMOVUPS_Z(Mem{Base: cp, Disp: 64 * v}, ks[v], at(i, v))
		}
		if i < mr-1 {
			ADDQ(ldc, cp)
		}
	}
	JMP(LabelRef(name + "_loop"))

	Label(name + "_rowbias")
	bias := Load(Param("bias"), GP64())
	for i := 0; i < mr; i++ {
		VBROADCASTSS(Mem{Base: bias, Disp: 4 * i}, at(i, 0))
		VMOVAPS(at(i, 0), at(i, 1))
	}

	Label(name + "_loop")
	TESTQ(kc, kc)
	JEQ(LabelRef(name + "_done"))
	Label(name + "_k")
	MOVQ(Mem{Base: offs}, off)
	VMOVUPS(Mem{Base: b, Index: off, Scale: 1}, bs[0])
	VMOVUPS(Mem{Base: b, Index: off, Scale: 1, Disp: 64}, bs[1])
	for i := 0; i < mr; i++ {
		t := ts[i%2]
		VBROADCASTSS(Mem{Base: a, Disp: 4 * i}, t)
		VFMADD231PS(bs[0], t, at(i, 0))
		VFMADD231PS(bs[1], t, at(i, 1))
	}
	ADDQ(U32(4*step), a)
	ADDQ(U8(8), offs)
	DECQ(kc)
	JNE(LabelRef(name + "_k"))

	Label(name + "_done")
	TESTQ(U32(4), flags)
	JEQ(LabelRef(name + "_store"))
	VBROADCASTSS(avokit.ParamAddr("lo"), ts[0])
	VBROADCASTSS(avokit.ParamAddr("hi"), ts[1])
	for i := range acc {
		VMAXPS(acc[i], ts[0], acc[i])
		VMINPS(acc[i], ts[1], acc[i])
	}

	Label(name + "_store")
	for i := 0; i < mr; i++ {
		for v := 0; v < 2; v++ {
			VMOVUPS(at(i, v), ks[v], Mem{Base: c, Disp: 64 * v})
		}
		if i < mr-1 {
			ADDQ(ldc, c)
		}
	}
	VZEROUPPER()
	RET()
}
