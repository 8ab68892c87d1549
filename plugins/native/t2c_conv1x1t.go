package native

// runPointwiseTA is runPointwiseT (conv1x1t.go) in one parallel loop over
// blocks of output channels, with nothing packed per call: the GEMM's
// kernels read Xᵀ's tiles straight out of the NCHW planes (the tile's
// positions of one channel are contiguous, the next channel hw floats
// on: gemmATKernels, A transposed in place), and each task computes its
// panels of 32 output channels over all the positions into a scratch
// block of its own (hw × 32, in L1 or L2) that it transposes at once into
// those channels' output planes.
//
// runPointwiseT's three loops (pack Xᵀ by input channels, the GEMM by
// row tiles or panels, transpose Yᵀ by output channels) each waited for
// the last, and each at two threads read half its input from the other
// core's cache; here a task reads X (shared, read only) and its own
// weight panels and writes its own output planes, which the depthwise
// convolution after it (split by planes in the same order: job.work)
// reads from its own core's cache.
func (p *convPlan) runPointwiseTA(bc *buildCtx, X, Y []float32, batch, hw int) bool {
	kern := bc.kern
	if !pointwiseTAWith(kern, p.cout, p.cin) || hw == 0 {
		return false
	}
	wt, wtBias := p.packedWT(kern)
	nr := kern.nr
	np := panelsOf(p.cout, nr)
	sc := p.ss.of(hw * nr)
	// tasks: panels, about 0.011 ns a multiply-add, 0.3 ns a float moved
	tasks := splitTasks(bc.pool.threads(), np, float64(hw*nr)*(0.011*float64(p.cin)+0.3))
	for b := 0; b < batch; b++ {
		xb := X[b*p.cin*hw : (b+1)*p.cin*hw]
		yb := Y[b*p.cout*hw : (b+1)*p.cout*hw]
		parallelFor(bc.pool, tasks, pwtaTask{p: p, kern: kern, x: xb, y: yb, wt: wt, bias: wtBias, sc: sc, hw: hw, np: np, tasks: tasks}, func(a pwtaTask, t int) {
			a.run(t)
		})
	}
	return true
}

// pwtaTask is runPointwiseTA's loop.
type pwtaTask struct {
	p             *convPlan
	kern          *microKernel
	x, y, wt      []float32
	bias          []float32
	sc            *scratch
	hw, np, tasks int
}

// run computes panels [np·t/tasks, np·(t+1)/tasks) of output channels.
func (a *pwtaTask) run(t int) {
	buf := a.sc.get()
	defer a.sc.put(buf)
	p, kern, hw, nr := a.p, a.kern, a.hw, a.kern.nr
	ct := (*buf)[:hw*nr]
	k := p.cin
	_ = a.x[k*hw-1] // the kernels read A up to here and do not check
	for jp := a.np * t / a.tasks; jp < a.np*(t+1)/a.tasks; jp++ {
		j0 := jp * nr
		w := min(nr, p.cout-j0)
		op := gemmOp{m: hw, n: w, k: k, a: a.x, lda: hw, atrans: true, b: a.wt[jp*k*nr : (jp+1)*k*nr], c: ct, ldc: nr,
			bias: a.bias[j0 : j0+nr], biasMode: initColBias, clamp: p.clamp, lo: p.lo, hi: p.hi}
		gemmBlock(kern, &op, 0, hw, 0, 1)
		// Yᵀ's block (hw × w, nr apart) into planes j0 … j0+w
		toChannelsLast(a.y[j0*hw:], ct, hw, nr, w, hw)
	}
}

// pointwiseTAWith reports whether runPointwiseTA computes a cin → cout
// 1×1 convolution with kern.
func pointwiseTAWith(kern *microKernel, cout, cin int) bool {
	return usePointwiseTA && gemmATKernels != nil && kern.mr == gemmATMR && kern.nr == gemmATNR && kern.packedA != nil &&
		cout <= cin*pointwiseTAMaxExpand
}

// pointwiseTAMaxExpand bounds the output channels runPointwiseTA takes
// per input channel: in-model (BenchmarkT2cModelAB, hand_landmark_full,
// one thread, least of 100 profiled calls, load 8-9, three loops → one
// loop µs) the reductions gained, 1152→192 at 7×7 158-161 → 143-146,
// 672→192 91 → 87, and the expansions lost, 192→1152 at 7×7 132-134 →
// 143-152, 80→480 at 14×14 86-87 → 91-93 (their Xᵀ, few channels, is
// re-read from the planes for each of many panels). At cout ≤ cin the
// model's node sum went 5.09 → 5.03 ms.
var pointwiseTAMaxExpand = 1

// pointwiseTATransCost is runPointwiseTA's price of transposing a float
// of Yᵀ out (in multiply-adds: see pointwiseTWins), its block in L1 and
// no Xᵀ packed. Fitted to BenchmarkT2cPointwiseTA (CPU time, one
// thread, load 9, planar → one loop µs, cout×cin): 672×112 at 14×14
// 174 → 163, 480×80 97 → 90, 112×672 180 → 183, 80×480 89 → 94; at 7×7
// 192×1152 182 → 114, 1152×192 163 → 125, 192×672 93 → 68 (runPointwiseT's
// three loops: 123, 123, 71). The planar side is priced without the B
// packing pointwiseTWins adds for the three loops: compute reads every
// 1×1 B in place (inPlaceBMax).
const pointwiseTATransCost = 10

// pointwiseTAPrice: pointwiseTWins prices runPointwiseTA (false: the
// three loops' price, for comparisons).
var pointwiseTAPrice = true

// usePointwiseTA: a variable, so that tests and benchmarks run
// runPointwiseT's three loops too.
var usePointwiseTA = true
