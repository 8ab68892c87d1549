package native

// rotateRowFMAVec is rotateRowFMA (ggml's float32 rotation: x1·c − x2·s
// as fma(x1, c, −(x2·s)), x1·s + x2·c as fma(x1, s, x2·c), the inner
// products rounded) with the pairs the assembly takes done there
// (rotateRowFMAFast: sixteen lanes at a time, the same steps, so the
// same bits) and the rest one by one. It returns false, having done
// nothing, where there is no assembly.
func rotateRowFMAVec(x, c, s []float32, interleaved bool) bool {
	i0 := rotateRowFMAFast(x, c, s, interleaved)
	if i0 == 0 {
		return false
	}
	w := len(c)
	s = s[:w]
	if interleaved {
		x = x[:2*w]
		for i := i0; i < w; i++ {
			x1, x2, ci, si := x[2*i], x[2*i+1], c[i], s[i]
			x[2*i], x[2*i+1] = fma32(x1, ci, -float32(x2*si)), fma32(x1, si, float32(x2*ci))
		}
		return true
	}
	x1s, x2s := x[:w], x[w:2*w]
	for i := i0; i < w; i++ {
		x1, x2, ci, si := x1s[i], x2s[i], c[i], s[i]
		x1s[i], x2s[i] = fma32(x1, ci, -float32(x2*si)), fma32(x1, si, float32(x2*ci))
	}
	return true
}
