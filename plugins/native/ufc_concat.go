package native

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// Concat's copy (concatKernel, eltwise.go): for each index over the axes
// before the concatenation axis (outer), each input's run of floats
// after it, one copy call a run, except runs of 2 floats (UltraFace's
// boxes), moved as pairs; a large concatenation split over the pool by
// outer index.

// concatParMin is the fewest output floats concatF32 splits over the
// pool for.
const concatParMin = 1 << 16

// concatTask is concatF32's work over a range of output floats.
type concatTask struct {
	y             []float32
	in            []*graph.Tensor
	zero          []bool
	ax, inner     int
	chunks, total int
}

// concatF32 writes y, the concatenation of in (float32, equal sizes off
// axis ax) along ax: inner is the output's element count from ax on;
// zero[i]: input i is all zeros (cleared, not copied).
func concatF32(p *pool, y []float32, in []*graph.Tensor, zero []bool, ax, inner int) {
	a := concatTask{y: y, in: in, zero: zero, ax: ax, inner: inner, chunks: 1, total: len(y)}
	if len(y) >= concatParMin {
		a.chunks = 2 * p.threads()
	}
	if a.chunks <= 1 || p.threads() == 1 {
		a.run(0, len(y))
		return
	}
	parallelFor(p, a.chunks, a, func(a concatTask, t int) {
		a.run(a.total*t/a.chunks, a.total*(t+1)/a.chunks)
	})
}

// run writes output floats [e0, e1): each input's runs over the outer
// indices in the range, the first and last cut to it.
func (a *concatTask) run(e0, e1 int) {
	if e0 >= e1 {
		return
	}
	o0, o1 := e0/a.inner, (e1-1)/a.inner
	off := 0
	for i, t := range a.in {
		n := kernels.Prod(t.Shape[a.ax:])
		z := i < len(a.zero) && a.zero[i]
		var x []float32
		if !z {
			x = f32(t)
		}
		if e0%a.inner == 0 && e1%a.inner == 0 {
			// whole rows
			switch {
			case z:
				for o := o0; o <= o1; o++ {
					clear(a.y[o*a.inner+off : o*a.inner+off+n])
				}
			case n == 2:
				// UltraFace's boxes: a copy call a run of 2 costs more
				// than the run (22.7 against 5 µs for its 4420 × 2 × 2)
				y := a.y[o0*a.inner+off : o1*a.inner+off+n]
				x := x[o0*2 : (o1+1)*2]
				for o := range o1 - o0 + 1 {
					y[o*a.inner], y[o*a.inner+1] = x[2*o], x[2*o+1]
				}
			default:
				for o := o0; o <= o1; o++ {
					copy(a.y[o*a.inner+off:o*a.inner+off+n], x[o*n:(o+1)*n])
				}
			}
			off += n
			continue
		}
		for o := o0; o <= o1; o++ {
			s0, s1 := 0, n // the run's part in [e0, e1)
			if o == o0 || o == o1 {
				base := o*a.inner + off
				s0, s1 = max(e0-base, 0), min(e1-base, n)
				if s0 >= s1 {
					continue
				}
			}
			dst := a.y[o*a.inner+off+s0 : o*a.inner+off+s1]
			if z {
				clear(dst)
			} else {
				copy(dst, x[o*n+s0:o*n+s1])
			}
		}
		off += n
	}
}
