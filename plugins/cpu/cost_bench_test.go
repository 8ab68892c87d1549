package cpu

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/opcost"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/runtime"
	"golang.org/x/sys/unix"
)

// calCase is one op at one size for calibration: a node reading the
// dynamic input "x" (shape) and constants, writing one output.
type calCase struct {
	op     string
	shape  []int
	attrs  []*graph.Attribute
	consts []*graph.Tensor // inputs after x, as constants
}

func cInts(name string, v ...int64) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrInts, Ints: v}
}
func cInt(name string, v int64) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrInt, I: v}
}

func cRand(rng *rand.Rand, shape ...int) *graph.Tensor {
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())*0.5 + 1
	}
	return graph.MustFromSlice(shape, v)
}

// calCases covers the ops of the models in ../shared/testdata/models (and
// the classes they stand for) at sizes from "a few elements" (where the
// fixed cost shows) to "a layer of a mobile CNN" (where the rate shows).
func calCases() []calCase {
	rng := rand.New(rand.NewPCG(7, 7))
	var cs []calCase
	for _, hw := range [][2]int{{8, 8}, {24, 40}, {48, 80}} {
		h, w := hw[0], hw[1]
		x := []int{1, 32, h, w}
		cs = append(cs,
			calCase{op: "Conv", shape: x, attrs: []*graph.Attribute{cInts("pads", 1, 1, 1, 1)}, consts: []*graph.Tensor{cRand(rng, 32, 32, 3, 3)}},
			calCase{op: "Conv", shape: x, consts: []*graph.Tensor{cRand(rng, 64, 32, 1, 1)}},
			calCase{op: "Conv", shape: x, attrs: []*graph.Attribute{cInts("pads", 1, 1, 1, 1), cInt("group", 32)}, consts: []*graph.Tensor{cRand(rng, 32, 1, 3, 3)}},
			calCase{op: "BatchNormalization", shape: x, consts: []*graph.Tensor{cRand(rng, 32), cRand(rng, 32), cRand(rng, 32), cRand(rng, 32)}},
			calCase{op: "GlobalAveragePool", shape: x},
			calCase{op: "MaxPool", shape: x, attrs: []*graph.Attribute{cInts("kernel_shape", 2, 2), cInts("strides", 2, 2)}},
			calCase{op: "AveragePool", shape: x, attrs: []*graph.Attribute{cInts("kernel_shape", 2, 2), cInts("strides", 2, 2)}},
			calCase{op: "Transpose", shape: x, attrs: []*graph.Attribute{cInts("perm", 0, 2, 3, 1)}},
		)
	}
	for _, sz := range [][]int{{1, 8}, {40, 120}, {160, 480}} {
		m, k := sz[0], sz[1]
		cs = append(cs,
			calCase{op: "MatMul", shape: []int{m, k}, consts: []*graph.Tensor{cRand(rng, k, k)}},
			calCase{op: "Gemm", shape: []int{m, k}, consts: []*graph.Tensor{cRand(rng, k, k), cRand(rng, k)}},
			calCase{op: "Add", shape: []int{m, k}, consts: []*graph.Tensor{cRand(rng, m, k)}},
			calCase{op: "Mul", shape: []int{m, k}, consts: []*graph.Tensor{cRand(rng, k)}},
			calCase{op: "Div", shape: []int{m, k}, consts: []*graph.Tensor{cRand(rng, m, k)}},
			calCase{op: "Sub", shape: []int{m, k}, consts: []*graph.Tensor{cRand(rng, m, 1)}},
			calCase{op: "Relu", shape: []int{m, k}},
			calCase{op: "Clip", shape: []int{m, k}, consts: []*graph.Tensor{graph.Scalar(float32(0)), graph.Scalar(float32(6))}},
			calCase{op: "HardSigmoid", shape: []int{m, k}},
			calCase{op: "Sigmoid", shape: []int{m, k}},
			calCase{op: "Sqrt", shape: []int{m, k}},
			calCase{op: "Pow", shape: []int{m, k}, consts: []*graph.Tensor{graph.Scalar(float32(2))}},
			calCase{op: "ReduceMean", shape: []int{m, k}, attrs: []*graph.Attribute{cInts("axes", -1)}},
			calCase{op: "Softmax", shape: []int{m, k}},
			calCase{op: "Reshape", shape: []int{m, k}, consts: []*graph.Tensor{graph.MustFromSlice([]int{1}, []int64{-1})}},
			calCase{op: "Concat", shape: []int{m, k}, attrs: []*graph.Attribute{cInt("axis", 1)}, consts: []*graph.Tensor{cRand(rng, m, k)}},
			calCase{op: "Slice", shape: []int{m, k}, consts: []*graph.Tensor{graph.MustFromSlice([]int{1}, []int64{0}), graph.MustFromSlice([]int{1}, []int64{int64(k / 2)}), graph.MustFromSlice([]int{1}, []int64{1})}},
			calCase{op: "Transpose", shape: []int{m, k}, attrs: []*graph.Attribute{cInts("perm", 1, 0)}},
			calCase{op: "Shape", shape: []int{m, k}},
			calCase{op: "Cast", shape: []int{m, k}, attrs: []*graph.Attribute{cInt("to", int64(graph.Float32))}},
		)
	}
	return cs
}

