// Command asmgenhand generates the amd64 assembly of the native backend's
// direct strided 3×3 convolution over few input channels (hand_conv3.go)
// and its 3×3 depthwise kernel over small planes (hand_dwflat.go), and
// the stride-2 3×3 and 5×5 depthwise kernels over parity planes (dws2.go;
// described beside their generator, dws2.go here), with avo (github.com/mmcloughlin/avo). It writes its own pair of files;
// the package's TestGeneratedAssemblyIsCurrent runs it and fails when they
// are stale.
//
//	go run ./plugins/native/internal/asmgenhand -out plugins/native/hand_amd64.s -stubs plugins/native/hand_stubs_amd64.go -pkg native
//
// # Strided 3×3 over few channels
//
// A kernel computes one output row of n output channels (n = 4, 8, …, 24,
// one kernel each) of a 3×3 convolution at stride 2, dilation 1, with pl
// columns of zero padding on the left (0: TensorFlow's SAME over an even
// width; 1), over cin input channels. rows holds 3·cin row addresses,
// input channel ci's kernel row r at rows[3·ci+r] (a row in the padding is
// a row of zeros the caller passes). Output column j reads input columns
// 2j−pl, 2j−pl+1 and 2j−pl+2, those outside [0, iw) read as zero: every
// load is masked to the columns inside the row, every store to the
// columns below ow. The weights are packed w[((ci·3+r)·3+k)·n+o], the
// bias b[o]; output channel o's row is written at y + o·ldy.
//
// Per 16 output columns, each input row's 32 (and, shifted by two, 32
// more) columns are loaded once and split into the even and odd columns
// (VPERMI2PS/VPERMT2PS): the three taps of the row, which then feed the
// n accumulators, each multiply-add taking its weight as an embedded
// broadcast. The split is paid once for all n output channels, where the
// depthwise row kernels (asmgendw3) pay it for each.
//
//	y_o[j] = clamp(b[o] + Σ_{ci,r,k} w[ci,r,k,o] · x_{ci,r}[2j − pl + k])
//
// flags&4 clamps to [lo, hi].
//
// # Depthwise 3×3 over small planes
//
// handDWFlat3AVX512 computes planes planes of a 3×3 depthwise convolution
// at stride 1 with one row and column of padding on every side (the
// output as large as the input; handDWFlat5AVX512 a 5×5 with two), each
// plane's hw = h·w floats taken as one flat run: 16 output positions a
// vector, tap (dy, dx) the input at the same flat positions plus dy·w +
// dx, one multiply-add each with the input as its memory operand. The
// caller copies the planes into a scratch with at least k/2·(w+1) zeros
// (plus a vector's slack after the last) between them, xs floats from one
// plane's start to the next: the taps above and below the plane read
// zeros, and only the columns need masks — the taps at dx ≠ 0 are
// merge-masked to the lanes whose column x+dx lies inside the row (masks:
// nv·(k|1) 16-bit masks, the same for every plane, nv = ⌈hw/16⌉: the
// column masks of dx = −k/2..−1, 1..k/2, then the store's, lanes below
// hw). On planes narrower than 16 columns (14×14, 7×7) a vector spans
// several rows: every lane works, where the row kernels (asmgendw3) fill
// a vector with one row and the packed path transposes the planes to
// channels-last and back. Plane i reads x + i·xs, writes y + i·hw, with
// weights w[k²i:k²(i+1)] and bias b[i].
//
//	y[p] = clamp(b + Σ_{dy,dx} w[k(dy+k/2)+dx+k/2] · x[p + dy·w + dx])
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"

	"github.com/switchyard-hal/switchyard/plugins/native/internal/avokit"
)

const signature = "func(rows **float32, cin int, w, b, y *float32, ldy, iw, ow, flags int, lo, hi float32)"

func main() {
	ConstraintExpr("amd64")
	idx := func(odd int) Mem {
		return avokit.Bytes(fmt.Sprintf("handc3perm%d", odd), 64, func(i int) byte {
			if i%4 != 0 {
				return 0
			}
			return byte(2*(i/4) + odd)
		})
	}
	even, odd := idx(0), idx(1)
	for pl := 0; pl <= 1; pl++ {
		for n := 4; n <= 24; n += 4 {
			kernel(fmt.Sprintf("handC3s2p%dn%dAVX512", pl, n), pl, n, even, odd)
		}
	}
	dwFlat(3)
	dwFlat(5)
	dwSplit2(even, odd)
	for _, k := range []int{3, 5} {
		for pt := k/2 - 1; pt <= k/2; pt++ {
			for pl := k/2 - 1; pl <= k/2; pl++ {
				dwS2(k, pt, pl)
			}
		}
	}
	Generate()
}

