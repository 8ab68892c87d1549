// Command asmgen generates the amd64 assembly micro-kernels of the native
// backend with avo (github.com/mmcloughlin/avo). It is a build-time tool:
// nothing at run time imports it. The generated files are committed; the
// package's TestGeneratedAssemblyIsCurrent runs this command and fails when
// they are stale.
//
//	go run ./plugins/native/internal/asmgen -out plugins/native/kernels_amd64.s -stubs plugins/native/kernels_amd64.go -pkg native
//
// Every GEMM micro-kernel computes one MR×NR tile of C from MR rows of A,
// read in place (row i at a + i·lda, kc floats each: A is never packed) and
// a B panel of kc rows of NR floats, ldb floats apart (NR: a packed panel;
// more: NR columns of a row-major B read in place):
//
//	C[i][j] = init[i][j] + Σ_k A[i·lda+k] · B[k·ldb+j]
//
// where init is chosen by flags&3: 0 zero, 1 the tile of C itself
// (accumulate), 2 a column bias (NR floats at bias), 3 a row bias (MR
// floats at bias, one per row). With flags&4 the result is clamped to
// [lo, hi] (NaN stays NaN). C rows are ldc floats apart.
package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/mmcloughlin/avo/attr"
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
	"github.com/switchyard-hal/switchyard/plugins/native/internal/avokit"
)

const signature = "func(kc int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, bias *float32, flags int, lo, hi float32)"

func main() {
	gemm("gemmAVX2x6x16", 6, 16, 8, []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11}, []VecPhysical{Y12, Y13}, Y14, Y15, false)
	zs := []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15,
		Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27}
	gemm("gemmAVX512x14x32", 14, 32, 16, zs, []VecPhysical{Z28, Z29}, Z30, Z31, true)
	// the tails: kernels of fewer rows for a GEMM's last, partial row
	// tile (no wasted rows, no copies through scratch)
	ys := []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11}
	for h := 1; h < 6; h++ {
		gemm(fmt.Sprintf("gemmAVX2x%dx16", h), h, 16, 8, ys[:2*h], []VecPhysical{Y12, Y13}, Y14, Y15, false)
	}
	for h := 1; h < 14; h++ {
		gemm(fmt.Sprintf("gemmAVX512x%dx32", h), h, 32, 16, zs[:2*h], []VecPhysical{Z28, Z29}, Z30, Z31, true)
	}
	// the same with A packed once (the weights of a convolution): one
	// sequential stream of A instead of mr rows lda apart
	for h := 1; h <= 14; h++ {
		gemm(fmt.Sprintf("gemmAVX512x%dx32PA", h), h, 32, 16, zs[:2*h], []VecPhysical{Z28, Z29}, Z30, Z31, true, 14)
	}
	// and with A transposed in place (a channel-major activation read as
	// the rows of Xᵀ: the tile's mr values of one k consecutive, lda
	// floats from the next k's): t2c_conv1x1t.go
	for h := 1; h <= 14; h++ {
		gemm(fmt.Sprintf("gemmAVX512x%dx32AT", h), h, 32, 16, zs[:2*h], []VecPhysical{Z28, Z29}, Z30, Z31, true, -1)
	}
	axpy()
	clampVec()
	maxPool2x2()
	maxInto()
	transpose8()
	deinterleave2()
	expSum()
	dot()
	chainKernel("chainAVX2", false)
	copyRows32()
	chainKernel("chain512", true)
	for _, rv := range dwShapes {
		depthwiseTile(rv[0], rv[1])
	}
	for _, r := range []int{1, 2, 4} {
		for _, v := range []int{1, 2} {
			depthwiseMasked(r, v)
		}
	}
	for _, r := range []int{1, 2, 4, 8} {
		for _, v := range []int{1, 2, 4} {
			if r*v <= 16 {
				depthwiseTile512(r, v)
			}
		}
		depthwiseMasked512(r)
	}
	for _, l := range []int{16, 8} {
		for _, s := range []int{1, 2} {
			for n := 1; n <= 8; n++ {
				depthwisePacked(l, n, s)
			}
		}
	}
	for _, op := range []string{"Add", "Sub", "Mul", "Div"} {
		for _, mode := range []string{"VV", "VS", "SV"} {
			binary(op, mode)
		}
	}
	Generate()
}

