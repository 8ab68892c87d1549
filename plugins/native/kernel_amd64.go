package native

import (
	"math/bits"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// archKernels are the assembly micro-kernels the CPU and OS support.
func archKernels() []microKernel {
	var ks []microKernel
	if cpu.X86.HasAVX512F {
		ks = append(ks, microKernel{name: "avx512x14x32", mr: 14, nr: 32, kc: 256, mc: 112, fn: gemmAVX512x14x32,
			tails: []kernelFn{nil, gemmAVX512x1x32, gemmAVX512x2x32, gemmAVX512x3x32, gemmAVX512x4x32, gemmAVX512x5x32,
				gemmAVX512x6x32, gemmAVX512x7x32, gemmAVX512x8x32, gemmAVX512x9x32, gemmAVX512x10x32, gemmAVX512x11x32,
				gemmAVX512x12x32, gemmAVX512x13x32},
			packedA: []kernelFn{nil, gemmAVX512x1x32PA, gemmAVX512x2x32PA, gemmAVX512x3x32PA, gemmAVX512x4x32PA,
				gemmAVX512x5x32PA, gemmAVX512x6x32PA, gemmAVX512x7x32PA, gemmAVX512x8x32PA, gemmAVX512x9x32PA,
				gemmAVX512x10x32PA, gemmAVX512x11x32PA, gemmAVX512x12x32PA, gemmAVX512x13x32PA, gemmAVX512x14x32PA}})
	}
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		ks = append(ks, microKernel{name: "avx2x6x16", mr: 6, nr: 16, kc: 256, mc: 72, fn: gemmAVX2x6x16,
			tails: []kernelFn{nil, gemmAVX2x1x16, gemmAVX2x2x16, gemmAVX2x3x16, gemmAVX2x4x16, gemmAVX2x5x16}})
	}
	return ks
}

var hasAVX2FMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// hasAVX512F: the element-wise kernels with 512-bit vectors (the chain).
var hasAVX512F = cpu.X86.HasAVX512F

// axpy is y[i] += a·x[i] over len(y) (x at least as long).
func axpy(a float32, x, y []float32) {
	if len(y) == 0 {
		return
	}
	x = x[:len(y)]
	if hasAVX2FMA {
		axpyAVX2(len(y), a, &x[0], &y[0])
		return
	}
	axpyGo(a, x, y)
}

// clampTo is y[i] = clamp(x[i], lo, hi) over len(y), NaN kept.
func clampTo(y, x []float32, lo, hi float32) {
	if len(y) == 0 {
		return
	}
	x = x[:len(y)]
	if hasAVX2FMA {
		clampAVX2(len(y), lo, hi, &x[0], &y[0])
		return
	}
	clampGo(y, x, lo, hi)
}

var (
	vvFns = [4]func(n int, a, b, y *float32){addVVAVX2, subVVAVX2, mulVVAVX2, divVVAVX2}
	vsFns = [4]func(n int, a *float32, b float32, y *float32){addVSAVX2, subVSAVX2, mulVSAVX2, divVSAVX2}
	svFns = [4]func(n int, a float32, b, y *float32){addSVAVX2, subSVAVX2, mulSVAVX2, divSVAVX2}
)

// binVV, binVS and binSV run y = a op b in assembly where the CPU can
// (a and b at least len(y) long where they are vectors); false: not done.
func binVV(op binOp, y, a, b []float32) bool {
	if !hasAVX2FMA || len(y) == 0 {
		return false
	}
	_, _ = a[len(y)-1], b[len(y)-1]
	vvFns[op-opAdd](len(y), &a[0], &b[0], &y[0])
	return true
}

func binVS(op binOp, y, a []float32, b float32) bool {
	if !hasAVX2FMA || len(y) == 0 {
		return false
	}
	_ = a[len(y)-1]
	vsFns[op-opAdd](len(y), &a[0], b, &y[0])
	return true
}

func binSV(op binOp, y []float32, a float32, b []float32) bool {
	if !hasAVX2FMA || len(y) == 0 {
		return false
	}
	_ = b[len(y)-1]
	svFns[op-opAdd](len(y), a, &b[0], &y[0])
	return true
}

// dwFns are the depthwise tile kernels by [R-1][V-1] (nil: no such shape).
var dwFns = [4][4]func(nt, taps int, offs *int, w, x *float32, ldx int, y *float32, ldy int, bias float32, doClamp int, lo, hi float32){
	{dwAVX2x1x1, dwAVX2x1x2, nil, dwAVX2x1x4},
	{dwAVX2x2x1, dwAVX2x2x2, nil, dwAVX2x2x4},
	{},
	{dwAVX2x4x1, dwAVX2x4x2},
}

