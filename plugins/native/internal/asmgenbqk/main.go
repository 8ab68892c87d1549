// Command asmgenbqk generates the amd64 assembly of the native backend's
// integer path for BlockQuantMatMul nodes whose weight keeps ggml's own
// block layout (attribute type; see the package native's
// blockquant_ggml.go) with avo (github.com/mmcloughlin/avo). It writes its
// own pair of files; the package's TestBlockQuantGGMLAssemblyIsCurrent
// runs it and fails when they are stale.
//
//	go run ./plugins/native/internal/asmgenbqk -out plugins/native/blockquant_ggml_amd64.s -stubs plugins/native/blockquant_ggml_stubs_amd64.go -pkg native
//
// Each kernel is the dot product of one weight row (nb blocks in ggml's
// layout at w) with one row of activations quantized by core/ggml's
// Act.Quantize (int8 values x, one float32 scale a block at xd, and the
// block's sums at xs), returning exactly the float32 that core/ggml's Dot
// computes (its doc fixes the order of every float32 operation):
//
//   - Q4_K: per super-block the integer sums of the eight 32-element
//     sub-blocks (VPMADDUBSW of the nibbles with x, then VPMADDWD by the
//     sub-block's scale broadcast as int16), the mins' term Σ m_s·Σx
//     (VPMULLD with xs, the eight 32-value sums), then acc += S·(d·d_a),
//     acc −= M·(dmin·d_a) in scalar float32.
//   - Q5_K: as Q4_K, with each sub-block's 5th bits (bit s of qh's 32
//     bytes) shifted in as 16.
//   - Q6_K: the four 32-element planes of each 128 elements rebuilt from
//     ql and qh as unsigned 6-bit values, VPMADDUBSW with x, VPMADDWD by
//     the two 16-element groups' scales (VPSHUFB of the sign-extended
//     scales); the offset 32 taken off once a super-block as 32·Σ sc_g·Σx
//     (xs: the sixteen 16-value sums).
//   - Q5_0: 32-element blocks in eight lanes: the 5th bits spread from qh
//     to bytes (VPSHUFB, VPCMPEQB), VPMADDUBSW and VPMADDWD by ones, the
//     offset 16 taken off with the lane sums at xs; each lane converted
//     and added times d·d_a by a fused multiply-add into float32, the
//     lanes reduced as ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)) (llama.cpp's
//     _mm256_fmadd_ps and hsum_float_8).
//   - Q4_0: as Q5_0 to the lane sums (the offset 8), then the lanes
//     summed exactly to the block's int32 sum (repBlock), converted, and
//     added times d·d_a by one fused multiply-add into one accumulator a
//     row: llama.cpp's repacked Q4_0 order (core/ggml's Dot).
//
// Q4_K, Q5_K and Q6_K also have four-row kernels (four weight rows
// against one activation row, in AVX-512 VNNI on ZMM and in AVX2; k4.go
// says how), and Q2_K and Q3_K in AVX-512 VNNI, which the integer path
// takes for each group of four outputs; Q4_1 and Q5_1 are 32-element
// types as Q4_0 and Q5_0, with their minimum's term (see dot32).
//
// The float path (the default precision: activations not quantized) has
// kernels for Q4_K, Q6_K and Q5_0 (one accumulator a 32-element block): the quants unpacked to bytes on the stack,
// widened to int32 and converted to float32 eight at a time, and
// multiplied with x by FMA into one accumulator a sub-block (Q4_K) or a
// 16-element group (Q6_K), which then adds into the row's eight lanes
// times the sub-block's d·scale (FMA); Q4_K's minimums take the
// sub-blocks' sums of x (xs, computed once a row) times dmin·min. The
// lanes are summed at the end. Their rounding is a float32 dot product's;
// the tests bound it against the reference kernel.
//
// The block scales are float16, converted with VCVTPH2PS (F16C).
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
	consts4()
	constsZ()
	constsV()
	for _, fam := range []string{"VNNI", "AVX2"} {
		q4k4(fam, false)
		q4k4(fam, true)
		q6k4(fam)
	}
	q6k4("GFNI")
	q23k4VNNI(false)
	q23k4VNNI(true)
	q4k(false)
	q4k(true)
	q6k()
	for _, fam := range []string{"VNNI", "AVX2"} {
		for _, t := range []string{"Q4_0", "Q5_0", "Q8_0", "Q4_1", "Q5_1"} {
			for _, nr := range []int{4, 1} {
				dot32(t, fam, nr)
			}
		}
	}
	for _, sets := range []int{1, 2} {
		dot32Z("Q4_0", sets)
		dot32Z("Q5_0", sets)
		dot32Z("Q8_0", sets)
		dot32ZG("Q4_0", sets, true)
	}
	dot32Q4V()
	q4kFloat()
	q6kFloat()
	for _, t := range []string{"Q4_0", "Q5_0", "Q8_0"} {
		float32Kernel(t)
	}
	Generate()
}