// gemm emits one micro-kernel of mr rows and nr columns held in acc (row
// major, nr/lanes registers a row), with bs the B loads and t0, t1 two
// scratch registers. With bcst the A values are broadcast from memory
// inside the FMA (AVX-512 embedded broadcast).
//
// With astep > 0, A is packed instead (gemmPacked): the tile's mr values
// of one k are consecutive, astep floats from the next k's (lda unused).
// With astep < 0, the same layout with lda floats from one k's values to
// the next's (A transposed, read in place).
func gemm(name string, mr, nr, lanes int, acc, bs []VecPhysical, t0, t1 VecPhysical, bcst bool, astep ...int) {
	step := 0
	if len(astep) > 0 {
		step = astep[0]
	}
	vpr := nr / lanes // vectors per row
	if len(acc) != mr*vpr || len(bs) != vpr {
		panic(fmt.Sprintf("%s: %d accumulators for %d×%d", name, len(acc), mr, nr))
	}
	at := func(i, v int) VecPhysical { return acc[i*vpr+v] }
	TEXT(name, NOSPLIT, signature)
	Doc(fmt.Sprintf("%s computes one %d×%d tile of C (see the package asmgen for the contract).", name, mr, nr))
	Pragma("noescape")
	kc := Load(Param("kc"), GP64())
	// A's rows are addressed as base + lda·{1,2,4,8}: a few base pointers
	// (rows), each advancing one float a step
	a0 := Load(Param("a"), GP64())
	row := make([]Mem, mr)
	var bases []Register
	if step != 0 {
		bases = append(bases, a0)
		for i := range row {
			row[i] = Mem{Base: a0, Disp: 4 * i}
		}
	}
	var lda Register
	if step <= 0 {
		lda = Load(Param("lda"), GP64())
		SHLQ(U8(2), lda)
	}
	for i := 0; i < mr && step == 0; i++ {
		if row[i].Base != nil {
			continue
		}
		var base Register = a0
		if i > 0 {
			base = GP64()
			IMUL3Q(U32(i), lda, base)
			ADDQ(a0, base)
		}
		bases = append(bases, base)
		row[i] = Mem{Base: base}
		for _, sc := range []int{1, 2, 4, 8} {
			if r := i + sc; r < mr && row[r].Base == nil {
				row[r] = Mem{Base: base, Index: lda, Scale: uint8(sc)}
			}
		}
	}
	b := Load(Param("b"), GP64())
	ldb := Load(Param("ldb"), GP64())
	SHLQ(U8(2), ldb) // bytes
	c := Load(Param("c"), GP64())
	ldc := Load(Param("ldc"), GP64())
	SHLQ(U8(2), ldc) // bytes
	flags := Load(Param("flags"), GP64())
	mode := GP64()
	MOVQ(flags, mode)
	ANDQ(U8(3), mode)
	cp := GP64()

	// init
	CMPQ(mode, U8(1))
	JEQ(LabelRef(name + "_loadc"))
	CMPQ(mode, U8(2))
	JEQ(LabelRef(name + "_colbias"))
	CMPQ(mode, U8(3))
	JEQ(LabelRef(name + "_rowbias"))
	for i := range acc {
		VXORPS(acc[i], acc[i], acc[i])
	}
	JMP(LabelRef(name + "_loop"))

	Label(name + "_loadc")
	MOVQ(c, cp)
	for i := 0; i < mr; i++ {
		for v := 0; v < vpr; v++ {
			VMOVUPS(Mem{Base: cp, Disp: 4 * lanes * v}, at(i, v))
		}
		if i < mr-1 {
			ADDQ(ldc, cp)
		}
	}
	JMP(LabelRef(name + "_loop"))

	Label(name + "_colbias")
	bias := Load(Param("bias"), GP64())
	for v := 0; v < vpr; v++ {
		VMOVUPS(Mem{Base: bias, Disp: 4 * lanes * v}, bs[v])
	}
	for i := 0; i < mr; i++ {
		for v := 0; v < vpr; v++ {
			VMOVAPS(bs[v], at(i, v))
		}
	}
	JMP(LabelRef(name + "_loop"))

	Label(name + "_rowbias")
	bias2 := Load(Param("bias"), GP64())
	for i := 0; i < mr; i++ {
		VBROADCASTSS(Mem{Base: bias2, Disp: 4 * i}, at(i, 0))
		for v := 1; v < vpr; v++ {
			VMOVAPS(at(i, 0), at(i, v))
		}
	}

	// main loop over k
	Label(name + "_loop")
	TESTQ(kc, kc)
	JEQ(LabelRef(name + "_done"))
	Label(name + "_k")
	for v := 0; v < vpr; v++ {
		VMOVUPS(Mem{Base: b, Disp: 4 * lanes * v}, bs[v])
	}
	for i := 0; i < mr; i++ {
		if bcst {
			// one broadcast a row into a register, alternating two (the
			// next row's load overlaps this row's FMAs), rather than an
			// embedded broadcast per FMA: half the loads
			t := []VecPhysical{t0, t1}[i%2]
			VBROADCASTSS(row[i], t)
			for v := 0; v < vpr; v++ {
				VFMADD231PS(bs[v], t, at(i, v))
			}
		} else {
			VBROADCASTSS(row[i], t0)
			for v := 0; v < vpr; v++ {
				VFMADD231PS(bs[v], t0, at(i, v))
			}
		}
	}
	for _, base := range bases {
		if step > 0 {
			ADDQ(U32(4*step), base)
		} else if step < 0 {
			ADDQ(lda, base)
		} else {
			ADDQ(U8(4), base)
		}
	}
	ADDQ(ldb, b)
	DECQ(kc)
	JNE(LabelRef(name + "_k"))

	Label(name + "_done")
	TESTQ(U32(4), flags)
	JEQ(LabelRef(name + "_store"))
	VBROADCASTSS(avokit.ParamAddr("lo"), t0)
	VBROADCASTSS(avokit.ParamAddr("hi"), t1)
	for i := range acc {
		// max(lo, x) and min(hi, x) with x second: a NaN x is kept
		VMAXPS(acc[i], t0, acc[i])
		VMINPS(acc[i], t1, acc[i])
	}

	Label(name + "_store")
	for i := 0; i < mr; i++ {
		for v := 0; v < vpr; v++ {
			VMOVUPS(at(i, v), Mem{Base: c, Disp: 4 * lanes * v})
		}
		if i < mr-1 {
			ADDQ(ldc, c)
		}
	}
	VZEROUPPER()
	RET()
}

