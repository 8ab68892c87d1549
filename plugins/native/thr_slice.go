package native

// Slice with steps other than 1: YOLOX's Focus cuts its 3×416×416 input
// into four 3×208×208 phases with x[..., 0::2, :] and then x[..., 0::2]
// (eight Slices, the second of each pair a gather of every other float),
// which the reference kernel ran at about 1 ns a float (123 µs a node,
// 0.5 ms of the model, on one thread at any thread count).

// sliceTask is sliceStrided's loop over chunks of output rows (the
// output's last axis a row).
type sliceTask struct {
	y, x    []float32
	p       slicePlan
	stride  [sliceMaxRank]int // the input's element strides
	rows, n int               // output rows, floats a row
	chunks  int
}

// sliceStrided writes y, the slice p of x (of shape shape) where some
// step is not 1: a row of the output's last axis at a time, from its
// input offset, gathered at the last axis's step.
func sliceStrided(pl *pool, y, x []float32, shape []int, p *slicePlan) {
	if len(y) == 0 {
		return
	}
	a := sliceTask{y: y, x: x, p: *p, n: p.out[p.r-1]}
	s := 1
	for d := p.r - 1; d >= 0; d-- {
		a.stride[d] = s
		s *= shape[d]
	}
	a.rows = len(y) / a.n
	a.chunks = splitTasks(pl.threads(), a.rows, 0.5*float64(a.n)+5)
	parallelFor(pl, a.chunks, a, sliceTask.run)
}

// run copies chunk t of the output rows.
func (a sliceTask) run(t int) {
	p, n := &a.p, a.n
	last := p.r - 1
	sl := p.step[last]
	for i := a.rows * t / a.chunks; i < a.rows*(t+1)/a.chunks; i++ {
		off := p.start[last] * a.stride[last]
		for d, rest := last-1, i; d >= 0; d-- {
			idx := rest % p.out[d]
			rest /= p.out[d]
			off += (p.start[d] + idx*p.step[d]) * a.stride[d]
		}
		dst := a.y[i*n : (i+1)*n]
		if sl == 1 {
			copy(dst, a.x[off:off+n])
			continue
		}
		j := 0
		if sl == 2 {
			// every other float: the vector deinterleave, its odd half
			// into a scratch (x read 2m floats from off, within x)
			var odd [256]float32
			m := min(n, (len(a.x)-off)/2)
			for j0 := 0; j0 < m; j0 += len(odd) {
				j1 := min(m, j0+len(odd))
				deinterleave2(j1-j0, a.x[off+2*j0:], dst[j0:j1], odd[:j1-j0])
			}
			j = m
		}
		src := a.x[off : off+(n-1)*sl+1]
		for ; j < n; j++ {
			dst[j] = src[j*sl]
		}
	}
}
