package native

// The int8 kernels of domain "switchyard.quant" (core/ops/quant): Conv2D
// (any window, stride, dilation and padding; 1×1 straight from the
// input), FullyConnected, DepthwiseConv2D (channel multiplier 1) and Add
// without broadcasting. Their outputs are bit-identical to the reference
// kernels (core/kernels/quant): the int32 accumulation is exact (and
// wraps as Go's int32 does), and the requantisation is the reference's
// own MultiplyByQuantizedMultiplier — called as such on the portable
// path, and in the assembly as the same integer steps (see
// internal/asmgenq).
//
// Conv2D and FullyConnected are one int8 GEMM, y[r][c] = requant(corr[c]
// + Σ_k u[r][k]·w[c][k]), where u = x+128 (unsigned, as VPDPBUSD wants
// it) and corr[c] = bias[c] − (128+xz)·Σ_k w[c][k]: the weights are
// symmetric (zero point 0, what Supports requires), so Σ w(x−xz) =
// Σ w(x+128) − (128+xz)·Σ w. Padding taps hold xz, contributing nothing,
// as the reference skips them. The weights are packed at compile (groups
// of nv×16 output channels, k in steps of 4: [k/4][nv·16][4] bytes), the
// activations per row tile at run time ([k/4][mr][4] bytes). Two
// assembly families keep this contract (quant_amd64.go): AVX-512 VNNI
// (internal/asmgenq) and AVX2 (internal/asmgenq2, VPMADDWD on operands
// widened to int16: exact where VPMADDUBSW would saturate).
//
// The other ops of the domain (Sub, Mul, pools, Mean, Softmax, Logistic,
// (De)Quantize) are claimed and run their reference kernels inside the
// partition.

import (
	"fmt"
	"os"
	"sync"
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/core/kernels/quant"
	quantops "github.com/switchyard-hal/switchyard/core/ops/quant"
	"github.com/switchyard-hal/switchyard/hal"
)

// quantFast are the int8 ops with kernels here.
var quantFast = map[string]bool{"Conv2D": true, "DepthwiseConv2D": true, "FullyConnected": true, "Add": true, "LSTM": true}

// quantRef are the int8 ops claimed to run their reference kernels.
var quantRef = map[string]bool{"Sub": true, "Mul": true, "AveragePool2D": true, "MaxPool2D": true, "Mean": true,
	"Softmax": true, "Logistic": true, "Quantize": true, "Dequantize": true}

// qkernel is an int8 GEMM tile kernel: one mr×(nv·16) tile of y from a
// packed activation tile a (k4/4 steps of [mr][4] bytes), a packed weight
// group b (k4/4 steps of [nv·16][4] bytes) and the group's requantisation
// block rq (see qgemm.rq); rows ≤ mr rows of y (ldy bytes apart) are
// written, and in vector v the channels whose bit is set in the 16 bits
// masks>>(16v).
type qkernel struct {
	name   string
	mr, nv int
	fn     func(k4 int, a *uint8, b *int8, rq *int32, y *int8, ldy, rows int, masks uint64)
	// step is the cost of one tile's k-step for pickQKernel (0: the
	// VNNI tiles' max(mr·nv, 12))
	step int
}

// qkernelEnv forces an int8 kernel family by name, read when a node is
// compiled: "generic" (the portable Go kernels), "avx2" (the AVX2
// assembly, on a machine that also has AVX-512: the GEMM tiles,
// depthwise and Add), "vnni" or unset (the best the CPU has). A family
// the CPU lacks falls to the next one down; tests compare them all
// (archQFamilies lists the machine's).
const qkernelEnv = "SWITCHYARD_NATIVE_QKERNEL"

// qkernelFamily is the forced int8 kernel family ("": the best).
func qkernelFamily() string { return os.Getenv(qkernelEnv) }

// qkernels are the tile kernels for this machine, and whether they are
// assembly (the portable one is the only one otherwise).
func qkernels() []qkernel {
	if ks := archQKernels(); len(ks) > 0 {
		return ks
	}
	return []qkernel{{name: "generic", mr: 4, nv: 1}}
}

// quantKernelName names the int8 kernels in use (Info).
func quantKernelName() string {
	ks := qkernels()
	if ks[0].fn == nil {
		return "generic"
	}
	return ks[0].name
}