var (
	c0F, c01, c03, c08, c10, c20, onesW, qhShuf, qhBits Mem
	q6Shuf                                              [4]Mem
)

// bytes32 is avokit.Bytes32.
var bytes32 = avokit.Bytes32

func consts() {
	c0F = bytes32("bqk_c0f", func(int) byte { return 0x0F })
	c01 = bytes32("bqk_c01", func(int) byte { return 0x01 })
	c03 = bytes32("bqk_c03", func(int) byte { return 0x03 })
	c08 = bytes32("bqk_c08", func(int) byte { return 0x08 })
	c10 = bytes32("bqk_c10", func(int) byte { return 0x10 })
	c20 = bytes32("bqk_c20", func(int) byte { return 0x20 })
	onesW = bytes32("bqk_onesw", func(i int) byte { return byte(1 - i%2) })
	// bit j of a broadcast uint32 to byte j: byte j takes source byte j/8
	qhShuf = bytes32("bqk_qhshuf", func(i int) byte { return byte(i / 8) })
	qhBits = bytes32("bqk_qhbits", func(i int) byte { return 1 << (i % 8) })
	// plane k of a Q6_K half: the low 128 bits take int16 scale 2k, the
	// high ones 2k+1 (of a half's eight scales, duplicated in both lanes)
	for k := 0; k < 4; k++ {
		kk := k
		q6Shuf[k] = bytes32("bqk_q6shuf"+string(rune('0'+k)), func(i int) byte {
			w := 2 * kk
			if i >= 16 {
				w++
			}
			return byte(2*w + i%2)
		})
	}
}

// hsumD reduces the eight int32 lanes of y to a GP32 register.
func hsumD(y VecVirtual) GPVirtual {
	t := XMM()
	VEXTRACTI128(U8(1), y, t)
	VPADDD(t, y.AsX(), t)
	u := XMM()
	VPSHUFD(U8(0x4E), t, u)
	VPADDD(u, t, t)
	VPSHUFD(U8(0xB1), t, u)
	VPADDD(u, t, t)
	r := GP32()
	VMOVD(t, r)
	return r
}

const sig = "func(nb int, w *uint8, x *int8, xd *float32, xs *int32) float32"

// bytes8ToFloats is avokit.BytesToFloats8.
var bytes8ToFloats = avokit.BytesToFloats8

// hsumPS reduces the eight float32 lanes of y.
func hsumPS(y VecVirtual) VecVirtual {
	t := XMM()
	VEXTRACTF128(U8(1), y, t)
	VADDPS(t, y.AsX(), t)
	VHADDPS(t, t, t)
	VHADDPS(t, t, t)
	return t
}

const sigF = "func(nb int, w *uint8, x *float32, xs *float32) float32"

