//go:build !amd64

package native

const hasLayout512 = false

func deinterleave3(x, y0, y1, y2 []float32) { deinterleave3Go(x, y0, y1, y2) }

func maxPool2x2Rows(rows, ow int, x, y []float32) { maxPool2x2RowsGo(rows, ow, x, y) }

func lerp(y, a, b []float32, w float32) { lerpGo(y, a, b, w) }

func upsample2(n int, xe, xo, y []float32, w0, w1 float32) {
	upsample2Go(n, xe, xo, y, w0, w1)
}

func resizeRows(rows, iw, ow int, x, y []float32, i0, i1 []int32, w []float32) {
	resizeRowsGo(rows, iw, ow, x, y, i0, i1, w)
}

func lerpRows(planes, oh, ow, hs int, h, y []float32, r0, r1 []int32, wy []float32) {
	lerpRowsGo(planes, oh, ow, hs, h, y, r0, r1, wy)
}

func interleave2(a, b, y []float32) { interleave2Go(a, b, y) }