// --- checks ---

// qconst are a node's constant quantization parameters.
type qconst struct {
	xs, ys float32
	xz, yz int32
	ws     []float32
	lo, hi int32
}

// scalarParam reads a constant scale/zero-point pair at inputs i, i+1:
// per tensor (one value) unless channels > 0 allows that many.
func scalarParam(sg *hal.Subgraph, n *graph.Node, i, channels int, what string) ([]float32, []int32, string) {
	s, z := constInput(sg, n, i), constInput(sg, n, i+1)
	if s == nil || z == nil {
		return nil, nil, fmt.Sprintf("native: %s with a non-constant scale or zero point of %s", n.OpType, what)
	}
	sd, ok := s.Data.([]float32)
	if !ok || s.Check() != nil || z.Check() != nil || (z.DType != graph.Int8 && z.DType != graph.Int32) || len(sd) != z.Len() || len(sd) == 0 {
		return nil, nil, fmt.Sprintf("native: %s: scale/zero point of %s malformed (left to the reference kernel's checks)", n.OpType, what)
	}
	if len(sd) != 1 && (channels <= 0 || len(sd) != channels) {
		if channels <= 0 {
			return nil, nil, fmt.Sprintf("native: %s: per-channel quantization of %s not taken (only per tensor)", n.OpType, what)
		}
		return nil, nil, fmt.Sprintf("native: %s: %s has %d scales for %d channels", n.OpType, what, len(sd), channels)
	}
	for _, v := range sd {
		if !(v > 0) || v > 3.4e38 {
			return nil, nil, fmt.Sprintf("native: %s: %s has scale %g (left to the reference kernel's checks)", n.OpType, what, v)
		}
	}
	zs := make([]int32, len(sd))
	for k := range zs {
		zs[k] = int32(z.Int64At(k))
	}
	return sd, zs, ""
}

// int8Type declines unless input i is known int8 of rank want (0: any).
func int8Type(sg *hal.Subgraph, n *graph.Node, i, want int) (graph.Shape, string) {
	if i >= len(n.Inputs) || n.Inputs[i] == "" {
		return nil, fmt.Sprintf("native: %s input %d missing", n.OpType, i)
	}
	t, ok := sg.TypeOf(n.Inputs[i])
	if !ok || t.DType != graph.Int8 {
		return nil, fmt.Sprintf("native: %s input %d (%s) is %v: int8 expected", n.OpType, i, n.Inputs[i], t.DType)
	}
	if want > 0 && len(t.Shape) != want {
		return nil, fmt.Sprintf("native: %s input %d (%s) has rank %d: %d expected", n.OpType, i, n.Inputs[i], len(t.Shape), want)
	}
	return t.Shape, ""
}

// readQConst reads x, y (per tensor) and w's scales (channels per
// channel, 0: no w) and the activation clamp; "" or why not.
func readQConst(sg *hal.Subgraph, n *graph.Node, channels int) (qconst, string) {
	var q qconst
	if r := n.AttrString("rounding", "away"); r != "away" {
		return q, fmt.Sprintf("native: %s with rounding %q not taken (the int8 kernels round as TFLite's reference: away)", n.OpType, r)
	}
	xs, xz, r := scalarParam(sg, n, 1, 0, "x")
	if r != "" {
		return q, r
	}
	ys, yz, r := scalarParam(sg, n, 6, 0, "y")
	if r != "" {
		return q, r
	}
	q.xs, q.xz, q.ys, q.yz = xs[0], xz[0], ys[0], yz[0]
	if channels > 0 {
		ws, wz, r := scalarParam(sg, n, 4, channels, "w")
		if r != "" {
			return q, r
		}
		for _, z := range wz {
			if z != 0 {
				return q, fmt.Sprintf("native: %s with a nonzero weight zero point (%d) not taken: only symmetric weights", n.OpType, z)
			}
		}
		q.ws = ws
	}
	act := n.AttrString("activation", "NONE")
	lo, hi, ok := quant.ActivationRange(act, q.ys, q.yz)
	if !ok {
		return q, fmt.Sprintf("native: %s activation %q not implemented", n.OpType, act)
	}
	q.lo, q.hi = lo, hi
	return q, ""
}