// axpy emits axpyAVX2: y[i] += a·x[i] for i < n (AVX2+FMA).
func axpy() {
	TEXT("axpyAVX2", NOSPLIT, "func(n int, a float32, x, y *float32)")
	Doc("axpyAVX2 computes y[i] += a·x[i] for i < n.")
	Pragma("noescape")
	n := Load(Param("n"), GP64())
	x := Load(Param("x"), GP64())
	y := Load(Param("y"), GP64())
	va := YMM()
	VBROADCASTSS(avokit.ParamAddr("a"), va)
	vs := []VecVirtual{YMM(), YMM(), YMM(), YMM()}
	Label("axpy_32")
	CMPQ(n, U8(32))
	JLT(LabelRef("axpy_8"))
	for i, v := range vs {
		VMOVUPS(Mem{Base: y, Disp: 32 * i}, v)
		VFMADD231PS(Mem{Base: x, Disp: 32 * i}, va, v)
		VMOVUPS(v, Mem{Base: y, Disp: 32 * i})
	}
	ADDQ(U32(128), x)
	ADDQ(U32(128), y)
	SUBQ(U8(32), n)
	JMP(LabelRef("axpy_32"))
	Label("axpy_8")
	CMPQ(n, U8(8))
	JLT(LabelRef("axpy_1"))
	VMOVUPS(Mem{Base: y}, vs[0])
	VFMADD231PS(Mem{Base: x}, va, vs[0])
	VMOVUPS(vs[0], Mem{Base: y})
	ADDQ(U8(32), x)
	ADDQ(U8(32), y)
	SUBQ(U8(8), n)
	JMP(LabelRef("axpy_8"))
	Label("axpy_1")
	TESTQ(n, n)
	JEQ(LabelRef("axpy_done"))
	s := XMM()
	VMOVSS(Mem{Base: y}, s)
	VFMADD231SS(Mem{Base: x}, va.AsX(), s)
	VMOVSS(s, Mem{Base: y})
	ADDQ(U8(4), x)
	ADDQ(U8(4), y)
	DECQ(n)
	JMP(LabelRef("axpy_1"))
	Label("axpy_done")
	VZEROUPPER()
	RET()
}

// clampVec emits clampAVX2: y[i] = min(max(x[i], lo), hi) for i < n, a NaN
// x kept (x second in both).
func clampVec() {
	TEXT("clampAVX2", NOSPLIT, "func(n int, lo, hi float32, x, y *float32)")
	Doc("clampAVX2 computes y[i] = min(max(x[i], lo), hi) for i < n, keeping NaN.")
	Pragma("noescape")
	n := Load(Param("n"), GP64())
	x := Load(Param("x"), GP64())
	y := Load(Param("y"), GP64())
	lo, hi := YMM(), YMM()
	VBROADCASTSS(avokit.ParamAddr("lo"), lo)
	VBROADCASTSS(avokit.ParamAddr("hi"), hi)
	v := YMM()
	Label("clamp_8")
	CMPQ(n, U8(8))
	JLT(LabelRef("clamp_1"))
	VMOVUPS(Mem{Base: x}, v)
	VMAXPS(v, lo, v)
	VMINPS(v, hi, v)
	VMOVUPS(v, Mem{Base: y})
	ADDQ(U8(32), x)
	ADDQ(U8(32), y)
	SUBQ(U8(8), n)
	JMP(LabelRef("clamp_8"))
	Label("clamp_1")
	TESTQ(n, n)
	JEQ(LabelRef("clamp_done"))
	s := XMM()
	VMOVSS(Mem{Base: x}, s)
	VMAXSS(s, lo.AsX(), s)
	VMINSS(s, hi.AsX(), s)
	VMOVSS(s, Mem{Base: y})
	ADDQ(U8(4), x)
	ADDQ(U8(4), y)
	DECQ(n)
	JMP(LabelRef("clamp_1"))
	Label("clamp_done")
	VZEROUPPER()
	RET()
}

