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
var quantFast = map[string]bool{"Conv2D": true, "DepthwiseConv2D": true, "FullyConnected": true, "Add": true}

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

// qfill packs rows [r0, r0+rows) of the activations into a (mr-row
// tiles, k4 bytes per row, u = x+128).
type qfill func(a []uint8, r0, rows, mr, k4 int)

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
	g    *qgemm
	fill qfill
	y    []int8
	ldy  int
	m    int
	per  int
}

// run computes m rows of y (ldy bytes apart) from the activations fill
// packs, over the pool.
func (g *qgemm) run(p *pool, m int, fill qfill, y []int8, ldy int) {
	per := g.rowsPerTask(m, p.threads())
	tasks := (m + per - 1) / per
	parallelFor(p, tasks, &qgemmRun{g: g, fill: fill, y: y, ldy: ldy, m: m, per: per}, func(r *qgemmRun, t int) {
		r.g.task(r, t)
	})
}

func (g *qgemm) task(r *qgemmRun, t int) {
	mr, nv := g.kern.mr, g.kern.nv
	r0 := t * r.per
	rows := min(r.per, r.m-r0)
	tiles := (rows + mr - 1) / mr
	need := tiles * mr * g.k4
	var a []uint8
	if v := g.scratch.Get(); v != nil && cap(*v.(*[]uint8)) >= need {
		a = (*v.(*[]uint8))[:need]
	} else {
		a = make([]uint8, need)
	}
	r.fill(a, r0, rows, mr, g.k4)
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
	g.scratch.Put(&a)
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
func packRows(x []int8, k int) qfill {
	return func(a []uint8, r0, rows, mr, k4 int) {
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

// qconvGeom is a Conv2D's window.
type qconvGeom struct {
	kh, kw, sh, sw, dh, dw, pt, pl, pb, pr int
}

// padU8 is an NHWC int8 input as u = x+128 with the padding of a window
// around each image (holding xz+128), so that every tap is in bounds.
func padU8(dst []uint8, x []int8, n, h, w, c int, gm qconvGeom, xz int32) []uint8 {
	hp, wp := h+gm.pt+gm.pb, w+gm.pl+gm.pr
	need := n * hp * wp * c
	if cap(dst) < need {
		dst = make([]uint8, need)
	}
	dst = dst[:need]
	pad := uint8(int8(xz)) ^ 0x80
	for i := range dst {
		dst[i] = pad
	}
	for b := 0; b < n; b++ {
		for iy := 0; iy < h; iy++ {
			src := x[(b*h+iy)*w*c:][:w*c]
			row := dst[((b*hp+iy+gm.pt)*wp+gm.pl)*c:][:w*c]
			i := 0
			for ; i+8 <= len(src); i += 8 {
				*(*uint64)(unsafe.Pointer(&row[i])) = *(*uint64)(unsafe.Pointer(&src[i])) ^ 0x8080808080808080
			}
			for ; i < len(src); i++ {
				row[i] = uint8(src[i]) ^ 0x80
			}
		}
	}
	return dst
}

// packIm2col packs the windows of output positions from a padded u8
// image (padU8; n×hp×wp×c) for a conv with output oh×ow: row r = (b, oy,
// ox), k = (ky, kx, ch) as OHWI filters order it.
func packIm2col(img []uint8, hp, wp, c, oh, ow int, gm qconvGeom) qfill {
	return func(a []uint8, r0, rows, mr, k4 int) {
		tiles := (rows + mr - 1) / mr
		k := gm.kh * gm.kw * c
		var buf [4096]uint8
		var rb []uint8
		if k4 <= len(buf) {
			rb = buf[:k4]
		} else {
			rb = make([]uint8, k4)
		}
		clear(rb[k:])
		seg := gm.kw * c
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
				pos := r0 + r
				ox := pos % ow
				oy := (pos / ow) % oh
				b := pos / (ow * oh)
				for ky := 0; ky < gm.kh; ky++ {
					base := ((b*hp+oy*gm.sh+ky*gm.dh)*wp + ox*gm.sw) * c
					if gm.dw == 1 {
						copy(rb[ky*seg:(ky+1)*seg], img[base:base+seg])
						continue
					}
					for kx := 0; kx < gm.kw; kx++ {
						o := base + kx*gm.dw*c
						copy(rb[ky*seg+kx*c:ky*seg+(kx+1)*c], img[o:o+c])
					}
				}
				for ks := 0; ks < k4/4; ks++ {
					*(*uint32)(unsafe.Pointer(&at[ks*mr*4+i*4])) = *(*uint32)(unsafe.Pointer(&rb[ks*4]))
				}
			}
		}
	}
}

// buildQGemmOp builds Conv2D and FullyConnected.
func buildQGemmOp(bc *buildCtx, n *graph.Node) (kernels.Func, error) {
	w := constInput(bc.sg, n, 3)
	fc := n.OpType == "FullyConnected"
	cout := w.Shape[0]
	q, r := readQConst(bc.sg, n, cout)
	if r != "" {
		return nil, fmt.Errorf("%s", r)
	}
	wd := graph.Data[int8](w)
	k := w.Len() / cout
	mq, ms := multipliers(q, cout, fc)
	bias := qbias(bc, n, cout)
	ref := refKernel(n.OpType)
	var gm qconvGeom
	if !fc {
		st, dl, pd := n.AttrInts("strides", []int64{1, 1}), n.AttrInts("dilations", []int64{1, 1}), n.AttrInts("pads", []int64{0, 0, 0, 0})
		gm = qconvGeom{kh: w.Shape[1], kw: w.Shape[2], sh: int(st[0]), sw: int(st[1]), dh: int(dl[0]), dw: int(dl[1]),
			pt: int(pd[0]), pl: int(pd[1]), pb: int(pd[2]), pr: int(pd[3])}
	}
	// the tile kernel is chosen for the rows the inferred shape promises
	m := 64
	if xt, ok := bc.sg.TypeOf(n.Inputs[0]); ok {
		dims, _ := xt.Shape.Ints()
		if fc && dims != nil {
			m = max(kernels.Prod(dims)/k, 1)
		} else if len(dims) == 4 {
			oh := (dims[1]+gm.pt+gm.pb-((gm.kh-1)*gm.dh+1))/gm.sh + 1
			ow := (dims[2]+gm.pl+gm.pr-((gm.kw-1)*gm.dw+1))/gm.sw + 1
			m = max(dims[0]*oh*ow, 1)
		}
	}
	g := newQGemm(wd, cout, k, m, bias, q.xz, mq, ms, q.yz, q.lo, q.hi)
	var outShape []int
	if s := n.AttrInts("output_shape", nil); fc && len(s) > 0 {
		outShape = make([]int, len(s))
		for i, d := range s {
			outShape[i] = int(d)
		}
	}
	pool := bc.pool
	var imgPool sync.Pool
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		xt := in[0]
		x, ok := xt.Data.([]int8)
		if !ok || xt.Check() != nil {
			return ref(ctx, node, in)
		}
		if fc {
			if len(x)%k != 0 {
				return ref(ctx, node, in)
			}
			rows := len(x) / k
			shape := []int{rows, cout}
			if outShape != nil {
				if p, err := graph.NumElements(outShape); err != nil || p != rows*cout {
					return ref(ctx, node, in)
				}
				shape = outShape
			}
			out, err := ctx.NewUninit(graph.Int8, shape)
			if err != nil {
				return nil, err
			}
			g.run(pool, rows, packRows(x, k), out.Data.([]int8), cout)
			return ctx.Outputs(out), nil
		}
		if len(xt.Shape) != 4 || xt.Shape[3]*gm.kh*gm.kw != k {
			return ref(ctx, node, in)
		}
		N, H, W, C := xt.Shape[0], xt.Shape[1], xt.Shape[2], xt.Shape[3]
		oh := (H+gm.pt+gm.pb-((gm.kh-1)*gm.dh+1))/gm.sh + 1
		ow := (W+gm.pl+gm.pr-((gm.kw-1)*gm.dw+1))/gm.sw + 1
		if H+gm.pt+gm.pb < (gm.kh-1)*gm.dh+1 || W+gm.pl+gm.pr < (gm.kw-1)*gm.dw+1 || oh < 1 || ow < 1 {
			return ref(ctx, node, in)
		}
		out, err := ctx.NewUninit(graph.Int8, []int{N, oh, ow, cout})
		if err != nil {
			return nil, err
		}
		if ctx.Stopped() {
			return nil, ctx.Stop(node)
		}
		var fill qfill
		if gm.kh == 1 && gm.kw == 1 && gm.sh == 1 && gm.sw == 1 && gm.pt+gm.pl+gm.pb+gm.pr == 0 {
			fill = packRows(x, C)
		} else {
			var img []uint8
			if v := imgPool.Get(); v != nil {
				img = *v.(*[]uint8)
			}
			img = padU8(img, x, N, H, W, C, gm, q.xz)
			defer imgPool.Put(&img)
			fill = packIm2col(img, H+gm.pt+gm.pb, W+gm.pl+gm.pr, C, oh, ow, gm)
		}
		g.run(pool, N*oh*ow, fill, out.Data.([]int8), cout)
		return ctx.Outputs(out), nil
	}, nil
}

