// Command asmgenq2 generates the native backend's int8 kernels for amd64
// with AVX2 and no AVX-512 (most x86 laptops and CI runners before Ice
// Lake and Zen 4), with avo. It is a build-time tool apart from
// internal/asmgenq (the AVX-512 VNNI kernels), writing its own pair of
// files; the package's TestGeneratedQuant2AssemblyIsCurrent runs it and
// fails when they are stale.
//
//	go run ./plugins/native/internal/asmgenq2 -out plugins/native/quant2_kernels_amd64.s -stubs plugins/native/quant2_kernels_amd64.go -pkg native
//
// The kernels keep the contracts of the VNNI ones exactly (same
// arguments, same packed operands, same requantisation blocks; see
// plugins/native/quant.go), so the Go code calls either through the same
// function values, and their outputs are the same bits.
//
// # GEMM tiles
//
// A kernel qgemmAVX2Tile<MR>x<16·NV> computes one MR×(NV·16) tile:
//
//	acc[i][j] = corr[j] + Σ_s Σ_t a[s][i][t] · b[s][j][t]   (u8 × s8, int32)
//
// AVX2 has no u8×s8 dot product into int32 that is exact: VPMADDUBSW
// adds two u8×s8 products into a saturating int16 (255·127·2 does not
// fit). The tiles widen instead: each k-step's four activation bytes of
// a row are broadcast and zero-extended to int16 (VPBROADCASTD,
// VPMOVZXBW), the weights of four channels sign-extended to int16
// (VPMOVSXBW, 16 bytes), and VPMADDWD multiplies int16 pairs into int32
// lanes exactly (|255·128·2| < 2^31): lane 2c+p of a quad's accumulator
// holds Σ_s (a[s][i][2p]·b[s][c][2p] + a[s][i][2p+1]·b[s][c][2p+1]). The
// int32 sums wrap exactly as the reference's do (addition modulo 2^32
// does not depend on the order). After the k loop VPHADDD adds each
// channel's two lanes (VPERMQ puts the channels back in order) and the
// bias-and-offset correction corr is added by the requantisation.
//
// Sixteen YMM registers bound the tile: an accumulator holds four
// channels of one row, so 2×16 (eight accumulators, two activation
// registers, one weight register and one product) is the largest tile
// with more than one row; 1×48 (twelve) serves single-row products.
//
// # Requantisation
//
// As in internal/asmgenq, TFLite's MultiplyByQuantizedMultiplier step by
// step on eight lanes:
//
//	x   = (acc + corr) << left
//	x   = (x·mult + 2^30) >> 31        (64-bit products, VPMULDQ on even and odd lanes)
//	x   = (x >> right) + (x&mask > mask>>1 + (x<0))
//	y   = clamp(x + yz, lo, hi)
//
// AVX2 has no 64-bit arithmetic right shift; the low 32 bits of the
// shifted product are the same for a logical shift (bits 31..62 either
// way), and the result fits int32. The int32 lanes are packed to bytes
// with saturating packs (the values are already within [lo, hi] ⊂ int8)
// and stored 16 bytes at a time, or byte by byte where the channel mask
// of the vector is not full (AVX2 has no byte-masked store).
//
// # Depthwise and Add
//
// dwqAVX2 and qaddAVX2 are dwqAVX512 and qaddAVX512 on eight lanes, each
// 16-channel (16-element) block taken as two halves. qaddAVX2 has the
// same arguments and data; dwqAVX2 takes its taps in pairs, each
// channel's two int8 products added exactly by one VPMADDWD on int16
// (half the multiplies of VPMULLD on int32, which is also two µops on
// Intel's cores), so its weights are laid out in pairs (see depthwise).
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// shapes are the tiles generated: rows, channels/16, rows per pass.
var shapes = [][3]int{{8, 1, 2}, {4, 1, 2}, {2, 1, 2}, {1, 3, 1}}

var (
	ymm = []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}
	xmm = []VecPhysical{X0, X1, X2, X3, X4, X5, X6, X7, X8, X9, X10, X11, X12, X13, X14, X15}
)

