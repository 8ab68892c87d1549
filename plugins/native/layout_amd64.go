package native

import "golang.org/x/sys/cpu"

// hasLayout512: the AVX-512 layout kernels (a variable: tests run both
// paths).
var hasLayout512 = cpu.X86.HasAVX512F

// deinterleave3 is deinterleave3Go, 16 pixels a step in assembly where
// the CPU can.
func deinterleave3(x, y0, y1, y2 []float32) {
	n := len(y0)
	if v := n &^ 15; hasLayout512 && v > 0 {
		_, _, _ = x[3*v-1], y1[v-1], y2[v-1]
		deinterleave3AVX512(v, &x[0], &y0[0], &y1[0], &y2[0])
		x, y0, y1, y2 = x[3*v:], y0[v:], y1[v:], y2[v:]
	}
	deinterleave3Go(x, y0, y1, y2)
}

// maxPool2x2Rows is maxPool2x2RowsGo, in one assembly call where the CPU
// can.
func maxPool2x2Rows(rows, ow int, x, y []float32) {
	if !hasLayout512 || rows <= 0 || ow <= 0 {
		maxPool2x2RowsGo(rows, ow, x, y)
		return
	}
	_, _ = x[4*rows*ow-1], y[rows*ow-1]
	rem := ow % 16
	in := 2 * rem
	mlo, mhi := 1<<min(in, 16)-1, 1<<max(in-16, 0)-1
	maxPool2x2RowsAVX512(rows, ow, &x[0], &y[0], negInf, mlo, mhi, 1<<rem-1)
}

// lerp is lerpGo, 16 floats a step in assembly where the CPU can.
func lerp(y, a, b []float32, w float32) {
	if v := len(y) &^ 15; hasLayout512 && v > 0 {
		_, _ = a[v-1], b[v-1]
		lerpAVX512(v, &a[0], &b[0], &y[0], w)
		y, a, b = y[v:], a[v:], b[v:]
	}
	lerpGo(y, a, b, w)
}

// upsample2 is upsample2Go, 16 source columns a step in assembly where
// the CPU can.
func upsample2(n int, xe, xo, y []float32, w0, w1 float32) {
	if v := n &^ 15; hasLayout512 && v > 0 {
		_, _, _ = xe[v], xo[v], y[2*v-1]
		upsample2AVX512(v, &xe[0], &xo[0], &y[0], w0, w1)
		xe, xo, y, n = xe[v:], xo[v:], y[2*v:], n-v
	}
	upsample2Go(n, xe, xo, y, w0, w1)
}

// resizeRows is resizeRowsGo, in one assembly call (gathers, masked row
// tails) where the CPU can.
func resizeRows(rows, iw, ow int, x, y []float32, i0, i1 []int32, w []float32) {
	if !hasLayout512 || rows <= 0 || ow <= 0 || !inRange(i0[:ow], iw) || !inRange(i1[:ow], iw) {
		resizeRowsGo(rows, iw, ow, x, y, i0, i1, w)
		return
	}
	_, _, _ = x[rows*iw-1], y[rows*ow-1], w[ow-1]
	resizeRowsAVX512(rows, iw, ow, &x[0], &y[0], &i0[0], &i1[0], &w[0], 1<<(ow%16)-1)
}

// lerpRows is lerpRowsGo, in one assembly call where the CPU can.
func lerpRows(planes, oh, ow, hs int, h, y []float32, r0, r1 []int32, wy []float32) {
	if !hasLayout512 || planes <= 0 || oh <= 0 || ow <= 0 || !inRange(r0[:oh], hs-ow+1) || !inRange(r1[:oh], hs-ow+1) {
		lerpRowsGo(planes, oh, ow, hs, h, y, r0, r1, wy)
		return
	}
	_, _, _ = h[planes*hs-1], y[planes*oh*ow-1], wy[oh-1]
	lerpRowsAVX512(planes, oh, ow, hs, &h[0], &y[0], &r0[0], &r1[0], &wy[0], 1<<(ow%16)-1)
}

// interleave2 is interleave2Go, 16 pairs a step in assembly where the
// CPU can.
func interleave2(a, b, y []float32) {
	if v := len(a) &^ 15; hasLayout512 && v > 0 {
		_, _ = b[v-1], y[2*v-1]
		interleave2AVX512(v, &a[0], &b[0], &y[0])
		a, b, y = a[v:], b[v:], y[2*v:]
	}
	interleave2Go(a, b, y)
}