func q4kFloat() {
	TEXT("bqkQ4KFloatAVX2", NOSPLIT, sigF)
	Doc("bqkQ4KFloatAVX2 is the float path's dot product of nb Q4_K super-blocks with x (xs: its 32-value sums; see the package asmgenbqk).")
	Pragma("noescape")
	nb := Load(Param("nb"), GP64())
	w := Load(Param("w"), GP64())
	x := Load(Param("x"), GP64())
	xs := Load(Param("xs"), GP64())
	local := AllocLocal(64 + 32)
	total := YMM()
	VXORPS(total, total, total)
	Label("q4kf_block")
	TESTQ(nb, nb)
	JZ(LabelRef("q4kf_done"))
	prefetchBlock(w, 144)
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
	VMULPS(Mem{Base: xs}, m, m)
	VFNMADD231PS(dmin, m, total) // total −= dmin·m_s·Σx_s
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
			acc := YMM()
			for i := 0; i < 4; i++ {
				v := YMM()
				VPMOVZXBD(local.Offset(32*half+8*i), v)
				VCVTDQ2PS(v, v)
				if i == 0 {
					VMULPS(Mem{Base: x, Disp: 4 * (32*s + 8*i)}, v, acc)
				} else {
					VFMADD231PS(Mem{Base: x, Disp: 4 * (32*s + 8*i)}, v, acc)
				}
			}
			b := YMM()
			VBROADCASTSS(local.Offset(64+4*s), b)
			VFMADD231PS(b, acc, total)
		}
	}
	ADDQ(U32(144), w)
	ADDQ(U32(1024), x)
	ADDQ(U8(32), xs)
	DECQ(nb)
	JMP(LabelRef("q4kf_block"))
	Label("q4kf_done")
	r := hsumPS(total)
	VZEROUPPER()
	Store(r, ReturnIndex(0))
	RET()
}

func q6kFloat() {
	TEXT("bqkQ6KFloatAVX2", NOSPLIT, sigF)
	Doc("bqkQ6KFloatAVX2 is the float path's dot product of nb Q6_K super-blocks with x (xs unused; see the package asmgenbqk).")
	Pragma("noescape")
	nb := Load(Param("nb"), GP64())
	w := Load(Param("w"), GP64())
	x := Load(Param("x"), GP64())
	local := AllocLocal(128 + 64)
	total := YMM()
	VXORPS(total, total, total)
	Label("q6kf_block")
	TESTQ(nb, nb)
	JZ(LabelRef("q6kf_done"))
	prefetchBlock(w, 210)
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
				acc := YMM()
				for i := 0; i < 2; i++ {
					v := YMM()
					VPMOVSXBD(local.Offset(32*k+16*g+8*i), v)
					VCVTDQ2PS(v, v)
					off := 4 * (128*hf + 32*k + 16*g + 8*i)
					if i == 0 {
						VMULPS(Mem{Base: x, Disp: off}, v, acc)
					} else {
						VFMADD231PS(Mem{Base: x, Disp: off}, v, acc)
					}
				}
				bs := YMM()
				VBROADCASTSS(local.Offset(128+4*(8*hf+2*k+g)), bs)
				VFMADD231PS(bs, acc, total)
			}
		}
	}
	ADDQ(U32(210), w)
	ADDQ(U32(1024), x)
	DECQ(nb)
	JMP(LabelRef("q6kf_block"))
	Label("q6kf_done")
	r := hsumPS(total)
	VZEROUPPER()
	Store(r, ReturnIndex(0))
	RET()
}

// q5bytes builds a Q5_0 block's 32 unsigned 5-bit values (element order)
// from the block at w.
func q5bytes(w Register) VecVirtual {
	return q5bytesAt(Mem{Base: w, Disp: 2}, Mem{Base: w, Disp: 6})
}

// q5bytesAt is q5bytes of the block whose qh is at qhm and qs at qsm.
func q5bytesAt(qhm, qsm Mem) VecVirtual {
	lo, hi := XMM(), XMM()
	VMOVDQU(qsm, lo)
	VPSRLW(U8(4), lo, hi)
	q := YMM()
	VINSERTI128(U8(1), hi, lo.AsY(), q)
	VPAND(c0F, q, q)
	qh := YMM()
	VPBROADCASTD(qhm, qh)
	VPSHUFB(qhShuf, qh, qh)
	VPAND(qhBits, qh, qh)
	VPCMPEQB(qhBits, qh, qh)
	VPAND(c10, qh, qh)
	VPOR(qh, q, q)
	return q
}