// --- depthwise ---

type qdw struct {
	// the assembly path: weights [c/16][taps][16] int32, requantisation
	// blocks per 16 channels, a padded copy of the input (xz around, cp
	// channels); a kernel taking taps in pairs (pairs) has the weights
	// [c/16][⌈taps/2⌉][16] int32, each the int16 weights of two taps
	// (the first in the low half, an odd count padded with 0), and two
	// offsets per pair
	fn      func(nt, taps int, offs *int, w *int32, x *int8, xstep int, rq *int32, y *int8, ystep int, mask uint64)
	pairs   bool
	cp      int
	wv      []int32
	rq      []int32
	masks   []uint64
	scratch sync.Pool

	kh, kw, c int
	gm        qconvGeom
	w         []int32 // kh·kw·c
	bias      []int32
	mq        []int32
	ms        []int
	xz, yz    int32
	lo, hi    int32
	// rqst is the stride of rq's blocks; fm (non-nil: ONNX's float
	// requantisation, prepareASMF), flo and fhi as in qgemm
	rqst     int
	fm       []float64
	flo, fhi float64
}

type qdwRun struct {
	d            *qdw
	x            []int8
	y            []int8
	h, w, oh, ow int
}

func buildQDepthwise(bc *buildCtx, n *graph.Node) (kernels.Func, error) {
	w := constInput(bc.sg, n, 3)
	c := w.Shape[3]
	q, r := readQConst(bc.sg, n, c)
	if r != "" {
		return nil, fmt.Errorf("%s", r)
	}
	st, dl, pd := n.AttrInts("strides", []int64{1, 1}), n.AttrInts("dilations", []int64{1, 1}), n.AttrInts("pads", []int64{0, 0, 0, 0})
	d := &qdw{kh: w.Shape[1], kw: w.Shape[2], c: c, xz: q.xz, yz: q.yz, lo: q.lo, hi: q.hi, bias: qbias(bc, n, c)}
	d.gm = qconvGeom{kh: d.kh, kw: d.kw, sh: int(st[0]), sw: int(st[1]), dh: int(dl[0]), dw: int(dl[1]),
		pt: int(pd[0]), pl: int(pd[1]), pb: int(pd[2]), pr: int(pd[3])}
	d.w = make([]int32, w.Len())
	for i, v := range graph.Data[int8](w) {
		d.w[i] = int32(v)
	}
	d.mq, d.ms = multipliers(q, c, false)
	d.fn, d.pairs = archDWQ()
	if d.fn != nil {
		d.prepareASM()
	}
	ref := refKernel(n.OpType)
	pool := bc.pool
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		xt := in[0]
		x, ok := xt.Data.([]int8)
		if !ok || xt.Check() != nil || len(xt.Shape) != 4 || xt.Shape[3] != c {
			return ref(ctx, node, in)
		}
		gm := d.gm
		N, H, W := xt.Shape[0], xt.Shape[1], xt.Shape[2]
		if H+gm.pt+gm.pb < (gm.kh-1)*gm.dh+1 || W+gm.pl+gm.pr < (gm.kw-1)*gm.dw+1 {
			return ref(ctx, node, in)
		}
		oh := (H+gm.pt+gm.pb-((gm.kh-1)*gm.dh+1))/gm.sh + 1
		ow := (W+gm.pl+gm.pr-((gm.kw-1)*gm.dw+1))/gm.sw + 1
		out, err := ctx.NewUninit(graph.Int8, []int{N, oh, ow, c})
		if err != nil {
			return nil, err
		}
		if ctx.Stopped() {
			return nil, ctx.Stop(node)
		}
		run := &qdwRun{d: d, x: x, y: out.Data.([]int8), h: H, w: W, oh: oh, ow: ow}
		if d.fn != nil {
			d.runASM(pool, run, N)
			return ctx.Outputs(out), nil
		}
		parallelFor(pool, N*oh, run, func(r *qdwRun, t int) {
			r.d.row(r, t)
		})
		return ctx.Outputs(out), nil
	}, nil
}

