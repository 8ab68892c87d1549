// Command asmgentfl2sp generates the amd64 assembly of the native
// backend's sparse 1×1 convolution kernels (tfl2_sparse1x1.go) with avo
// (github.com/mmcloughlin/avo). It writes its own pair of files; the
// package's TestGeneratedAssemblyIsCurrent runs it and fails when they are
// stale.
//
//	go run ./plugins/native/internal/asmgentfl2sp -out plugins/native/tfl2_sparse1x1_amd64.s -stubs plugins/native/tfl2_sparse1x1_stubs_amd64.go -pkg native
//
// A kernel computes rows output channels of a 1×1 convolution over a block
// of n positions (V vectors of 16 floats, the last one masked to the
// positions below n) from the weights' nonzeros only:
//
//	y[o][p] = clamp(bias[o] + Σ_j w_j · x[off_j + p], lo, hi)
//
// where row o's cnt[o] nonzeros are (off_j, w_j) pairs of int32 (a byte
// offset from x, the weight's float32 bits), consecutive in nz. The sum
// runs in two chains (the even and the odd nonzeros: 2·V accumulators,
// which hides the FMA latency at V = 4), added at the end; the clamp keeps
// NaN (VMAXPS/VMINPS with the sum second).
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
	"github.com/switchyard-hal/switchyard/plugins/native/internal/avokit"
)

const signature = "func(x, y *float32, ldy, n, rows int, cnt, nz *int32, bias *float32, lo, hi float32)"

func main() {
	ConstraintExpr("amd64")
	for v := 1; v <= 4; v++ {
		kernel(fmt.Sprintf("spmm1x1V%dAVX512", v), v)
	}
	Generate()
}

func kernel(name string, V int) {
	TEXT(name, NOSPLIT, signature)
	Doc(fmt.Sprintf("%s computes rows output channels of a sparse 1×1 convolution over %d vector(s) of 16 positions (see the package asmgentfl2sp).", name, V))
	Pragma("noescape")
	x := Load(Param("x"), GP64())
	y := Load(Param("y"), GP64())
	ldy := Load(Param("ldy"), GP64())
	SHLQ(U8(2), ldy)
	n := GP64()
	Load(Param("n"), n)
	rows := Load(Param("rows"), GP64())
	cnt := Load(Param("cnt"), GP64())
	nz := Load(Param("nz"), GP64())
	bias := Load(Param("bias"), GP64())
	lo, hi := Z30, Z31
	VBROADCASTSS(avokit.ParamAddr("lo"), lo)
	VBROADCASTSS(avokit.ParamAddr("hi"), hi)
	// K1: the last vector's positions (n - 16·(V-1) of them, 1 to 16)
	SUBQ(U32(16*(V-1)), n)
	m := GP32()
	MOVL(U32(0xffff), m)
	BZHIL(n.As32(), m, m)
	KMOVW(m, K1)
	accA := []VecPhysical{Z0, Z1, Z2, Z3}[:V]
	accB := []VecPhysical{Z4, Z5, Z6, Z7}[:V]
	w0, w1, t := Z8, Z9, Z10
	c, o0, o1 := GP64(), GP64(), GP64()
	at := func(off GPVirtual, v int) Mem { return Mem{Base: x, Index: off, Scale: 1, Disp: 64 * v} }
	// acc[v] += w · x[off + 16v ...], the last vector through a masked load
	fma := func(off GPVirtual, w VecPhysical, acc []VecPhysical) {
		for v := 0; v < V-1; v++ {
			VFMADD231PS(at(off, v), w, acc[v])
		}
		VMOVUPS_Z(at(off, V-1), K1, t)
		VFMADD231PS(t, w, acc[V-1])
	}

	Label(name + "_row")
	TESTQ(rows, rows)
	JEQ(LabelRef(name + "_done"))
	MOVLQSX(Mem{Base: cnt}, c)
	VBROADCASTSS(Mem{Base: bias}, accA[0])
	for v := 1; v < V; v++ {
		VMOVAPS(accA[0], accA[v])
	}
	for v := 0; v < V; v++ {
		VXORPS(accB[v], accB[v], accB[v])
	}
	Label(name + "_pair")
	CMPQ(c, U8(2))
	JLT(LabelRef(name + "_single"))
	MOVLQSX(Mem{Base: nz}, o0)
	VBROADCASTSS(Mem{Base: nz, Disp: 4}, w0)
	MOVLQSX(Mem{Base: nz, Disp: 8}, o1)
	VBROADCASTSS(Mem{Base: nz, Disp: 12}, w1)
	fma(o0, w0, accA)
	fma(o1, w1, accB)
	ADDQ(U8(16), nz)
	SUBQ(U8(2), c)
	JMP(LabelRef(name + "_pair"))

	Label(name + "_single")
	TESTQ(c, c)
	JEQ(LabelRef(name + "_store"))
	MOVLQSX(Mem{Base: nz}, o0)
	VBROADCASTSS(Mem{Base: nz, Disp: 4}, w0)
	fma(o0, w0, accA)
	ADDQ(U8(8), nz)

	Label(name + "_store")
	for v := 0; v < V; v++ {
		VADDPS(accB[v], accA[v], accA[v])
		VMAXPS(accA[v], lo, accA[v])
		VMINPS(accA[v], hi, accA[v])
		if v < V-1 {
			VMOVUPS(accA[v], Mem{Base: y, Disp: 64 * v})
		} else {
			VMOVUPS(accA[v], K1, Mem{Base: y, Disp: 64 * v})
		}
	}
	ADDQ(ldy, y)
	ADDQ(U8(4), cnt)
	ADDQ(U8(4), bias)
	DECQ(rows)
	JMP(LabelRef(name + "_row"))

	Label(name + "_done")
	VZEROUPPER()
	RET()
}
