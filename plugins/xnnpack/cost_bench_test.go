package xnnpack

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/core/opcost"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/onnxtest"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/partitioner"
	"github.com/switchyard-hal/switchyard/plugins/cpu"
	"github.com/switchyard-hal/switchyard/runtime"
	"golang.org/x/sys/unix"
)

// chainCase is a chain of one op: x → op → op → … → y, each node reading
// the previous value and the case's constants, so intermediate values stay
// inside the XNNPACK runtime and only x and y cross the boundary.
type chainCase struct {
	op     string
	shape  []int
	attrs  []*graph.Attribute
	consts []*graph.Tensor
}

func aInts(name string, v ...int64) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrInts, Ints: v}
}
func aInt(name string, v int64) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrInt, I: v}
}
func aFloat(name string, v float32) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrFloat, F: v}
}

func calRand(rng *rand.Rand, scale float32, shape ...int) *graph.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64()) * scale
	}
	return graph.MustFromSlice(shape, v)
}

func chainCases() []chainCase {
	rng := rand.New(rand.NewPCG(3, 3))
	var cs []chainCase
	for _, hw := range [][2]int{{8, 8}, {24, 40}, {48, 80}} {
		x := []int{1, 32, hw[0], hw[1]}
		pad1 := aInts("pads", 1, 1, 1, 1)
		cs = append(cs,
			chainCase{op: "Conv", shape: x, attrs: []*graph.Attribute{pad1}, consts: []*graph.Tensor{calRand(rng, 0.05, 32, 32, 3, 3)}},
			chainCase{op: "Conv", shape: x, consts: []*graph.Tensor{calRand(rng, 0.15, 32, 32, 1, 1)}},
			chainCase{op: "Conv", shape: x, attrs: []*graph.Attribute{pad1, aInt("group", 32)}, consts: []*graph.Tensor{calRand(rng, 0.3, 32, 1, 3, 3)}},
			chainCase{op: "BatchNormalization", shape: x, consts: []*graph.Tensor{calRand(rng, 0.1, 32), calRand(rng, 0.1, 32), calRand(rng, 0.1, 32), graph.MustFromSlice([]int{32}, ones(32))}},
			chainCase{op: "MaxPool", shape: x, attrs: []*graph.Attribute{aInts("kernel_shape", 3, 3), pad1}},
			chainCase{op: "AveragePool", shape: x, attrs: []*graph.Attribute{aInts("kernel_shape", 3, 3), pad1}},
			chainCase{op: "Add", shape: x, consts: []*graph.Tensor{calRand(rng, 0.01, 1, 32, 1, 1)}},
			chainCase{op: "HardSigmoid", shape: x},
		)
	}
	for _, sz := range [][2]int{{1, 8}, {40, 120}, {160, 480}} {
		m, k := sz[0], sz[1]
		x := []int{m, k}
		cs = append(cs,
			chainCase{op: "MatMul", shape: x, consts: []*graph.Tensor{calRand(rng, 1/float32(k), k, k)}},
			chainCase{op: "Add", shape: x, consts: []*graph.Tensor{calRand(rng, 0.01, m, k)}},
			chainCase{op: "Mul", shape: x, consts: []*graph.Tensor{calRand(rng, 0.01, k)}},
			chainCase{op: "Div", shape: x, consts: []*graph.Tensor{graph.MustFromSlice([]int{k}, ones(k))}},
			chainCase{op: "Sub", shape: x, consts: []*graph.Tensor{calRand(rng, 0.01, m, k)}},
			chainCase{op: "Clip", shape: x, consts: []*graph.Tensor{graph.Scalar(float32(-6)), graph.Scalar(float32(6))}},
			chainCase{op: "Relu", shape: x},
			chainCase{op: "Sigmoid", shape: x},
			chainCase{op: "Sqrt", shape: x},
			chainCase{op: "Softmax", shape: x},
			chainCase{op: "HardSigmoid", shape: x, attrs: []*graph.Attribute{aFloat("alpha", 0.2)}},
		)
	}
	return cs
}

func ones(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = 1
	}
	return v
}