// float32Kernel generates the float path's kernel of a 32-element type
// (Q4_0, Q5_0, Q8_0): per block the 32 signed values widened to float32,
// multiplied with x by FMA into one accumulator, which adds into the
// row's eight lanes times the block's d (FMA); the lanes summed at the
// end. Prefetched prefetchAhead bytes ahead, as dot32's one-row kernels.
func float32Kernel(t string) {
	name := "bqk" + t + "FloatAVX2"
	bs := map[string]int{"Q4_0": 18, "Q5_0": 22, "Q8_0": 34}[t]
	TEXT(name, NOSPLIT, sigF)
	Doc(name + " is the float path's dot product of nb " + t + " blocks with x (xs unused; see the package asmgenbqk).")
	Pragma("noescape")
	nb := Load(Param("nb"), GP64())
	w := Load(Param("w"), GP64())
	x := Load(Param("x"), GP64())
	local := AllocLocal(32)
	total := YMM()
	VXORPS(total, total, total)
	p := "f" + t + "_"
	Label(p + "block")
	TESTQ(nb, nb)
	JZ(LabelRef(p + "done"))
	PREFETCHT0(Mem{Base: w, Disp: prefetchAhead})
	src := Mem{Base: w, Disp: 2}
	if t != "Q8_0" {
		var q VecVirtual
		if t == "Q5_0" {
			q = q5bytes(w)
			VPSUBB(c10, q, q) // q − 16
		} else {
			lo, hi := XMM(), XMM()
			VMOVDQU(Mem{Base: w, Disp: 2}, lo)
			VPSRLW(U8(4), lo, hi)
			q = YMM()
			VINSERTI128(U8(1), hi, lo.AsY(), q)
			VPAND(c0F, q, q)
			VPSUBB(c08, q, q) // q − 8
		}
		VMOVDQU(q, local)
		src = local
	}
	acc := YMM()
	for i := 0; i < 4; i++ {
		v := YMM()
		VPMOVSXBD(src.Offset(8*i), v)
		VCVTDQ2PS(v, v)
		if i == 0 {
			VMULPS(Mem{Base: x, Disp: 32 * i}, v, acc)
		} else {
			VFMADD231PS(Mem{Base: x, Disp: 32 * i}, v, acc)
		}
	}
	d := YMM()
	h := XMM()
	VPBROADCASTW(Mem{Base: w}, h)
	VCVTPH2PS(h, d)
	VFMADD231PS(d, acc, total)
	ADDQ(U8(int8(bs)), w)
	ADDQ(U32(128), x)
	DECQ(nb)
	JMP(LabelRef(p + "block"))
	Label(p + "done")
	r := hsumPS(total)
	VZEROUPPER()
	Store(r, ReturnIndex(0))
	RET()
}