// binary emits <op><mode>AVX2: y[i] = a op b for i < n, with a and b
// vectors (VV), b a scalar (VS) or a a scalar (SV).
func binary(op, mode string) {
	name := strings.ToLower(op) + mode + "AVX2"
	sig := map[string]string{
		"VV": "func(n int, a, b, y *float32)",
		"VS": "func(n int, a *float32, b float32, y *float32)",
		"SV": "func(n int, a float32, b, y *float32)",
	}[mode]
	TEXT(name, NOSPLIT, sig)
	Doc(fmt.Sprintf("%s computes y[i] = a %s b for i < n (%s).", name, map[string]string{"Add": "+", "Sub": "-", "Mul": "·", "Div": "/"}[op],
		map[string]string{"VV": "a and b vectors", "VS": "b a scalar", "SV": "a a scalar"}[mode]))
	Pragma("noescape")
	vec := map[string]func(...Op){"Add": VADDPS, "Sub": VSUBPS, "Mul": VMULPS, "Div": VDIVPS}[op]
	sca := map[string]func(...Op){"Add": VADDSS, "Sub": VSUBSS, "Mul": VMULSS, "Div": VDIVSS}[op]
	n := Load(Param("n"), GP64())
	y := Load(Param("y"), GP64())
	var a, b Register
	sa, sb := YMM(), YMM()
	switch mode {
	case "VV":
		a, b = Load(Param("a"), GP64()), Load(Param("b"), GP64())
	case "VS":
		a = Load(Param("a"), GP64())
		VBROADCASTSS(avokit.ParamAddr("b"), sb)
	case "SV":
		b = Load(Param("b"), GP64())
		VBROADCASTSS(avokit.ParamAddr("a"), sa)
	}
	advance := func(bytes int) {
		for _, r := range []Register{a, b, y} {
			if r != nil {
				ADDQ(U8(bytes), r)
			}
		}
	}
	// one step of w lanes (8: ymm, 1: the scalar tail)
	step := func(lanes int) {
		va, vb := YMM(), YMM()
		mov, f := VMOVUPS, vec
		if lanes == 1 {
			mov, f = VMOVSS, sca
		}
		x := func(v VecVirtual) VecVirtual {
			if lanes == 1 {
				return v.AsX().(VecVirtual)
			}
			return v
		}
		switch mode {
		case "VV":
			mov(Mem{Base: a}, x(va))
			mov(Mem{Base: b}, x(vb))
			f(x(vb), x(va), x(va))
			mov(x(va), Mem{Base: y})
		case "VS":
			mov(Mem{Base: a}, x(va))
			f(x(sb), x(va), x(va))
			mov(x(va), Mem{Base: y})
		case "SV":
			mov(Mem{Base: b}, x(vb))
			f(x(vb), x(sa), x(vb))
			mov(x(vb), Mem{Base: y})
		}
	}
	Label(name + "_8")
	CMPQ(n, U8(8))
	JLT(LabelRef(name + "_1"))
	step(8)
	advance(32)
	SUBQ(U8(8), n)
	JMP(LabelRef(name + "_8"))
	Label(name + "_1")
	TESTQ(n, n)
	JEQ(LabelRef(name + "_done"))
	step(1)
	advance(4)
	DECQ(n)
	JMP(LabelRef(name + "_1"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

// dwShapes are the R×V output tiles (R rows of V vectors of 8 columns)
// of the depthwise kernels: at most 8 accumulators.
var dwShapes = [][2]int{{1, 1}, {1, 2}, {1, 4}, {2, 1}, {2, 2}, {2, 4}, {4, 1}, {4, 2}}

// depthwiseTile emits dwAVX2x<R>x<V>: nt R×8V tiles side by side of a
// depthwise convolution's output, every tap a broadcast FMA of whole
// vectors, the accumulators in registers across the taps:
//
//	y[r·ldy + 8V·i + j] = clamp(bias + Σ_t w[t] · x[offs[t] + r·ldx + 8V·i + j])
//
// for i < nt, r < R, j < 8V; offs, ldx and ldy count floats; the clamp
// to [lo, hi] (NaN kept) only when doClamp != 0. x is a zero-padded (for
// column strides > 1, phase-split) plane, or the input itself where every
// window lies inside it.
func depthwiseTile(R, V int) {
	name := fmt.Sprintf("dwAVX2x%dx%d", R, V)
	TEXT(name, NOSPLIT, "func(nt, taps int, offs *int, w, x *float32, ldx int, y *float32, ldy int, bias float32, doClamp int, lo, hi float32)")
	Doc(fmt.Sprintf("%s computes nt %d×%d tiles of a depthwise convolution (see depthwiseTile in the package asmgen).", name, R, 8*V))
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
		acc[i] = YMM()
	}
	taps, offs, w := GP64(), GP64(), GP64()
	p, off, wv := GP64(), GP64(), YMM()
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
	for r := 0; r < R; r++ {
		var m Mem
		switch r {
		case 0:
			m = Mem{Base: p}
		case 1:
			m = Mem{Base: p, Index: ldx, Scale: 1}
		case 2:
			m = Mem{Base: p, Index: ldx, Scale: 2}
		default:
			m = Mem{Base: p, Index: ldx3, Scale: 1}
		}
		for v := 0; v < V; v++ {
			mv := m
			mv.Disp = 32 * v
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
	lo, hi := YMM(), YMM()
	VBROADCASTSS(avokit.ParamAddr("lo"), lo)
	VBROADCASTSS(avokit.ParamAddr("hi"), hi)
	for i := range acc {
		// max(lo, x) and min(hi, x) with x second: a NaN x is kept
		VMAXPS(acc[i], lo, acc[i])
		VMINPS(acc[i], hi, acc[i])
	}
	Label(name + "_store")
	MOVQ(y, p)
	for r := 0; r < R; r++ {
		for v := 0; v < V; v++ {
			VMOVUPS(acc[r*V+v], Mem{Base: p, Disp: 32 * v})
		}
		if r < R-1 {
			ADDQ(ldy, p)
		}
	}
	ADDQ(U32(32*V), x)
	ADDQ(U32(32*V), y)
	DECQ(nt)
	JMP(LabelRef(name + "_tile"))
	Label(name + "_end")
	VZEROUPPER()
	RET()
}

// depthwiseMasked emits dwMaskAVX2x<R>x<V>: an R×8V tile of a depthwise
// convolution read straight from the unpadded input. Its taps come in two
// lists of (offset, tap index) pairs: plain ones, whose 8 lanes all lie
// inside the input, one broadcast FMA from memory each, and masked ones,
// whose load is masked (lanes outside the input read as zero and touch no
// memory); the store is masked too:
//
//	y[r·ldy + j] = clamp(bias + Σ_plain w[t] · x[xoff + off + r·ldx + j]
//	                          + Σ_masked w[t] · (masks[8V·i+j] < 0 ? x[xoff + off + r·ldx + j] : 0))
//
// for r < R and the lanes j < 8V whose smask[j] < 0 (every lane when
// smask is nil); offsets, xoff, ldx
// and ldy count floats (xoff + off may be negative where its lanes are
// masked off); the clamp to [lo, hi] (NaN kept) only when doClamp != 0.
func depthwiseMasked(R, V int) {
	name := fmt.Sprintf("dwMaskAVX2x%dx%d", R, V)
	TEXT(name, NOSPLIT, "func(np int, plain *int, nm int, masked *int, masks *int32, w, x *float32, xoff, ldx int, y *float32, ldy int, bias float32, doClamp int, lo, hi float32, smask *int32)")
	Doc(fmt.Sprintf("%s computes a %d×%d tile of a depthwise convolution from the unpadded input, some taps with masked loads (see depthwiseMasked in the package asmgen).", name, R, 8*V))
	Pragma("noescape")
	w := Load(Param("w"), GP64())
	x := Load(Param("x"), GP64())
	xoff := Load(Param("xoff"), GP64())
	LEAQ(Mem{Base: x, Index: xoff, Scale: 4}, x)
	ldx := Load(Param("ldx"), GP64())
	SHLQ(U8(2), ldx)
	acc := make([]VecVirtual, R*V)
	for i := range acc {
		acc[i] = YMM()
	}
	VBROADCASTSS(avokit.ParamAddr("bias"), acc[0])
	for i := 1; i < len(acc); i++ {
		VMOVAPS(acc[0], acc[i])
	}
	p, off, ti, wv, t := GP64(), GP64(), GP64(), YMM(), YMM()
	mk := []VecVirtual{YMM(), YMM()}[:V]
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
		for v := 0; v < V; v++ {
			VFMADD231PS(Mem{Base: p, Disp: 32 * v}, wv, acc[r*V+v])
		}
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
	for v := 0; v < V; v++ {
		VMOVDQU(Mem{Base: masks, Disp: 32 * v}, mk[v])
	}
	for r := 0; r < R; r++ {
		for v := 0; v < V; v++ {
			VMASKMOVPS(Mem{Base: p, Disp: 32 * v}, mk[v], t)
			VFMADD231PS(t, wv, acc[r*V+v])
		}
		if r < R-1 {
			ADDQ(ldx, p)
		}
	}
	ADDQ(U8(16), list)
	ADDQ(U8(32*V), masks)
	DECQ(n)
	JMP(LabelRef(name + "_mtap"))

	Label(name + "_done")
	doClamp := Load(Param("doClamp"), GP64())
	TESTQ(doClamp, doClamp)
	JEQ(LabelRef(name + "_store"))
	lo, hi := YMM(), YMM()
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
	for v := 0; v < V; v++ {
		VMOVDQU(Mem{Base: smask, Disp: 32 * v}, mk[v])
	}
	for r := 0; r < R; r++ {
		for v := 0; v < V; v++ {
			VMASKMOVPS(acc[r*V+v], mk[v], Mem{Base: y, Disp: 32 * v})
		}
		if r < R-1 {
			ADDQ(ldy, y)
		}
	}
	VZEROUPPER()
	RET()
	// every lane stored (smask nil): plain stores, which unlike masked
	// ones are cheap on every x86
	Label(name + "_full")
	for r := 0; r < R; r++ {
		for v := 0; v < V; v++ {
			VMOVUPS(acc[r*V+v], Mem{Base: y, Disp: 32 * v})
		}
		if r < R-1 {
			ADDQ(ldy, y)
		}
	}
	VZEROUPPER()
	RET()
}

// maxPool2x2 emits maxPool2x2AVX2: y[j] = the largest of r0[2j],
// r0[2j+1], r1[2j], r1[2j+1] for j < n rounded down to whole vectors of
// 8, a NaN never winning (all NaN: ninf), as a MaxPool of a 2×2 window
// with stride 2 over two input rows. It returns nothing; the caller does
// the last n%8 outputs.
func maxPool2x2() {
	TEXT("maxPool2x2AVX2", NOSPLIT, "func(n int, r0, r1, y *float32, ninf float32)")
	Doc("maxPool2x2AVX2 computes y[j] = max(r0[2j], r0[2j+1], r1[2j], r1[2j+1]) for j < n&^7, NaN never winning (see the package asmgen).")
	Pragma("noescape")
	n := Load(Param("n"), GP64())
	r0 := Load(Param("r0"), GP64())
	r1 := Load(Param("r1"), GP64())
	y := Load(Param("y"), GP64())
	ninf := YMM()
	VBROADCASTSS(avokit.ParamAddr("ninf"), ninf)
	s0, s1, b0, b1, ev, od := YMM(), YMM(), YMM(), YMM(), YMM(), YMM()
	Label("mp2_8")
	CMPQ(n, U8(8))
	JLT(LabelRef("mp2_done"))
	// Intel max(x, s) returns s when either is NaN (or both are zero):
	// each new value x first, the running maximum s second
	VMOVUPS(Mem{Base: r0}, s0)
	VMOVUPS(Mem{Base: r0, Disp: 32}, s1)
	VMAXPS(ninf, s0, s0)
	VMAXPS(ninf, s1, s1)
	VMOVUPS(Mem{Base: r1}, b0)
	VMOVUPS(Mem{Base: r1, Disp: 32}, b1)
	VMAXPS(s0, b0, s0)
	VMAXPS(s1, b1, s1)
	// even and odd columns: per 128-bit lane s0[0] s0[2] s1[0] s1[2]
	VSHUFPS(U8(0x88), s1, s0, ev)
	VSHUFPS(U8(0xDD), s1, s0, od)
	VMAXPS(ev, od, ev)
	// outputs 0 1 4 5 | 2 3 6 7 back in order
	VPERMPD(U8(0xD8), ev, ev)
	VMOVUPS(ev, Mem{Base: y})
	ADDQ(U8(64), r0)
	ADDQ(U8(64), r1)
	ADDQ(U8(32), y)
	SUBQ(U8(8), n)
	JMP(LabelRef("mp2_8"))
	Label("mp2_done")
	VZEROUPPER()
	RET()
}

// maxInto emits maxIntoAVX2: y[i] = r[i] if r[i] > y[i] (a NaN in r never
// wins) for i < n&^7: the passes of separable max pooling.
func maxInto() {
	TEXT("maxIntoAVX2", NOSPLIT, "func(n int, r, y *float32)")
	Doc("maxIntoAVX2 computes y[i] = max(y[i], r[i]) for i < n&^7, a NaN in r never winning.")
	Pragma("noescape")
	n := Load(Param("n"), GP64())
	r := Load(Param("r"), GP64())
	y := Load(Param("y"), GP64())
	a, b := YMM(), YMM()
	Label("mxi_16")
	CMPQ(n, U8(16))
	JLT(LabelRef("mxi_8"))
	// Intel max returns its second source when either is NaN: the new
	// values r first, the running maximum y second
	VMOVUPS(Mem{Base: r}, a)
	VMOVUPS(Mem{Base: r, Disp: 32}, b)
	VMAXPS(Mem{Base: y}, a, a)
	VMAXPS(Mem{Base: y, Disp: 32}, b, b)
	VMOVUPS(a, Mem{Base: y})
	VMOVUPS(b, Mem{Base: y, Disp: 32})
	ADDQ(U8(64), r)
	ADDQ(U8(64), y)
	SUBQ(U8(16), n)
	JMP(LabelRef("mxi_16"))
	Label("mxi_8")
	CMPQ(n, U8(8))
	JLT(LabelRef("mxi_done"))
	VMOVUPS(Mem{Base: r}, a)
	VMAXPS(Mem{Base: y}, a, a)
	VMOVUPS(a, Mem{Base: y})
	Label("mxi_done")
	VZEROUPPER()
	RET()
}

// transpose8 emits transpose8AVX2: for each of n blocks b, the 8×8 block
// of x at columns 8b..8b+7 (8 rows, ldx floats apart) is written
// transposed to y rows 8b..8b+7 (ldy floats apart), columns 0..7.
func transpose8() {
	TEXT("transpose8AVX2", NOSPLIT, "func(n int, x *float32, ldx int, y *float32, ldy int)")
	Doc("transpose8AVX2 writes y[(8b+j)·ldy + i] = x[i·ldx + 8b+j] for i, j < 8 and b < n.")
	Pragma("noescape")
	n := Load(Param("n"), GP64())
	x := Load(Param("x"), GP64())
	ldx := Load(Param("ldx"), GP64())
	y := Load(Param("y"), GP64())
	ldy := Load(Param("ldy"), GP64())
	SHLQ(U8(2), ldx)
	SHLQ(U8(2), ldy)
	x3, y3 := GP64(), GP64()
	r := make([]VecPhysical, 8)
	for i := range r {
		r[i] = []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7}[i]
	}
	t := []VecPhysical{Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}
	Label("tr8_loop")
	TESTQ(n, n)
	JEQ(LabelRef("tr8_done"))
	// rows 0-3 at x + {0,1,2,3}·ldx, rows 4-7 from x3 = x + 4·ldx
	LEAQ(Mem{Base: x, Index: ldx, Scale: 4}, x3)
	VMOVUPS(Mem{Base: x}, r[0])
	VMOVUPS(Mem{Base: x, Index: ldx, Scale: 1}, r[1])
	VMOVUPS(Mem{Base: x, Index: ldx, Scale: 2}, r[2])
	VMOVUPS(Mem{Base: x3}, r[4])
	VMOVUPS(Mem{Base: x3, Index: ldx, Scale: 1}, r[5])
	VMOVUPS(Mem{Base: x3, Index: ldx, Scale: 2}, r[6])
	ADDQ(ldx, x3)
	VMOVUPS(Mem{Base: x3, Index: ldx, Scale: 2}, r[7])
	LEAQ(Mem{Base: x, Index: ldx, Scale: 2}, x3)
	VMOVUPS(Mem{Base: x3, Index: ldx, Scale: 1}, r[3])
	// pairs of rows interleaved, then pairs of pairs, then the halves
	for q := 0; q < 8; q += 2 {
		VUNPCKLPS(r[q+1], r[q], t[q])
		VUNPCKHPS(r[q+1], r[q], t[q+1])
	}
	for q := 0; q < 8; q += 4 {
		VSHUFPS(U8(0x44), t[q+2], t[q], r[q])
		VSHUFPS(U8(0xEE), t[q+2], t[q], r[q+1])
		VSHUFPS(U8(0x44), t[q+3], t[q+1], r[q+2])
		VSHUFPS(U8(0xEE), t[q+3], t[q+1], r[q+3])
	}
	for q := 0; q < 4; q++ {
		VPERM2F128(U8(0x20), r[q+4], r[q], t[q])
		VPERM2F128(U8(0x31), r[q+4], r[q], t[q+4])
	}
	MOVQ(y, y3)
	for q := 0; q < 8; q++ {
		VMOVUPS(t[q], Mem{Base: y3})
		ADDQ(ldy, y3)
	}
	MOVQ(y3, y)
	ADDQ(U8(32), x)
	DECQ(n)
	JMP(LabelRef("tr8_loop"))
	Label("tr8_done")
	VZEROUPPER()
	RET()
}

// deinterleave2 emits deinterleave2AVX2: ev[j] = x[2j], od[j] = x[2j+1]
// for j < n&^7 (the column phases of a stride-2 window).
func deinterleave2() {
	TEXT("deinterleave2AVX2", NOSPLIT, "func(n int, x, ev, od *float32)")
	Doc("deinterleave2AVX2 computes ev[j] = x[2j] and od[j] = x[2j+1] for j < n&^7.")
	Pragma("noescape")
	n := Load(Param("n"), GP64())
	x := Load(Param("x"), GP64())
	ev := Load(Param("ev"), GP64())
	od := Load(Param("od"), GP64())
	s0, s1, e, o := YMM(), YMM(), YMM(), YMM()
	Label("di2_8")
	CMPQ(n, U8(8))
	JLT(LabelRef("di2_done"))
	VMOVUPS(Mem{Base: x}, s0)
	VMOVUPS(Mem{Base: x, Disp: 32}, s1)
	// per 128-bit lane s0[0] s0[2] s1[0] s1[2] (and the odd ones), then
	// the 64-bit pairs 0 2 1 3 back in order
	VSHUFPS(U8(0x88), s1, s0, e)
	VSHUFPS(U8(0xDD), s1, s0, o)
	VPERMPD(U8(0xD8), e, e)
	VPERMPD(U8(0xD8), o, o)
	VMOVUPS(e, Mem{Base: ev})
	VMOVUPS(o, Mem{Base: od})
	ADDQ(U8(64), x)
	ADDQ(U8(32), ev)
	ADDQ(U8(32), od)
	SUBQ(U8(8), n)
	JMP(LabelRef("di2_8"))
	Label("di2_done")
	VZEROUPPER()
	RET()
}

// expConsts are expSum's constants, each as a vector of 8: the clamp of
// the argument, log2(e), ½, ln 2 split in two (C1 exact in few bits, C2
// the rest), the degree-5 polynomial of exp on [-ln2/2, ln2/2] (Cephes'
// expf), 1, and the float32 exponent bias.
var expConsts = []float32{
	88.3762626647949, -87.3365478515625, 1.44269504088896341, 0.5,
	0.693359375, -2.12194440e-4,
	1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1,
	1,
}

// expSum emits expSumAVX2: y[i] = exp(x[i] - m) for i < n&^7 and their
// sum (8 running sums, added at the end). exp is Cephes' expf: round
// x·log2(e) to k, r = x - k·ln2 in two steps, a degree-5 polynomial in r,
// times 2^k built in the exponent bits; within 2 ulp of exp in float32,
// arguments clamped to [-87.34, 88.38] (below: about 1e-38 instead of a
// denormal or 0). The caller handles NaN and infinite m and the tail.
func expSum() {
	c := GLOBL("expconsts", attr.RODATA|attr.NOPTR)
	for i, v := range expConsts {
		for l := 0; l < 8; l++ {
			DATA(32*i+4*l, U32(math.Float32bits(v)))
		}
	}
	for l := 0; l < 8; l++ {
		DATA(32*len(expConsts)+4*l, U32(127))
	}
	k := func(i int) Mem { return c.Offset(32 * i) }
	TEXT("expSumAVX2", NOSPLIT, "func(n int, x, y *float32, m float32) float32")
	Doc("expSumAVX2 computes y[i] = exp(x[i] - m) for i < n&^7 and returns their sum (see the package asmgen).")
	Pragma("noescape")
	n := Load(Param("n"), GP64())
	x := Load(Param("x"), GP64())
	y := Load(Param("y"), GP64())
	vm, sum := YMM(), YMM()
	VBROADCASTSS(avokit.ParamAddr("m"), vm)
	VXORPS(sum, sum, sum)
	v, fx, z, p, t := YMM(), YMM(), YMM(), YMM(), YMM()
	Label("exp_8")
	CMPQ(n, U8(8))
	JLT(LabelRef("exp_done"))
	VMOVUPS(Mem{Base: x}, v)
	VSUBPS(vm, v, v)
	VMINPS(k(0), v, v)
	VMAXPS(k(1), v, v)
	// k = floor(v·log2e + ½)
	VMOVUPS(k(3), fx)
	VFMADD231PS(k(2), v, fx)
	VROUNDPS(U8(1), fx, fx)
	// r = v - k·C1 - k·C2
	VMOVUPS(k(4), t)
	VFNMADD231PS(t, fx, v)
	VMOVUPS(k(5), t)
	VFNMADD231PS(t, fx, v)
	VMULPS(v, v, z)
	// p = ((((p0·r + p1)·r + p2)·r + p3)·r + p4)·r + p5
	VMOVUPS(k(6), p)
	for i := 7; i <= 11; i++ {
		VFMADD213PS(k(i), v, p)
	}
	// e = p·r² + r + 1
	VFMADD213PS(v, z, p)
	VADDPS(k(12), p, p)
	// · 2^k
	VCVTTPS2DQ(fx, fx)
	VPADDD(k(13), fx, fx)
	VPSLLD(U8(23), fx, fx)
	VMULPS(fx, p, p)
	VMOVUPS(p, Mem{Base: y})
	VADDPS(p, sum, sum)
	ADDQ(U8(32), x)
	ADDQ(U8(32), y)
	SUBQ(U8(8), n)
	JMP(LabelRef("exp_8"))
	Label("exp_done")
	// horizontal sum
	hi := XMM()
	VEXTRACTF128(U8(1), sum, hi)
	VADDPS(hi, sum.AsX(), hi)
	VHADDPS(hi, hi, hi)
	VHADDPS(hi, hi, hi)
	VZEROUPPER()
	Store(hi, ReturnIndex(0))
	RET()
}

// dot emits dotAVX2: the sum of x[i]·y[i] for i < n&^7, in four (then
// one) vector accumulators added at the end.
func dot() {
	TEXT("dotAVX2", NOSPLIT, "func(n int, x, y *float32) float32")
	Doc("dotAVX2 returns the sum of x[i]·y[i] for i < n&^7 (see the package asmgen).")
	Pragma("noescape")
	n := Load(Param("n"), GP64())
	x := Load(Param("x"), GP64())
	y := Load(Param("y"), GP64())
	acc := []VecVirtual{YMM(), YMM(), YMM(), YMM()}
	for _, a := range acc {
		VXORPS(a, a, a)
	}
	t := YMM()
	Label("dot_32")
	CMPQ(n, U8(32))
	JLT(LabelRef("dot_8"))
	for i, a := range acc {
		VMOVUPS(Mem{Base: x, Disp: 32 * i}, t)
		VFMADD231PS(Mem{Base: y, Disp: 32 * i}, t, a)
	}
	ADDQ(U32(128), x)
	ADDQ(U32(128), y)
	SUBQ(U8(32), n)
	JMP(LabelRef("dot_32"))
	Label("dot_8")
	CMPQ(n, U8(8))
	JLT(LabelRef("dot_done"))
	VMOVUPS(Mem{Base: x}, t)
	VFMADD231PS(Mem{Base: y}, t, acc[0])
	ADDQ(U8(32), x)
	ADDQ(U8(32), y)
	SUBQ(U8(8), n)
	JMP(LabelRef("dot_8"))
	Label("dot_done")
	VADDPS(acc[1], acc[0], acc[0])
	VADDPS(acc[3], acc[2], acc[2])
	VADDPS(acc[2], acc[0], acc[0])
	hi := XMM()
	VEXTRACTF128(U8(1), acc[0], hi)
	VADDPS(hi, acc[0].AsX(), hi)
	VHADDPS(hi, hi, hi)
	VHADDPS(hi, hi, hi)
	VZEROUPPER()
	Store(hi, ReturnIndex(0))
	RET()
}

// Chain op kinds of chainAVX2 (the native package's chainOp.kind).
const (
	chainAdd = iota
	chainSub
	chainRSub
	chainMul
	chainDiv
	chainRDiv
	chainClamp
	chainSave
	chainMulSaved
)

// chainKernel emits chainAVX2: a program of nops element-wise ops (16
// bytes each: int32 kind, float32 c, float32 lo, float32 hi) applied in
// place to y[i], i < n&^31, 32 floats at a time held in four registers
// through the whole program (a fifth set for the saved value): x+c, x-c,
// c-x, x·c, x/c, c/x, clamp to [lo, hi] keeping NaN, saved = x, x =
// saved·x. Each op rounds as the separate vector op would.
func chainKernel(name string, wide bool) {
	vec, lanes, nv := YMM, 8, 4
	if wide {
		vec, lanes, nv = ZMM, 16, 8
	}
	step := lanes * nv // floats a pass
	TEXT(name, NOSPLIT, "func(n int, y *float32, ops *int32, nops int)")
	Doc(fmt.Sprintf("%s applies the element-wise program ops to y[i] in place for i < n&^%d (see the package asmgen).", name, step-1))
	Pragma("noescape")
	n := Load(Param("n"), GP64())
	y := Load(Param("y"), GP64())
	ops0 := Load(Param("ops"), GP64())
	nops := Load(Param("nops"), GP64())
	op, cnt, kind := GP64(), GP64(), GP32()
	v, sv := make([]VecVirtual, nv), make([]VecVirtual, nv)
	for i := range v {
		v[i], sv[i] = vec(), vec()
	}
	c, hi := vec(), vec()
	Label(name + "_block")
	CMPQ(n, U32(step))
	JLT(LabelRef(name + "_done"))
	for i, r := range v {
		VMOVUPS(Mem{Base: y, Disp: 4 * lanes * i}, r)
	}
	MOVQ(ops0, op)
	MOVQ(nops, cnt)
	Label(name + "_op")
	TESTQ(cnt, cnt)
	JEQ(LabelRef(name + "_store"))
	MOVL(Mem{Base: op}, kind)
	VBROADCASTSS(Mem{Base: op, Disp: 4}, c)
	cases := []struct {
		kind int
		emit func()
	}{
		{chainAdd, func() { each(v, func(r VecVirtual) { VADDPS(c, r, r) }) }},
		{chainSub, func() { each(v, func(r VecVirtual) { VSUBPS(c, r, r) }) }},
		{chainRSub, func() { each(v, func(r VecVirtual) { VSUBPS(r, c, r) }) }},
		{chainMul, func() { each(v, func(r VecVirtual) { VMULPS(c, r, r) }) }},
		{chainDiv, func() { each(v, func(r VecVirtual) { VDIVPS(c, r, r) }) }},
		{chainRDiv, func() { each(v, func(r VecVirtual) { VDIVPS(r, c, r) }) }},
		{chainClamp, func() {
			VBROADCASTSS(Mem{Base: op, Disp: 8}, c)
			VBROADCASTSS(Mem{Base: op, Disp: 12}, hi)
			// max(lo, x) and min(hi, x) with x second: a NaN x is kept
			each(v, func(r VecVirtual) { VMAXPS(r, c, r); VMINPS(r, hi, r) })
		}},
		{chainSave, func() {
			for i := range v {
				VMOVAPS(v[i], sv[i])
			}
		}},
		{chainMulSaved, func() {
			for i := range v {
				VMULPS(v[i], sv[i], v[i])
			}
		}},
	}
	for _, cs := range cases {
		CMPL(kind, U8(cs.kind))
		JEQ(LabelRef(fmt.Sprintf("%s_k%d", name, cs.kind)))
	}
	JMP(LabelRef(name + "_next"))
	for _, cs := range cases {
		Label(fmt.Sprintf("%s_k%d", name, cs.kind))
		cs.emit()
		JMP(LabelRef(name + "_next"))
	}
	Label(name + "_next")
	ADDQ(U8(16), op)
	DECQ(cnt)
	JMP(LabelRef(name + "_op"))
	Label(name + "_store")
	for i, r := range v {
		VMOVUPS(r, Mem{Base: y, Disp: 4 * lanes * i})
	}
	ADDQ(U32(4*step), y)
	SUBQ(U32(step), n)
	JMP(LabelRef(name + "_block"))
	Label(name + "_done")
	VZEROUPPER()
	RET()
}

func each(rs []VecVirtual, f func(VecVirtual)) {
	for _, r := range rs {
		f(r)
	}
}

// depthwiseTile512 emits dw512x<R>x<V>: depthwiseTile's contract with