// graphOf builds the chain of length k with every value typed.
func (c chainCase) graphOf(k int) *hal.Subgraph {
	g := &graph.Graph{Name: c.op, Initializers: map[string]*graph.Tensor{},
		Inputs: []graph.ValueInfo{{Name: "v0", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(c.shape...)}}}}
	var extra []string
	for i, t := range c.consts {
		name := fmt.Sprintf("c%d", i)
		g.Initializers[name] = t
		extra = append(extra, name)
	}
	attrs := map[string]*graph.Attribute{}
	for _, a := range c.attrs {
		attrs[a.Name] = a
	}
	sg := &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}}
	for i := 1; i <= k; i++ {
		in, out := fmt.Sprintf("v%d", i-1), fmt.Sprintf("v%d", i)
		n := &graph.Node{Name: out, OpType: c.op, Inputs: append([]string{in}, extra...), Outputs: []string{out}, Attrs: attrs}
		g.Nodes = append(g.Nodes, n)
		s, _ := kernels.Lookup("", c.op)
		var ins []kernels.InferInput
		for _, name := range n.Inputs {
			t, _ := sg.TypeOf(name)
			ins = append(ins, kernels.InferInput{Type: t, Const: g.Initializers[name]})
		}
		outs, err := s.Infer(n, 17, ins)
		if err != nil || len(outs) == 0 {
			panic(fmt.Sprintf("%s: %v", c.op, err))
		}
		vi := graph.ValueInfo{Name: out, Type: outs[0]}
		if i == k {
			g.Outputs = append(g.Outputs, vi)
		} else {
			g.ValueInfo = append(g.ValueInfo, vi)
		}
	}
	return sg
}

func procTime() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// bestCPU runs f n times and returns the least CPU time of one run (the
// machines this runs on are shared: CPU time does not count the time other
// processes hold the core).
func bestCPU(n int, f func() error) (time.Duration, error) {
	best := time.Duration(math.MaxInt64)
	for i := 0; i < n; i++ {
		t0 := procTime()
		if err := f(); err != nil {
			return 0, err
		}
		if d := procTime() - t0; d < best {
			best = d
		}
	}
	return best, nil
}

// timeChain compiles the chain of length k through the portable layer
// and times a call with fresh outputs, as the runtime makes it.
func timeChain(dev *hal.Device, c chainCase, k, runs int) (time.Duration, *hal.Subgraph, error) {
	ctx := context.Background()
	sg := c.graphOf(k)
	exe, err := dev.Compile(ctx, sg, &hal.CompileOptions{Threads: 1})
	if err != nil {
		return 0, nil, err
	}
	defer exe.Release()
	x := calRand(rand.New(rand.NewPCG(1, 2)), 1, c.shape...)
	d, err := bestCPU(runs, func() error {
		return exe.Execute(ctx, []*graph.Tensor{x}, []*graph.Tensor{{}})
	})
	return d, sg, err
}

// standIn is what the runtime adds to each delegated call: its node in
// the executed program (dispatch, as a cpu node's fixed cost) and the
// kernel wrapper's output tensors.
const standIn = 700.0

