// Command asmgenq generates the native backend's int8 GEMM tile kernels
// for amd64 with AVX-512 VNNI (VPDPBUSD), with avo. It is a build-time
// tool: nothing at run time imports it. The generated files are
// committed; the package's TestGeneratedQuantAssemblyIsCurrent runs this
// command and fails when they are stale.
//
//	go run ./plugins/native/internal/asmgenq -out plugins/native/quant_kernels_amd64.s -stubs plugins/native/quant_kernels_amd64.go -pkg native
//
// A kernel qgemmVNNI<MR>x<NV> computes one MR×(NV·16) tile of an int8
// GEMM (see plugins/native/quant.go for the packing):
//
//	acc[i][j] = corr[j] + Σ_s Σ_t a[s][i][t] · b[s][j][t]   (u8 × s8, int32)
//	y[i][j]   = clamp(rdbypot(srdhm(acc·2^left[j], mult[j]), right[j]) + yz, lo, hi)
//
// for i < rows and the channels j set in masks (16 bits per vector). The
// requantisation is TFLite's MultiplyByQuantizedMultiplier step by step:
// srdhm(x, m) is (x·m + 2^30) >> 31 in 64 bits (the nudge and truncating
// division of the reference give that value for either sign; m is never
// −2^31, so it never saturates), rdbypot adds one where the remainder
// x & mask exceeds mask>>1 (+1 for negative x).
//
// VPDPBUSD is not in avo's instruction table; it is emitted as a raw
// instruction (Go's assembler knows it).
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// shapes are the (MR, NV) tiles generated.
var shapes = [][2]int{{8, 3}, {12, 2}, {24, 1}, {2, 4}}

func main() {
	for _, s := range shapes {
		qgemm(s[0], s[1], false)
	}
	depthwise(false)
	add()
	for _, s := range shapes {
		qgemm(s[0], s[1], true)
	}
	depthwise(true)
	Generate()
}

var zregs = []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15,
	Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31}

func vpdpbusd(w, a, acc Op) {
	Instruction(&ir.Instruction{Opcode: "VPDPBUSD", Operands: []Op{w, a, acc}, Inputs: []Op{w, a, acc}, Outputs: []Op{acc}})
}

