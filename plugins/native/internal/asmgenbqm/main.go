// Command asmgenbqm generates the amd64 assembly of the native backend's
// multi-row block-quantized products (see the package native's
// blockquant_multi.go) with avo (github.com/mmcloughlin/avo). It writes
// its own pair of files; the package's TestGeneratedAssemblyIsCurrent
// runs it and fails when they are stale.
//
//	go run ./plugins/native/internal/asmgenbqm -out plugins/native/blockquant_multi_amd64.s -stubs plugins/native/blockquant_multi_stubs_amd64.go -pkg native
//
// A batched decode step multiplies a few activation rows (one per
// sequence) by every weight row. The single-row kernels (asmgenbq's
// bq8DotAVX2, asmgenbqk's bqkQ5_0FloatAVX2) unpack and convert each
// block of a weight row to float32 for every activation row; these
// kernels do it once a block and use it for R rows (2 or 4), so the
// unpacking, which dominates a single row's cost, is shared. Each row's
// arithmetic is exactly the single-row kernel's, in the same order (the
// same products, accumulators, scale FMA and final reduction), so every
// output has the bits the single-row kernel gives it: a sequence decodes
// the same tokens batched as alone.
//
//   - bq8Dot{2,4}AVX2: int8 weights in blocks of 32 (one group), one
//     float32 scale a block: per block and row, the four 8-lane products
//     (exact, as the FMAs into zeroed accumulators are), added as
//     (p0+p1)+(p2+p3), then total += scale·sum (FMA).
//   - bqkQ5_0Float{2,4}AVX2: ggml Q5_0 blocks: per block and row,
//     acc = x0·w0, then FMAs of x1·w1 … x3·w3, then total += d·acc.
//
// Rows of x are ldx bytes apart; output r goes to y + r·ldy bytes.
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

func main() {
	consts()
	for _, r := range []int{2, 4} {
		bq8Multi(r)
		q50Multi(r)
	}
	Generate()
}

var c0F, c10, qhShuf, qhBits Mem

func bytes32(name string, f func(i int) byte) Mem {
	m := GLOBL(name, RODATA|NOPTR)
	for i := 0; i < 32; i += 8 {
		var v uint64
		for b := 7; b >= 0; b-- {
			v = v<<8 | uint64(f(i+b))
		}
		DATA(i, U64(v))
	}
	return m
}

func consts() {
	c0F = bytes32("bqm_c0f", func(int) byte { return 0x0F })
	c10 = bytes32("bqm_c10", func(int) byte { return 0x10 })
	qhShuf = bytes32("bqm_qhshuf", func(i int) byte { return byte(i / 8) })
	qhBits = bytes32("bqm_qhbits", func(i int) byte { return 1 << (i % 8) })
}

const sig = "func(nb int, w *uint8, x *float32, ldx int, y *float32, ldy int)"

// rowBases loads x and ldx and returns the R row pointers.
func rowBases(R int) []Register {
	x := Load(Param("x"), GP64())
	ldx := Load(Param("ldx"), GP64())
	xs := []Register{x}
	for r := 1; r < R; r++ {
		p := GP64()
		MOVQ(xs[r-1], p)
		ADDQ(ldx, p)
		xs = append(xs, p)
	}
	return xs
}

// store reduces each row's total as the single-row kernels do and
// writes it to y + r·ldy.
func store(tot []VecVirtual) {
	y := Load(Param("y"), GP64())
	ldy := Load(Param("ldy"), GP64())
	for _, t := range tot {
		r := XMM()
		VEXTRACTF128(U8(1), t, r)
		VADDPS(r, t.AsX(), r)
		VHADDPS(r, r, r)
		VHADDPS(r, r, r)
		VMOVSS(r, Mem{Base: y})
		ADDQ(ldy, y)
	}
	VZEROUPPER()
	RET()
}