func kernel(name string, pl, n int, even, odd Mem) {
	TEXT(name, NOSPLIT, signature)
	Doc(fmt.Sprintf("%s computes one output row of %d output channels of a 3×3 convolution at stride 2 with left padding %d (see the package asmgenhand).", name, n, pl))
	Pragma("noescape")
	rows := Load(Param("rows"), GP64())
	cin := Load(Param("cin"), GP64())
	w := Load(Param("w"), GP64())
	b := Load(Param("b"), GP64())
	y := Load(Param("y"), GP64())
	ldy := Load(Param("ldy"), GP64())
	SHLQ(U8(2), ldy)
	iw, ow := GP64(), GP64()
	Load(Param("iw"), iw)
	Load(Param("ow"), ow)
	acc := make([]VecPhysical, n)
	all := []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15, Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23}
	copy(acc, all[:n])
	idxE, idxO, ev, od, ev2, tmp, lo, hi := Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31
	VMOVUPS(even, idxE)
	VMOVUPS(odd, idxO)
	VBROADCASTSS(avokit.ParamAddr("lo"), lo)
	VBROADCASTSS(avokit.ParamAddr("hi"), hi)
	oc, t, t2, wp, rp, c, p := GP64(), GP64(), GP64(), GP64(), GP64(), GP64(), GP64()
	m := GP32()
	XORQ(oc, oc)

	Label(name + "_col")
	// input columns 2·oc−pl to 2·oc−pl+32 (K1, K2) and from 2·oc−pl+2
	// (K4, K5)
	MOVQ(oc, t2)
	SHLQ(U8(1), t2)
	if pl > 0 {
		SUBQ(U8(pl), t2)
	}
	avokit.Mask16(name+"_ma", iw, t2, t, m, K1)
	if pl > 0 {
		// the first vector's column −1 is padding
		TESTQ(oc, oc)
		JNE(LabelRef(name + "_first"))
		MOVL(U32(0xfffe), m)
		KMOVW(m, K6)
		KANDW(K6, K1, K1)
		Label(name + "_first")
	}
	ADDQ(U8(16), t2)
	avokit.Mask16(name+"_mb", iw, t2, t, m, K2)
	SUBQ(U8(14), t2)
	avokit.Mask16(name+"_mc", iw, t2, t, m, K4)
	ADDQ(U8(16), t2)
	avokit.Mask16(name+"_md", iw, t2, t, m, K5)
	for o := 0; o < n; o++ {
		VBROADCASTSS(Mem{Base: b, Disp: 4 * o}, acc[o])
	}
	MOVQ(w, wp)
	MOVQ(rows, rp)
	MOVQ(cin, c)
	Label(name + "_ci")
	for r := 0; r < 3; r++ {
		MOVQ(Mem{Base: rp, Disp: 8 * r}, p)
		at := func(disp int) Mem { return Mem{Base: p, Index: oc, Scale: 8, Disp: disp - 4*pl} }
		VMOVUPS_Z(at(0), K1, od)
		VMOVUPS_Z(at(64), K2, tmp)
		VMOVAPS(idxE, ev)
		VPERMI2PS(tmp, od, ev)
		VPERMT2PS(tmp, idxO, od)
		VMOVUPS_Z(at(8), K4, ev2)
		VMOVUPS_Z(at(72), K5, tmp)
		VPERMT2PS(tmp, idxE, ev2)
		for k, tap := range []VecPhysical{ev, od, ev2} {
			for o := 0; o < n; o++ {
				VFMADD231PS_BCST(Mem{Base: wp, Disp: 4 * ((r*3+k)*n + o)}, tap, acc[o])
			}
		}
	}
	ADDQ(U32(4*9*n), wp)
	ADDQ(U8(24), rp)
	DECQ(c)
	JNE(LabelRef(name + "_ci"))

	TESTQ(U32(4), avokit.ParamAddr("flags"))
	JEQ(LabelRef(name + "_store"))
	// NaN kept: the accumulator is the operand returned when either is
	// NaN
	for o := 0; o < n; o++ {
		VMAXPS(acc[o], lo, acc[o])
		VMINPS(acc[o], hi, acc[o])
	}
	Label(name + "_store")
	avokit.Mask16(name+"_ms", ow, oc, t, m, K3)
	LEAQ(Mem{Base: y, Index: oc, Scale: 4}, t)
	for o := 0; o < n; o++ {
		VMOVUPS(acc[o], K3, Mem{Base: t})
		if o < n-1 {
			ADDQ(ldy, t)
		}
	}
	ADDQ(U8(16), oc)
	CMPQ(oc, ow)
	JLT(LabelRef(name + "_col"))
	VZEROUPPER()
	RET()
}