// checkQuant is the verdict for a node of domain switchyard.quant.
func checkQuant(sg *hal.Subgraph, n *graph.Node) string {
	if quantRef[n.OpType] {
		return ""
	}
	if !quantFast[n.OpType] {
		return fmt.Sprintf("native: op %s.%s not implemented", n.Domain, n.OpType)
	}
	if n.OpType == "LSTM" {
		return checkQLSTM(sg, n) // qlstm.go
	}
	if n.OpType == "Add" {
		a, r := int8Type(sg, n, 0, 0)
		if r != "" {
			return r
		}
		b, r := int8Type(sg, n, 3, 0)
		if r != "" {
			return r
		}
		ai, ok1 := a.Ints()
		bi, ok2 := b.Ints()
		if !ok1 || !ok2 || !sameShape(ai, bi) {
			return fmt.Sprintf("native: Add of %v and %v: only equal static shapes (no broadcasting)", a, b)
		}
		for _, i := range []int{1, 4} {
			if _, _, r := scalarParam(sg, n, i, 0, map[int]string{1: "a", 4: "b"}[i]); r != "" {
				return r
			}
		}
		_, r = readQConst(sg, n, 0)
		return r
	}
	rank := 4
	if n.OpType == "FullyConnected" {
		rank = 0
	}
	xsh, r := int8Type(sg, n, 0, rank)
	if r != "" {
		return r
	}
	w := constInput(sg, n, 3)
	if w == nil || w.DType != graph.Int8 || w.Check() != nil {
		return fmt.Sprintf("native: %s with non-constant or non-int8 weights", n.OpType)
	}
	var cout int
	switch n.OpType {
	case "FullyConnected":
		if len(w.Shape) != 2 || w.Shape[1] == 0 || w.Shape[0] == 0 {
			return fmt.Sprintf("native: FullyConnected weights %v: [units, depth] expected", w.Shape)
		}
		cout = w.Shape[0]
	case "Conv2D":
		if len(w.Shape) != 4 || w.Len() == 0 {
			return fmt.Sprintf("native: Conv2D filter %v: OHWI expected", w.Shape)
		}
		if !xsh[3].Static() || int(xsh[3].Value) != w.Shape[3] {
			return fmt.Sprintf("native: Conv2D of %v by filter %v: grouped or unknown input channels not taken", xsh, w.Shape)
		}
		cout = w.Shape[0]
	case "DepthwiseConv2D":
		if len(w.Shape) != 4 || w.Shape[0] != 1 || w.Len() == 0 {
			return fmt.Sprintf("native: DepthwiseConv2D filter %v: 1HWC expected", w.Shape)
		}
		if !xsh[3].Static() || int(xsh[3].Value) != w.Shape[3] {
			return fmt.Sprintf("native: DepthwiseConv2D of %v by filter %v: only channel multiplier 1 with known channels", xsh, w.Shape)
		}
		cout = w.Shape[3]
	}
	if len(n.Inputs) > 8 && n.Inputs[8] != "" {
		b := constInput(sg, n, 8)
		if b == nil || b.DType != graph.Int32 || b.Len() != cout {
			return fmt.Sprintf("native: %s bias must be constant int32[%d]", n.OpType, cout)
		}
	}
	if n.OpType != "FullyConnected" {
		for _, a := range []struct {
			name string
			def  []int64
			want int
		}{{"strides", []int64{1, 1}, 2}, {"dilations", []int64{1, 1}, 2}, {"pads", []int64{0, 0, 0, 0}, 4}} {
			v := n.AttrInts(a.name, a.def)
			if len(v) != a.want {
				return fmt.Sprintf("native: %s %s %v: %d values expected", n.OpType, a.name, v, a.want)
			}
			for _, x := range v {
				if x < 0 || x > 1<<16 || (x == 0 && a.name != "pads") {
					return fmt.Sprintf("native: %s %s %v out of range", n.OpType, a.name, v)
				}
			}
		}
	}
	_, r = readQConst(sg, n, cout)
	return r
}

// --- build ---