// prepareASM lays out the weights and requantisation blocks for the
// assembly: corr[c] = bias[c] − xz·Σ_t w[t][c] (the padding holds xz).
func (d *qdw) prepareASM() {
	taps := d.kh * d.kw
	d.cp = (d.c + 15) &^ 15
	blocks := d.cp / 16
	d.wv = make([]int32, blocks*d.steps()*16)
	st := rqStride(1)
	d.rqst = st
	d.rq = make([]int32, blocks*st)
	d.masks = make([]uint64, blocks)
	for c := 0; c < d.c; c++ {
		cb, j := c/16, c%16
		s := int32(0)
		for t := 0; t < taps; t++ {
			v := d.w[t*d.c+c]
			s += v
			if d.pairs {
				d.wv[(cb*d.steps()+t/2)*16+j] |= int32(uint32(uint16(int16(v))) << (16 * uint(t%2)))
				continue
			}
			d.wv[(cb*taps+t)*16+j] = v
		}
		blk := d.rq[cb*st:]
		left, right := max(d.ms[c], 0), max(-d.ms[c], 0)
		mask := int32(1)<<right - 1
		blk[j], blk[16+j], blk[32+j], blk[48+j], blk[64+j], blk[80+j] = d.bias[c]-d.xz*s, d.mq[c], int32(left), int32(right), mask, mask>>1
		d.masks[cb] |= 1 << uint(j)
	}
	for cb := 0; cb < blocks; cb++ {
		t := d.rq[cb*st+96:]
		t[0], t[1], t[2], t[3], t[4], t[5] = d.yz, d.lo, d.hi, 1, 1<<30, 0
	}
}

