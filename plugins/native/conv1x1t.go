package native

// A 1×1 convolution over a small image with many channels (MobileNet-style
// blocks at 7×7 and 14×14: pose_detection, hand_landmark_full) is a GEMM
// whose columns (the image's positions) fill the micro-kernel's nr-wide
// panels badly: 49 positions are two 32-wide panels, 23% of every FMA
// wasted, 196 positions seven panels, 12.5%. NHWC engines (XNNPACK) put
// the positions on the rows instead, where a kernel of any height up to mr
// exists, and the output channels (multiples of 16 or 32 in such models)
// on the vector lanes. pointwiseT does that here:
//
//	Yᵀ (hw × cout) = Xᵀ (hw × cin) · Wᵀ (cin × cout)
//
// with Wᵀ packed in nr-wide panels once (the weights' layout the kernel
// streams, shared with runTransposed), Xᵀ packed per call as the
// packed-A tiles (mr consecutive positions of one channel: a contiguous
// copy out of the NCHW plane), every row tile, the last partial one too,
// run by the packed-A kernel of its height, and Yᵀ transposed into the
// NCHW output 8×8 blocks at a time. Where the A-transposed kernels exist
// (AVX-512) and cout ≤ cin, nothing is packed and the three steps are one
// loop over panels of output channels (runPointwiseTA, t2c_conv1x1t.go).

// pointwiseTMinCh: both channel counts at least this.
const pointwiseTMinCh = 64

// The transposed form's copies, priced in multiply-adds per float copied
// (from TestZooNodeCosts on pose_detection, each node's least time of 40
// in-model runs, load 20: a multiply-add about 0.011 ns, packing Xᵀ
// about 0.2 ns a float, transposing Yᵀ out about 0.3 ns, its cache
// lines cold). With a price of tile efficiency alone (a ratio of 1.15),
// 480←80 at 14×14 went 92 → 112 µs and 192←112 62 → 67: the copies
// outweigh a 14% better tiling over few input channels.
const (
	pointwiseTPackCost  = 20 // per float of Xᵀ (and of planar B where compute packs it)
	pointwiseTTransCost = 27 // per float of Yᵀ
)

// usePointwiseT: a variable, so tests and benchmarks run both paths;
// pointwiseTForce takes the transposed path wherever it may run.
var usePointwiseT, pointwiseTForce = true, false

// tileEff is the share of an extent n computed in whole tiles of t.
func tileEff(n, t int) float64 { return float64(n) / float64((n+t-1)/t*t) }

// pointwiseTWins reports whether a 1×1 convolution (cout×cin weights,
// constant, one group) over hw positions should be computed transposed.
// Planar, the cout rows go in tiles of mr and the hw columns in panels
// of nr (B read in place, or packed where compute packs it); transposed,
// the hw rows are exact (kernels of every height up to mr), the cout
// columns go in panels of nr, and Xᵀ and Yᵀ are copied. Per position, in
// multiply-adds:
//
//	planar:     cin·cout / eff(cout, mr)·eff(hw, nr) [+ pack·cin]
//	transposed: cin·cout / eff(cout, nr) + pack·cin + trans·cout
//
// In-model, planar → transposed (TestZooNodeCosts, pose_detection, least
// of 40 runs, µs, load 20): at 7×7 192←1152 241 → 173, 1152←192 186 →
// 146, 192←672 142 → 101; at 14×14 192←1152 612 → 527.
func pointwiseTWins(kern *microKernel, cout, cin, hw int) bool {
	if !usePointwiseT || kern.packedA == nil || !usePackedA || hw < kern.nr ||
		cout < pointwiseTMinCh || cin < pointwiseTMinCh || !has8x8Transpose {
		return false
	}
	if pointwiseTForce {
		return true
	}
	macs := float64(cin * cout)
	planar := macs / (tileEff(cout, kern.mr) * tileEff(hw, kern.nr))
	if pointwiseTAWith(kern, cout, cin) && pointwiseTAPrice {
		// runPointwiseTA: nothing packed, Yᵀ transposed out of L1
		return macs/tileEff(cout, kern.nr)+pointwiseTATransCost*float64(cout) < planar
	}
	// (compute's condition for packing B when this was measured: it
	// reads every 1×1 B in place now, see inPlaceBMax)
	if !inPlaceB || cin*hw > 64<<10 {
		planar += pointwiseTPackCost * float64(cin)
	}
	transposed := macs/tileEff(cout, kern.nr) + pointwiseTPackCost*float64(cin) + pointwiseTTransCost*float64(cout)
	return transposed < planar
}