// BenchmarkCalibrate times each chain at lengths 1 and 9 (CPU time, best
// of max(b.N, 5) calls, through hal.Device at one thread), and logs, per
// case: the marginal time of one more op (→ the op's rate), the time of
// the one-op call minus that (→ the fixed and boundary costs), and what
// the model says for both; then the fitted rates in the form of xOpRates
// and the per-call constants' fit. Metrics: median and worst model factor.
func BenchmarkCalibrate(b *testing.B) {
	be, err := New(context.Background(), Options{Threads: 1})
	if err != nil {
		if Required() {
			b.Fatalf("xnnpack required by SWITCHYARD_REQUIRE_BACKENDS but unavailable: %v", err)
		}
		b.Skipf("xnnpack unavailable: %v", err)
	}
	dev, err := hal.NewDevice(be, hal.LoadLinked)
	if err != nil {
		b.Fatal(err)
	}
	defer dev.Close()
	runs := max(b.N, 5)
	type point struct{ flops, t float64 }
	perOp := map[string][]point{}
	var lines []string
	var factors []float64
	var resid []struct {
		st structure
		t  float64
	}
	for _, c := range chainCases() {
		t1, sg1, err := timeChain(dev, c, 1, runs)
		if err != nil {
			b.Fatalf("%s%v: %v", c.op, c.shape, err)
		}
		t9, sg9, err := timeChain(dev, c, 9, runs)
		if err != nil {
			b.Fatalf("%s%v ×9: %v", c.op, c.shape, err)
		}
		marg := float64(t9-t1) / 8
		w := opcost.Of(sg1.Graph.Nodes[0], sg1)
		key := c.op
		if w.Class == opcost.DepthwiseConv {
			key = "Conv(depthwise)"
		}
		perOp[key] = append(perOp[key], point{w.FLOPs, marg})
		st := structureOf(sg1)
		resid = append(resid, struct {
			st structure
			t  float64
		}{st, float64(t1) + standIn - marg})
		e1, e9 := estimate(sg1, 1), estimate(sg9, 1)
		factors = append(factors, math.Abs(math.Log(float64(e1.Latency)/(float64(t1)+standIn))), math.Abs(math.Log(float64(e9.Latency)/(float64(t9)+standIn))))
		m1, m9 := float64(t1)+standIn, float64(t9)+standIn
		lines = append(lines, fmt.Sprintf("%-18s %-14v %-14s flops %10.0f | ×1 %9.0f ns model ×%.2f | ×9 %9.0f ns model ×%.2f | per op %9.0f ns | boundary in %d B %s, lowered=%v",
			c.op, fmt.Sprint(c.shape), w.Class, w.FLOPs, m1, float64(e1.Latency)/m1, m9, float64(e9.Latency)/m9, marg,
			st.copyBytes+st.transposeBytes, map[bool]string{true: "transposed", false: "copied"}[st.transposeBytes > 0], st.lowered))
	}
	b.Log("\n" + strings.Join(lines, "\n"))
	var keys []string
	for k := range perOp {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var fit []string
	var fixedEst []float64
	for _, k := range keys {
		ps := perOp[k]
		sort.Slice(ps, func(i, j int) bool { return ps[i].flops < ps[j].flops })
		fixedEst = append(fixedEst, ps[0].t)
		var slopes []float64
		for _, p := range ps[1:] {
			if p.flops > ps[0].flops {
				slopes = append(slopes, math.Max(0, (p.t-ps[0].t)/(p.flops-ps[0].flops)))
			}
		}
		per := 0.0
		if len(slopes) > 0 {
			sort.Float64s(slopes)
			per = slopes[len(slopes)/2]
		}
		fit = append(fit, fmt.Sprintf("%-20s {PerFLOP: %.3g}, // op fixed %.0f ns", fmt.Sprintf("%q:", k), per, ps[0].t))
	}
	sort.Float64s(fixedEst)
	b.Log("fitted (as xOpRates; the median per-op fixed cost is opFixed):\n" + strings.Join(fit, "\n") +
		fmt.Sprintf("\nopFixed ≈ %.0f ns", fixedEst[len(fixedEst)/2]))
	// the one-op call minus its op: callFixed + boundary
	var rl []string
	for _, r := range resid {
		rl = append(rl, fmt.Sprintf("values %d copy %7d B transpose %7d B alloc %7d B → %8.0f ns", r.st.values, r.st.copyBytes, r.st.transposeBytes, r.st.allocBytes, r.t))
	}
	b.Log("call minus op (fit callFixed + per-byte boundary rates from these):\n" + strings.Join(rl, "\n"))
	sort.Float64s(factors)
	b.ReportMetric(math.Exp(factors[len(factors)/2]), "median-model/measured-factor")
	b.ReportMetric(math.Exp(factors[len(factors)-1]), "worst-model/measured-factor")
}

// BenchmarkBoundary measures the per-byte rates of the boundary: a copy,
// an NCHW→NHWC and an NHWC→NCHW transpose, and a fresh output tensor.
func BenchmarkBoundary(b *testing.B) {
	for _, shape := range [][]int{{1, 32, 24, 40}, {1, 32, 96, 160}} {
		n := 1
		for _, d := range shape {
			n *= d
		}
		src := make([]float32, n)
		dst := make([]float32, n)
		bytes := float64(4 * n)
		for _, cs := range []struct {
			name string
			f    func()
		}{
			{"copy", func() { transposeInto(dst, src, shape, nil, nil) }},
			{"to-nhwc", func() { transposeInto(dst, src, shape, nil, nhwc) }},
			{"from-nhwc", func() { transposeInto(dst, src, shape, nhwc, nil) }},
			{"alloc", func() { t, _ := graph.New(graph.Float32, shape); dst = graph.Data[float32](t) }},
		} {
			b.Run(fmt.Sprintf("%s/%v", cs.name, shape), func(b *testing.B) {
				d, _ := bestCPU(max(b.N, 5), func() error { cs.f(); return nil })
				b.ReportMetric(float64(d)/bytes, "ns/byte")
			})
		}
	}
}

// decisionCase is a small partition as the models in ../shared/testdata
// have them (the attention blocks of ppocrv4_rec: 40 tokens × 120
// channels, 8 heads), where the choice between XNNPACK and the reference
// kernels is close.
type decisionCase struct {
	name   string
	inputs map[string][]int
	consts map[string]*graph.Tensor
	nodes  []*graph.Node
	out    string
}

func decisionCases() []decisionCase {
	rng := rand.New(rand.NewPCG(4, 4))
	nd := func(op string, in []string, out string, attrs ...*graph.Attribute) *graph.Node {
		n := &graph.Node{Name: out, OpType: op, Inputs: in, Outputs: []string{out}, Attrs: map[string]*graph.Attribute{}}
		for _, a := range attrs {
			n.Attrs[a.Name] = a
		}
		return n
	}
	return []decisionCase{
		{name: "Transpose[1,40,120]", inputs: map[string][]int{"x": {1, 40, 120}}, out: "y",
			nodes: []*graph.Node{nd("Transpose", []string{"x"}, "y", aInts("perm", 0, 2, 1))}},
		{name: "Transpose[1,40,3,8,15]", inputs: map[string][]int{"x": {1, 40, 3, 8, 15}}, out: "y",
			nodes: []*graph.Node{nd("Transpose", []string{"x"}, "y", aInts("perm", 2, 0, 3, 1, 4))}},
		{name: "Sub[1,40,120]-[1,40,1]", inputs: map[string][]int{"x": {1, 40, 120}, "m": {1, 40, 1}}, out: "y",
			nodes: []*graph.Node{nd("Sub", []string{"x", "m"}, "y")}},
		{name: "Mul[1,8,40,15]·c", inputs: map[string][]int{"x": {1, 8, 40, 15}}, consts: map[string]*graph.Tensor{"c": graph.Scalar(float32(0.25))}, out: "y",
			nodes: []*graph.Node{nd("Mul", []string{"x", "c"}, "y")}},
		{name: "Softmax[1,8,40,40]", inputs: map[string][]int{"x": {1, 8, 40, 40}}, out: "y",
			nodes: []*graph.Node{nd("Softmax", []string{"x"}, "y", aInt("axis", -1))}},
		{name: "LayerNormTail[1,40,120]", inputs: map[string][]int{"d": {1, 40, 120}, "v": {1, 40, 1}}, out: "y",
			consts: map[string]*graph.Tensor{"eps": graph.Scalar(float32(1e-5)), "g": calRand(rng, 1, 120), "b": calRand(rng, 1, 120)},
			nodes: []*graph.Node{nd("Add", []string{"v", "eps"}, "a"), nd("Sqrt", []string{"a"}, "s"), nd("Div", []string{"d", "s"}, "q"),
				nd("Mul", []string{"q", "g"}, "m"), nd("Add", []string{"m", "b"}, "y")}},
		{name: "Linear+Residual[1,40,120]", inputs: map[string][]int{"x": {1, 40, 120}, "r": {1, 40, 120}}, out: "y",
			consts: map[string]*graph.Tensor{"w": calRand(rng, 0.1, 120, 120), "b": calRand(rng, 1, 120)},
			nodes:  []*graph.Node{nd("MatMul", []string{"x", "w"}, "p"), nd("Add", []string{"p", "b"}, "q"), nd("Add", []string{"q", "r"}, "y")}},
		{name: "Add[1,2]", inputs: map[string][]int{"x": {1, 2}}, consts: map[string]*graph.Tensor{"c": calRand(rng, 1, 1, 2)}, out: "y",
			nodes: []*graph.Node{nd("Add", []string{"x", "c"}, "y")}},
		{name: "Conv3x3[1,16,32,32]", inputs: map[string][]int{"x": {1, 16, 32, 32}}, consts: map[string]*graph.Tensor{"w": calRand(rng, 0.1, 16, 16, 3, 3)}, out: "y",
			nodes: []*graph.Node{nd("Conv", []string{"x", "w"}, "y", aInts("pads", 1, 1, 1, 1))}},
	}
}

func (c decisionCase) model() *graph.Model {
	g := &graph.Graph{Name: c.name, Initializers: map[string]*graph.Tensor{}, Nodes: c.nodes,
		Outputs: []graph.ValueInfo{{Name: c.out, Type: graph.ValueType{Kind: "tensor", DType: graph.Float32}}}}
	var names []string
	for name := range c.inputs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		g.Inputs = append(g.Inputs, graph.ValueInfo{Name: name, Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(c.inputs[name]...)}})
	}
	for k, v := range c.consts {
		g.Initializers[k] = v
	}
	return &graph.Model{IRVersion: 8, Opsets: []graph.Opset{{Version: 17}}, Graph: g}
}