// graphOf builds a graph of copies independent copies of the case's node,
// each writing a graph output, with every value typed (the types the
// runtime would hand a backend).
func (c calCase) graphOf(copies int) *hal.Subgraph {
	g := &graph.Graph{Name: c.op, Initializers: map[string]*graph.Tensor{},
		Inputs: []graph.ValueInfo{{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(c.shape...)}}}}
	ins := []string{"x"}
	for i, t := range c.consts {
		name := fmt.Sprintf("c%d", i)
		g.Initializers[name] = t
		ins = append(ins, name)
	}
	attrs := map[string]*graph.Attribute{}
	for _, a := range c.attrs {
		attrs[a.Name] = a
	}
	for k := 0; k < copies; k++ {
		out := fmt.Sprintf("y%d", k)
		g.Nodes = append(g.Nodes, &graph.Node{Name: out, OpType: c.op, Inputs: ins, Outputs: []string{out}, Attrs: attrs})
		g.Outputs = append(g.Outputs, graph.ValueInfo{Name: out})
	}
	return runtime.TypedSubgraph(&hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}})
}

// cpuTime is the process's CPU time: unlike wall time it does not grow
// while other processes hold the cores (the machines this runs on are
// shared), and at GOMAXPROCS=1 it is the kernels' time plus the GC's.
func cpuTime() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// bestOf runs f n times and returns the least CPU time one run took.
func bestOf(n int, f func() error) (time.Duration, error) {
	best := time.Duration(math.MaxInt64)
	for i := 0; i < n; i++ {
		t0 := cpuTime()
		if err := f(); err != nil {
			return 0, err
		}
		if d := cpuTime() - t0; d < best {
			best = d
		}
	}
	return best, nil
}

// marginal measures the time one more node of the case adds to a graph:
// (T(9 copies) − T(1 copy)) / 8, each the best of runs.
func (c calCase) marginal(b *Backend, runs int) (time.Duration, error) {
	ctx := context.Background()
	x := cRand(rand.New(rand.NewPCG(1, 1)), c.shape...)
	var ts [2]time.Duration
	for i, copies := range []int{1, 9} {
		sg := c.graphOf(copies)
		exe, err := b.Compile(ctx, sg, hal.CompileOptions{})
		if err != nil {
			return 0, err
		}
		// outputs allocated once and written in place, as the runtime's
		// arena recycles buffers: no garbage per run
		outs := make([]*graph.Tensor, copies)
		for k := range outs {
			outs[k] = &graph.Tensor{}
		}
		if err := exe.Execute(ctx, []*graph.Tensor{x}, outs); err != nil {
			return 0, err
		}
		ts[i], err = bestOf(runs, func() error { return exe.Execute(ctx, []*graph.Tensor{x}, outs) })
		if err != nil {
			return 0, err
		}
	}
	return (ts[1] - ts[0]) / 8, nil
}

