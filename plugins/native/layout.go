//go:generate go run ./internal/asmgenlayout -out layout_amd64.s -stubs layout_stubs_amd64.go -pkg native

package native

// Kernels for the layouts of channels-last (TFLite) models lowered to
// native's NCHW: the split of an NHWC image of three channels into planes
// (the Transpose every such model starts with), and 2×2 stride-2 max
// pooling over a whole tensor of short rows (MediaPipe's MaxPools halve
// planes down to 6×6 and 3×3, where a call per row and its scalar tail
// cost more than the pooling). AVX-512 assembly (internal/asmgenlayout)
// where the CPU has it, portable Go otherwise; both compute exactly what
// the element-by-element definitions compute.

// deinterleave3Go is y0[j] = x[3j], y1[j] = x[3j+1], y2[j] = x[3j+2] for
// j < len(y0).
func deinterleave3Go(x, y0, y1, y2 []float32) {
	n := len(y0)
	x, y1, y2 = x[:3*n], y1[:n], y2[:n]
	for j := range y0 {
		p := (*[3]float32)(x[3*j:])
		y0[j], y1[j], y2[j] = p[0], p[1], p[2]
	}
}

// maxPool2x2RowsGo pools rows row pairs of x (2·ow floats a row, the
// pairs one after another) into rows of ow floats of y: y[k·ow + j] =
// the largest of the pair's four values at columns 2j and 2j+1, a NaN
// never winning (maxPool2x2).
func maxPool2x2RowsGo(rows, ow int, x, y []float32) {
	iw := 2 * ow
	for k := 0; k < rows; k++ {
		r := x[2*k*iw : (2*k+2)*iw]
		maxPool2x2(y[k*ow:(k+1)*ow], r[:iw], r[iw:])
	}
}

// isPool2x2 reports whether g is a 2×2 window at stride 2 without
// padding or dilation tiling its input exactly (even sizes): a MaxPool
// of it is maxPool2x2Rows over every row pair of the tensor.
func isPool2x2(g *geom) bool {
	return g.kh == 2 && g.kw == 2 && g.sh == 2 && g.sw == 2 && g.dh == 1 && g.dw == 1 &&
		g.pt == 0 && g.pl == 0 && g.pb == 0 && g.pr == 0 && g.ih == 2*g.oh && g.iw == 2*g.ow
}

// lerpGo is y[i] = a[i] + w·(b[i] − a[i]): the vertical pass of a
// bilinear Resize.
func lerpGo(y, a, b []float32, w float32) {
	a, b = a[:len(y)], b[:len(y)]
	for i, v := range a {
		y[i] = v + w*(b[i]-v)
	}
}

// upsample2Go is the horizontal pass of a bilinear Resize by 2 away
// from the edges: y[2j] = xe[j] + w0·(xe[j+1] − xe[j]) and y[2j+1] =
// xo[j] + w1·(xo[j+1] − xo[j]) for j < n (xe and xo start at the source
// columns of the first even and odd output).
func upsample2Go(n int, xe, xo, y []float32, w0, w1 float32) {
	xe, xo, y = xe[:n+1], xo[:n+1], y[:2*n]
	for j := 0; j < n; j++ {
		a, b := xe[j], xe[j+1]
		y[2*j] = a + w0*(b-a)
		a, b = xo[j], xo[j+1]
		y[2*j+1] = a + w1*(b-a)
	}
}

// resizeRowsGo is the horizontal pass of a bilinear Resize over rows
// input rows of iw floats: y[r·ow + j] = a + w[j]·(b − a), a = x[r·iw +
// i0[j]], b = x[r·iw + i1[j]].
func resizeRowsGo(rows, iw, ow int, x, y []float32, i0, i1 []int32, w []float32) {
	i0, i1, w = i0[:ow], i1[:ow], w[:ow]
	for r := 0; r < rows; r++ {
		src, dst := x[r*iw:(r+1)*iw], y[r*ow:(r+1)*ow]
		for j := range dst {
			a, b := src[i0[j]], src[i1[j]]
			dst[j] = a + w[j]*(b-a)
		}
	}
}

// lerpRowsGo is the vertical pass of a bilinear Resize over planes
// planes of rows of ow floats (hs floats of h a plane): y[(p·oh +
// oy)·ow + j] = a + wy[oy]·(b − a), a = h[p·hs + r0[oy] + j], b = h[p·hs
// + r1[oy] + j].
func lerpRowsGo(planes, oh, ow, hs int, h, y []float32, r0, r1 []int32, wy []float32) {
	for p := 0; p < planes; p++ {
		hp := h[p*hs : (p+1)*hs]
		for oy := 0; oy < oh; oy++ {
			lerpGo(y[(p*oh+oy)*ow:(p*oh+oy+1)*ow], hp[r0[oy]:int(r0[oy])+ow], hp[r1[oy]:int(r1[oy])+ow], wy[oy])
		}
	}
}

// inRange reports whether every index lies in [0, n).
func inRange(idx []int32, n int) bool {
	for _, v := range idx {
		if v < 0 || int(v) >= n {
			return false
		}
	}
	return true
}

// interleave2Go is y[2j] = a[j], y[2j+1] = b[j] for j < len(a).
func interleave2Go(a, b, y []float32) {
	b, y = b[:len(a)], y[:2*len(a)]
	for j, v := range a {
		y[2*j], y[2*j+1] = v, b[j]
	}
}