func q4k(five bool) {
	name, lab, bs := "bqkQ4KDotAVX2", "q4k", 144
	if five {
		name, lab, bs = "bqkQ5KDotAVX2", "q5k", 176
	}
	TEXT(name, NOSPLIT, sig)
	Doc(name + " is core/ggml's Dot of nb " + name[3:5] + "_K super-blocks (see the package asmgenbqk).")
	Pragma("noescape")
	nb := Load(Param("nb"), GP64())
	w := Load(Param("w"), GP64())
	x := Load(Param("x"), GP64())
	xd := Load(Param("xd"), GP64())
	xs := Load(Param("xs"), GP64())
	local := AllocLocal(16)
	acc := XMM()
	VXORPS(acc, acc, acc)
	Label(lab + "_block")
	TESTQ(nb, nb)
	JZ(LabelRef(lab + "_done"))
	prefetchBlock(w, bs)
	// the twelve scale bytes: eight 6-bit scales and eight mins
	scLo, scHi, mLo, mHi := avokit.K4Scales(Mem{Base: w, Disp: 4})
	// scales as int16 to the stack, mins as int32
	sx := XMM()
	VMOVD(scLo, sx)
	VPINSRD(U8(1), scHi, sx, sx)
	VPMOVZXBW(sx, sx)
	VMOVDQU(sx, local)
	mx := XMM()
	VMOVD(mLo, mx)
	VPINSRD(U8(1), mHi, mx, mx)
	my := YMM()
	VPMOVZXBD(mx, my)
	VPMULLD(Mem{Base: xs}, my, my)
	M := hsumD(my)
	isum := YMM()
	VPXOR(isum, isum, isum)
	var qh VecVirtual
	qs := 16
	if five {
		qh = YMM()
		VMOVDQU(Mem{Base: w, Disp: 16}, qh)
		qs = 48
	}
	for c := 0; c < 4; c++ {
		q := YMM()
		VMOVDQU(Mem{Base: w, Disp: qs + 32*c}, q)
		for half := 0; half < 2; half++ {
			s := 2*c + half
			n := YMM()
			if half == 0 {
				VPAND(c0F, q, n)
			} else {
				VPSRLW(U8(4), q, n)
				VPAND(c0F, n, n)
			}
			if five { // the 5th bit: bit s of qh[l]
				hb := YMM()
				if s == 0 {
					VPAND(c01, qh, hb)
				} else {
					VPSRLW(U8(s), qh, hb)
					VPAND(c01, hb, hb)
				}
				VPSLLW(U8(4), hb, hb)
				VPOR(hb, n, n)
			}
			VPMADDUBSW(Mem{Base: x, Disp: 32 * s}, n, n)
			sc := YMM()
			VPBROADCASTW(local.Offset(2*s), sc)
			VPMADDWD(sc, n, n)
			VPADDD(n, isum, isum)
		}
	}
	S := hsumD(isum)
	// the float32 steps
	dd := XMM()
	h := GP32()
	MOVL(Mem{Base: w}, h)
	VMOVD(h, dd)
	VCVTPH2PS(dd, dd)
	da := XMM()
	VBROADCASTSS(Mem{Base: xd}, da)
	VMULPS(da, dd, dd) // d·d_a, dmin·d_a
	f := XMM()
	VCVTSI2SSL(S, f, f)
	VMULSS(dd, f, f)
	VADDSS(f, acc, acc)
	dm := XMM()
	VMOVSHDUP(dd, dm)
	g := XMM()
	VCVTSI2SSL(M, g, g)
	VMULSS(dm, g, g)
	VSUBSS(g, acc, acc)
	ADDQ(U32(uint32(bs)), w)
	ADDQ(U32(256), x)
	ADDQ(U8(4), xd)
	ADDQ(U8(32), xs)
	DECQ(nb)
	JMP(LabelRef(lab + "_block"))
	Label(lab + "_done")
	VZEROUPPER()
	Store(acc, ReturnIndex(0))
	RET()
}

func q6k() {
	TEXT("bqkQ6KDotAVX2", NOSPLIT, sig)
	Doc("bqkQ6KDotAVX2 is core/ggml's Dot of nb Q6_K super-blocks (see the package asmgenbqk).")
	Pragma("noescape")
	nb := Load(Param("nb"), GP64())
	w := Load(Param("w"), GP64())
	x := Load(Param("x"), GP64())
	xd := Load(Param("xd"), GP64())
	xs := Load(Param("xs"), GP64())
	acc := XMM()
	VXORPS(acc, acc, acc)
	Label("q6k_block")
	TESTQ(nb, nb)
	JZ(LabelRef("q6k_done"))
	prefetchBlock(w, 210)
	// the offset: 32·Σ_g sc_g·Σx_g
	b0, b1 := YMM(), YMM()
	VPMOVSXBD(Mem{Base: w, Disp: 192}, b0)
	VPMOVSXBD(Mem{Base: w, Disp: 200}, b1)
	VPMULLD(Mem{Base: xs}, b0, b0)
	VPMULLD(Mem{Base: xs, Disp: 32}, b1, b1)
	VPADDD(b1, b0, b0)
	B := hsumD(b0)
	sc16 := YMM()
	VPMOVSXBW(Mem{Base: w, Disp: 192}, sc16) // lane 0: scales 0..7, lane 1: 8..15
	isum := YMM()
	VPXOR(isum, isum, isum)
	for h := 0; h < 2; h++ {
		T := YMM()
		if h == 0 {
			VPERMQ(U8(0x44), sc16, T)
		} else {
			VPERMQ(U8(0xEE), sc16, T)
		}
		a, b, hb := YMM(), YMM(), YMM()
		VMOVDQU(Mem{Base: w, Disp: 64 * h}, a)
		VMOVDQU(Mem{Base: w, Disp: 64*h + 32}, b)
		VMOVDQU(Mem{Base: w, Disp: 128 + 32*h}, hb)
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
			VPMADDUBSW(Mem{Base: x, Disp: 128*h + 32*k}, p, p)
			sc := YMM()
			VPSHUFB(q6Shuf[k], T, sc)
			VPMADDWD(sc, p, p)
			VPADDD(p, isum, isum)
		}
	}
	S := hsumD(isum)
	SHLL(U8(5), B)
	SUBL(B, S)
	dd := XMM()
	h := GP32()
	MOVWLZX(Mem{Base: w, Disp: 208}, h)
	VMOVD(h, dd)
	VCVTPH2PS(dd, dd)
	VMULSS(Mem{Base: xd}, dd, dd)
	f := XMM()
	VCVTSI2SSL(S, f, f)
	VMULSS(dd, f, f)
	VADDSS(f, acc, acc)
	ADDQ(U32(210), w)
	ADDQ(U32(256), x)
	ADDQ(U8(4), xd)
	ADDQ(U8(64), xs)
	DECQ(nb)
	JMP(LabelRef("q6k_block"))
	Label("q6k_done")
	VZEROUPPER()
	Store(acc, ReturnIndex(0))
	RET()
}

