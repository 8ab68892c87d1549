package native

import "math"

// rmsNormRows is rmsNormKernel's arithmetic over the rows of M values of
// xs into ys (scale gs), in ggml's order: each row's squares x·x rounded
// to float32 and summed in float64 in order, the mean rounded to
// float32, s = 1/√(mean + ε) in float32, then y = (x·s)·scale. The sum of
// a row is one chain of dependent float64 additions (its order is its
// bits), so a few rows' chains run side by side: four rows of a batched
// decode step (or a prompt's rows, four at a time) take about one row's
// time, each row's sum the same additions in the same order as alone.
func rmsNormRows(xs, ys, gs []float32, M int, eps float32) {
	n := len(xs) / M
	r := 0
	for ; r+4 <= n; r += 4 {
		x0, x1, x2, x3 := xs[r*M:(r+1)*M], xs[(r+1)*M:(r+2)*M], xs[(r+2)*M:(r+3)*M], xs[(r+3)*M:(r+4)*M]
		x1, x2, x3 = x1[:len(x0)], x2[:len(x0)], x3[:len(x0)]
		var s0, s1, s2, s3 float64
		for i, v := range x0 {
			s0 += float64(float32(v * v)) // rounded as ggml's float product
			s1 += float64(float32(x1[i] * x1[i]))
			s2 += float64(float32(x2[i] * x2[i]))
			s3 += float64(float32(x3[i] * x3[i]))
		}
		for k, sum := range [4]float64{s0, s1, s2, s3} {
			at := (r + k) * M
			rmsScaleRow(xs[at:at+M], ys[at:at+M], gs, rmsInv(sum, M, eps))
		}
	}
	for ; r < n; r++ {
		row := xs[r*M : (r+1)*M]
		sum := 0.0
		for _, v := range row {
			sum += float64(float32(v * v))
		}
		rmsScaleRow(row, ys[r*M:(r+1)*M], gs, rmsInv(sum, M, eps))
	}
}

// rmsInv is 1/√(mean + ε) in float32 of a row's sum of squares.
func rmsInv(sum float64, M int, eps float32) float32 {
	mean := float32(sum / float64(M))
	return 1 / float32(math.Sqrt(float64(mean+eps)))
}

// rmsScaleRow sets out[i] = (x[i]·s)·g[i], each product rounded.
func rmsScaleRow(x, out, g []float32, s float32) {
	out, g = out[:len(x)], g[:len(x)]
	for i, v := range x {
		out[i] = (v * s) * g[i]
	}
}