func bq8Multi(R int) {
	name := fmt.Sprintf("bq8Dot%dAVX2", R)
	TEXT(name, NOSPLIT, "func(nb int, q *int8, s *float32, x *float32, ldx int, y *float32, ldy int)")
	Doc(fmt.Sprintf("%s is bq8DotAVX2 (blocks of 32, one group) for %d rows of x at once (see the package asmgenbqm).", name, R))
	Pragma("noescape")
	nb := Load(Param("nb"), GP64())
	q := Load(Param("q"), GP64())
	s := Load(Param("s"), GP64())
	xs := rowBases(R)
	off := GP64()
	XORQ(off, off)
	tot := make([]VecVirtual, R)
	for r := range tot {
		tot[r] = YMM()
		VXORPS(tot[r], tot[r], tot[r])
	}
	p := name + "_"
	Label(p + "block")
	TESTQ(nb, nb)
	JZ(LabelRef(p + "done"))
	t := []VecVirtual{YMM(), YMM(), YMM(), YMM()}
	for k := range t {
		VPMOVSXBD(Mem{Base: q, Disp: 8 * k}, t[k])
		VCVTDQ2PS(t[k], t[k])
	}
	sc := YMM()
	VBROADCASTSS(Mem{Base: s}, sc)
	for r := 0; r < R; r++ {
		a0, a1 := YMM(), YMM()
		VMULPS(Mem{Base: xs[r], Index: off, Scale: 1}, t[0], a0)
		VMULPS(Mem{Base: xs[r], Index: off, Scale: 1, Disp: 32}, t[1], a1)
		VADDPS(a1, a0, a0)
		a2, a3 := YMM(), YMM()
		VMULPS(Mem{Base: xs[r], Index: off, Scale: 1, Disp: 64}, t[2], a2)
		VMULPS(Mem{Base: xs[r], Index: off, Scale: 1, Disp: 96}, t[3], a3)
		VADDPS(a3, a2, a2)
		VADDPS(a2, a0, a0)
		VFMADD231PS(a0, sc, tot[r])
	}
	ADDQ(U8(32), q)
	ADDQ(U8(4), s)
	ADDQ(U32(128), off)
	DECQ(nb)
	JMP(LabelRef(p + "block"))
	Label(p + "done")
	store(tot)
}

// q5bytes builds a Q5_0 block's 32 unsigned 5-bit values (element order)
// from the block at w (asmgenbqk's).
func q5bytes(w Register) VecVirtual {
	lo, hi := XMM(), XMM()
	VMOVDQU(Mem{Base: w, Disp: 6}, lo)
	VPSRLW(U8(4), lo, hi)
	VPAND(c0F, lo, lo)
	VPAND(c0F, hi, hi)
	q := YMM()
	VINSERTI128(U8(1), hi, lo.AsY(), q)
	qh := YMM()
	VPBROADCASTD(Mem{Base: w, Disp: 2}, qh)
	VPSHUFB(qhShuf, qh, qh)
	VPAND(qhBits, qh, qh)
	VPCMPEQB(qhBits, qh, qh)
	VPAND(c10, qh, qh)
	VPOR(qh, q, q)
	return q
}

func q50Multi(R int) {
	name := fmt.Sprintf("bqkQ5_0Float%dAVX2", R)
	TEXT(name, NOSPLIT, sig)
	Doc(fmt.Sprintf("%s is bqkQ5_0FloatAVX2 for %d rows of x at once (see the package asmgenbqm).", name, R))
	Pragma("noescape")
	nb := Load(Param("nb"), GP64())
	w := Load(Param("w"), GP64())
	xs := rowBases(R)
	off := GP64()
	XORQ(off, off)
	local := AllocLocal(32)
	tot := make([]VecVirtual, R)
	for r := range tot {
		tot[r] = YMM()
		VXORPS(tot[r], tot[r], tot[r])
	}
	p := name + "_"
	Label(p + "block")
	TESTQ(nb, nb)
	JZ(LabelRef(p + "done"))
	q := q5bytes(w)
	VPSUBB(c10, q, q) // q − 16
	VMOVDQU(q, local)
	v := []VecVirtual{YMM(), YMM(), YMM(), YMM()}
	for i := range v {
		VPMOVSXBD(local.Offset(8*i), v[i])
		VCVTDQ2PS(v[i], v[i])
	}
	dd := XMM()
	h := GP32()
	MOVWLZX(Mem{Base: w}, h)
	VMOVD(h, dd)
	VCVTPH2PS(dd, dd)
	d := YMM()
	VBROADCASTSS(dd, d)
	for r := 0; r < R; r++ {
		acc := YMM()
		VMULPS(Mem{Base: xs[r], Index: off, Scale: 1}, v[0], acc)
		for i := 1; i < 4; i++ {
			VFMADD231PS(Mem{Base: xs[r], Index: off, Scale: 1, Disp: 32 * i}, v[i], acc)
		}
		VFMADD231PS(d, acc, tot[r])
	}
	ADDQ(U8(22), w)
	ADDQ(U32(128), off)
	DECQ(nb)
	JMP(LabelRef(p + "block"))
	Label(p + "done")
	store(tot)
}