// buildQuant returns the kernel of an int8 node (nil: the reference one).
func buildQuant(bc *buildCtx, n *graph.Node) (kernels.Func, error) {
	if !quantFast[n.OpType] && n.OpType != "Mean" {
		return nil, nil
	}
	switch n.OpType {
	case "Add":
		return buildQAdd(bc, n)
	case "DepthwiseConv2D":
		return buildQDepthwise(bc, n)
	case "LSTM":
		return buildQLSTM(bc, n)
	}
	if n.OpType == "Mean" {
		return buildQMean(bc, n), nil
	}
	return buildQGemmOp(bc, n)
}

// refKernel is the reference kernel of a quant op (for the cases a fast
// kernel does not take at run time, and their errors).
func refKernel(op string) kernels.Func {
	k, _ := kernels.Lookup(quantops.Domain, op)
	return k.Kernel
}

// qbias reads a node's constant bias (nil: none).
func qbias(bc *buildCtx, n *graph.Node, cout int) []int32 {
	if b := constInput(bc.sg, n, 8); b != nil {
		return graph.Data[int32](b)
	}
	return make([]int32, cout)
}

// multipliers are the per-channel requantisation multipliers of a conv
// (xs·ws[c]/ys in float64) or a FullyConnected (per tensor:
// float64(float32(xs·ws))/ys).
func multipliers(q qconst, cout int, fc bool) ([]int32, []int) {
	mq, ms := make([]int32, cout), make([]int, cout)
	for c := range mq {
		ws := q.ws[0]
		if len(q.ws) > 1 {
			ws = q.ws[c]
		}
		if fc && len(q.ws) == 1 {
			mq[c], ms[c] = quant.QuantizeMultiplier(float64(q.xs*ws) / float64(q.ys))
		} else {
			mq[c], ms[c] = quant.QuantizeMultiplier(float64(q.xs) * float64(ws) / float64(q.ys))
		}
	}
	return mq, ms
}

// qgemm is a packed int8 GEMM with its requantisation (see the file's
// comment).
type qgemm struct {
	k, k4, n int
	kern     qkernel
	groups   int
	b        []int8  // groups × k4/4 × nv·16 × 4
	rq       []int32 // groups × rqst (rqStride, or rqStrideF)
	rqst     int
	masks    []uint64
	// for the portable kernel
	corr, mq []int32
	shift    []int
	// ONNX's float requantisation (newQGemmF) instead: the multipliers
	// and the bounds less yz
	fm       []float64
	flo, fhi float64
	yz       int32
	lo, hi   int32
	scratch  sync.Pool
	runs     sync.Pool // *qgemmRun, one a call (run)
}

// rqStride is one group's requantisation block: corr, mult, left shift,
// right shift, rounding mask and threshold (nv·16 int32 each), then yz,
// lo, hi, 1 and the int64 2^30.
func rqStride(nv int) int { return 6*nv*16 + 8 }

// pickQKernel chooses the tile kernel that pads m×n least (ties: the
// first listed).
func pickQKernel(ks []qkernel, m, n int) qkernel {
	best, bestCost := ks[0], -1
	for _, k := range ks {
		rows := (m + k.mr - 1) / k.mr * k.mr
		cols := (n + 16*k.nv - 1) / (16 * k.nv) * 16 * k.nv
		// a tile's k-step costs its mr·nv VPDPBUSDs, but no less than
		// about 12 (the accumulators must cover the instruction's latency)
		step := max(k.mr*k.nv, 12)
		if k.step > 0 {
			step = k.step
		}
		cost := (rows / k.mr) * (cols / (16 * k.nv)) * step
		if bestCost < 0 || cost < bestCost {
			best, bestCost = k, cost
		}
	}
	return best
}

// newQGemm packs w (n rows of k int8) for m rows of activations.
func newQGemm(w []int8, n, k, m int, bias []int32, xz int32, mq []int32, ms []int, yz, lo, hi int32) *qgemm {
	g := packQGemm(w, n, k, pickQKernel(qkernels(), m, n), bias, xz)
	g.yz, g.lo, g.hi, g.mq, g.shift = yz, lo, hi, mq, ms
	nv, gw := g.kern.nv, 16*g.kern.nv
	st := rqStride(nv)
	g.rqst = st
	g.rq = make([]int32, g.groups*st)
	for gi := 0; gi < g.groups; gi++ {
		blk := g.rq[gi*st : (gi+1)*st]
		for j := 0; j < gw; j++ {
			c := gi*gw + j
			if c >= n {
				continue
			}
			left, right := max(ms[c], 0), max(-ms[c], 0)
			blk[j] = g.corr[c]
			blk[gw+j] = mq[c]
			blk[2*gw+j] = int32(left)
			blk[3*gw+j] = int32(right)
			mask := int32(1)<<right - 1
			blk[4*gw+j] = mask
			blk[5*gw+j] = mask >> 1
		}
		t := blk[6*gw:]
		t[0], t[1], t[2], t[3], t[4], t[5] = yz, lo, hi, 1, 1<<30, 0
	}
	return g
}

