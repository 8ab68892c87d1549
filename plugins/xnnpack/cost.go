package xnnpack

import (
	"context"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/opcost"
	"github.com/switchyard-hal/switchyard/hal"
)

// The cost model of a partition on XNNPACK (hal.CostEstimator). One call
// of an executable costs
//
//   - a fixed overhead: the portable layer's checks, picking an idle
//     instance, the runtime's stand-in node; one xnn_invoke_runtime per
//     XNNPACK stage and a dispatch per operator inside it; an
//     xnn_setup_runtime per stage that writes outputs in place;
//   - the boundary: every input copied into the instance's buffer and
//     every output out of it, as a plain copy when the layouts agree and
//     an NCHW↔NHWC transpose (Go, per element) when they do not; the
//     output tensors allocated; weights that arrive as inputs compared
//     with the captured ones; Go steps (layout changes XNNPACK cannot
//     express) per byte;
//   - the compute: each node's work (opcost) at XNNPACK's rate for its op
//     or class, divided over the threads;
//   - re-lowering, when a boundary input of a partition without
//     convolutions or pooling (whose symbolic image sizes are fixed per
//     deployment) has dims (after the first, the batch) that are not
//     fixed in the model (hal.Subgraph.DynamicDims: a decoder's sequence or past
//     length): an executable lowers the partition again for every input
//     shape it has not seen (XNNPACK 2022 has no reshape: the runtime is
//     created anew and its weights packed again), and a decoder's past
//     grows every token, so every call is charged one lowering
//     (relowerFixed, relowerPerNode per node and relowerPerWeightByte per
//     byte of constants), in Overhead; and since shape churn (exec.go)
//     declines such a partition after eight new shapes, after which it
//     runs on the fallback for good, the compute is counted twice: this
//     call's and the fallback's steady state, the reference kernels',
//     priced from XNNPACK's compute by refSlowdown (a lower bound of how
//     much slower they are) plus refNodeFixed per node. Such partitions then go to a
//     backend that takes a new shape in stride (native), up front.
//
// The structure (stages, operators, layouts at the boundary, direct
// outputs) comes from lowering the partition exactly as Compile does, for
// the subgraph's shapes, without creating XNNPACK objects; when it cannot
// be lowered (symbolic shapes, computed weights whose values matter) a
// conservative guess from the nodes stands in. Every constant is
// calibrated by BenchmarkCalibrate (cost_bench_test.go):
//
//	GOMAXPROCS=1 SWITCHYARD_XNNPACK_THREADS=1 go test ./plugins/xnnpack -run '^$' -bench Calibrate -benchtime 10x -v

// Per-call constants, in ns or ns per byte, at one thread
// (BenchmarkCalibrate and BenchmarkBoundary, CPU time, best of 10 calls,
// on the shared 2-core AMD EPYC development VM; callFixed from
// BenchmarkDecisions, which sees a delegated one-op call cost about
// 1.5 µs more than the same op on cpu inside the runtime's program).
var (
	callFixed        = 1300.0 // Compiled.Execute checks, instance get/put, stand-in node
	stageFixed       = 300.0  // one xnn_invoke_runtime through purego
	setupFixed       = 300.0  // xnn_setup_runtime of a stage writing outputs in place
	goStepFixed      = 300.0  // a Go step between stages
	valueFixed       = 200.0  // per boundary value: checks, slice headers
	copyPerByte      = 0.03   // a boundary value copied (same layout)
	transposePerByte = 0.12   // a boundary value transposed (NCHW↔NHWC), Go per element
	allocPerByte     = 0.03   // a fresh output tensor (zeroed by Go)
	comparePerByte   = 0.03   // weights arriving as inputs, compared every call
	goStepPerByte    = 0.15   // a Go step's output (transpose or concat), per byte
	// one lowering for a new input shape, less a call of a shape already
	// lowered (BenchmarkRelower, CPU time, one thread: chains of 1 and 9
	// Softmax give the fixed and per-node parts, MatMul chains of 64² and
	// 256² weights the packing, 0.52–0.6 ns a byte)
	relowerFixed         = 5000.0
	relowerPerNode       = 2300.0
	relowerPerWeightByte = 0.55
	// the steady state of a churning partition on the reference kernels:
	// their calibrated rates (plugins/cpu/cost.go) are 4.7× XNNPACK's
	// (Add) to 40–60× (Softmax, Sigmoid, Sqrt) and 14× for MatMul; 4× is
	// the lower bound taken, and 450 ns the least dispatch of any node
	// there
	refSlowdown  = 4.0
	refNodeFixed = 450.0
	// not calibrated (the development VM has two shared cores): the cost
	// of waking the pthreadpool per operator, and how well work spreads
	threadSync       = 1500.0
	threadEfficiency = 0.8
)