type qdwASM struct {
	r      *qdwRun
	pad    []int8
	hp, wp int
	offs   []int
}

// runASM copies x into the padded buffer and runs the rows on the pool.
func (d *qdw) runASM(p *pool, r *qdwRun, n int) {
	gm := d.gm
	hp, wp := r.h+gm.pt+gm.pb, r.w+gm.pl+gm.pr
	need := n * hp * wp * d.cp
	var pad []int8
	if v := d.scratch.Get(); v != nil && cap(*v.(*[]int8)) >= need {
		pad = (*v.(*[]int8))[:need]
	} else {
		pad = make([]int8, need)
	}
	z := int8(d.xz)
	fill := func(s []int8) {
		for i := range s {
			s[i] = z
		}
	}
	rowBytes := wp * d.cp
	for b := 0; b < n; b++ {
		img := pad[b*hp*rowBytes : (b+1)*hp*rowBytes]
		fill(img[:gm.pt*rowBytes])
		fill(img[(gm.pt+r.h)*rowBytes:])
		for iy := 0; iy < r.h; iy++ {
			row := img[(gm.pt+iy)*rowBytes : (gm.pt+iy+1)*rowBytes]
			fill(row[:gm.pl*d.cp])
			fill(row[(gm.pl+r.w)*d.cp:])
			src := r.x[(b*r.h+iy)*r.w*d.c:][:r.w*d.c]
			if d.cp == d.c {
				copy(row[gm.pl*d.cp:], src)
				continue
			}
			for ix := 0; ix < r.w; ix++ {
				px := row[(gm.pl+ix)*d.cp:][:d.cp]
				copy(px, src[ix*d.c:(ix+1)*d.c])
				fill(px[d.c:])
			}
		}
	}
	offs := make([]int, 0, d.kh*d.kw)
	for ky := 0; ky < d.kh; ky++ {
		for kx := 0; kx < d.kw; kx++ {
			offs = append(offs, (ky*gm.dh*wp+kx*gm.dw)*d.cp)
		}
	}
	if d.pairs && len(offs)%2 == 1 {
		offs = append(offs, offs[len(offs)-1]) // the zero weight's tap
	}
	parallelFor(p, n*r.oh, &qdwASM{r: r, pad: pad, hp: hp, wp: wp, offs: offs}, func(a *qdwASM, t int) {
		a.r.d.rowASM(a, t)
	})
	d.scratch.Put(&pad)
}

