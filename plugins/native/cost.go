package native

import (
	"context"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/opcost"
	"github.com/switchyard-hal/switchyard/hal"
)

// The cost model of a partition on native (hal.CostEstimator). One call
// of an executable costs
//
//   - a fixed overhead: Execute's checks and binding the inputs and
//     outputs of core/exec's program (callFixed);
//   - per node: the executor's dispatch and the kernel's argument checks
//     (Fixed of the node's rate), plus its work (opcost) at the rate of
//     its op or class; the GEMM-based kernels (MatMul, Gemm, Conv) divide
//     their work over the threads.
//
// The per-node part is reported as Compute, the per-call part as
// Overhead: nodes merged into a partition that already runs on native add
// their Compute and nothing else (the partitioner relies on this when it
// weighs moving a neighbouring partition here). There is no boundary:
// native works on the runtime's host tensors. A subgraph holding control
// flow (If, Loop, Scan) gets no estimate (Unsupported): it is placed by
// node count, as before native had a cost model.
//
// The ops that run the reference kernels inside the partition (see
// referenceOps) cost what they cost on cpu (plugins/cpu/cost.go's table,
// same kernels, same executor). The native kernels' constants are
// calibrated by BenchmarkCalibrate (cost_bench_test.go), which times each
// case with 1 and 9 independent copies in one graph (CPU time, best of
// the runs) and the call of a one-node graph:
//
//	GOMAXPROCS=1 SWITCHYARD_NATIVE_THREADS=1 go test ./plugins/native -run '^$' -bench Calibrate -benchtime 10x -v
//
// measured on the shared 2-core AMD EPYC development VM.

// callFixed is the per-call overhead in ns (BenchmarkCalibrate: a
// one-node call less the node's marginal time, 1.9–2.4 µs for every
// small case).
var callFixed = 2000.0

// nrate prices one op (or class) on native.
type nrate = opcost.Rate

// nrateOfProfile: a calibrated rate (its fit statistics dropped).
func nrateOfProfile(r opcost.Rate) nrate {
	return nrate{Fixed: r.Fixed, PerFLOP: r.PerFLOP, PerByte: r.PerByte, PerElem: r.PerElem, PerInElem: r.PerInElem, PerParamByte: r.PerParamByte}
}