// unit is what the rate of the case's class multiplies: FLOPs, or bytes
// for data movement.
func unit(w opcost.Work, r opcost.Rate) float64 {
	if r.PerByte > 0 && r.PerFLOP == 0 {
		return float64(w.BytesIn + w.BytesOut)
	}
	return w.FLOPs
}

// fitRate fits fixed + perUnit·u to points sorted by u: the fixed cost
// from the smallest case, the rate as the median slope from it to the
// larger ones (robust to one disturbed measurement; no negative fixed).
func fitRate(us, ts []float64) (fixed, perUnit float64) {
	var slopes []float64
	for i := 1; i < len(us); i++ {
		if us[i] > us[0] {
			slopes = append(slopes, math.Max(0, (ts[i]-ts[0])/(us[i]-us[0])))
		}
	}
	if len(slopes) > 0 {
		sort.Float64s(slopes)
		perUnit = slopes[len(slopes)/2]
	}
	fixed = math.Max(0, ts[0]-perUnit*us[0])
	return fixed, perUnit
}

// BenchmarkCalibrate measures every calibration case (CPU time, best of
// max(b.N, 5) runs), fits a fixed cost and a rate per op, and logs the
// measured times next to the model's and the fitted table in the form of
// opRates. It reports the median and worst factor between model and
// measurement as metrics. Run with -v at GOMAXPROCS=1.
func BenchmarkCalibrate(b *testing.B) {
	be := New()
	runs := max(b.N, 5)
	type point struct{ u, t float64 }
	byOp := map[string][]point{}
	classOf := map[string]opcost.Class{}
	var errs []float64
	var lines []string
	for _, c := range calCases() {
		d, err := c.marginal(be, runs)
		if err != nil {
			b.Fatalf("%s%v: %v", c.op, c.shape, err)
		}
		sg := c.graphOf(1)
		w := opcost.Of(sg.Graph.Nodes[0], sg)
		f, comp := nodeCost(c.op, w, 1)
		est := f + comp
		key := c.op
		if c.op == "Conv" && w.Class == opcost.DepthwiseConv {
			key = "Conv(depthwise)"
		}
		classOf[key] = w.Class
		byOp[key] = append(byOp[key], point{u: unit(w, rateOf(c.op, w.Class)), t: float64(d)})
		errs = append(errs, math.Abs(math.Log(math.Max(est, 1)/math.Max(float64(d), 1))))
		lines = append(lines, fmt.Sprintf("%-18s %-16v %-14s flops %10.0f bytes %9d measured %9.0f ns model %9.0f ns (×%.2f)",
			c.op, fmt.Sprint(c.shape), w.Class, w.FLOPs, w.BytesIn+w.BytesOut, float64(d), est, est/math.Max(float64(d), 1)))
	}
	b.Log("\n" + strings.Join(lines, "\n"))
	var keys []string
	for k := range byOp {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var fit []string
	for _, k := range keys {
		ps := byOp[k]
		sort.Slice(ps, func(i, j int) bool { return ps[i].u < ps[j].u })
		var us, ts []float64
		for _, p := range ps {
			us, ts = append(us, p.u), append(ts, p.t)
		}
		f, per := fitRate(us, ts)
		field := "PerFLOP"
		if r := rateOf(k, classOf[k]); r.PerByte > 0 && r.PerFLOP == 0 {
			field = "PerByte"
		}
		fit = append(fit, fmt.Sprintf("%-20s {Fixed: %.0f, %s: %.3g}, // %s", strconv.Quote(k)+":", f, field, per, classOf[k]))
	}
	b.Log("fitted (as opRates):\n" + strings.Join(fit, "\n"))
	sort.Float64s(errs)
	b.ReportMetric(math.Exp(errs[len(errs)/2]), "median-model/measured-factor")
	b.ReportMetric(math.Exp(errs[len(errs)-1]), "worst-model/measured-factor")
}