// xrate prices an op (or class) inside an XNNPACK runtime at one thread
// (views cost nothing).
type xrate = opcost.Rate

// xOpRates: measured ops (per-op marginal time in chains of 1 and 9).
var xOpRates = map[string]xrate{
	"Add":                {Fixed: 70, PerFLOP: 0.11},
	"Sub":                {Fixed: 70, PerFLOP: 0.11},
	"Mul":                {Fixed: 70, PerFLOP: 0.09},
	"Div":                {Fixed: 70, PerFLOP: 0.09},
	"Clip":               {Fixed: 10, PerFLOP: 0.01}, // fused into the producer
	"Relu":               {Fixed: 10, PerFLOP: 0.01}, // fused into the producer
	"HardSigmoid":        {Fixed: 150, PerFLOP: 0.06},
	"Sigmoid":            {Fixed: 70, PerFLOP: 0.014},
	"Sqrt":               {Fixed: 60, PerFLOP: 0.048},
	"Softmax":            {Fixed: 100, PerFLOP: 0.042},
	"MatMul":             {Fixed: 80, PerFLOP: 0.008},
	"Gemm":               {Fixed: 80, PerFLOP: 0.008},
	"BatchNormalization": {Fixed: 600, PerFLOP: 0.12},
	"MaxPool":            {Fixed: 1000, PerFLOP: 0.065},
	"AveragePool":        {Fixed: 1000, PerFLOP: 0.08},
}

var xClassRates = map[opcost.Class]xrate{
	opcost.Conv:           {Fixed: 900, PerFLOP: 0.0065},
	opcost.DepthwiseConv:  {Fixed: 900, PerFLOP: 0.025},
	opcost.Gemm:           {Fixed: 80, PerFLOP: 0.008},
	opcost.Elementwise:    {Fixed: 70, PerFLOP: 0.1},
	opcost.Transcendental: {Fixed: 70, PerFLOP: 0.03},
	opcost.Reduce:         {Fixed: 300, PerFLOP: 0.1},
	opcost.Pool:           {Fixed: 1000, PerFLOP: 0.07},
	opcost.Move:           {Fixed: 300, PerByte: 0.05},
	opcost.View:           {},
	opcost.Meta:           {},
	opcost.Control:        {Fixed: 1000, PerFLOP: 1},
	opcost.Other:          {Fixed: 300, PerFLOP: 1},
}

func xrateOf(op string, c opcost.Class) xrate { return opcost.RateOf(xOpRates, xClassRates, op, c) }

// structure is what one call does besides computing.
type structure struct {
	lowered        bool // from the plan (else guessed from the nodes)
	stages, ops    int
	goSteps        int
	values         int   // boundary values
	directStages   int   // stages set up per call to write outputs in place
	copyBytes      int64 // boundary bytes copied
	transposeBytes int64 // boundary bytes transposed
	allocBytes     int64 // output bytes allocated
	compareBytes   int64 // weights compared per call
	goBytes        int64 // bytes written by Go steps
}

// EstimateCost prices sg on XNNPACK at the backend's thread count.
func (b *Backend) EstimateCost(ctx context.Context, sg *hal.Subgraph) (hal.Cost, error) {
	if sg == nil || sg.Graph == nil {
		return hal.Cost{}, hal.Errorf(hal.CodeInvalidArgument, "xnnpack: estimate-cost: nil subgraph")
	}
	if err := ctx.Err(); err != nil {
		return hal.Cost{}, err
	}
	return estimate(sg, b.threads), nil
}

