package native_test

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/onnx"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/onnxtest"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/partitioner"
	"github.com/switchyard-hal/switchyard/plugins/native"
	"github.com/switchyard-hal/switchyard/runtime"
)

// sileroDenied keeps Sqrt off native: silero_vad_v5 is one If over the
// whole network, and its branches hold Sqrt, so native cannot take the If
// whole (as with an op native lacks).
var sileroDenied = partitioner.Policy{Deny: map[string][]string{"Sqrt": {native.Name}}}

// countBodies counts, over every body plan nested in p, the nodes per
// op and backend ("Conv@native").
func countBodies(p *partitioner.Plan, per map[string]int) {
	for _, b := range p.Bodies {
		for _, n := range b.Plan.Nodes {
			per[n.OpType+"@"+n.Backend]++
		}
		countBodies(b.Plan, per)
	}
}

// An op native may not run inside silero's If costs that op, not the If:
// the If runs on the executor, its branches' other nodes on native, the
// outputs match the reference outputs.
func TestSileroBodyPlacedPerNode(t *testing.T) {
	dir := filepath.Join(shared.Path(t, "testdata/models"), "silero_vad_v5")
	dev := device(t, native.Options{Threads: 1})
	opts := &runtime.Options{Backends: []*hal.Device{dev}, Policy: sileroDenied}
	res := onnxtest.RunDir(context.Background(), dir, onnxtest.Options{Rtol: 1e-3, Atol: 1e-4, Runtime: opts})
	if res.Status != onnxtest.Pass {
		t.Fatalf("%s: %s", res.Status, res.Reason)
	}
	m, err := runtime.LoadDir(context.Background(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	plan := m.Plan()
	for _, n := range plan.Nodes {
		if n.OpType == "If" && n.Backend != "cpu" {
			t.Errorf("the If went to %s", n.Backend)
		}
	}
	per := map[string]int{}
	countBodies(plan, per)
	t.Logf("body nodes per op and backend: %v", per)
	if testing.Verbose() {
		t.Log(plan.Text())
	}
	// Sqrt on cpu; the encoder's four convolutions of each branch on
	// native, and the nested Ifs holding the LSTM taken whole by it; the
	// rest where the cost model and the verdicts put it (the STFT's
	// convolution is priced cheaper on cpu at the representative input
	// length; the decoder's convolution reads a nested If's output, whose
	// rank is not inferred, and native declines a Conv of unknown rank)
	if per["Sqrt@native"] > 0 || per["Sqrt@cpu"] != 2 || per["Conv@native"] < 8 || per["If@native"] < 2 {
		t.Errorf("body placement %v: want Sqrt on cpu, the encoder's Conv and the nested Ifs on native", per)
	}
}

// BenchmarkSileroBodies times silero_vad_v5 with Sqrt denied to native
// (its bodies placed per node) against cpu alone (where the whole If ran
// before bodies were placed per node) and native taking the If whole,
// alternating the three every iteration (one thread).
func BenchmarkSileroBodies(b *testing.B) {
	dir := filepath.Join(shared.Path(b, "testdata/models"), "silero_vad_v5")
	ctx := context.Background()
	dev := device(b, native.Options{Threads: 1})
	load := func(o *runtime.Options) *runtime.Model {
		m, err := runtime.LoadDir(ctx, dir, o)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = m.Close() })
		return m
	}
	ms := []*runtime.Model{
		load(&runtime.Options{Backends: []*hal.Device{dev}, Policy: sileroDenied}),
		load(nil),
		load(&runtime.Options{Backends: []*hal.Device{dev}}),
	}
	ins, err := onnxtest.ReadSet(filepath.Join(dir, "test_data_set_0"), "input")
	if err != nil {
		b.Fatal(err)
	}
	feeds := map[string]*graph.Tensor{}
	for i, in := range ms[0].Inputs() {
		feeds[in.Name] = ins[i]
	}
	var total [3]time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k, m := range ms {
			t0 := time.Now()
			if _, err := m.Run(ctx, feeds); err != nil {
				b.Fatal(err)
			}
			total[k] += time.Since(t0)
		}
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 / float64(b.N) }
	b.ReportMetric(per(total[0]), "bodies-ms")
	b.ReportMetric(per(total[1]), "cpu-ms")
	b.ReportMetric(per(total[2]), "native-whole-ms")
	b.ReportMetric(float64(total[0])/float64(total[1]), "bodies/cpu")
	b.ReportMetric(float64(total[0])/float64(total[2]), "bodies/native-whole")
}