// BenchmarkDecisions checks the choices the cost models make on small
// partitions against measurement: each case is loaded through the runtime
// once with the partition on XNNPACK (costs ignored) and once on cpu, both
// timed alternately (CPU time, best of max(b.N, 20) runs of Model.Run at
// GOMAXPROCS=1, one XNNPACK thread), and logged with both estimates. The
// metric is the share of cases where the cheaper estimate is the faster
// measurement, counting cases within 15% as agreeing (too close to
// matter).
func BenchmarkDecisions(b *testing.B) {
	ctx := context.Background()
	be, err := New(ctx, Options{Threads: 1})
	if err != nil {
		if Required() {
			b.Fatalf("xnnpack required by SWITCHYARD_REQUIRE_BACKENDS but unavailable: %v", err)
		}
		b.Skipf("xnnpack unavailable: %v", err)
	}
	dev, err := hal.NewDevice(be, hal.LoadLinked)
	if err != nil {
		b.Fatal(err)
	}
	defer dev.Close()
	cpuDev, err := hal.NewDevice(cpu.New(), hal.LoadLinked)
	if err != nil {
		b.Fatal(err)
	}
	runs := max(b.N, 20)
	agree := 0
	var lines []string
	cases := decisionCases()
	for _, c := range cases {
		rng := rand.New(rand.NewPCG(8, 8))
		feeds := map[string]*graph.Tensor{}
		for name, shape := range c.inputs {
			feeds[name] = calRand(rng, 1, shape...)
		}
		onX, err := runtime.Prepare(ctx, c.model(), &runtime.Options{Backends: []*hal.Device{dev}, Policy: partitioner.Policy{IgnoreCosts: true}})
		if err != nil {
			b.Fatalf("%s: %v", c.name, err)
		}
		onC, err := runtime.Prepare(ctx, c.model(), &runtime.Options{Backends: []*hal.Device{cpuDev}})
		if err != nil {
			b.Fatalf("%s: %v", c.name, err)
		}
		if p := onX.Plan(); len(p.Partitions) != 1 || p.Partitions[0].Backend != Name {
			b.Fatalf("%s: not one xnnpack partition:\n%s", c.name, p.Text())
		}
		var tx, tc time.Duration = math.MaxInt64, math.MaxInt64
		for i := 0; i < runs; i++ {
			for _, m := range []*runtime.Model{onX, onC} {
				d, err := bestCPU(1, func() error { _, err := m.Run(ctx, feeds); return err })
				if err != nil {
					b.Fatalf("%s: %v", c.name, err)
				}
				if m == onX {
					tx = min(tx, d)
				} else {
					tc = min(tc, d)
				}
			}
		}
		onX.Close()
		onC.Close()
		// the estimates the partitioner weighed
		placed, err := runtime.Prepare(ctx, c.model(), &runtime.Options{Backends: []*hal.Device{dev}})
		if err != nil {
			b.Fatal(err)
		}
		var reason string
		var ex, ec time.Duration
		pl := placed.Plan()
		for _, d := range append(pl.Rejected, func() []partitioner.CostDecision {
			var ds []partitioner.CostDecision
			for _, p := range pl.Partitions {
				if p.Cost != nil {
					ds = append(ds, *p.Cost)
				}
			}
			return ds
		}()...) {
			reason, ex, ec = d.Reason, d.Estimate.Latency, d.FallbackEstimate.Latency
		}
		placed.Close()
		close := math.Abs(float64(tx-tc)) < 0.15*float64(min(tx, tc))
		ok := close || (ex <= ec) == (tx <= tc)
		if ok {
			agree++
		}
		lines = append(lines, fmt.Sprintf("%-26s measured xnnpack %8.2f µs cpu %8.2f µs | %s | agrees=%v",
			c.name, float64(tx)/1e3, float64(tc)/1e3, reason, ok))
	}
	b.Log("\n" + strings.Join(lines, "\n"))
	b.ReportMetric(float64(agree)/float64(len(cases)), "agreeing-decisions")
}