// packQGemm packs w (n rows of k int8) for the tile kernel kern, with
// corr[c] = bias[c] − (128+xz)·Σ_k w[c][k] and the groups' masks; the
// requantisation is the caller's.
func packQGemm(w []int8, n, k int, kern qkernel, bias []int32, xz int32) *qgemm {
	g := &qgemm{k: k, k4: (k + 3) &^ 3, n: n, kern: kern}
	nv := kern.nv
	gw := 16 * nv
	g.groups = (n + gw - 1) / gw
	g.b = make([]int8, g.groups*g.k4*gw)
	g.corr = make([]int32, n)
	for c := 0; c < n; c++ {
		s := int32(0)
		row := w[c*k : (c+1)*k]
		for _, v := range row {
			s += int32(v)
		}
		g.corr[c] = bias[c] - (128+xz)*s
		gi, j := c/gw, c%gw
		base := gi * g.k4 * gw
		for kk, v := range row {
			g.b[base+(kk/4)*gw*4+j*4+kk%4] = v
		}
	}
	g.masks = make([]uint64, g.groups)
	for c := 0; c < n; c++ {
		g.masks[c/gw] |= 1 << uint(c%gw)
	}
	return g
}

// qfill is where a GEMM's activations come from: rows of k bytes of x
// (packRows), or the windows of a padded image (packIm2col, im2col). Its
// fill packs rows [r0, r0+rows) into a (mr-row tiles, k4 bytes per row,
// u = x+128). A value, not a closure, so that a call allocates nothing.
type qfill struct {
	x []int8 // packRows: row r at x[r·k:]
	k int
	// packIm2col: the padded u8 image (n×hp×wp×c), the output oh×ow
	img               []uint8
	hp, wp, c, oh, ow int
	gm                qconvGeom
	im2col            bool
}

// fill packs rows [r0, r0+rows) into a.
func (f *qfill) fill(a []uint8, r0, rows, mr, k4 int) {
	if f.im2col {
		f.fillIm2col(a, r0, rows, mr, k4)
		return
	}
	f.fillRows(a, r0, rows, mr, k4)
}

// rowsPerTask is how many rows one task of the pool takes.
func (g *qgemm) rowsPerTask(m, threads int) int {
	mr := g.kern.mr
	r := max(mr, (64+mr-1)/mr*mr)
	if threads > 1 {
		// at least 3 tasks per thread where the rows allow
		per := (m + 3*threads - 1) / (3 * threads)
		per = max(mr, (per+mr-1)/mr*mr)
		r = min(r, per)
	}
	return r
}

type qgemmRun struct {
	g   *qgemm
	src qfill
	y   []int8
	ldy int
	m   int
	per int
}

// run computes m rows of y (ldy bytes apart) from the activations fill
// packs, over the pool.
func (g *qgemm) run(p *pool, m int, fill qfill, y []int8, ldy int) {
	per := g.rowsPerTask(m, p.threads())
	tasks := (m + per - 1) / per
	r, _ := g.runs.Get().(*qgemmRun)
	if r == nil {
		r = new(qgemmRun)
	}
	*r = qgemmRun{g: g, src: fill, y: y, ldy: ldy, m: m, per: per}
	parallelFor(p, tasks, r, func(r *qgemmRun, t int) {
		r.g.task(r, t)
	})
	*r = qgemmRun{}
	g.runs.Put(r)
}