// x is the XMM half of a YMM register.
func x(y VecPhysical) VecPhysical {
	for i, r := range ymm {
		if r == y {
			return xmm[i]
		}
	}
	panic("not a YMM register")
}

func main() {
	for _, s := range shapes {
		qgemm(s[0], s[1], s[2])
	}
	depthwise()
	add()
	floatMode = true
	for _, s := range shapes {
		qgemm(s[0], s[1], s[2])
	}
	depthwise()
	Generate()
}

// consts are the requantisation's broadcast scalars: the output zero
// point, the clamp and the 64-bit rounding constant 2^30.
type consts struct{ yz, lo, hi, c30 VecPhysical }

// loadConsts broadcasts the scalars of the requantisation block at rq
// (gw channels per field).
// floatMode generates the kernels with ONNX's float requantisation
// (requantF, names ending in F) in place of TFLite's fixed-point one.
var floatMode bool

// nameF is name with the float variant's suffix when floatMode.
func nameF(name string) string {
	if floatMode {
		return name + "F"
	}
	return name
}

func loadConsts(c consts, rq Register, gw int) {
	if floatMode {
		VPBROADCASTD(Mem{Base: rq, Disp: 12*gw + 16}, c.yz)
		VBROADCASTSD(Mem{Base: rq, Disp: 12 * gw}, c.lo)
		VBROADCASTSD(Mem{Base: rq, Disp: 12*gw + 8}, c.hi)
		return
	}
	scalar := func(k int) Mem { return Mem{Base: rq, Disp: 4 * (6*gw + k)} }
	VPBROADCASTD(scalar(0), c.yz)
	VPBROADCASTD(scalar(1), c.lo)
	VPBROADCASTD(scalar(2), c.hi)
	VPBROADCASTQ(scalar(4), c.c30)
}

// rescale replaces the eight int32 lanes of v by
// MultiplyByQuantizedMultiplier((v+corr)·2^left, mult, −right), the
// channels' fields at int32 offset off of each field of the block at rq
// (gw channels per field); four temporaries.
func rescale(v VecPhysical, t [4]VecPhysical, c30 VecPhysical, rq Register, gw, off int) {
	field := func(f int) Mem { return Mem{Base: rq, Disp: 4 * (f*gw + off)} }
	tm, te, to, tt := t[0], t[1], t[2], t[3]
	VPADDD(field(0), v, v)
	VPSLLVD(field(2), v, v)
	// even lanes' products; the odd lanes' from the odd lanes moved
	// down and the multipliers read one lane on (the field's next int32
	// is in the block: another half's or the next field)
	VPMULDQ(field(1), v, te)
	VPSRLQ(U8(32), v, to)
	odd := field(1)
	odd.Disp += 4
	VPMULDQ(odd, to, to)
	VPADDQ(c30, te, te)
	VPADDQ(c30, to, to)
	// bits 31..62 of each product: the even ones shifted down into the
	// low half, the odd ones up into the high half, blended
	VPSRLQ(U8(31), te, te)
	VPSLLQ(U8(1), to, to)
	VPBLENDD(U8(0xAA), to, te, v)
	VPAND(field(4), v, tt)
	VPSRLD(U8(31), v, to)
	VPADDD(field(5), to, to)
	VPSRAVD(field(3), v, v)
	VPCMPGTD(to, tt, tm)
	VPSUBD(tm, v, v)
}

// requant is rescale, the output zero point and the clamp.
func requant(v VecPhysical, t [4]VecPhysical, c consts, rq Register, gw, off int) {
	if floatMode {
		requantF(v, t, c, rq, gw, off)
		return
	}
	rescale(v, t, c.c30, rq, gw, off)
	VPADDD(c.yz, v, v)
	VPMAXSD(c.lo, v, v)
	VPMINSD(c.hi, v, v)
}