// hasDW512: the depthwise tiles of 16, 32 and 64 columns run with AVX-512
// vectors (opmask registers for the masked ones: VPMOVD2M is AVX512DQ).
// A variable: the tests run both paths.
var hasDW512 = dw512Available

var dw512Available = cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ

// dw512Fns are the AVX-512 tile kernels by [R-1][log2(V)-1] (V in 8-lane
// vectors: 2, 4 and 8).
var dw512Fns = [8][3]func(nt, taps int, offs *int, w, x *float32, ldx int, y *float32, ldy int, bias float32, doClamp int, lo, hi float32){
	{dw512x1x1, dw512x1x2, dw512x1x4},
	{dw512x2x1, dw512x2x2, dw512x2x4},
	{}, {dw512x4x1, dw512x4x2, dw512x4x4},
	{}, {}, {}, {dw512x8x1, dw512x8x2},
}

// dwTile computes nt R×V·dwLane tiles side by side of a depthwise
// convolution (see dwTileGo) in assembly where the CPU can.
func dwTile(R, V, nt int, offs []int, hiOff int, w, x []float32, ldx int, y []float32, ldy int, bias float32, clampOn bool, lo, hi float32) {
	if nt <= 0 {
		return
	}
	var fn func(nt, taps int, offs *int, w, x *float32, ldx int, y *float32, ldy int, bias float32, doClamp int, lo, hi float32)
	if R == 8 && !(hasDW512 && (V == 2 || V == 4)) { // as two tiles of 4 rows
		dwTile(4, V, nt, offs, hiOff, w, x, ldx, y, ldy, bias, clampOn, lo, hi)
		dwTile(4, V, nt, offs, hiOff, w, x[4*ldx:], ldx, y[4*ldy:], ldy, bias, clampOn, lo, hi)
		return
	}
	switch {
	case hasDW512 && (V == 2 || V == 4 || V == 8):
		fn = dw512Fns[R-1][bits.TrailingZeros(uint(V))-1]
	case V <= 4:
		fn = dwFns[R-1][V-1]
	}
	if !hasAVX2FMA || fn == nil || len(offs) == 0 {
		dwTileGo(R, V, nt, offs, w, x, ldx, y, ldy, bias, clampOn, lo, hi)
		return
	}
	dwTileCheck(R, V*nt, offs, hiOff, w, x, ldx, y, ldy)
	c := 0
	if clampOn {
		c = 1
	}
	fn(nt, len(offs), &offs[0], &w[0], &x[0], ldx, &y[0], ldy, bias, c, lo, hi)
}

// hasDWMask: dwMaskTile runs in assembly (the direct depthwise path).
var hasDWMask = hasAVX2FMA

// dwMaskFns are the masked tile kernels by [R-1][V-1].
var dwMaskFns = [4][2]func(np int, plain *int, nm int, masked *int, masks *int32, w, x *float32, xoff, ldx int, y *float32, ldy int, bias float32, doClamp int, lo, hi float32, smask *int32){
	{dwMaskAVX2x1x1, dwMaskAVX2x1x2},
	{dwMaskAVX2x2x1, dwMaskAVX2x2x2},
	{},
	{dwMaskAVX2x4x1, dwMaskAVX2x4x2},
}

// dwMask512Fns are the AVX-512 masked tile kernels of 16 columns by R-1.
var dwMask512Fns = [8]func(np int, plain *int, nm int, masked *int, masks *int32, w, x *float32, xoff, ldx int, y *float32, ldy int, bias float32, doClamp int, lo, hi float32, smask *int32){
	dwMask512x1x1, dwMask512x2x1, nil, dwMask512x4x1, nil, nil, nil, dwMask512x8x1,
}