func (g *qgemm) task(r *qgemmRun, t int) {
	mr, nv := g.kern.mr, g.kern.nv
	r0 := t * r.per
	rows := min(r.per, r.m-r0)
	tiles := (rows + mr - 1) / mr
	need := tiles * mr * g.k4
	// the pool holds *[]uint8: the same pointer goes back (a new one per
	// call would be an allocation per task)
	ap, _ := g.scratch.Get().(*[]uint8)
	if ap == nil || cap(*ap) < need {
		b := make([]uint8, need)
		ap = &b
	}
	a := (*ap)[:need]
	r.src.fill(a, r0, rows, mr, g.k4)
	gw := 16 * nv
	st := g.rqst
	for ti := 0; ti < tiles; ti++ {
		tr := min(mr, rows-ti*mr)
		at := a[ti*mr*g.k4:]
		yrow := (r0 + ti*mr) * r.ldy
		for gi := 0; gi < g.groups; gi++ {
			if g.kern.fn != nil {
				g.kern.fn(g.k4, &at[0], &g.b[gi*g.k4*gw], &g.rq[gi*st], &r.y[yrow+gi*gw], r.ldy, tr, g.masks[gi])
			} else {
				g.tileGo(at, gi, r.y[yrow:], r.ldy, tr)
			}
		}
	}
	g.scratch.Put(ap)
}

// tileGo is the portable tile kernel: the same packed operands, the
// reference's requantisation.
func (g *qgemm) tileGo(a []uint8, gi int, y []int8, ldy, rows int) {
	mr, gw := g.kern.mr, 16*g.kern.nv
	b := g.b[gi*g.k4*gw : (gi+1)*g.k4*gw]
	var acc [64]int32
	for i := 0; i < rows; i++ {
		for j := 0; j < gw; j++ {
			c := gi*gw + j
			if c >= g.n {
				break
			}
			s := g.corr[c]
			for ks := 0; ks < g.k4/4; ks++ {
				ao := ks*mr*4 + i*4
				bo := ks*gw*4 + j*4
				s += int32(a[ao])*int32(b[bo]) + int32(a[ao+1])*int32(b[bo+1]) + int32(a[ao+2])*int32(b[bo+2]) + int32(a[ao+3])*int32(b[bo+3])
			}
			acc[j] = s
		}
		for j := 0; j < gw; j++ {
			c := gi*gw + j
			if c >= g.n {
				break
			}
			if g.fm != nil {
				y[i*ldy+c] = requantF(acc[j], g.fm[c], g.flo, g.fhi, g.yz)
				continue
			}
			v := quant.MulByQuantizedMultiplier(acc[j], g.mq[c], g.shift[c]) + g.yz
			y[i*ldy+c] = int8(min(max(v, g.lo), g.hi))
		}
	}
}

// packRows packs rows given as contiguous k-byte runs of x (row r at
// x[r·k:]), the layout of a 1×1 convolution's NHWC input and of
// FullyConnected's.
func packRows(x []int8, k int) qfill { return qfill{x: x, k: k} }

func (f *qfill) fillRows(a []uint8, r0, rows, mr, k4 int) {
	x, k := f.x, f.k
	{
		tiles := (rows + mr - 1) / mr
		for ti := 0; ti < tiles; ti++ {
			at := a[ti*mr*k4 : (ti+1)*mr*k4]
			for i := 0; i < mr; i++ {
				r := ti*mr + i
				if r >= rows {
					for ks := 0; ks < k4/4; ks++ {
						*(*uint32)(unsafe.Pointer(&at[ks*mr*4+i*4])) = 0
					}
					continue
				}
				src := x[(r0+r)*k : (r0+r+1)*k]
				ks := 0
				for ; ks+8 <= k; ks += 8 {
					v := *(*uint64)(unsafe.Pointer(&src[ks])) ^ 0x8080808080808080
					o := (ks/4)*mr*4 + i*4
					*(*uint32)(unsafe.Pointer(&at[o])) = uint32(v)
					*(*uint32)(unsafe.Pointer(&at[o+mr*4])) = uint32(v >> 32)
				}
				for ; ks+4 <= k; ks += 4 {
					v := *(*uint32)(unsafe.Pointer(&src[ks])) ^ 0x80808080
					*(*uint32)(unsafe.Pointer(&at[(ks/4)*mr*4+i*4])) = v
				}
				if ks < k {
					var t [4]uint8
					for j := 0; ks+j < k; j++ {
						t[j] = uint8(src[ks+j]) ^ 0x80
					}
					copy(at[(ks/4)*mr*4+i*4:], t[:])
				}
			}
		}
	}
}
