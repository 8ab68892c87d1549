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
// kernels do it once a block and use it for R rows (2, 3 or 4), so the
// unpacking, which dominates a single row's cost, is shared. Each row's
// arithmetic is exactly the single-row kernel's, in the same order (the
// same products, accumulators, scale FMA and final reduction), so every
// output has the bits the single-row kernel gives it: a sequence decodes
// the same tokens batched as alone.
//
//   - bq8Dot{2,3,4}AVX2: int8 weights in blocks of 32 (one group), one
//     float32 scale a block: per block and row, the four 8-lane products
//     (exact, as the FMAs into zeroed accumulators are), added as
//     (p0+p1)+(p2+p3), then total += scale·sum (FMA).
//   - bqkQ5_0Float{2,3,4}AVX2: ggml Q5_0 blocks: per block and row,
//     acc = x0·w0, then FMAs of x1·w1 … x3·w3, then total += d·acc.
//   - bqkQ4KFloat{2,3,4}AVX2, bqkQ6KFloat{2,3,4}AVX2: ggml Q4_K and Q6_K
//     super-blocks as asmgenbqk's float kernels compute them (Q4_K's
//     minimums with the rows' 32-value sums, xs: per super-block the R
//     rows' eight sums one after the other).
//   - bqmQ5_0x{2,3,4}Z, bqmQ8_0x{2,3,4}Z: the integer path's ggml Q5_0
//     and Q8_0 (int8 activations) for 2 to 4 rows on ZMM, in the
//     single-row kernel's layout (z32.go).
//
// Rows of x are ldx bytes apart; output r goes to y + r·ldy bytes.
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
	"github.com/switchyard-hal/switchyard/plugins/native/internal/avokit"
)

func main() {
	consts()
	for _, r := range []int{2, 3, 4} {
		bq8Multi(r)
		q50Multi(r)
		q4kMulti(r)
		q6kMulti(r)
	}
	constsZ()
	for _, t := range []zType{zQ5_0, zQ8_0} {
		for _, r := range []int{2, 3, 4} {
			fewZ(t, r, 1)
			fewZ(t, r, 2)
		}
	}
	Generate()
}

var c0F, c03, c10, c20, qhShuf, qhBits Mem

// bytes32 is avokit.Bytes32.
var bytes32 = avokit.Bytes32