// pack16 packs the int32 lanes of lo (8 channels) and hi (the next 8)
// into the 16 bytes of lo's XMM half, in channel order; t is a
// temporary.
func pack16(lo, hi, t VecPhysical) {
	VPACKSSDW(hi, lo, lo)
	VPERMQ(U8(0xD8), lo, lo)
	VEXTRACTI128(U8(1), lo, x(t))
	VPACKSSWB(x(t), x(lo), x(lo))
}

// store16 stores the 16 bytes of v at dst, only those whose bit is set
// in bits [shift, shift+16) of mask: one store when all are, else byte
// by byte.
func store16(v VecPhysical, dst Mem, mask, tmp GPVirtual, shift int, lbl string) {
	MOVQ(mask, tmp)
	if shift > 0 {
		SHRQ(U8(shift), tmp)
	}
	ANDL(U32(0xFFFF), tmp.As32())
	CMPL(tmp.As32(), U32(0xFFFF))
	JNE(LabelRef(lbl + "_part"))
	VMOVDQU(x(v), dst)
	JMP(LabelRef(lbl + "_end"))
	Label(lbl + "_part")
	for j := 0; j < 16; j++ {
		BTL(U8(j), tmp.As32())
		JCC(LabelRef(fmt.Sprintf("%s_%d", lbl, j)))
		d := dst
		d.Disp += j
		VPEXTRB(U8(j), x(v), d)
		Label(fmt.Sprintf("%s_%d", lbl, j))
	}
	Label(lbl + "_end")
}

// qgemm generates the tile kernel of mr rows and 16·nv channels,
// computed rp rows at a time (mr/rp passes over k, each with its own
// accumulators and requantisation): a tile of several passes keeps the
// VNNI tiles' contract while paying Go's call and loop once for more
// outputs.
// requantF is ONNX's requantisation of the 8 int32 lanes of v (channels
// off…off+7 of the float block at rq, laid out as asmgenq's requantF
// says; c holds yz and the float64 bounds lo′, hi′ broadcast):
// v = rint(clamp(float64(v+corr)·m, lo′, hi′)) + yz, ties to even (the
// MXCSR default, which Go keeps). Uses t[0] and t[1].
func requantF(v VecPhysical, t [4]VecPhysical, c consts, rq Register, gw, off int) {
	t0, t1 := t[0], t[1]
	VPADDD(Mem{Base: rq, Disp: 4 * off}, v, v)
	VEXTRACTI128(U8(1), v, x(t1))
	VCVTDQ2PD(x(v), t0)
	VCVTDQ2PD(x(t1), t1)
	VMULPD(Mem{Base: rq, Disp: 4*gw + 8*off}, t0, t0)
	VMULPD(Mem{Base: rq, Disp: 4*gw + 8*off + 32}, t1, t1)
	VMAXPD(c.lo, t0, t0)
	VMAXPD(c.lo, t1, t1)
	VMINPD(c.hi, t0, t0)
	VMINPD(c.hi, t1, t1)
	VCVTPD2DQY(t0, x(t0))
	VCVTPD2DQY(t1, x(t1))
	VINSERTI128(U8(1), x(t1), t0, v)
	VPADDD(c.yz, v, v)
}