func dwFlat(k int) {
	name := fmt.Sprintf("handDWFlat%dAVX512", k)
	pad, taps := k/2, k*k
	TEXT(name, NOSPLIT, "func(x *float32, planes, xs, hw, w int, wt, b, y *float32, masks *uint16, nv, flags int, lo, hi float32)")
	Doc(fmt.Sprintf("%s computes planes planes of a %d×%d depthwise convolution at stride 1, padding %d, each plane a flat run of hw floats (see the package asmgenhand).", name, k, k, pad))
	Pragma("noescape")
	x := Load(Param("x"), GP64())
	planes := Load(Param("planes"), GP64())
	wt := Load(Param("wt"), GP64())
	b := Load(Param("b"), GP64())
	y := Load(Param("y"), GP64())
	lo, hi := Z30, Z31
	VBROADCASTSS(avokit.ParamAddr("lo"), lo)
	VBROADCASTSS(avokit.ParamAddr("hi"), hi)
	all := []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15, Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29}
	W := all[:taps]
	bias := all[taps]
	acc := all[taps+1 : taps+1+min(3, 30-taps-1)]
	// the column masks of dx = −pad..−1, 1..pad, and the store's
	ks := []Op{K1, K2, K3, K4, K5, K6}
	colK := func(dx int) Op {
		if dx < 0 {
			return ks[dx+pad]
		}
		return ks[pad+dx-1]
	}
	nm := 2*pad + 1
	vo, yo, mp, v, t := GP64(), GP64(), GP64(), GP64(), GP64()
	rows := make([]GPVirtual, k)
	for r := range rows {
		rows[r] = GP64()
	}

	Label(name + "_plane")
	TESTQ(planes, planes)
	JEQ(LabelRef(name + "_done"))
	for i, z := range W {
		VBROADCASTSS(Mem{Base: wt, Disp: 4 * i}, z)
	}
	VBROADCASTSS(Mem{Base: b}, bias)
	// row r of the taps: x + (r−pad)·w floats (the parameters read
	// again each plane: fewer registers, no BP)
	MOVQ(avokit.ParamAddr("w"), t)
	SHLQ(U8(2), t)
	MOVQ(x, rows[pad])
	for r := pad + 1; r < k; r++ {
		MOVQ(rows[r-1], rows[r])
		ADDQ(t, rows[r])
	}
	for r := pad - 1; r >= 0; r-- {
		MOVQ(rows[r+1], rows[r])
		SUBQ(t, rows[r])
	}
	XORQ(vo, vo)
	MOVQ(y, yo)
	MOVQ(avokit.ParamAddr("masks"), mp)
	MOVQ(avokit.ParamAddr("nv"), v)
	Label(name + "_vec")
	for j := 0; j < nm-1; j++ {
		KMOVW(Mem{Base: mp, Disp: 2 * j}, ks[j])
	}
	// several accumulators, the taps in order split among them (shorter
	// dependency chains)
	VMOVAPS(bias, acc[0])
	for _, a := range acc[1:] {
		VXORPS(a, a, a)
	}
	for i := 0; i < taps; i++ {
		a := acc[i*len(acc)/taps]
		dx := i%k - pad
		m := Mem{Base: rows[i/k], Index: vo, Scale: 1, Disp: 4 * dx}
		if dx == 0 {
			VFMADD231PS(m, W[i], a)
		} else {
			VFMADD231PS(m, W[i], colK(dx), a)
		}
	}
	for _, a := range acc[1:] {
		VADDPS(a, acc[0], acc[0])
	}
	TESTQ(U32(4), avokit.ParamAddr("flags"))
	JEQ(LabelRef(name + "_store"))
	VMAXPS(acc[0], lo, acc[0])
	VMINPS(acc[0], hi, acc[0])
	Label(name + "_store")
	KMOVW(Mem{Base: mp, Disp: 2 * (nm - 1)}, K7)
	VMOVUPS(acc[0], K7, Mem{Base: yo})
	ADDQ(U8(64), vo)
	ADDQ(U8(64), yo)
	ADDQ(U8(2*nm), mp)
	DECQ(v)
	JNE(LabelRef(name + "_vec"))
	MOVQ(avokit.ParamAddr("xs"), t)
	SHLQ(U8(2), t)
	ADDQ(t, x)
	MOVQ(avokit.ParamAddr("hw"), t)
	SHLQ(U8(2), t)
	ADDQ(t, y)
	ADDQ(U8(4*taps), wt)
	ADDQ(U8(4), b)
	DECQ(planes)
	JMP(LabelRef(name + "_plane"))

	Label(name + "_done")
	VZEROUPPER()
	RET()
}