// nOpRates: the ops with native kernels, fitted to BenchmarkCalibrate at
// one thread (fixed from the smallest case, the rate from the largest),
// and the ops run on the reference kernels at the cpu backend's rates.
var nOpRates = map[string]nrate{
	// native kernels
	"Add":       {Fixed: 150, PerFLOP: 0.115},
	"Sub":       {Fixed: 150, PerFLOP: 0.115},
	"Mul":       {Fixed: 150, PerFLOP: 0.083},
	"Div":       {Fixed: 150, PerFLOP: 0.114},
	"Relu":      {Fixed: 150, PerFLOP: 0.079},
	"Clip":      {Fixed: 150, PerFLOP: 0.079},
	"Sigmoid":   {Fixed: 200, PerFLOP: 0.68},
	"Softmax":   {Fixed: 200, PerFLOP: 0.11},
	"MatMul":    {Fixed: 250, PerFLOP: 0.0055},
	"Gemm":      {Fixed: 250, PerFLOP: 0.0055},
	"Transpose": {Fixed: 150, PerByte: 0.085},
	// DepthToSpace (transpose.go: a strided copy, as Transpose); not
	// calibrated
	"DepthToSpace": {Fixed: 150, PerByte: 0.085},
	"ReduceMean":   {Fixed: 150, PerFLOP: 0.14},
	// com.microsoft GroupQueryAttention (gqa.go): opcost counts one unit
	// per output element (the "other" class); cpu's rate for the class
	// over the speed-up on the reference kernel (13–21×, BenchmarkGQA)
	"GroupQueryAttention": {Fixed: 300, PerFLOP: 0.13},
	// measured the same way (marginal time in chains of 1 and 9, one
	// thread) on [1,64,24,48] and [1,240,6,40]: GlobalAveragePool was
	// priced as a reduction at the reference kernels' 4.5 ns/FLOP (30×
	// its time: ppocr_mobile_v2_cls estimated at 5× its time on native,
	// so left on XNNPACK, slower), MaxPool (3×3, 2.9–3.3 ns/FLOP) and
	// HardSigmoid (0.2–0.48) as their classes (3× and 2–4× under)
	"GlobalAveragePool": {Fixed: 500, PerFLOP: 0.15},
	"MaxPool":           {Fixed: 500, PerFLOP: 3.3},
	"HardSigmoid":       {Fixed: 150, PerFLOP: 0.3},
	// PRelu (prelu.go: a multiply and a select in vector registers):
	// priced like Relu's pass, all traffic, over opcost's 2 FLOPs an
	// element; not calibrated
	"PRelu": {Fixed: 150, PerFLOP: 0.05},
	// Resize/Upsample (resize.go, scalar Go, ~1 ns an output element of
	// bilinear: opcost counts 8 FLOPs an element); not calibrated. As the
	// Move class they were 0.06 ns a byte, and ran on the reference
	// kernels
	"Resize":   {Fixed: 1000, PerFLOP: 0.15},
	"Upsample": {Fixed: 1000, PerFLOP: 0.15},
	// Erf (erf.go: a polynomial, the exp through vexp): BenchmarkVErf
	// against float64 math.Erf per element measured 3.7-5x faster (at load
	// 35); priced at about 2.5 ns an element over opcost's 12 FLOPs, not
	// calibrated
	"Erf": {Fixed: 200, PerFLOP: 0.2},
	// com.microsoft Gelu and FastGelu (erf.go; opcost counts one unit an
	// element for another domain): Erf's time plus two passes, and
	// Tanh's; not calibrated
	"Gelu":     {Fixed: 200, PerFLOP: 3},
	"FastGelu": {Fixed: 200, PerFLOP: 1},
	// not calibrated: Concat has its own kernel, priced like cpu's
	"Concat": {Fixed: 704, PerByte: 0.0405},
	// reference kernels (plugins/cpu/cost.go)
	"Cast":    {Fixed: 481, PerFLOP: 0.261},
	"Pow":     {Fixed: 588, PerFLOP: 1.49},
	"Reshape": {Fixed: 548, PerByte: 0.0349},
	"Shape":   {Fixed: 479},
	"Slice":   {Fixed: 802, PerByte: 0.0346},
	"Sqrt":    {Fixed: 481, PerFLOP: 2.07},
}

// vmMemPerElem is an element-wise pass's memory traffic per element in
// ns (Relu's calibrated rate, which is all traffic).
const vmMemPerElem = 0.079

// The vectorised transcendental ops (vmath.go) at the rate of the path
// this CPU takes: its measured time per element plus the traffic, over
// opcost's FLOPs per element (12 for Sigmoid and Tanh, 10 for Exp). They
// were priced at the float64 math.Exp loop's 0.68 ns/FLOP (Sigmoid) and
// the transcendental class's 1.5 (Tanh; Exp ran on the reference kernel).
func init() {
	for op, flops := range map[string]float64{"Sigmoid": 12, "Tanh": 12, "Exp": 10} {
		nOpRates[op] = nrate{Fixed: 200, PerFLOP: (vmMemPerElem + vmNsPerElem(op)) / flops}
	}
}

// nClassRates: every other op by class: Conv and Gemm calibrated, the
// element-wise class from its calibrated ops, the classes run on the
// reference kernels at cpu's rates; Pool (native kernels) not calibrated.
var nClassRates = map[opcost.Class]nrate{
	opcost.Conv: {Fixed: 5000, PerFLOP: 0.0115},
	// depthwise: 3×3 and 5×5 on ppocr_mobile_v2_cls's and ppocrv4_rec's
	// shapes (8–480 channels) measured 0.017–0.026 ns/FLOP and about 1 µs
	// fixed, where the 3×3/32-channel calibration gave 2 µs + 0.0275
	opcost.DepthwiseConv:  {Fixed: 1000, PerFLOP: 0.02},
	opcost.Gemm:           {Fixed: 250, PerFLOP: 0.0055},
	opcost.Elementwise:    {Fixed: 150, PerFLOP: 0.12},
	opcost.Transcendental: {Fixed: 500, PerFLOP: 1.5},
	opcost.Reduce:         {Fixed: 550, PerFLOP: 4.5},
	opcost.Pool:           {Fixed: 500, PerFLOP: 1},
	opcost.Move:           {Fixed: 700, PerByte: 0.06},
	opcost.View:           {Fixed: 550, PerByte: 0.035},
	opcost.Meta:           {Fixed: 480},
	opcost.Control:        {Fixed: 2000, PerFLOP: 1.0},
	opcost.Other:          {Fixed: 700, PerFLOP: 2.0},
}