// dwMaskTile computes an R×V·dwLane tile of a depthwise convolution from
// the unpadded input, e's masked taps with masked loads (see
// dwMaskTileGo), in assembly where the CPU can; full says smask stores
// all V·dwLane lanes. Every lane e lets
// through, in each of the R rows, MUST lie inside x; y MUST end at the
// last element smask stores (rows ldy apart).
func dwMaskTile(R, V int, e *dwEdge, w, x []float32, xoff, ldx int, y []float32, ldy int, bias float32, clampOn bool, lo, hi float32, smask *[2 * dwLane]int32, full bool) {
	if R == 8 && !(hasDW512 && V == 2) { // as two tiles of 4 rows
		dwMaskTile(4, V, e, w, x, xoff, ldx, y, ldy, bias, clampOn, lo, hi, smask, full)
		dwMaskTile(4, V, e, w, x, xoff+4*ldx, ldx, y[4*ldy:], ldy, bias, clampOn, lo, hi, smask, full)
		return
	}
	var fn func(np int, plain *int, nm int, masked *int, masks *int32, w, x *float32, xoff, ldx int, y *float32, ldy int, bias float32, doClamp int, lo, hi float32, smask *int32)
	if hasDW512 && V == 2 {
		fn = dwMask512Fns[R-1]
	} else {
		fn = dwMaskFns[R-1][V-1]
	}
	np, nm := len(e.plain)/2, len(e.masked)/2
	if !hasAVX2FMA || fn == nil || len(x) == 0 || np+nm == 0 {
		dwMaskTileGo(R, V, e, w, x, xoff, ldx, y, ldy, bias, clampOn, lo, hi, smask)
		return
	}
	_ = w[np+nm-1]
	_ = y[len(y)-1] // the caller ends y at the last element stored
	var pp, mp *int
	var mk *int32
	if np > 0 {
		pp = &e.plain[0]
	}
	if nm > 0 {
		_ = e.mask[nm*V*dwLane-1]
		mp, mk = &e.masked[0], &e.mask[0]
	}
	c := 0
	if clampOn {
		c = 1
	}
	var sm *int32 // nil: every lane stored
	if !full {
		sm = &smask[0]
	}
	fn(np, pp, nm, mp, mk, &w[0], &x[0], xoff, ldx, &y[0], ldy, bias, c, lo, hi, sm)
}

// maxPool2x2 is maxPool2x2Go, whole vectors in assembly where the CPU can.
func maxPool2x2(y, r0, r1 []float32) {
	if n := len(y) &^ 7; hasAVX2FMA && n > 0 {
		_, _ = r0[2*n-1], r1[2*n-1]
		maxPool2x2AVX2(n, &r0[0], &r1[0], &y[0], negInf)
		y, r0, r1 = y[n:], r0[2*n:], r1[2*n:]
	}
	maxPool2x2Go(y, r0, r1)
}

// maxInto is y[i] = max(y[i], r[i]) over len(y), a NaN in r never
// winning (r at least as long), whole vectors in assembly where the CPU
// can.
func maxInto(y, r []float32) {
	if n := len(y) &^ 7; hasAVX2FMA && n > 0 {
		_ = r[n-1]
		maxIntoAVX2(n, &r[0], &y[0])
		y, r = y[n:], r[n:]
	}
	maxIntoGo(y, r)
}

// has8x8Transpose: transpose8 runs in assembly.
var has8x8Transpose = hasAVX2FMA

// transpose8 writes nb 8×8 blocks of x (8 rows ldx apart, columns 8b..)
// transposed into y (rows 8b.. ldy apart, columns 0..7).
func transpose8(nb int, x []float32, ldx int, y []float32, ldy int) {
	_, _ = x[7*ldx+8*nb-1], y[(8*nb-1)*ldy+7]
	transpose8AVX2(nb, &x[0], ldx, &y[0], ldy)
}

// deinterleave2 is ev[j] = x[2j], od[j] = x[2j+1] for j < n (x at least
// 2n long, ev and od at least n), whole vectors in assembly where the CPU
// can.
func deinterleave2(n int, x, ev, od []float32) {
	if v := n &^ 7; hasAVX2FMA && v > 0 {
		_, _, _ = x[2*v-1], ev[v-1], od[v-1]
		deinterleave2AVX2(v, &x[0], &ev[0], &od[0])
		x, ev, od, n = x[2*v:], ev[v:], od[v:], n-v
	}
	deinterleave2Go(n, x, ev, od)
}

// expSum is y[i] = exp(x[i] - m) in float32 and their sum (expSumGo),
// whole vectors in assembly where the CPU can.
func expSum(x, y []float32, m float32) float32 {
	var s float32
	if n := len(y) &^ 7; hasAVX2FMA && n > 0 {
		_ = x[n-1]
		s = expSumAVX2(n, &x[0], &y[0], m)
		x, y = x[n:], y[n:]
	}
	return s + expSumGo(x, y, m)
}