// BenchmarkModels runs every model of ../shared/testdata/models under
// three placements, alternating them run by run in one process: cpu
// alone, xnnpack in front of cpu placed by node counts (the behaviour
// before cost estimates), and the default cost-aware placement (which is
// also what --backends xnnpack,cpu gives). Each iteration runs each
// placement once; the metrics are the medians over the iterations of the
// process CPU time (robust on a shared machine: it does not count the
// time other processes hold the core) and of the wall time per run, and
// default / min(cpu, xnnpack+cpu) on both. Run at one thread for Go and
// XNNPACK:
//
//	GOMAXPROCS=1 go test ./plugins/xnnpack -run '^$' -bench Models -benchtime 30x
//
// (scripts/bench-placement.sh compares the same through `switchyard
// bench`, alternating processes.)
func BenchmarkModels(b *testing.B) {
	ctx := context.Background()
	// the library first: its absence is the reason to report, even where
	// the test material is absent too (a fresh machine has neither)
	be, err := New(ctx, Options{Threads: 1})
	if err != nil {
		if Required() {
			b.Fatalf("xnnpack required by SWITCHYARD_REQUIRE_BACKENDS but unavailable: %v", err)
		}
		b.Skipf("xnnpack unavailable: %v", err)
	}
	defer be.Close()
	root := shared.Path(b, "testdata/models")
	dev, err := hal.NewDevice(be, hal.LoadLibrary)
	if err != nil {
		b.Fatal(err)
	}
	defer dev.Close()
	cpuDev, err := hal.NewDevice(cpu.New(), hal.LoadLinked)
	if err != nil {
		b.Fatal(err)
	}
	dirs, _ := filepath.Glob(filepath.Join(root, "*", "model.onnx"))
	for _, path := range dirs {
		dir := filepath.Dir(path)
		b.Run(filepath.Base(dir), func(b *testing.B) {
			ins, err := onnxtest.ReadSet(filepath.Join(dir, "test_data_set_0"), "input")
			if err != nil {
				b.Fatal(err)
			}
			configs := []struct {
				name string
				opts *runtime.Options
			}{
				{"cpu", &runtime.Options{Backends: []*hal.Device{cpuDev}}},
				{"by-count", &runtime.Options{Backends: []*hal.Device{dev, cpuDev}, Policy: partitioner.Policy{IgnoreCosts: true}}},
				{"default", &runtime.Options{Backends: []*hal.Device{dev}}},
			}
			models := make([]*runtime.Model, len(configs))
			feeds := map[string]*graph.Tensor{}
			for k, cfg := range configs {
				m, err := runtime.LoadDir(ctx, dir, cfg.opts)
				if err != nil {
					b.Fatal(err)
				}
				defer m.Close()
				for i, in := range m.Inputs() {
					if i < len(ins) {
						feeds[in.Name] = ins[i]
					}
				}
				for w := 0; w < 3; w++ { // warm up (lowering at the first run for symbolic shapes)
					if _, err := m.Run(ctx, feeds); err != nil {
						b.Fatal(err)
					}
				}
				models[k] = m
			}
			cpuT := make([][]float64, len(configs))
			wallT := make([][]float64, len(configs))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for k, m := range models {
					c0, w0 := procTime(), time.Now()
					if _, err := m.Run(ctx, feeds); err != nil {
						b.Fatal(err)
					}
					cpuT[k] = append(cpuT[k], float64(procTime()-c0)/1e6)
					wallT[k] = append(wallT[k], float64(time.Since(w0))/1e6)
				}
			}
			b.StopTimer()
			med := func(v []float64) float64 {
				s := append([]float64{}, v...)
				sort.Float64s(s)
				return s[len(s)/2]
			}
			for k, cfg := range configs {
				b.ReportMetric(med(cpuT[k]), cfg.name+"-cpu-ms")
				b.ReportMetric(med(wallT[k]), cfg.name+"-wall-ms")
			}
			b.ReportMetric(med(cpuT[2])/math.Min(med(cpuT[0]), med(cpuT[1])), "default/best-cpu")
			b.ReportMetric(med(wallT[2])/math.Min(med(wallT[0]), med(wallT[1])), "default/best-wall")
			b.ReportMetric(float64(len(models[2].PartitionStats())), "default-delegated-partitions")
		})
	}
}
