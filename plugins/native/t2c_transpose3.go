package native

// deinterleave3Par is transpose2DPar of batch rows×3 matrices (NHWC images
// of three channels into planes: a model's first node) split by ranges of
// rows (positions) over p's threads: the caller the first ones, as the
// convolution after it splits its output's positions (job.work). It
// reports false where one thread does it all (p single-threaded, or less
// than transposeParMin elements).
//
// Done whole by deinterleave3 on one thread, hand_landmark_full's
// 224×224×3 input took as long at 2 threads as at 1 (38 and 41 µs least
// in-model, BenchmarkT2bNodeScaling, load 11).
func deinterleave3Par(p *pool, y, x []float32, batch, rows int) bool {
	if !useDeinterleave3Par || p.threads() <= 1 || rows*3 < transposeParMin {
		return false
	}
	// ranges of at least 4096 positions (48 KiB in and out), whole
	// vectors of 16
	parts := min(taskGrain*p.threads(), max(1, rows/4096))
	if parts <= 1 {
		return false
	}
	parallelFor(p, batch*parts, di3Task{y, x, rows, parts}, func(a di3Task, t int) {
		b, k := t/a.parts, t%a.parts
		n := 3 * a.rows
		x, y := a.x[b*n:(b+1)*n], a.y[b*n:(b+1)*n]
		i0, i1 := a.rows*k/a.parts&^15, a.rows*(k+1)/a.parts&^15
		if k == a.parts-1 {
			i1 = a.rows
		}
		deinterleave3(x[3*i0:3*i1], y[i0:i1], y[a.rows+i0:a.rows+i1], y[2*a.rows+i0:2*a.rows+i1])
	})
	return true
}

// di3Task is deinterleave3Par's loop.
type di3Task struct {
	y, x        []float32
	rows, parts int
}

// useDeinterleave3Par: a variable, so that benchmarks compare.
var useDeinterleave3Par = true