// vpdpbusd is avokit.Vpdpbusd.
var vpdpbusd = avokit.Vpdpbusd

// prefetchBlock prefetches the bytes of a bs-byte block prefetchAhead
// bytes ahead of w (a one-row kernel's stream).
func prefetchBlock(w Register, bs int) {
	for o := 0; o < bs; o += 64 {
		PREFETCHT0(Mem{Base: w, Disp: prefetchAhead + o})
	}
}

// prefetchAhead is how far ahead of its loads (bytes) a one-row dot32
// kernel prefetches.
const prefetchAhead = 1024

const sig32 = "func(nb int, w *uint8, ldw int, x *int8, xd *float32, xs *int32, y *float32)"

// sig32m is the signature of the types with a minimum (Q4_1, Q5_1).
const sig32m = "func(nb int, w *uint8, ldw int, x *int8, xd *float32, sd *float32, y *float32)"

// dot32 generates the kernel of a 32-element type t (Q4_0, Q5_0, Q8_0,
// Q4_1, Q5_1) computing nr outputs (rows w, w+ldw, …) for one activation
// row; fam VNNI sums with VPDPBUSD, AVX2 with VPMADDUBSW and VPMADDWD by
// ones. Q4_0's and Q5_0's offsets (8, 16) are taken off with the lane
// sums at xs (once a block for all the rows); Q8_0 moves the weights'
// sign to x (VPSIGNB) to multiply |w| unsigned. Q4_1 and Q5_1 (unsigned
// quants) add their minimum's share m·SumD to an accumulator a row
// (float32, multiply then add), added to the reduced lanes at the end
// (sd: the activations' SumD).
func dot32(t, fam string, nr int) {
	name := fmt.Sprintf("bqk%sDot%d%s", t, nr, fam)
	bs := map[string]int{"Q4_0": 18, "Q5_0": 22, "Q8_0": 34, "Q4_1": 20, "Q5_1": 24}[t]
	withMin := t == "Q4_1" || t == "Q5_1"
	if withMin {
		TEXT(name, NOSPLIT, sig32m)
	} else {
		TEXT(name, NOSPLIT, sig32)
	}
	Doc(fmt.Sprintf("%s is core/ggml's Dot of nb %s blocks for %d weight rows ldw bytes apart, into y[0..%d] (see the package asmgenbqk).", name, t, nr, nr-1))
	Pragma("noescape")
	nb := Load(Param("nb"), GP64())
	w := Load(Param("w"), GP64())
	x := Load(Param("x"), GP64())
	xd := Load(Param("xd"), GP64())
	var xs, ldw, ldw3, sd Register
	if t == "Q4_0" || t == "Q5_0" {
		xs = Load(Param("xs"), GP64())
	}
	if withMin {
		sd = Load(Param("sd"), GP64())
	}
	if nr == 4 {
		ldw = Load(Param("ldw"), GP64())
		ldw3 = GP64()
		LEAQ(Mem{Base: ldw, Index: ldw, Scale: 2}, ldw3)
	}
	row := func(r, disp int) Mem {
		switch r {
		case 0:
			return Mem{Base: w, Disp: disp}
		case 1:
			return Mem{Base: w, Index: ldw, Scale: 1, Disp: disp}
		case 2:
			return Mem{Base: w, Index: ldw, Scale: 2, Disp: disp}
		}
		return Mem{Base: w, Index: ldw3, Scale: 1, Disp: disp}
	}
	// Q4_0 (llama.cpp's repacked order): one accumulator a row, the nr
	// rows side by side in an XMM
	rep := t == "Q4_0"
	var acc []VecVirtual
	var racc VecVirtual
	if rep {
		racc = XMM()
		VXORPS(racc, racc, racc)
	} else {
		acc = make([]VecVirtual, nr)
		for r := range acc {
			acc[r] = YMM()
			VXORPS(acc[r], acc[r], acc[r])
		}
	}
	var ones, macc VecVirtual
	if fam == "AVX2" {
		ones = YMM()
		VMOVDQU(onesW, ones)
	}
	if withMin {
		macc = XMM()
		VXORPS(macc, macc, macc)
	}
	// Software prefetch: a row is short (K/32 blocks), too short a
	// stream for the hardware prefetcher to pick up before it ends; four
	// of them side by side are four such streams. One row: fetch
	// prefetchAhead bytes ahead (into the next rows: they are contiguous).
	// Four rows: the next four rows (the next call's), at the pace these
	// are read: 4·bs bytes a block.
	pf := GP64()
	if nr == 4 {
		LEAQ(Mem{Base: w, Index: ldw, Scale: 4}, pf)
	} else {
		LEAQ(Mem{Base: w, Disp: prefetchAhead}, pf)
	}
	p := name + "_"
	Label(p + "block")
	TESTQ(nb, nb)
	JZ(LabelRef(p + "done"))
	for o := 0; o < nr*bs; o += 64 {
		PREFETCHT0(Mem{Base: pf, Disp: o})
	}
	ADDQ(U32(uint32(nr*bs)), pf)
	a := YMM()
	VMOVDQU(Mem{Base: x}, a)
	da := YMM()
	VBROADCASTSS(Mem{Base: xd}, da)
	var off VecVirtual // −8 or −16 times the lane sums
	if xs != nil {
		off = YMM()
		l := YMM()
		VMOVDQU(Mem{Base: xs}, l)
		if t == "Q4_0" {
			VPSLLD(U8(3), l, l)
		} else {
			VPSLLD(U8(4), l, l)
		}
		VPXOR(off, off, off)
		VPSUBD(l, off, off)
	}
	sums := make([]VecVirtual, nr)
	for r := 0; r < nr; r++ {
		sum := YMM()
		sums[r] = sum
		switch t {
		case "Q8_0":
			q, uq, sa := YMM(), YMM(), YMM()
			VMOVDQU(row(r, 2), q)
			VPSIGNB(q, q, uq)
			VPSIGNB(q, a, sa)
			if fam == "VNNI" {
				VPXOR(sum, sum, sum)
				vpdpbusd(sa, uq, sum)
			} else {
				VPMADDUBSW(sa, uq, sum)
				VPMADDWD(ones, sum, sum)
			}
		default:
			var q VecVirtual
			o := 2 // the quants' offset in the block
			if withMin {
				o = 4
			}
			if t == "Q4_0" || t == "Q4_1" {
				lo, hi := XMM(), XMM()
				VMOVDQU(row(r, o), lo)
				VPSRLW(U8(4), lo, hi)
				q = YMM()
				VINSERTI128(U8(1), hi, lo.AsY(), q)
				VPAND(c0F, q, q)
			} else {
				q = q5bytesAt(row(r, o), row(r, o+4))
			}
			switch {
			case fam == "VNNI" && withMin:
				VPXOR(sum, sum, sum)
				vpdpbusd(a, q, sum)
			case fam == "VNNI":
				VMOVDQA(off, sum)
				vpdpbusd(a, q, sum)
			default:
				VPMADDUBSW(a, q, sum)
				VPMADDWD(ones, sum, sum)
				if !withMin {
					VPADDD(off, sum, sum)
				}
			}
		}
		if rep {
			continue
		}
		VCVTDQ2PS(sum, sum)
		h, sc := XMM(), YMM()
		VPBROADCASTW(row(r, 0), h)
		VCVTPH2PS(h, sc)
		VMULPS(da, sc, sc)           // d·d_a, one rounding
		VFMADD231PS(sc, sum, acc[r]) // acc += lanes·(d·d_a), one rounding
	}
	if rep {
		repBlock(sums, row, da, racc)
	}
	if withMin { // the minimums: macc_r += m_r·SumD
		mh := XMM()
		h := GP32()
		MOVWLZX(row(0, 2), h)
		VMOVD(h, mh)
		for r := 1; r < nr; r++ {
			VPINSRW(U8(r), row(r, 2), mh, mh)
		}
		VCVTPH2PS(mh, mh)
		sdv := XMM()
		VBROADCASTSS(Mem{Base: sd}, sdv)
		VMULPS(sdv, mh, mh)
		VADDPS(mh, macc, macc)
		ADDQ(U8(4), sd)
	}
	ADDQ(U8(int8(bs)), w)
	ADDQ(U8(32), x)
	ADDQ(U8(4), xd)
	if xs != nil {
		ADDQ(U8(32), xs)
	}
	DECQ(nb)
	JMP(LabelRef(p + "block"))
	Label(p + "done")
	y := Load(Param("y"), GP64())
	if rep {
		if nr == 4 {
			VMOVUPS(racc, Mem{Base: y})
		} else {
			VMOVSS(racc, Mem{Base: y})
		}
		VZEROUPPER()
		RET()
		return
	}
	for r := 0; r < nr; r++ {
		u, v := XMM(), XMM()
		VEXTRACTF128(U8(1), acc[r], u)
		VADDPS(u, acc[r].AsX(), u) // l0+l4, l1+l5, l2+l6, l3+l7
		VMOVHLPS(u, u, v)
		VADDPS(v, u, u) // (l0+l4)+(l2+l6), (l1+l5)+(l3+l7)
		VMOVSHDUP(u, v)
		VADDSS(v, u, u)
		if withMin {
			m := macc
			if r > 0 {
				m = XMM()
				VPSHUFD(U8(r), macc, m)
			}
			VADDSS(m, u, u)
		}
		VMOVSS(u, Mem{Base: y, Disp: 4 * r})
	}
	VZEROUPPER()
	RET()
}