// estimate is EstimateCost for a thread count.
func estimate(sg *hal.Subgraph, threads int) hal.Cost {
	if threads < 1 {
		threads = 1
	}
	st := structureOf(sg)
	var compute, dispatch float64
	for _, n := range sg.Graph.Nodes {
		w := opcost.Of(n, sg)
		r := xrateOf(n.OpType, w.Class)
		if c, ok := opcost.Calibrated("xnnpack", opcost.Family(n, sg)); ok {
			// measured on this machine (switchyard calibrate)
			r = xrate{Fixed: c.Fixed, PerFLOP: c.PerFLOP, PerByte: c.PerByte, PerElem: c.PerElem, PerInElem: c.PerInElem, PerParamByte: c.PerParamByte}
		}
		dispatch += r.Fixed
		compute += r.Compute(w)
		// what the node costs inside a network beyond its time alone
		// (calibrate's model cases)
		compute += opcost.InModel("xnnpack", w)
	}
	overhead := callFixed + dispatch + float64(st.stages)*stageFixed +
		float64(st.directStages)*setupFixed + float64(st.goSteps)*goStepFixed + float64(st.values)*valueFixed
	if threads > 1 {
		compute /= threadEfficiency * float64(threads)
		overhead += float64(st.ops) * threadSync
	}
	boundary := float64(st.copyBytes)*copyPerByte + float64(st.transposeBytes)*transposePerByte +
		float64(st.allocBytes)*allocPerByte + float64(st.compareBytes)*comparePerByte + float64(st.goBytes)*goStepPerByte
	c := hal.Cost{Compute: time.Duration(compute), Overhead: time.Duration(overhead), Boundary: time.Duration(boundary),
		TransferBytes: st.copyBytes + st.transposeBytes + st.goBytes}
	c.Latency = c.Compute + c.Overhead + c.Boundary
	if relower := relowering(sg); relower > 0 {
		// shapes that may change every call: lowered again per call until
		// churn detection declines the partition, which then runs on the
		// runtime's fallback, the reference kernels, for good: priced as
		// one lowering, this call, and the steady state on the reference
		// kernels (refSlowdown, refNodeFixed) — once taken as no slower
		// than XNNPACK's compute, which kept a decoder's attention Softmax
		// here, declined on every token after the eighth and run on the
		// reference Softmax
		c.Compute += time.Duration(float64(c.Compute)*refSlowdown + refNodeFixed*float64(len(sg.Graph.Nodes)))
		c.Overhead += time.Duration(relower)
		c.Latency = c.Compute + c.Overhead + c.Boundary
	}
	return c
}

// structureOf lowers sg for its shapes as Compile would (weights that
// arrive as inputs stand in as zeros: their values do not change the
// plan's shape) and reads the plan; where that fails it guesses.
func structureOf(sg *hal.Subgraph) structure {
	g := sg.Graph
	static := map[string]bool{}
	for _, n := range g.Nodes {
		for _, i := range staticInputs[n.OpType] {
			if name := n.Input(i); name != "" {
				static[name] = true
			}
		}
	}
	consts := map[string]*graph.Tensor{}
	for k, v := range g.Initializers {
		consts[k] = v
	}
	var st structure
	shapes := make([][]int, len(g.Inputs))
	lowerable := true
	for i, in := range g.Inputs {
		t, _ := sg.TypeOf(in.Name)
		dims, ok := t.Shape.Ints()
		if !ok {
			lowerable = false
			continue
		}
		shapes[i] = dims
		if _, isConst := consts[in.Name]; isConst {
			continue
		}
		if static[in.Name] {
			z, err := graph.New(t.DType, dims)
			if err != nil {
				lowerable = false
				continue
			}
			consts[in.Name] = z
			st.compareBytes += int64(z.Len() * t.DType.Size())
		}
	}
	if lowerable {
		if p, err := safeLower(sg, shapes, consts); err == nil {
			st.fromPlan(p)
			return st
		}
	}
	st.guess(sg, static)
	return st
}

func safeLower(sg *hal.Subgraph, shapes [][]int, consts map[string]*graph.Tensor) (p *plan, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, hal.Errorf(hal.CodeInternal, "xnnpack: lowering panicked: %v", r)
		}
	}()
	return lower(sg.Graph, sg.Opsets, shapes, consts)
}