func qgemm(mr, nv, rp int) {
	name := nameF(fmt.Sprintf("qgemmAVX2Tile%dx%d", mr, 16*nv))
	quads := 4 * nv
	nacc := rp * quads
	need := nacc + rp + 1
	if rp > 1 {
		need++ // a product register besides the weights'
	}
	if need > 16 || mr%rp != 0 {
		panic(name + ": too many registers")
	}
	TEXT(name, NOSPLIT, "func(k4 int, a *uint8, b *int8, rq *int32, y *int8, ldy, rows int, masks uint64)")
	Pragma("noescape")
	what := "its requantisation"
	if floatMode {
		what = "ONNX's float requantisation"
	}
	Doc(fmt.Sprintf("%s computes one %d×%d int8 GEMM tile with %s, on AVX2 (see the package asmgenq2).", name, mr, 16*nv, what))
	acc := func(i, q int) VecPhysical { return ymm[i*quads+q] }
	av := ymm[nacc : nacc+rp]
	bv := ymm[nacc+rp]
	prod := bv
	if rp > 1 {
		prod = ymm[nacc+rp+1]
	}
	var free []VecPhysical
	for i := 0; i < rp; i++ {
		for h := 0; h < 2*nv; h++ {
			free = append(free, acc(i, 2*h+1))
		}
	}
	// the requantisation's scalars stay in registers the k loop leaves
	// free, loaded once, where there are four such
	early := need+4 <= 16
	var c consts
	if early {
		c = consts{Y12, Y13, Y14, Y15}
		free = append(free, ymm[nacc:12]...)
	} else {
		free = append(free, ymm[nacc:]...)
		c = consts{free[4], free[5], free[6], free[7]}
	}
	t := [4]VecPhysical{free[0], free[1], free[2], free[3]}

	k4 := Load(Param("k4"), GP64())
	a0 := Load(Param("a"), GP64())
	b0 := Load(Param("b"), GP64())
	rq := Load(Param("rq"), GP64())
	y := Load(Param("y"), GP64())
	ldy := Load(Param("ldy"), GP64())
	rows := Load(Param("rows"), GP64())
	masks := GP64()
	Load(Param("masks"), masks)
	steps, a, b, tmp := GP64(), GP64(), GP64(), GP64()
	gw := 16 * nv
	if early {
		loadConsts(c, rq, gw)
	}
	for pass := 0; pass < mr/rp; pass++ {
		lbl := fmt.Sprintf("%s_p%d", name, pass)
		if pass > 0 {
			CMPQ(rows, U32(pass*rp))
			JLE(LabelRef(name + "_done"))
		}
		MOVQ(k4, steps)
		SHRQ(U8(2), steps)
		LEAQ(Mem{Base: a0, Disp: 4 * rp * pass}, a)
		MOVQ(b0, b)
		for i := 0; i < rp; i++ {
			for q := 0; q < quads; q++ {
				VPXOR(acc(i, q), acc(i, q), acc(i, q))
			}
		}
		Label(lbl + "_loop")
		for i := 0; i < rp; i++ {
			VPBROADCASTD(Mem{Base: a, Disp: 4 * i}, x(av[i]))
			VPMOVZXBW(x(av[i]), av[i])
		}
		for q := 0; q < quads; q++ {
			VPMOVSXBW(Mem{Base: b, Disp: 16 * q}, bv)
			for i := 0; i < rp; i++ {
				p := prod
				if i == rp-1 {
					p = bv
				}
				VPMADDWD(av[i], bv, p)
				VPADDD(p, acc(i, q), acc(i, q))
			}
		}
		ADDQ(U32(4*mr), a)
		ADDQ(U32(64*nv), b)
		DECQ(steps)
		JNZ(LabelRef(lbl + "_loop"))

		// each channel's two lanes added, in channel order: accumulator
		// (i, 2h) holds channels 8h..8h+7 of the pass's row i
		for i := 0; i < rp; i++ {
			for h := 0; h < 2*nv; h++ {
				VPHADDD(acc(i, 2*h+1), acc(i, 2*h), acc(i, 2*h))
				VPERMQ(U8(0xD8), acc(i, 2*h), acc(i, 2*h))
			}
		}
		if !early {
			loadConsts(c, rq, gw)
		}
		for i := 0; i < rp; i++ {
			r := pass*rp + i
			if r > 0 && i > 0 {
				CMPQ(rows, U32(r))
				JLE(LabelRef(name + "_done"))
			}
			for v := 0; v < nv; v++ {
				lo, hi := acc(i, 4*v), acc(i, 4*v+2)
				requant(lo, t, c, rq, gw, 16*v)
				requant(hi, t, c, rq, gw, 16*v+8)
				pack16(lo, hi, t[0])
				store16(lo, Mem{Base: y, Disp: 16 * v}, masks, tmp, 16*v, fmt.Sprintf("%s_st%d_%d", name, r, v))
			}
			if r+1 < mr {
				ADDQ(ldy, y)
			}
		}
	}
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

// depthwise generates dwqAVX2, dwqAVX512's arguments on AVX2 with the
// taps taken in pairs: nt output pixels of one 16-channel block of a
// depthwise convolution over a padded input (every tap in bounds; see
// plugins/native/quant.go):
//
//	acc[p] = corr + Σ_t w[t]·x[p·xstep + offs[t]]   (int8 × int8 in int32)
//
// requantised like the GEMM tiles (rq a block of 16 channels) and stored
// at y + p·ystep under the 16-bit mask. taps counts pairs of taps: offs
// has 2·taps entries and w, per pair, 16 int32 each holding the two
// taps' int16 weights of a channel (the first in the low half; an odd
// tap count pads a zero weight). The two taps' bytes are interleaved
// (VPUNPCKLBW, VPUNPCKHBW), sign-extended to int16 and VPMADDWD
// multiplies and adds each channel's pair exactly. Four pixels at a
// time, then one.
func depthwise() {
	name := nameF("dwqAVX2")
	TEXT(name, NOSPLIT, "func(nt, taps int, offs *int, w *int32, x *int8, xstep int, rq *int32, y *int8, ystep int, mask uint64)")
	Pragma("noescape")
	if floatMode {
		Doc(name + " computes nt output pixels of one 16-channel block of an int8 depthwise convolution with ONNX's float requantisation, on AVX2, its taps in pairs (see the package asmgenq2).")
	} else {
		Doc(name + " computes nt output pixels of one 16-channel block of an int8 depthwise convolution, on AVX2, its taps in pairs (see the package asmgenq2).")
	}
	nt := Load(Param("nt"), GP64())
	xp := Load(Param("x"), GP64())
	xstep := Load(Param("xstep"), GP64())
	rq := Load(Param("rq"), GP64())
	y := Load(Param("y"), GP64())
	ystep := Load(Param("ystep"), GP64())
	mask := GP64()
	Load(Param("mask"), mask)
	xs3 := GP64()
	LEAQ(Mem{Base: xstep, Index: xstep, Scale: 2}, xs3)
	acc := func(p, h int) VecPhysical { return ymm[2*p+h] }
	u, v := [2]VecPhysical{Y8, Y10}, [2]VecPhysical{Y9, Y11}
	t := [4]VecPhysical{Y8, Y9, Y10, Y11}
	c := consts{Y12, Y13, Y14, Y15}
	loadConsts(c, rq, 16)
	tp, b0, b1, wp, off, tmp := GP64(), GP64(), GP64(), GP64(), GP64(), GP64()
	for _, unroll := range []int{4, 1} {
		lbl := fmt.Sprintf("dwq2_%d", unroll)
		if floatMode {
			lbl = fmt.Sprintf("dwq2f_%d", unroll)
		}
		Label(lbl)
		CMPQ(nt, U32(unroll))
		JL(LabelRef(lbl + "_end"))
		for p := 0; p < unroll; p++ {
			for h := 0; h < 2; h++ {
				VPXOR(acc(p, h), acc(p, h), acc(p, h))
			}
		}
		// reloaded for each group of pixels: too few registers to keep
		Load(Param("taps"), tp)
		Load(Param("w"), wp)
		Load(Param("offs"), off)
		Label(lbl + "_tap")
		MOVQ(xp, b0)
		ADDQ(Mem{Base: off}, b0)
		MOVQ(xp, b1)
		ADDQ(Mem{Base: off, Disp: 8}, b1)
		px := func(base Register, p int) Mem {
			return []Mem{{Base: base}, {Base: base, Index: xstep, Scale: 1}, {Base: base, Index: xstep, Scale: 2}, {Base: base, Index: xs3, Scale: 1}}[p]
		}
		for p := 0; p < unroll; p++ {
			// channels 0..7 and 8..15 as (tap 0, tap 1) int16 pairs
			lo, hi := u[p%2], v[p%2]
			VMOVDQU(px(b0, p), x(lo))
			VPUNPCKHBW(px(b1, p), x(lo), x(hi))
			VPUNPCKLBW(px(b1, p), x(lo), x(lo))
			VPMOVSXBW(x(lo), lo)
			VPMOVSXBW(x(hi), hi)
			VPMADDWD(Mem{Base: wp}, lo, lo)
			VPMADDWD(Mem{Base: wp, Disp: 32}, hi, hi)
			VPADDD(lo, acc(p, 0), acc(p, 0))
			VPADDD(hi, acc(p, 1), acc(p, 1))
		}
		ADDQ(U8(16), off)
		ADDQ(U8(64), wp)
		DECQ(tp)
		JNZ(LabelRef(lbl + "_tap"))
		for p := 0; p < unroll; p++ {
			requant(acc(p, 0), t, c, rq, 16, 0)
			requant(acc(p, 1), t, c, rq, 16, 8)
			pack16(acc(p, 0), acc(p, 1), t[0])
			store16(acc(p, 0), Mem{Base: y}, mask, tmp, 0, fmt.Sprintf("%s_st%d", lbl, p))
			ADDQ(ystep, y)
			ADDQ(xstep, xp)
		}
		SUBQ(U32(unroll), nt)
		JMP(LabelRef(lbl))
		Label(lbl + "_end")
	}
	VZEROUPPER()
	RET()
}

// add generates qaddAVX2, qaddAVX512's contract on AVX2: y =
// requant(rescale(a) + rescale(b)) for n&^15 int8 elements, TFLite's
// int8 Add; p holds three requantisation blocks of 16 identical lanes
// (a's, b's and the sum's, each 6·16+8 int32: corr is the negated input
// zero point, left includes the 2^20 of the rescale).
func add() {
	TEXT("qaddAVX2", NOSPLIT, "func(n int, a, b *int8, p *int32, y *int8)")
	Pragma("noescape")
	Doc("qaddAVX2 computes n&^15 elements of an int8 Add, on AVX2 (see the package asmgenq2).")
	n := Load(Param("n"), GP64())
	a := Load(Param("a"), GP64())
	b := Load(Param("b"), GP64())
	p := Load(Param("p"), GP64())
	y := Load(Param("y"), GP64())
	pb, py := GP64(), GP64()
	LEAQ(Mem{Base: p, Disp: 4 * (6*16 + 8)}, pb)
	LEAQ(Mem{Base: p, Disp: 8 * (6*16 + 8)}, py)
	t := [4]VecPhysical{Y4, Y5, Y6, Y7}
	c := consts{Y8, Y9, Y10, Y11}
	loadConsts(c, py, 16)
	SHRQ(U8(4), n)
	JZ(LabelRef("qadd2_done"))
	Label("qadd2_loop")
	VPMOVSXBD(Mem{Base: a}, Y0)
	VPMOVSXBD(Mem{Base: a, Disp: 8}, Y1)
	VPMOVSXBD(Mem{Base: b}, Y2)
	VPMOVSXBD(Mem{Base: b, Disp: 8}, Y3)
	rescale(Y0, t, c.c30, p, 16, 0)
	rescale(Y1, t, c.c30, p, 16, 8)
	rescale(Y2, t, c.c30, pb, 16, 0)
	rescale(Y3, t, c.c30, pb, 16, 8)
	VPADDD(Y2, Y0, Y0)
	VPADDD(Y3, Y1, Y1)
	requant(Y0, t, c, py, 16, 0)
	requant(Y1, t, c, py, 16, 8)
	pack16(Y0, Y1, Y4)
	VMOVDQU(X0, Mem{Base: y})
	ADDQ(U8(16), a)
	ADDQ(U8(16), b)
	ADDQ(U8(16), y)
	DECQ(n)
	JNZ(LabelRef("qadd2_loop"))
	Label("qadd2_done")
	VZEROUPPER()
	RET()
}