// steps are the kernel's tap steps: the taps, or their pairs.
func (d *qdw) steps() int {
	if d.pairs {
		return (d.kh*d.kw + 1) / 2
	}
	return d.kh * d.kw
}

// rowASM computes output row t (= b·oh + oy) with the assembly.
func (d *qdw) rowASM(a *qdwASM, t int) {
	r, gm := a.r, d.gm
	b, oy := t/r.oh, t%r.oh
	taps := d.steps()
	st := d.rqst
	xrow := ((b*a.hp + oy*gm.sh) * a.wp) * d.cp
	yrow := t * r.ow * d.c
	for cb := 0; cb < d.cp/16; cb++ {
		d.fn(r.ow, taps, &a.offs[0], &d.wv[cb*taps*16], &a.pad[xrow+cb*16], gm.sw*d.cp, &d.rq[cb*st], &r.y[yrow+cb*16], d.c, d.masks[cb])
	}
}

// row computes output row t (= b·oh + oy) of a depthwise convolution.
func (d *qdw) row(r *qdwRun, t int) {
	b, oy := t/r.oh, t%r.oh
	c, gm := d.c, d.gm
	acc := make([]int32, c)
	xv := make([]int32, c)
	for ox := 0; ox < r.ow; ox++ {
		copy(acc, d.bias)
		for ky := 0; ky < gm.kh; ky++ {
			iy := oy*gm.sh - gm.pt + ky*gm.dh
			if iy < 0 || iy >= r.h {
				continue
			}
			for kx := 0; kx < gm.kw; kx++ {
				ix := ox*gm.sw - gm.pl + kx*gm.dw
				if ix < 0 || ix >= r.w {
					continue
				}
				xs := r.x[((b*r.h+iy)*r.w+ix)*c:][:c]
				ws := d.w[(ky*gm.kw+kx)*c:][:c]
				xv = xv[:c]
				for j, v := range xs {
					xv[j] = int32(v) - d.xz
				}
				a := acc[:c]
				for j, wv := range ws {
					a[j] += wv * xv[j]
				}
			}
		}
		y := r.y[(t*r.ow+ox)*c:][:c]
		if d.fm != nil {
			for j, v := range acc {
				y[j] = requantF(v, d.fm[j], d.flo, d.fhi, d.yz)
			}
			continue
		}
		for j, v := range acc {
			q := quant.MulByQuantizedMultiplier(v, d.mq[j], d.ms[j]) + d.yz
			y[j] = int8(min(max(q, d.lo), d.hi))
		}
	}
}

// --- Add ---