func (st *structure) fromPlan(p *plan) {
	st.lowered = true
	direct := map[int]bool{}
	for si, s := range p.stages {
		if s.goRun != nil {
			st.goSteps++
			if s.goOut != nil {
				st.goBytes += 4 * int64(s.goOut.elems())
			}
			continue
		}
		st.stages++
		st.ops += len(s.ops)
		if d := p.directOutputs(si); len(d) > 0 {
			st.directStages++
			for _, oi := range d {
				direct[oi] = true
			}
		}
	}
	for _, bnd := range p.inputs {
		if bnd.t == nil {
			continue // used only as a compile-time constant
		}
		st.values++
		st.addBoundary(bnd)
	}
	for i, bnd := range p.outputs {
		st.values++
		st.allocBytes += 4 * elems(bnd.shape)
		if !direct[i] {
			st.addBoundary(bnd)
		}
	}
}

func (st *structure) addBoundary(bnd binding) {
	n := 4 * elems(bnd.shape)
	if bnd.fill == nil && isIdentity(bnd.perm) || sameOrder(bnd.shape, nil, bnd.perm) {
		st.copyBytes += n
	} else {
		st.transposeBytes += n
	}
}

func elems(shape []int) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= int64(d)
	}
	return n
}

// guess: one stage, an operator per non-view node, and boundary values
// of rank 4 transposed when the partition holds an op that works in NHWC.
func (st *structure) guess(sg *hal.Subgraph, static map[string]bool) {
	g := sg.Graph
	st.stages = 1
	nhwcOps := false
	for _, n := range g.Nodes {
		switch n.OpType {
		case "Identity", "Dropout", "Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze":
		case "Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool", "Resize", "Upsample", "PRelu", "DepthToSpace":
			st.ops++
			nhwcOps = true
		case "BatchNormalization", "HardSigmoid":
			st.ops += 2
			nhwcOps = nhwcOps || n.OpType == "BatchNormalization"
		default:
			st.ops++
		}
	}
	bytesOf := func(name string) (int64, int) {
		t, _ := sg.TypeOf(name)
		var n int64 = 4
		for _, d := range t.Shape {
			if d.Static() {
				n *= d.Value
			}
		}
		return n, len(t.Shape)
	}
	for _, in := range g.Inputs {
		if _, c := g.Initializers[in.Name]; c {
			continue
		}
		n, r := bytesOf(in.Name)
		if static[in.Name] {
			st.compareBytes += n
			continue
		}
		st.values++
		if nhwcOps && r == 4 {
			st.transposeBytes += n
		} else {
			st.copyBytes += n
		}
	}
	for _, o := range g.Outputs {
		n, r := bytesOf(o.Name)
		st.values++
		st.allocBytes += n
		if nhwcOps && r == 4 {
			st.transposeBytes += n
		} else {
			st.copyBytes += n
		}
	}
}

// relowering is the cost of lowering sg again, in ns, when one of its
// boundary inputs has a dim after the first that is not fixed (every call
// may bring a new shape); 0 otherwise.
func relowering(sg *hal.Subgraph) float64 {
	for _, n := range sg.Graph.Nodes {
		switch n.OpType {
		case "Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool":
			// an image model's symbolic height and width are fixed per
			// deployment (ppocr's exporter declares them dynamic), where a
			// sequence model's lengths change from call to call
			return 0
		}
	}
	dynamic := false
	for _, in := range sg.Graph.Inputs {
		if _, isConst := sg.Graph.Initializers[in.Name]; isConst {
			continue
		}
		for i, d := range sg.DynamicDims[in.Name] {
			// the first dim is taken for the batch, which calls rarely
			// change one after another (an image model's symbolic batch
			// stays on XNNPACK); a sequence, past or width dim counts
			dynamic = dynamic || d && i > 0
		}
	}
	if !dynamic {
		return 0
	}
	var weights int64
	for _, t := range sg.Graph.Initializers {
		weights += int64(t.Len() * t.DType.Size())
	}
	return relowerFixed + relowerPerNode*float64(len(sg.Graph.Nodes)) + relowerPerWeightByte*float64(weights)
}