func consts() {
	c0F = bytes32("bqm_c0f", func(int) byte { return 0x0F })
	c03 = bytes32("bqm_c03", func(int) byte { return 0x03 })
	c10 = bytes32("bqm_c10", func(int) byte { return 0x10 })
	c20 = bytes32("bqm_c20", func(int) byte { return 0x20 })
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

const sigK = "func(nb int, w *uint8, x *float32, ldx int, xs *float32, y *float32, ldy int)"

// rows addresses R rows of x with few registers: bases x0 (and x2 = x0 +
// 2·ldx for 3 or 4 rows) advanced as the kernel moves on, row r+1 of a pair
// at ldx (an index register) past row r.
type rows struct {
	base []Register
	ldx  Register
}

func newRows(R int) rows {
	x := Load(Param("x"), GP64())
	ldx := Load(Param("ldx"), GP64())
	rs := rows{base: []Register{x}, ldx: ldx}
	if R > 2 {
		x2 := GP64()
		LEAQ(Mem{Base: x, Index: ldx, Scale: 2}, x2)
		rs.base = append(rs.base, x2)
	}
	return rs
}

func (rs rows) at(r, disp int) Mem {
	m := Mem{Base: rs.base[r/2], Disp: disp}
	if r%2 == 1 {
		m.Index, m.Scale = rs.ldx, 1
	}
	return m
}

func (rs rows) advance(n int) {
	for _, b := range rs.base {
		ADDQ(U32(n), b)
	}
}

// bytes8ToFloats is avokit.BytesToFloats8.
var bytes8ToFloats = avokit.BytesToFloats8

func q4kMulti(R int) {
	name := fmt.Sprintf("bqkQ4KFloat%dAVX2", R)
	TEXT(name, NOSPLIT, sigK)
	Doc(fmt.Sprintf("%s is bqkQ4KFloatAVX2 for %d rows of x at once (see the package asmgenbqm).", name, R))
	Pragma("noescape")
	nb := Load(Param("nb"), GP64())
	w := Load(Param("w"), GP64())
	xr := newRows(R)
	sums := Load(Param("xs"), GP64()) // [nb][R][8]: the rows' sums of a block together
	local := AllocLocal(64 + 32)
	tot := make([]VecVirtual, R)
	for r := range tot {
		tot[r] = YMM()
		VXORPS(tot[r], tot[r], tot[r])
	}
	p := name + "_"
	Label(p + "block")
	TESTQ(nb, nb)
	JZ(LabelRef(p + "done"))
	scLo, scHi, mLo, mHi := k4scales(w)
	dd := XMM()
	h := GP32()
	MOVL(Mem{Base: w}, h)
	VMOVD(h, dd)
	VCVTPH2PS(dd, dd) // d, dmin
	d, dmin := YMM(), YMM()
	VBROADCASTSS(dd, d)
	VMOVSHDUP(dd, dd)
	VBROADCASTSS(dd, dmin)
	sc := bytes8ToFloats(scLo, scHi)
	VMULPS(d, sc, sc)
	VMOVUPS(sc, local.Offset(64)) // d·sc_s
	m := bytes8ToFloats(mLo, mHi)
	for r := 0; r < R; r++ {
		mr := YMM()
		VMULPS(Mem{Base: sums, Disp: 32 * r}, m, mr)
		VFNMADD231PS(dmin, mr, tot[r]) // total −= dmin·m_s·Σx_s
	}
	for c := 0; c < 4; c++ {
		q, n := YMM(), YMM()
		VMOVDQU(Mem{Base: w, Disp: 16 + 32*c}, q)
		VPSRLW(U8(4), q, n)
		VPAND(c0F, q, q)
		VPAND(c0F, n, n)
		VMOVDQU(q, local)
		VMOVDQU(n, local.Offset(32))
		for half := 0; half < 2; half++ {
			s := 2*c + half
			v := []VecVirtual{YMM(), YMM(), YMM(), YMM()}
			for i := range v {
				VPMOVZXBD(local.Offset(32*half+8*i), v[i])
				VCVTDQ2PS(v[i], v[i])
			}
			b := YMM()
			VBROADCASTSS(local.Offset(64+4*s), b)
			for r := 0; r < R; r++ {
				acc := YMM()
				VMULPS(xr.at(r, 4*(32*s)), v[0], acc)
				for i := 1; i < 4; i++ {
					VFMADD231PS(xr.at(r, 4*(32*s+8*i)), v[i], acc)
				}
				VFMADD231PS(b, acc, tot[r])
			}
		}
	}
	ADDQ(U32(144), w)
	xr.advance(1024)
	ADDQ(U32(32*R), sums)
	DECQ(nb)
	JMP(LabelRef(p + "block"))
	Label(p + "done")
	store(tot)
}

func q6kMulti(R int) {
	name := fmt.Sprintf("bqkQ6KFloat%dAVX2", R)
	TEXT(name, NOSPLIT, sigK)
	Doc(fmt.Sprintf("%s is bqkQ6KFloatAVX2 for %d rows of x at once (xs unused; see the package asmgenbqm).", name, R))
	Pragma("noescape")
	nb := Load(Param("nb"), GP64())
	w := Load(Param("w"), GP64())
	xr := newRows(R)
	local := AllocLocal(128 + 64)
	tot := make([]VecVirtual, R)
	for r := range tot {
		tot[r] = YMM()
		VXORPS(tot[r], tot[r], tot[r])
	}
	p := name + "_"
	Label(p + "block")
	TESTQ(nb, nb)
	JZ(LabelRef(p + "done"))
	dd := XMM()
	h := GP32()
	MOVWLZX(Mem{Base: w, Disp: 208}, h)
	VMOVD(h, dd)
	VCVTPH2PS(dd, dd)
	d := YMM()
	VBROADCASTSS(dd, d)
	for i := 0; i < 2; i++ {
		s := YMM()
		VPMOVSXBD(Mem{Base: w, Disp: 192 + 8*i}, s)
		VCVTDQ2PS(s, s)
		VMULPS(d, s, s)
		VMOVUPS(s, local.Offset(128+32*i)) // d·sc_g
	}
	for hf := 0; hf < 2; hf++ {
		a, b, hb := YMM(), YMM(), YMM()
		VMOVDQU(Mem{Base: w, Disp: 64 * hf}, a)
		VMOVDQU(Mem{Base: w, Disp: 64*hf + 32}, b)
		VMOVDQU(Mem{Base: w, Disp: 128 + 32*hf}, hb)
		for k := 0; k < 4; k++ {
			p, hi := YMM(), YMM()
			src := a
			if k&1 == 1 {
				src = b
			}
			if k < 2 {
				VPAND(c0F, src, p)
			} else {
				VPSRLW(U8(4), src, p)
				VPAND(c0F, p, p)
			}
			if k == 0 {
				VPAND(c03, hb, hi)
			} else {
				VPSRLW(U8(2*k), hb, hi)
				VPAND(c03, hi, hi)
			}
			VPSLLW(U8(4), hi, hi)
			VPOR(hi, p, p)
			VPSUBB(c20, p, p) // q − 32
			VMOVDQU(p, local.Offset(32*k))
		}
		for k := 0; k < 4; k++ {
			for g := 0; g < 2; g++ {
				v := []VecVirtual{YMM(), YMM()}
				for i := range v {
					VPMOVSXBD(local.Offset(32*k+16*g+8*i), v[i])
					VCVTDQ2PS(v[i], v[i])
				}
				bs := YMM()
				VBROADCASTSS(local.Offset(128+4*(8*hf+2*k+g)), bs)
				for r := 0; r < R; r++ {
					acc := YMM()
					o := 4 * (128*hf + 32*k + 16*g)
					VMULPS(xr.at(r, o), v[0], acc)
					VFMADD231PS(xr.at(r, o+32), v[1], acc)
					VFMADD231PS(bs, acc, tot[r])
				}
			}
		}
	}
	ADDQ(U32(210), w)
	xr.advance(1024)
	DECQ(nb)
	JMP(LabelRef(p + "block"))
	Label(p + "done")
	store(tot)
}

// k4scales is avokit.K4Scales of the block at w.
func k4scales(w Register) (scLo, scHi, mLo, mHi GPVirtual) {
	return avokit.K4Scales(Mem{Base: w, Disp: 4})
}