// nParallel: the classes whose kernels spread over the pool's threads.
var nParallel = map[opcost.Class]bool{opcost.Conv: true, opcost.DepthwiseConv: true, opcost.Gemm: true}

func init() { opcost.RegisterKernelFamilies("native", kernelFamily) }

// kernelFamily refines opcost.Family by native's kernel: a depthwise
// convolution at stride 1 runs as channel-packed lanes (depthwise.go,
// usePacked: channels a multiple of the lanes, output rows up to
// dwPackedMaxOW) or as planes; the packed path pays per output what the
// planar one pays per tap, so their times follow different rates (5×5
// over 96 channels of 56×56 measured 1.6× 3×3's time, where FLOPs say
// 2.8×).
//
// A 3×3 depthwise convolution the row kernels take (useDW3: dw3.go) is
// family "dwconv/rows3" (at stride 1) or "dwconv/s2rows3" (at stride 2),
// whatever its channels: those kernels compute each plane straight from
// the input and measured 0.33–0.6× the packed and planar paths' time on
// wide planes (BenchmarkDW3), so pricing them at the other paths' rates
// made placement keep such models off native.
//
// A dense 1×1 convolution over a small image (at most smallImagePixels
// positions) is family "conv1x1/small": a GEMM of few rows over many
// weights, whose time follows the weights' stream and the panels' edges
// more than its arithmetic, where the wide images' follows the
// arithmetic and the activations. Fitted as one family, the two missed
// each other's: pose_detection's and hand_landmark_full's 1152→192 and
// 672→192 1×1s at 7×7 ran 1.6× their estimate, calibrate's 320→1280 at
// 7×7 1.5×, while the same fit priced 16→96 at 112×112 at 2.5× its time
// (typical error 12%, worst 52%), and placement kept both models on
// native, 8–13% slower than XNNPACK. (tfl's transposed 1×1 kernel,
// conv1x1t.go, takes shapes of this family; calibrate measures what
// runs.)
func kernelFamily(n *graph.Node, ts opcost.Types, fam string) string {
	if fam == "conv1x1" {
		if y, ok := ts.TypeOf(n.Outputs[0]); ok && len(y.Shape) == 4 && y.Shape[2].Static() && y.Shape[3].Static() &&
			y.Shape[2].Value*y.Shape[3].Value <= smallImagePixels {
			return "conv1x1/small"
		}
		return fam
	}
	if fam != "dwconv" && fam != "dwconv/s2" {
		return fam
	}
	x, xok := ts.TypeOf(n.Input(0))
	y, yok := ts.TypeOf(n.Outputs[0])
	if !xok || !yok || len(x.Shape) != 4 || len(y.Shape) != 4 || !x.Shape[1].Static() || !y.Shape[3].Static() {
		return fam
	}
	if ok, dil := dw3Family(n, ts, x); ok {
		if fam == "dwconv" && dil > 1 {
			return "dwconv/rows3d"
		}
		if fam == "dwconv" {
			return "dwconv/rows3"
		}
		return "dwconv/s2rows3"
	}
	if fam != "dwconv" {
		return fam
	}
	if dwPackedLanes(int(x.Shape[1].Value)) != 0 && int(y.Shape[3].Value) <= dwPackedMaxOW[0] {
		return "dwconv/packed"
	}
	return fam
}

// smallImagePixels is the largest image (output positions) of family
// "conv1x1/small": 14×14, where a GEMM's rows fill few 32-wide panels.
const smallImagePixels = 14 * 14