// dot is the sum of x[i]·y[i] over len(x) (y at least as long), whole
// vectors in assembly where the CPU can.
func dot(x, y []float32) float32 {
	var s float32
	if n := len(x) &^ 7; hasAVX2FMA && n > 0 {
		_ = y[n-1]
		s = dotAVX2(n, &x[0], &y[0])
		x, y = x[n:], y[n:]
	}
	return s + dotGo(x, y)
}

// runChain applies an arithmetic chain program to y in place (runChainGo),
// 128 floats at a time with AVX-512, 32 with AVX2, where the CPU can.
func runChain(y []float32, ops []chainOp) {
	if n := len(y) &^ 127; hasAVX512F && n > 0 && len(ops) > 0 {
		chain512(n, &y[0], (*int32)(unsafe.Pointer(&ops[0])), len(ops))
		y = y[n:]
	}
	if n := len(y) &^ 31; hasAVX2FMA && n > 0 && len(ops) > 0 {
		chainAVX2(n, &y[0], (*int32)(unsafe.Pointer(&ops[0])), len(ops))
		y = y[n:]
	}
	runChainGo(y, ops)
}

// copyRows32 is copyRows for 32 columns (dst 32·k long, src reaching row
// k-1's last column) in assembly where the CPU has AVX-512; false: not
// done.
func copyRows32(dst, src []float32, k, ldb int) bool {
	if !hasAVX512F {
		return false
	}
	copyRows32AVX512(k, &src[0], ldb, &dst[0])
	return true
}

// dwcFn is a packed depthwise kernel (see depthwisePacked in asmgen).
type dwcFn = func(rows, nt, taps int, offs *int, w, bias, x *float32, ldx int, y *float32, ldy int, doClamp int, lo, hi float32)

// dwcFns are the packed depthwise kernels by [lanes 16, 8][S-1][N-1].
var dwcFns = [2][2][8]dwcFn{
	{{dwc16x1s1, dwc16x2s1, dwc16x3s1, dwc16x4s1, dwc16x5s1, dwc16x6s1, dwc16x7s1, dwc16x8s1},
		{dwc16x1s2, dwc16x2s2, dwc16x3s2, dwc16x4s2, dwc16x5s2, dwc16x6s2, dwc16x7s2, dwc16x8s2}},
	{{dwc8x1s1, dwc8x2s1, dwc8x3s1, dwc8x4s1, dwc8x5s1, dwc8x6s1, dwc8x7s1, dwc8x8s1},
		{dwc8x1s2, dwc8x2s2, dwc8x3s2, dwc8x4s2, dwc8x5s2, dwc8x6s2, dwc8x7s2, dwc8x8s2}},
}

// hasDWPacked: the packed (channels-last) depthwise path runs in assembly
// (a variable: the tests run both paths).
var hasDWPacked = dwPackedAvailable

var dwPackedAvailable = hasAVX2FMA

// dwPackedLanes is the packed depthwise path's vector width for c
// channels: 16 (AVX-512) or 8 lanes, 0 where it does not run.
func dwPackedLanes(c int) int {
	switch {
	case !hasDWPacked || c <= 0:
		return 0
	case hasDW512 && c%16 == 0:
		return 16
	case c%8 == 0:
		return 8
	}
	return 0
}

// dwcRun computes rows × ow packed outputs of L lanes at column stride s
// (1 or 2): y[r·ldy + j·L + l] = clamp(bias[l] + Σ_t w[t·L+l] ·
// x[r·ldx + j·s·L + offs[t] + l]). hiOff is the largest of offs.
func dwcRun(L, s, rows, ow int, offs []int, hiOff int, w, bias, x []float32, ldx int, y []float32, ldy int, clampOn bool, lo, hi float32) {
	if rows <= 0 || ow <= 0 || len(offs) == 0 {
		return
	}
	_, _ = x[(rows-1)*ldx+hiOff+(ow-1)*s*L+L-1], y[(rows-1)*ldy+ow*L-1]
	_, _ = w[len(offs)*L-1], bias[L-1]
	li := 0
	if L == 8 {
		li = 1
	}
	c := 0
	if clampOn {
		c = 1
	}
	if nt := ow / 8; nt > 0 {
		dwcFns[li][s-1][7](rows, nt, len(offs), &offs[0], &w[0], &bias[0], &x[0], ldx, &y[0], ldy, c, lo, hi)
	}
	if r := ow % 8; r > 0 {
		o := ow - r
		dwcFns[li][s-1][r-1](rows, 1, len(offs), &offs[0], &w[0], &bias[0], &x[o*s*L], ldx, &y[o*L], ldy, c, lo, hi)
	}
}