// An If whose then_branch holds an op native does not take (a Loop, a
// nested graph native's If verdict refuses) is not native's whole; the
// runtime places the branch per node and the Conv and Relu around the Loop
// still run on native, priced by the cost model; outputs match cpu alone.
func TestIfBranchAroundAnOpNativeLacks(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(21, 22))
	rnd := func(shape ...int) *graph.Tensor {
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = rng.Float32()*2 - 1
		}
		return graph.MustFromSlice(shape, v)
	}
	f32 := func(shape ...int) graph.ValueType {
		return graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(shape...)}
	}
	any32 := graph.ValueType{Kind: "tensor", DType: graph.Float32}
	loopBody := &graph.Graph{
		Name: "loop_body",
		Inputs: []graph.ValueInfo{{Name: "i", Type: graph.ValueType{Kind: "tensor", DType: graph.Int64, Shape: graph.StaticShape()}},
			{Name: "cin", Type: graph.ValueType{Kind: "tensor", DType: graph.Bool, Shape: graph.StaticShape()}}, {Name: "v", Type: any32}},
		Outputs: []graph.ValueInfo{{Name: "cout", Type: graph.ValueType{Kind: "tensor", DType: graph.Bool, Shape: graph.StaticShape()}}, {Name: "v2", Type: any32}},
		Nodes: []*graph.Node{
			{OpType: "Identity", Inputs: []string{"cin"}, Outputs: []string{"cout"}},
			{OpType: "Add", Inputs: []string{"v", "half"}, Outputs: []string{"v2"}},
		},
	}
	then := &graph.Graph{
		Name:         "then",
		Initializers: map[string]*graph.Tensor{"trips": graph.Scalar(int64(3)), "go": graph.Scalar(true), "half": graph.MustFromSlice([]int{1}, []float32{0.5}), "w2": rnd(16, 16, 3, 3)},
		Outputs:      []graph.ValueInfo{{Name: "t_out", Type: any32}},
		Nodes: []*graph.Node{
			{Name: "conv1", OpType: "Conv", Inputs: []string{"x", "w1"}, Outputs: []string{"c1"}, Attrs: map[string]*graph.Attribute{"pads": {Name: "pads", Type: graph.AttrInts, Ints: []int64{1, 1, 1, 1}}}},
			{Name: "relu1", OpType: "Relu", Inputs: []string{"c1"}, Outputs: []string{"r1"}},
			{Name: "loop", OpType: "Loop", Inputs: []string{"trips", "go", "r1"}, Outputs: []string{"l"}, Attrs: map[string]*graph.Attribute{"body": {Name: "body", Type: graph.AttrGraph, G: loopBody}}},
			{Name: "conv2", OpType: "Conv", Inputs: []string{"l", "w2"}, Outputs: []string{"c2"}, Attrs: map[string]*graph.Attribute{"pads": {Name: "pads", Type: graph.AttrInts, Ints: []int64{1, 1, 1, 1}}}},
			{Name: "relu2", OpType: "Relu", Inputs: []string{"c2"}, Outputs: []string{"t_out"}},
		},
	}
	els := &graph.Graph{Name: "else", Outputs: []graph.ValueInfo{{Name: "e_out", Type: any32}},
		Nodes: []*graph.Node{{OpType: "Conv", Inputs: []string{"x", "w1"}, Outputs: []string{"e_out"}, Attrs: map[string]*graph.Attribute{"pads": {Name: "pads", Type: graph.AttrInts, Ints: []int64{1, 1, 1, 1}}}}}}
	g := &graph.Graph{
		Name:         "ifloop",
		Initializers: map[string]*graph.Tensor{"w1": rnd(16, 16, 3, 3)},
		Inputs:       []graph.ValueInfo{{Name: "x", Type: f32(1, 16, 32, 32)}, {Name: "c", Type: graph.ValueType{Kind: "tensor", DType: graph.Bool, Shape: graph.StaticShape()}}},
		Outputs:      []graph.ValueInfo{{Name: "y", Type: any32}},
		Nodes: []*graph.Node{{Name: "branch", OpType: "If", Inputs: []string{"c"}, Outputs: []string{"y"}, Attrs: map[string]*graph.Attribute{
			"then_branch": {Name: "then_branch", Type: graph.AttrGraph, G: then},
			"else_branch": {Name: "else_branch", Type: graph.AttrGraph, G: els},
		}}},
	}
	data := onnx.Encode(&graph.Model{IRVersion: 8, Opsets: []graph.Opset{{Version: 17}}, Graph: g})
	dev := device(t, native.Options{Threads: 1})
	m, err := runtime.LoadBytes(ctx, data, &runtime.Options{Backends: []*hal.Device{dev}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ref, err := runtime.LoadBytes(ctx, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	plan := m.Plan()
	if plan.Nodes[0].Backend != "cpu" || len(plan.Nodes[0].Declined) == 0 {
		t.Fatalf("the If: %+v", plan.Nodes[0])
	}
	t.Logf("native's verdict on the If: %s", plan.Nodes[0].Declined[0].Reason)
	per := map[string]int{}
	countBodies(plan, per)
	if per["Conv@native"] != 3 || per["Relu@native"] != 2 || per["Loop@cpu"] != 1 {
		t.Errorf("placement in the bodies %v: want the Conv and Relu nodes on native, the Loop on cpu\n%s", per, plan.Text())
	}
	x := rnd(1, 16, 32, 32)
	for _, c := range []bool{true, false} {
		feeds := map[string]*graph.Tensor{"x": x, "c": graph.Scalar(c)}
		got, err := m.Run(ctx, feeds)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ref.Run(ctx, feeds)
		if err != nil {
			t.Fatal(err)
		}
		gv, wv := graph.Data[float32](got["y"]), graph.Data[float32](want["y"])
		if len(gv) != len(wv) {
			t.Fatalf("cond %v: %d values, want %d", c, len(gv), len(wv))
		}
		for i := range wv {
			if d := math.Abs(float64(gv[i] - wv[i])); d > 1e-4+1e-4*math.Abs(float64(wv[i])) {
				t.Fatalf("cond %v: element %d: %v, want %v", c, i, gv[i], wv[i])
			}
		}
	}
}