// dw3Family reports whether native would run depthwise node n (data
// input type x) with the 3×3 row kernels (useDW3).
func dw3Family(n *graph.Node, ts opcost.Types, x graph.ValueType) (bool, int) {
	if len(n.Inputs) < 2 || !x.Shape[2].Static() || !x.Shape[3].Static() {
		return false, 0
	}
	w, ok := ts.TypeOf(n.Input(1))
	if !ok || len(w.Shape) != 4 || !w.Shape[2].Static() || !w.Shape[3].Static() {
		return false, 0
	}
	win, err := readWindow(n, 2, []int{int(w.Shape[2].Value), int(w.Shape[3].Value)})
	if err != nil {
		return false, 0
	}
	g, err := win.at(int(x.Shape[2].Value), int(x.Shape[3].Value))
	return err == nil && useDW3(&g), g.dw
}

func nrateOf(op string, c opcost.Class) nrate { return opcost.RateOf(nOpRates, nClassRates, op, c) }

// EstimateCost prices sg on native at the thread count its executables
// would get by default.
func (b *Backend) EstimateCost(ctx context.Context, sg *hal.Subgraph) (hal.Cost, error) {
	if sg == nil || sg.Graph == nil {
		return hal.Cost{}, hal.Errorf(hal.CodeInvalidArgument, "native: estimate-cost: nil subgraph")
	}
	if err := ctx.Err(); err != nil {
		return hal.Cost{}, err
	}
	for _, n := range sg.Graph.Nodes {
		if opcost.Of(n, sg).Class == opcost.Control {
			// opcost sees little of a body's work (its values' types are
			// mostly unknown), and native runs bodies on its own kernels
			// where cpu runs the reference ones: an estimate would leave
			// silero_vad_v5's LSTM-in-If on cpu, 15× slower
			return hal.Cost{}, hal.Errorf(hal.CodeUnsupported, "native: no estimate for control flow (%s): its bodies' work is not priced", n.OpType)
		}
	}
	return estimate(sg, defaultThreads(b.opts.Threads)), nil
}

// estimate is EstimateCost for a thread count.
func estimate(sg *hal.Subgraph, threads int) hal.Cost {
	var compute float64
	fg, fused := fuse(sg)
	for _, n := range fg.Nodes {
		var c float64
		if q, ok := quantNodeCost(sg, n, threads); ok {
			c = q
		} else if f := fused[n]; f != nil {
			c = fusedCost(sg, n, f, threads)
		} else {
			c = headCost(sg, n, threads)
		}
		// what the node costs inside a network beyond its time alone
		// (calibrate's model cases: native's whole-network time was
		// 1.25–1.35× the sum of its nodes' estimates on MediaPipe's
		// landmark and pose models, its early layers' activations of
		// 2–6 MB 1.5–3.5× theirs)
		compute += c + opcost.InModel("native", opcost.Of(n, sg))
	}
	c := hal.Cost{Overhead: time.Duration(callFixed), Compute: time.Duration(compute)}
	c.Latency = c.Overhead + c.Compute
	return c
}

// nPointwise prices a dense 1×1 convolution (group 1), a GEMM on the
// image without im2col: per-FLOP 0.0058–0.0087 ns measured at one thread
// for 32→32 channels on 48×80, 240→240 on 3×80 and 480→480 on 1×40
// (ppocrv4_rec's shapes; marginal time in chains of 1 and 9), where the
// 3×3 rate (nClassRates[Conv]) priced them at twice that and left
// ppocrv4_rec's backbone on XNNPACK, 1.5× slower there.
// Its fixed part: 1×1 convolutions on 1×1 to 3×96 images (ppocr's
// squeeze-excite blocks) measured 2.3–2.9 µs a call, the call's 2 µs
// included, where the 3×3 class's 5 µs fixed priced each at 7 µs.
var nPointwise = nrate{Fixed: 500, PerFLOP: 0.007}

// pointwise reports whether the Conv n has a constant 1×1 kernel and one
// group.
func pointwise(sg *hal.Subgraph, n *graph.Node) bool {
	if n.OpType != "Conv" || n.AttrInt("group", 1) != 1 || len(n.Inputs) < 2 {
		return false
	}
	w, ok := sg.Graph.Initializers[n.Inputs[1]]
	if !ok || len(w.Shape) != 4 {
		return false
	}
	return w.Shape[2] == 1 && w.Shape[3] == 1
}