func qgemm(mr, nv int, float bool) {
	name := fmt.Sprintf("qgemmVNNI%dx%d", mr, nv)
	doc := fmt.Sprintf("%s computes one %d×%d int8 GEMM tile with its requantisation (see the package asmgenq).", name, mr, 16*nv)
	if float {
		name = fmt.Sprintf("qgemmVNNIF%dx%d", mr, nv)
		doc = fmt.Sprintf("%s computes one %d×%d int8 GEMM tile with ONNX's float requantisation (see the package asmgenq).", name, mr, 16*nv)
	}
	if mr*nv+nv+1 > 32 || mr*nv+4 > 32 {
		panic(name + ": too many registers")
	}
	TEXT(name, NOSPLIT, "func(k4 int, a *uint8, b *int8, rq *int32, y *int8, ldy, rows int, masks uint64)")
	Pragma("noescape")
	Doc(doc)
	acc := func(i, v int) VecPhysical { return zregs[i*nv+v] }
	bv := zregs[mr*nv : mr*nv+nv]
	bc := zregs[mr*nv+nv:]
	steps := Load(Param("k4"), GP64())
	SHRQ(U8(2), steps)
	a := Load(Param("a"), GP64())
	b := Load(Param("b"), GP64())
	for i := 0; i < mr; i++ {
		for v := 0; v < nv; v++ {
			VPXORD(acc(i, v), acc(i, v), acc(i, v))
		}
	}
	Label(name + "_loop")
	for v := 0; v < nv; v++ {
		VMOVDQU32(Mem{Base: b, Disp: 64 * v}, bv[v])
	}
	for i := 0; i < mr; i++ {
		r := bc[i%len(bc)]
		VPBROADCASTD(Mem{Base: a, Disp: 4 * i}, r)
		for v := 0; v < nv; v++ {
			vpdpbusd(bv[v], r, acc(i, v))
		}
	}
	ADDQ(U32(4*mr), a)
	ADDQ(U32(64*nv), b)
	DECQ(steps)
	JNZ(LabelRef(name + "_loop"))

	// requantise and store
	rq := Load(Param("rq"), GP64())
	y := Load(Param("y"), GP64())
	ldy := Load(Param("ldy"), GP64())
	rows := Load(Param("rows"), GP64())
	masks := GP64()
	Load(Param("masks"), masks)
	kv := []Op{K3, K4, K5, K6}
	for v := 0; v < nv; v++ {
		KMOVW(masks.As32(), kv[v])
		SHRQ(U8(16), masks)
	}
	odd := GP32()
	MOVL(U32(0xAAAA), odd)
	KMOVW(odd, K2)
	gw := 16 * nv
	tm, te, to, tt := zregs[mr*nv], zregs[mr*nv+1], zregs[mr*nv+2], zregs[mr*nv+3]
	for i := 0; i < mr; i++ {
		if i > 0 {
			CMPQ(rows, U32(i))
			JLE(LabelRef(name + "_done"))
		}
		for v := 0; v < nv; v++ {
			x := acc(i, v)
			if float {
				requantF(x, [2]VecPhysical{tm, te}, rq, gw, v)
			} else {
				requant(x, [4]VecPhysical{tm, te, to, tt}, rq, gw, v)
			}
			VPMOVDB(x, kv[v], Mem{Base: y, Disp: 16 * v})
		}
		if i+1 < mr {
			ADDQ(ldy, y)
		}
	}
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

// requant requantises the int32 lanes of x in place with vector v of the
// requantisation block at rq (gw channels per field), using four
// temporaries and K1; K2 must hold 0xAAAA.
func requant(x VecPhysical, t [4]VecPhysical, rq Register, gw, v int) {
	rescale(x, t, rq, gw, v)
	scalar := func(k int) Mem { return Mem{Base: rq, Disp: 4 * (6*gw + k)} }
	VPADDD_BCST(scalar(0), x, x)
	VPMAXSD_BCST(scalar(1), x, x)
	VPMINSD_BCST(scalar(2), x, x)
}

// requantF is ONNX's requantisation of the int32 lanes of x in place,
// with vector v of the float block at rq (gw channels): acc = x+corr;
// p = clamp(float64(acc)·m, lo′, hi′) with lo′ = lo−yz, hi′ = hi−yz;
// x = rint(p)+yz, ties to even. The block is corr (gw int32), m (gw
// float64) at byte 4·gw, then lo′, hi′ (float64) and yz (int32) at byte
// 12·gw. Clamping before rounding gives the reference's
// saturate(rint(acc·m)+yz): the bounds are integers, and rounding is
// monotonic. Uses two temporaries.
func requantF(x VecPhysical, t [2]VecPhysical, rq Register, gw, v int) {
	t0, t1 := t[0], t[1]
	VPADDD(Mem{Base: rq, Disp: 4 * 16 * v}, x, x)
	VEXTRACTI64X4(U8(1), x, t1.AsY())
	VCVTDQ2PD(x.AsY(), t0)
	VCVTDQ2PD(t1.AsY(), t1)
	VMULPD(Mem{Base: rq, Disp: 4*gw + 8*16*v}, t0, t0)
	VMULPD(Mem{Base: rq, Disp: 4*gw + 8*16*v + 64}, t1, t1)
	lo, hi, yz := Mem{Base: rq, Disp: 12 * gw}, Mem{Base: rq, Disp: 12*gw + 8}, Mem{Base: rq, Disp: 12*gw + 16}
	VMAXPD_BCST(lo, t0, t0)
	VMAXPD_BCST(lo, t1, t1)
	VMINPD_BCST(hi, t0, t0)
	VMINPD_BCST(hi, t1, t1)
	VCVTPD2DQ_RN_SAE(t0, t0.AsY())
	VCVTPD2DQ_RN_SAE(t1, t1.AsY())
	VINSERTI64X4(U8(1), t1.AsY(), t0, x)
	VPADDD_BCST(yz, x, x)
}

// rescale is requant without the output zero point and clamp: the int32
// result of MultiplyByQuantizedMultiplier((x+corr)·2^left, mult, −right).
func rescale(x VecPhysical, t [4]VecPhysical, rq Register, gw, v int) {
	field := func(f int) Mem { return Mem{Base: rq, Disp: 4 * (f*gw + 16*v)} }
	scalar := func(k int) Mem { return Mem{Base: rq, Disp: 4 * (6*gw + k)} }
	tm, te, to, tt := t[0], t[1], t[2], t[3]
	VPADDD(field(0), x, x)
	VPSLLVD(field(2), x, x)
	VMOVDQU32(field(1), tm)
	VPMULDQ(tm, x, te)
	VPSRLQ(U8(32), x, to)
	VPSRLQ(U8(32), tm, tm)
	VPMULDQ(tm, to, to)
	VPADDQ_BCST(scalar(4), te, te)
	VPADDQ_BCST(scalar(4), to, to)
	VPSRAQ(U8(31), te, te)
	VPSRAQ(U8(31), to, to)
	VPSLLQ(U8(32), to, to)
	VPBLENDMD(to, te, K2, x)
	VPANDD(field(4), x, tt)
	VPSRLD(U8(31), x, to)
	VPADDD(field(5), to, to)
	VPSRAVD(field(3), x, x)
	VPCMPGTD(to, tt, K1)
	VPADDD_BCST(scalar(3), x, K1, x)
}

// depthwise generates dwqAVX512: nt output pixels of one 16-channel block
// of a depthwise convolution over a padded input (every tap in bounds;
// see plugins/native/quant.go):
//
//	acc[p] = corr + Σ_t w[t]·x[p·xstep + offs[t]]   (int8 × int8 in int32)
//
// requantised like the GEMM tiles (rq a block of 16 channels) and stored
// at y + p·ystep under the 16-bit mask. Four pixels at a time, then one.
func depthwise(float bool) {
	name, doc := "dwqAVX512", "dwqAVX512 computes nt output pixels of one 16-channel block of an int8 depthwise convolution (see the package asmgenq)."
	if float {
		name, doc = "dwqAVX512F", "dwqAVX512F computes nt output pixels of one 16-channel block of an int8 depthwise convolution with ONNX's float requantisation (see the package asmgenq)."
	}
	TEXT(name, NOSPLIT, "func(nt, taps int, offs *int, w *int32, x *int8, xstep int, rq *int32, y *int8, ystep int, mask uint64)")
	Pragma("noescape")
	Doc(doc)
	nt := Load(Param("nt"), GP64())
	taps := Load(Param("taps"), GP64())
	offs := Load(Param("offs"), GP64())
	w := Load(Param("w"), GP64())
	x := Load(Param("x"), GP64())
	xstep := Load(Param("xstep"), GP64())
	rq := Load(Param("rq"), GP64())
	y := Load(Param("y"), GP64())
	ystep := Load(Param("ystep"), GP64())
	mask := GP64()
	Load(Param("mask"), mask)
	KMOVW(mask.As32(), K3)
	odd := GP32()
	MOVL(U32(0xAAAA), odd)
	KMOVW(odd, K2)
	xs3 := GP64()
	LEAQ(Mem{Base: xstep, Index: xstep, Scale: 2}, xs3)
	acc := []VecPhysical{Z0, Z1, Z2, Z3}
	tmp := []VecPhysical{Z4, Z5, Z6, Z7}
	wv := Z8
	t, base, wp, off := GP64(), GP64(), GP64(), GP64()
	for _, unroll := range []int{4, 1} {
		lbl := fmt.Sprintf("dwq_%d", unroll)
		if float {
			lbl = fmt.Sprintf("dwqf_%d", unroll)
		}
		Label(lbl)
		CMPQ(nt, U32(unroll))
		JL(LabelRef(lbl + "_end"))
		for p := 0; p < unroll; p++ {
			VPXORD(acc[p], acc[p], acc[p])
		}
		MOVQ(taps, t)
		MOVQ(w, wp)
		MOVQ(offs, off)
		Label(lbl + "_tap")
		MOVQ(x, base)
		ADDQ(Mem{Base: off}, base)
		VMOVDQU32(Mem{Base: wp}, wv)
		px := []Mem{{Base: base}, {Base: base, Index: xstep, Scale: 1}, {Base: base, Index: xstep, Scale: 2}, {Base: base, Index: xs3, Scale: 1}}
		for p := 0; p < unroll; p++ {
			VPMOVSXBD(px[p], tmp[p])
			VPMULLD(wv, tmp[p], tmp[p])
			VPADDD(tmp[p], acc[p], acc[p])
		}
		ADDQ(U8(8), off)
		ADDQ(U8(64), wp)
		DECQ(t)
		JNZ(LabelRef(lbl + "_tap"))
		for p := 0; p < unroll; p++ {
			if float {
				requantF(acc[p], [2]VecPhysical{Z4, Z5}, rq, 16, 0)
			} else {
				requant(acc[p], [4]VecPhysical{Z4, Z5, Z6, Z7}, rq, 16, 0)
			}
			VPMOVDB(acc[p], K3, Mem{Base: y})
			ADDQ(ystep, y)
			ADDQ(xstep, x)
		}
		SUBQ(U32(unroll), nt)
		JMP(LabelRef(lbl))
		Label(lbl + "_end")
	}
	VZEROUPPER()
	RET()
}

// add generates qaddAVX512: y = requant(rescale(a) + rescale(b)) for
// n&^15 int8 elements, TFLite's int8 Add; p holds three requantisation
// blocks of 16 identical lanes (a's, b's and the sum's, each
// 6·16+8 int32: corr is the negated input zero point, left includes the
// 2^20 of the rescale).
func add() {
	TEXT("qaddAVX512", NOSPLIT, "func(n int, a, b *int8, p *int32, y *int8)")
	Pragma("noescape")
	Doc("qaddAVX512 computes n&^15 elements of an int8 Add (see the package asmgenq).")
	n := Load(Param("n"), GP64())
	a := Load(Param("a"), GP64())
	b := Load(Param("b"), GP64())
	p := Load(Param("p"), GP64())
	y := Load(Param("y"), GP64())
	pb, py := GP64(), GP64()
	LEAQ(Mem{Base: p, Disp: 4 * (6*16 + 8)}, pb)
	LEAQ(Mem{Base: p, Disp: 8 * (6*16 + 8)}, py)
	odd := GP32()
	MOVL(U32(0xAAAA), odd)
	KMOVW(odd, K2)
	SHRQ(U8(4), n)
	JZ(LabelRef("qadd_done"))
	t := [4]VecPhysical{Z2, Z3, Z4, Z5}
	Label("qadd_loop")
	VPMOVSXBD(Mem{Base: a}, Z0)
	VPMOVSXBD(Mem{Base: b}, Z1)
	rescale(Z0, t, p, 16, 0)
	rescale(Z1, t, pb, 16, 0)
	VPADDD(Z1, Z0, Z0)
	requant(Z0, t, py, 16, 0)
	VPMOVDB(Z0, Mem{Base: y})
	ADDQ(U8(16), a)
	ADDQ(U8(16), b)
	ADDQ(U8(16), y)
	DECQ(n)
	JNZ(LabelRef("qadd_loop"))
	Label("qadd_done")
	VZEROUPPER()
	RET()
}