// packedWT returns the weights as B of Yᵀ = im2colᵀ · Wᵀ (rows in (tap,
// ci) order, panels of kern.nr output channels) and the column bias,
// packed once (runTransposed packs the same, through the same Once).
func (p *convPlan) packedWT(kern *microKernel) ([]float32, []float32) {
	p.wtOnce.Do(func() {
		taps := p.kh * p.kw
		kk := p.cin * taps
		wr := p.w
		if taps > 1 {
			wr = make([]float32, p.cout*kk)
			for o := 0; o < p.cout; o++ {
				for ci := 0; ci < p.cin; ci++ {
					for t := 0; t < taps; t++ {
						wr[o*kk+t*p.cin+ci] = p.w[o*kk+ci*taps+t]
					}
				}
			}
		}
		p.wt = make([]float32, packedLen(kk, p.cout, kern.nr))
		packB(p.wt, wr, kk, p.cout, kern.nr, 1, kk) // element (k, o) at wr[o·kk + k]
		p.wtBias = make([]float32, panelsOf(p.cout, kern.nr)*kern.nr)
		copy(p.wtBias, p.bias[:p.cout])
	})
	return p.wt, p.wtBias
}

// runPointwiseT computes the 1×1 convolution of X into Y (both NCHW, hw
// positions, one group, constant weights) as Yᵀ = Xᵀ · Wᵀ.
func (p *convPlan) runPointwiseT(bc *buildCtx, X, Y []float32, batch, hw int) {
	if p.runPointwiseTA(bc, X, Y, batch, hw) {
		return
	}
	kern := bc.kern
	wt, wtBias := p.packedWT(kern)
	mr := kern.mr
	pa := packedALen(hw, p.cin, mr)
	sc := p.ss.of(pa + hw*p.cout)
	buf := sc.get()
	defer sc.put(buf)
	xt, ct := (*buf)[:pa], (*buf)[pa:pa+hw*p.cout]
	threads := bc.pool.threads()
	for b := 0; b < batch; b++ {
		xb := X[b*p.cin*hw : (b+1)*p.cin*hw]
		yb := Y[b*p.cout*hw : (b+1)*p.cout*hw]
		// Xᵀ as packed-A tiles, split by blocks of 16 channels over the
		// threads (about 0.3 ns a float moved)
		chunks := splitTasks(threads, max(1, p.cin/16), 16*0.3*float64(hw))
		parallelFor(bc.pool, chunks, packXTTask{xt, xb, p.cin, hw, mr, chunks}, func(a packXTTask, t int) {
			packXT(a.dst, a.x, a.c, a.hw, a.mr, a.c*t/a.chunks, a.c*(t+1)/a.chunks)
		})
		gemm(kern, bc.pool, &gemmOp{m: hw, n: p.cout, k: p.cin, a: xt, lda: p.cin, apacked: true, b: wt,
			c: ct, ldc: p.cout, bias: wtBias, biasMode: initColBias, clamp: p.clamp, lo: p.lo, hi: p.hi})
		// Yᵀ into Y, split by output channels in blocks of 8
		chunks = splitTasks(threads, max(1, p.cout/16), 16*0.3*float64(hw))
		parallelFor(bc.pool, chunks, transTask{yb, ct, hw, p.cout, chunks}, func(a transTask, t int) {
			c0, c1 := a.cout*t/a.chunks&^7, a.cout*(t+1)/a.chunks&^7
			if t == a.chunks-1 {
				c1 = a.cout
			}
			// rows [c0, c1) of Y: Yᵀ's columns from c0 on
			toChannelsLast(a.y[c0*a.hw:], a.ct[c0:], a.hw, a.cout, c1-c0, a.hw)
		})
	}
}

type packXTTask struct {
	dst, x            []float32
	c, hw, mr, chunks int
}

type transTask struct {
	y, ct            []float32
	hw, cout, chunks int
}

// packXT writes channels [c0, c1) of x (c rows of hw) transposed as
// packed-A tiles of mr rows (packA of the hw×c matrix xᵀ): tile t's
// column ci is positions t·mr … t·mr+mr-1 of channel ci, one contiguous
// run; a last partial tile's rows past hw are zero.
func packXT(dst, x []float32, c, hw, mr, c0, c1 int) {
	// in assembly where the CPU can: one masked vector move a copy
	// (BenchmarkPointwiseTParts, CPU µs, Go → assembly: 1152 channels at
	// 14×14 70 → 35, at 7×7 16 → 3.3)
	if !packXTAsm(dst, x, c, hw, mr, c0, c1) {
		packXTGo(dst, x, c, hw, mr, c0, c1)
	}
}

func packXTGo(dst, x []float32, c, hw, mr, c0, c1 int) {
	full := hw / mr
	for t := 0; t < full; t++ {
		tile := dst[t*mr*c : (t+1)*mr*c]
		p0 := t * mr
		switch mr {
		case 14:
			for ci := c0; ci < c1; ci++ {
				*(*[14]float32)(tile[ci*14:]) = *(*[14]float32)(x[ci*hw+p0:])
			}
		default:
			for ci := c0; ci < c1; ci++ {
				copy(tile[ci*mr:ci*mr+mr], x[ci*hw+p0:ci*hw+p0+mr])
			}
		}
	}
	if h := hw - full*mr; h > 0 {
		tile := dst[full*mr*c : (full+1)*mr*c]
		p0 := full * mr
		for ci := c0; ci < c1; ci++ {
			row := tile[ci*mr : ci*mr+mr]
			copy(row[:h], x[ci*hw+p0:ci*hw+p0+h])
			clear(row[h:])
		}
	}
}