// chainStepPerElem is the time of one element-wise step fused into a
// Conv's output (chain.go: run in place while the block is in L1), in ns
// per element: a decomposed hard-swish (4 steps) after 1×1 convolutions
// on ppocrv4_rec's shapes measured 0.08–0.1 ns an element in all, where the
// four nodes priced apart came to about 0.5 ns: 0.025 a step.
// A folded BatchNormalization and a fused clamp cost nothing.
const chainStepPerElem = 0.025

// fusedCost prices a node of fuse's graph that took over the nodes after
// it: the head's own cost plus its fused chain.
func fusedCost(sg *hal.Subgraph, n *graph.Node, f *fusion, threads int) float64 {
	if f.pw != nil {
		return dwpwCost(sg, f, threads) // a depthwise 3×3 with its 1×1 (dwpw.go)
	}
	c := headCost(sg, n, threads)
	elems := -1
	if t, ok := sg.TypeOf(n.Outputs[0]); ok {
		if dims, ok := t.Shape.Ints(); ok {
			elems = 1
			for _, d := range dims {
				elems *= d
			}
		}
	}
	if f.silu && elems >= 0 {
		// one pass of x·sigmoid(x) in place of the Sigmoid and the Mul
		return nOpRates["Sigmoid"].Fixed + float64(elems)*(vmMemPerElem+vmNsPerElem("SiLU"))
	}
	if len(f.chain) > 0 && elems >= 0 {
		// a step is a few vector ops on data in L1, the transcendental
		// ones their vector math time (the float64 sigmoid they replaced
		// was priced as a plain step here: yolox_nano's 110 SiLUs at
		// 0.025 ns an element ran at 10 ns, and placement chose native
		// at an estimated 4.2 ms that measured 37 ms)
		for _, st := range f.chain {
			if v := vmNsPerElem(st.unary); st.kind == stepUnary && v > 0 {
				c += v * float64(elems)
			} else {
				c += chainStepPerElem * float64(elems)
			}
		}
	}
	return c
}

// headCost is the time in ns of node n by itself: the rate of its
// family in the calibrated profile (opcost.Calibrated, `switchyard
// calibrate`) when there is one, else the built-in tables.
func headCost(sg *hal.Subgraph, n *graph.Node, threads int) float64 {
	w := opcost.Of(n, sg)
	if n.OpType == "MaxPool" {
		w.FLOPs *= separableShare(n)
	}
	w.FLOPs *= sparse1x1Share(sg, n) // pruned 1×1s (tfl2_sparse1x1.go)
	// by native's own kernel family (never the generic family's rate for
	// a refined one: depthwise's planar fit, 18 µs fixed, priced the
	// packed path's small nodes at several times their time)
	if r, ok := opcost.Calibrated("native", opcost.BackendFamily("native", n, sg)); ok {
		return rateCost(nrateOfProfile(r), w, threads)
	}
	if w.Class == opcost.Conv && pointwise(sg, n) {
		return rateCost(nPointwise, w, threads)
	}
	return nodeCost(n.OpType, w, threads)
}

// separableShare is the work of native's max pooling relative to the
// window's taps that opcost counts: a window over 2×2 runs as a row pass
// and a column pass (maxpool_sep.go), kh+kw steps an output instead of
// kh·kw; the calibrated rate was measured at 3×3 (6 steps for 9 taps).
func separableShare(n *graph.Node) float64 {
	ks := n.AttrInts("kernel_shape", nil)
	if len(ks) != 2 || ks[0] < 2 || ks[1] < 2 || ks[0]*ks[1] <= 4 {
		return 1
	}
	kh, kw := float64(ks[0]), float64(ks[1])
	return (kh + kw) / (kh * kw) * 9 / 6
}

// nodeCost is one node's time in ns: its fixed part and its work.
func nodeCost(op string, w opcost.Work, threads int) float64 {
	return rateCost(nrateOf(op, w.Class), w, threads)
}

// rateCost is a node's time in ns at rate r.
func rateCost(r nrate, w opcost.Work, threads int) float64 {
	work := r.Compute(w)
	if nParallel[w.Class] {
		work = opcost.Spread(work, threads)
	}
	return r.Fixed + work
}
