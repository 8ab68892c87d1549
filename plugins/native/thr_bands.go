package native

// Row bands: a convolution's loops split so that each thread reads what
// its own core wrote. The pool gives the caller a loop's first tasks and
// a worker its last ones (job.work), and kernels split their output in
// order, so the caller writes the front of an output and the worker its
// back. A fill of phase planes split by channels breaks that: every
// column task of the GEMM after it then reads rows of every channel,
// each thread half of them from the other core's cache (on this
// project's virtual machines such a read costs about twice a local one).
// Filled in row bands, the same bands as the GEMM's column tasks, each
// task reads the plane rows its own thread filled (but for the window's
// few rows of overlap into the next band).

// rowBands turns the banded fills on (benchmarks compare both ways).
var rowBands = true

// fillBands is the number of row bands the indirect convolution's phase
// planes are filled in (or its wide rows copied out), one per column
// task of its GEMM (tasks of np panels), where split by its units
// (units: cg channels to fill, per output channels to copy) the loop
// would be split at all (split > 1) but coarsely, fewer than 4 units a
// thread; 0: by units. A fill too small to split stays on the caller:
// in bands, the loop's hand-off cost more than the other core's reads
// (UltraFace's 16→16 3×3 at 30×40, BenchmarkThrBands least 43.1 µs in
// bands, 41.1 on the caller, 40.6 at 1 thread; in the model 3-8%
// slower). Over many channels the channel split stays: YOLOX-nano's
// 12→16 at 208×208 took 449 µs in bands and 569 by channels at best,
// but 10-15% longer in bands at the 10th percentile and the median
// (load 4-6, both orders).
func (il *convIndirect) fillBands(threads, tasks, np, split, units int) int {
	if !rowBands || threads <= 1 || tasks <= 1 || np < tasks || split <= 1 || units >= 4*threads {
		return 0
	}
	return tasks
}

// bandRow is the first output row of column task t of tasks (np panels
// in all): the first phase-plane row that task reads (output row oy
// reads plane rows oy to oy + (kh−1)·dh/sh). Task tasks starts at hq.
func (il *convIndirect) bandRow(t, tasks, np int) int {
	if t >= tasks {
		return il.hq
	}
	q := np * t / tasks
	if il.wide {
		return min(q*igemmNR/il.wq, il.hq)
	}
	return min(q/il.ppr, il.hq)
}

// runBand fills band t of a.chunks (bandRow) of every channel's phase
// planes.
func (a indFill) runBand(t int) {
	np := a.il.ncols / igemmNR
	r0, r1 := a.il.bandRow(t, a.chunks, np), a.il.bandRow(t+1, a.chunks, np)
	for ci := 0; ci < a.cg; ci++ {
		a.il.fillRows(a.g, a.xs[ci*a.hw:(ci+1)*a.hw], a.planes[ci*a.il.ps:(ci+1)*a.il.ps], r0, r1)
	}
}

// runBand copies the output rows of band t of a.tasks (bandRow, the
// rows the column task t computed) out of the wide rows, every channel.
func (a indCopy) runBand(t int) {
	np := a.il.ncols / igemmNR
	oy0, oy1 := a.il.bandRow(t, a.tasks, np), min(a.il.bandRow(t+1, a.tasks, np), a.g.oh)
	ohw := a.g.oh * a.g.ow
	for co := 0; co < a.per; co++ {
		src, dst := a.cw[co*a.il.ncols:], a.y[co*ohw:(co+1)*ohw]
		for oy := oy0; oy < oy1; oy++ {
			copy(dst[oy*a.g.ow:(oy+1)*a.g.ow], src[oy*a.il.wq:oy*a.il.wq+a.g.ow])
		}
	}
}