// repBlock ends a block of Q4_0 in llama.cpp's repacked order for the
// rows of sums (one or four YMMs of eight int32 lane sums, the offset
// included): each row's lanes summed exactly to the block's int32 sum,
// converted, and added times float32(d·d_a) into its element of racc by
// one fused multiply-add.
func repBlock(sums []VecVirtual, row func(r, disp int) Mem, da VecVirtual, racc VecVirtual) {
	s := XMM()
	if len(sums) == 4 {
		// [a0+a1 a2+a3 b0+b1 b2+b3 | a4+a5 …] twice, then the four rows'
		// halves side by side; the 128-bit halves added
		h01, h23 := YMM(), YMM()
		VPHADDD(sums[1], sums[0], h01)
		VPHADDD(sums[3], sums[2], h23)
		VPHADDD(h23, h01, h01)
		VEXTRACTI128(U8(1), h01, s)
		VPADDD(h01.AsX(), s, s)
	} else {
		u := XMM()
		VEXTRACTI128(U8(1), sums[0], s)
		VPADDD(sums[0].AsX(), s, s)
		VPSHUFD(U8(0x4E), s, u)
		VPADDD(u, s, s)
		VPSHUFD(U8(0xB1), s, u)
		VPADDD(u, s, s)
	}
	VCVTDQ2PS(s, s)
	h := XMM()
	g := GP32()
	MOVWLZX(row(0, 0), g)
	VMOVD(g, h)
	for r := 1; r < len(sums); r++ {
		VPINSRW(U8(r), row(r, 0), h, h)
	}
	VCVTPH2PS(h, h)
	VMULPS(da.AsX(), h, h)  // d·d_a (exact: two float16 values)
	VFMADD231PS(h, s, racc) // acc += sum·(d·d_a), one rounding
}

// k4scales is avokit.K4Scales of the block at w.
func k4scales(w Register) (scLo, scHi, mLo, mHi GPVirtual) {
	return avokit.K4Scales(Mem{Base: w, Disp: 4})
}
