package native

import "github.com/switchyard-hal/switchyard/core/ggml"

// rotateRowFMA is rotateRow in ggml's float32 arithmetic
// (contrib.RotaryFMAAttr: the reference kernel's rotation then, to the
// bit): x1·c − x2·s as fma(x1, c, −(x2·s)), x1·s + x2·c as fma(x1, s,
// x2·c), the inner products rounded.
func rotateRowFMA(x, c, s []float32, interleaved bool) {
	w := len(c)
	s = s[:w]
	if interleaved {
		x = x[:2*w]
		for i, ci := range c {
			x1, x2, si := x[2*i], x[2*i+1], s[i]
			x[2*i], x[2*i+1] = ggml.FMA32(x1, ci, -float32(x2*si)), ggml.FMA32(x1, si, float32(x2*ci))
		}
		return
	}
	x1s, x2s := x[:w], x[w:2*w]
	for i, ci := range c {
		x1, x2, si := x1s[i], x2s[i], s[i]
		x1s[i], x2s[i] = ggml.FMA32(x1, ci, -float32(x2*si)), ggml.FMA32(x1, si, float32(x2*ci))
	}
}
