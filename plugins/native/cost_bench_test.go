package native

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/opcost"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/runtime"
	"golang.org/x/sys/unix"
)

// calCase is one op at one size: a node reading the dynamic input "x"
// and constants.
type calCase struct {
	op     string
	shape  []int
	attrs  []*graph.Attribute
	consts []*graph.Tensor
}

func calRand(rng *rand.Rand, shape ...int) *graph.Tensor {
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

func calCases() []calCase {
	rng := rand.New(rand.NewPCG(7, 7))
	ints := func(name string, v ...int64) *graph.Attribute {
		return &graph.Attribute{Name: name, Type: graph.AttrInts, Ints: v}
	}
	var cs []calCase
	for _, sz := range [][]int{{1, 8}, {1, 64}, {40, 120}, {160, 480}} {
		m, k := sz[0], sz[1]
		cs = append(cs,
			calCase{op: "MatMul", shape: []int{m, k}, consts: []*graph.Tensor{calRand(rng, k, k)}},
			calCase{op: "Gemm", shape: []int{m, k}, consts: []*graph.Tensor{calRand(rng, k, k), calRand(rng, k)}},
			calCase{op: "Add", shape: []int{m, k}, consts: []*graph.Tensor{calRand(rng, m, k)}},
			calCase{op: "Mul", shape: []int{m, k}, consts: []*graph.Tensor{calRand(rng, k)}},
			calCase{op: "Div", shape: []int{m, k}, consts: []*graph.Tensor{calRand(rng, m, k)}},
			calCase{op: "Relu", shape: []int{m, k}},
			calCase{op: "Sigmoid", shape: []int{m, k}},
			calCase{op: "Softmax", shape: []int{m, k}},
			calCase{op: "ReduceMean", shape: []int{m, k}, attrs: []*graph.Attribute{ints("axes", -1)}},
			calCase{op: "Transpose", shape: []int{m, k}, attrs: []*graph.Attribute{ints("perm", 1, 0)}},
		)
	}
	for _, hw := range []int{8, 24, 48} {
		x := []int{1, 32, hw, hw}
		cs = append(cs,
			calCase{op: "Conv", shape: x, attrs: []*graph.Attribute{ints("pads", 1, 1, 1, 1)}, consts: []*graph.Tensor{calRand(rng, 32, 32, 3, 3)}},
			calCase{op: "Conv", shape: x, attrs: []*graph.Attribute{ints("pads", 1, 1, 1, 1), {Name: "group", Type: graph.AttrInt, I: 32}}, consts: []*graph.Tensor{calRand(rng, 32, 1, 3, 3)}},
		)
	}
	return cs
}

// graphOf builds copies independent copies of the case's node, each
// writing a graph output, with every value typed.
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

// cpuTime is the process's CPU time (it does not grow while other
// processes hold the shared cores).
func cpuTime() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// timeCall is the least CPU time of one Execute of sg over runs.
func timeCall(b *Backend, sg *hal.Subgraph, x *graph.Tensor, runs int) (time.Duration, error) {
	ctx := context.Background()
	exe, err := b.Compile(ctx, sg, hal.CompileOptions{Threads: 1})
	if err != nil {
		return 0, err
	}
	outs := make([]*graph.Tensor, len(sg.Graph.Outputs))
	for k := range outs {
		outs[k] = &graph.Tensor{}
	}
	if err := exe.Execute(ctx, []*graph.Tensor{x}, outs); err != nil {
		return 0, err
	}
	best := time.Duration(math.MaxInt64)
	for i := 0; i < runs; i++ {
		t0 := cpuTime()
		if err := exe.Execute(ctx, []*graph.Tensor{x}, outs); err != nil {
			return 0, err
		}
		if d := cpuTime() - t0; d < best {
			best = d
		}
	}
	return best, nil
}

// BenchmarkCalibrate measures, per case, the marginal time of one node
// ((T(9 copies) − T(1 copy)) / 8) next to the model's nodeCost at one
// thread, and the per-call overhead (T(1 copy) − marginal, of the
// smallest Relu); it reports the median and worst factor between model
// and measurement. Run with -v at GOMAXPROCS=1.
func BenchmarkCalibrate(b *testing.B) {
	be := New(Options{Threads: 1})
	defer be.Close()
	runs := max(b.N, 5)
	var lines []string
	var errs []float64
	for _, c := range calCases() {
		x := calRand(rand.New(rand.NewPCG(1, 1)), c.shape...)
		t1, err := timeCall(be, c.graphOf(1), x, runs)
		if err != nil {
			b.Fatalf("%s%v: %v", c.op, c.shape, err)
		}
		t9, err := timeCall(be, c.graphOf(9), x, runs)
		if err != nil {
			b.Fatalf("%s%v: %v", c.op, c.shape, err)
		}
		d := float64(t9-t1) / 8
		sg := c.graphOf(1)
		w := opcost.Of(sg.Graph.Nodes[0], sg)
		est := nodeCost(c.op, w, 1)
		errs = append(errs, math.Abs(math.Log(math.Max(est, 1)/math.Max(d, 1))))
		lines = append(lines, fmt.Sprintf("%-11s %-14v %-12s flops %10.0f bytes %9d marginal %9.0f ns model %9.0f ns (×%.2f) call−marginal %6.0f ns",
			c.op, fmt.Sprint(c.shape), w.Class, w.FLOPs, w.BytesIn+w.BytesOut, d, est, est/math.Max(d, 1), float64(t1)-d))
	}
	b.Log("\n" + strings.Join(lines, "\n"))
	sortF(errs)
	b.ReportMetric(math.Exp(errs[len(errs)/2]), "median-factor")
	b.ReportMetric(math.Exp(errs[len(errs)-1]), "worst-factor")
}

func sortF(v []float64) {
	for i := 1; i < len(v); i++ {
		for j := i; j > 0 && v[j] < v[j-1]; j-- {
			v[j], v[j-1] = v[j-1], v[j]
		}
	}
}