// buildQAdd is int8 Add of equal shapes: TFLite's rescale of both inputs
// to 2^20 × twice the larger scale, as the reference does it, with each
// input's rescaled value looked up (it depends on the int8 alone), then
// the sum requantised.
func buildQAdd(bc *buildCtx, n *graph.Node) (kernels.Func, error) {
	as, az, _ := scalarParam(bc.sg, n, 1, 0, "a")
	bs, bz, _ := scalarParam(bc.sg, n, 4, 0, "b")
	q, r := readQConst(bc.sg, n, 0)
	if r != "" {
		return nil, fmt.Errorf("%s", r)
	}
	const leftShift = 20
	twiceMax := 2 * float64(max(as[0], bs[0]))
	am, ash := quant.QuantizeMultiplier(float64(as[0]) / twiceMax)
	bm, bsh := quant.QuantizeMultiplier(float64(bs[0]) / twiceMax)
	ym, ysh := quant.QuantizeMultiplier(twiceMax / (float64(int64(1)<<leftShift) * float64(q.ys)))
	var ta, tb [256]int32
	for v := -128; v < 128; v++ {
		ta[uint8(int8(v))] = quant.MulByQuantizedMultiplier((int32(v)-az[0])*(1<<leftShift), am, ash)
		tb[uint8(int8(v))] = quant.MulByQuantizedMultiplier((int32(v)-bz[0])*(1<<leftShift), bm, bsh)
	}
	// the assembly's three requantisation blocks (16 equal lanes each)
	fn := archQAdd()
	st := rqStride(1)
	blocks := make([]int32, 3*st)
	for i, bp := range []struct {
		corr, mult int32
		shift, pre int
	}{{-az[0], am, ash, leftShift}, {-bz[0], bm, bsh, leftShift}, {0, ym, ysh, 0}} {
		blk := blocks[i*st:]
		left, right := bp.pre+max(bp.shift, 0), max(-bp.shift, 0)
		mask := int32(1)<<right - 1
		for j := 0; j < 16; j++ {
			blk[j], blk[16+j], blk[32+j], blk[48+j], blk[64+j], blk[80+j] = bp.corr, bp.mult, int32(left), int32(right), mask, mask>>1
		}
		t := blk[96:]
		t[0], t[1], t[2], t[3], t[4], t[5] = q.yz, q.lo, q.hi, 1, 1<<30, 0
	}
	ref := refKernel("Add")
	pool := bc.pool
	type addArg struct {
		a, b, y []int8
		ta, tb  *[256]int32
	}
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		at, bt := in[0], kernels.Input(in, 3)
		a, ok1 := at.Data.([]int8)
		b, ok2 := bt.Data.([]int8)
		if !ok1 || !ok2 || at.Check() != nil || bt.Check() != nil || !sameShape(at.Shape, bt.Shape) {
			return ref(ctx, node, in)
		}
		out, err := ctx.NewUninit(graph.Int8, at.Shape)
		if err != nil {
			return nil, err
		}
		chunksFor(pool, len(a), &addArg{a: a, b: b, y: out.Data.([]int8), ta: &ta, tb: &tb}, func(p *addArg, i0, i1 int) {
			if fn != nil && i1-i0 >= 16 {
				fn(i1-i0, &p.a[i0], &p.b[i0], &blocks[0], &p.y[i0])
				i0 += (i1 - i0) &^ 15
			}
			for i := i0; i < i1; i++ {
				s := p.ta[uint8(p.a[i])] + p.tb[uint8(p.b[i])]
				v := quant.MulByQuantizedMultiplier(s, ym, ysh) + q.yz
				p.y[i] = int8(min(max(v, q.lo), q.hi))
			}
		})
		return ctx.Outputs(out), nil
	}, nil
}

func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// --- Mean ---

// buildQMean is int8 Mean over the spatial axes {1, 2} of an NHWC
// tensor, the reference's integer form (Σ(x−xz) requantised by xs/ys,
// divided by the count rounding half away from zero); every other case
// (other axes, non-constant parameters) runs the reference kernel.
func buildQMean(bc *buildCtx, n *graph.Node) kernels.Func {
	ref := refKernel("Mean")
	xs, xz, r1 := scalarParam(bc.sg, n, 1, 0, "x")
	ys, yz, r2 := scalarParam(bc.sg, n, 3, 0, "y")
	axes := n.AttrInts("axes", nil)
	spatial := len(axes) == 2 && ((axes[0] == 1 && axes[1] == 2) || (axes[0] == 2 && axes[1] == 1))
	if r1 != "" || r2 != "" || !spatial {
		return nil
	}
	m, sh := quant.QuantizeMultiplier(float64(xs[0]) / float64(ys[0]))
	keep := n.AttrInt("keepdims", 0) != 0
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		xt := in[0]
		x, ok := xt.Data.([]int8)
		if !ok || xt.Check() != nil || len(xt.Shape) != 4 || xt.Shape[1]*xt.Shape[2] == 0 {
			return ref(ctx, node, in)
		}
		N, H, W, C := xt.Shape[0], xt.Shape[1], xt.Shape[2], xt.Shape[3]
		shape := []int{N, C}
		if keep {
			shape = []int{N, 1, 1, C}
		}
		out, err := ctx.NewUninit(graph.Int8, shape)
		if err != nil {
			return nil, err
		}
		y := out.Data.([]int8)
		sums := make([]int32, C)
		cnt := int32(H * W)
		for b := 0; b < N; b++ {
			clear(sums)
			for p := 0; p < H*W; p++ {
				row := x[(b*H*W+p)*C:][:C]
				for c, v := range row {
					sums[c] += int32(v)
				}
			}
			for c, s := range sums {
				acc := quant.MulByQuantizedMultiplier(s-cnt*xz[0], m, sh)
				if acc > 0 {
					acc = (acc + cnt/2) / cnt
				} else {
					acc = (acc - cnt/2) / cnt
				}
				y[b*C+c] = int8(min(max(acc+yz[0], -128), 127))
			}
		}
		return ctx.Outputs(out), nil
	}
}
