package runtime_test

import (
	"context"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/onnx"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/partitioner"
	"github.com/switchyard-hal/switchyard/plugins/sim"
	"github.com/switchyard-hal/switchyard/runtime"
)

func f32(shape ...int) graph.ValueType {
	return graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(shape...)}
}

// ifModel: an If whose then_branch is Conv → Relu → Add 1 → Log → Mul 2
// (the Conv's weights captured from the main graph) and whose else_branch
// is a Loop of three steps v ← Relu(v + x), its body capturing x.
func ifModel(t *testing.T) []byte {
	t.Helper()
	one := graph.MustFromSlice([]int{1}, []float32{1})
	two := graph.MustFromSlice([]int{1}, []float32{2})
	w := graph.MustFromSlice([]int{2, 2, 1, 1}, []float32{0.5, -1, 2, 0.25})
	then := &graph.Graph{
		Name:         "then",
		Initializers: map[string]*graph.Tensor{"one": one, "two": two},
		Outputs:      []graph.ValueInfo{{Name: "t_out", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32}}},
		Nodes: []*graph.Node{
			{Name: "conv", OpType: "Conv", Inputs: []string{"x", "w"}, Outputs: []string{"t_c"}},
			{Name: "relu", OpType: "Relu", Inputs: []string{"t_c"}, Outputs: []string{"t_r"}},
			{Name: "add", OpType: "Add", Inputs: []string{"t_r", "one"}, Outputs: []string{"t_a"}},
			{Name: "log", OpType: "Log", Inputs: []string{"t_a"}, Outputs: []string{"t_l"}},
			{Name: "mul", OpType: "Mul", Inputs: []string{"t_l", "two"}, Outputs: []string{"t_out"}},
		},
	}
	body := &graph.Graph{
		Name: "loop_body",
		Inputs: []graph.ValueInfo{
			{Name: "i", Type: graph.ValueType{Kind: "tensor", DType: graph.Int64, Shape: graph.StaticShape()}},
			{Name: "cin", Type: graph.ValueType{Kind: "tensor", DType: graph.Bool, Shape: graph.StaticShape()}},
			{Name: "v", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32}},
		},
		Outputs: []graph.ValueInfo{
			{Name: "cout", Type: graph.ValueType{Kind: "tensor", DType: graph.Bool, Shape: graph.StaticShape()}},
			{Name: "v2", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32}},
		},
		Nodes: []*graph.Node{
			{Name: "keep", OpType: "Identity", Inputs: []string{"cin"}, Outputs: []string{"cout"}},
			{Name: "badd", OpType: "Add", Inputs: []string{"v", "x"}, Outputs: []string{"v1"}},
			{Name: "brelu", OpType: "Relu", Inputs: []string{"v1"}, Outputs: []string{"v2"}},
		},
	}
	els := &graph.Graph{
		Name:         "else",
		Initializers: map[string]*graph.Tensor{"trips": graph.Scalar(int64(3)), "go": graph.Scalar(true)},
		Outputs:      []graph.ValueInfo{{Name: "e_out", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32}}},
		Nodes: []*graph.Node{
			{Name: "neg", OpType: "Neg", Inputs: []string{"x"}, Outputs: []string{"e_n"}},
			{Name: "loop", OpType: "Loop", Inputs: []string{"trips", "go", "e_n"}, Outputs: []string{"e_out"},
				Attrs: map[string]*graph.Attribute{"body": {Name: "body", Type: graph.AttrGraph, G: body}}},
		},
	}
	g := &graph.Graph{
		Name:         "ifmodel",
		Initializers: map[string]*graph.Tensor{"w": w},
		Inputs: []graph.ValueInfo{
			{Name: "x", Type: f32(1, 2, 3, 3)},
			{Name: "c", Type: graph.ValueType{Kind: "tensor", DType: graph.Bool, Shape: graph.StaticShape()}},
		},
		Outputs: []graph.ValueInfo{{Name: "y", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32}}},
		Nodes: []*graph.Node{
			{Name: "branch", OpType: "If", Inputs: []string{"c"}, Outputs: []string{"y"}, Attrs: map[string]*graph.Attribute{
				"then_branch": {Name: "then_branch", Type: graph.AttrGraph, G: then},
				"else_branch": {Name: "else_branch", Type: graph.AttrGraph, G: els},
			}},
		},
	}
	return onnx.Encode(&graph.Model{IRVersion: 8, Opsets: []graph.Opset{{Version: 17}}, Graph: g})
}

func bodyOf(p *partitioner.Plan, attr string) *partitioner.Plan {
	for _, b := range p.Bodies {
		if b.Attribute == attr {
			return b.Plan
		}
	}
	return nil
}

// An If no backend takes whole runs on the executor, and its branches
// are placed per node: the op the backend lacks (Log) runs on cpu, the
// rest of the branch on the backend, a Loop inside a branch gets its
// body placed the same way, and the outputs equal cpu-only's.
func TestBodiesPlacedPerNode(t *testing.T) {
	ctx := context.Background()
	data := ifModel(t)
	for _, claim := range [][]string{{"Conv", "Relu", "Add", "Mul"}, {"If", "Conv", "Relu", "Add", "Mul", "Log", "Neg", "Loop", "Identity"}} {
		b := sim.New(sim.Options{Ops: claim})
		dev, err := hal.NewDevice(b, hal.LoadLinked)
		if err != nil {
			t.Fatal(err)
		}
		defer dev.Close()
		var pol partitioner.Policy
		if len(claim) > 4 {
			// the backend would take the If whole, but the policy keeps
			// Log off it, and it counts inside bodies too
			pol.Deny = map[string][]string{"Log": {"sim"}}
		}
		ref, err := runtime.LoadBytes(ctx, data, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ref.Close()
		m, err := runtime.LoadBytes(ctx, data, &runtime.Options{Backends: []*hal.Device{dev}, Policy: pol})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		plan := m.Plan()
		if plan.Nodes[0].Backend != "cpu" {
			t.Fatalf("the If went to %s", plan.Nodes[0].Backend)
		}
		if len(pol.Deny) > 0 {
			if d := plan.Nodes[0].Declined; len(d) == 0 || !strings.Contains(d[0].Reason, "denied by policy for Log (inside If") {
				t.Errorf("the If's declines: %+v", d)
			}
		}
		then, els := bodyOf(plan, "then_branch"), bodyOf(plan, "else_branch")
		if then == nil || els == nil {
			t.Fatalf("bodies not placed: %+v", plan.Bodies)
		}
		for _, np := range then.Nodes {
			want := "sim"
			if np.OpType == "Log" {
				want = "cpu"
			}
			if np.Backend != want {
				t.Errorf("then_branch %s on %s, want %s", np.OpType, np.Backend, want)
			}
		}
		if len(then.Partitions) != 3 {
			t.Errorf("then_branch in %d partitions, want 3 (sim, cpu, sim)", len(then.Partitions))
		}
		whole := len(pol.Deny) > 0 // the backend takes the else_branch's Loop whole
		if whole {
			if len(els.Bodies) != 0 || len(els.Partitions) != 1 {
				t.Errorf("else_branch: want one partition on sim:\n%s", els.Text())
			}
		} else if len(els.Bodies) != 1 || els.Bodies[0].OpType != "Loop" {
			t.Fatalf("the Loop's body is not placed:\n%s", els.Text())
		}
		for _, np := range loopBody(els) {
			if (np.OpType == "Add" || np.OpType == "Relu") && np.Backend != "sim" {
				t.Errorf("loop body %s on %s", np.OpType, np.Backend)
			}
		}
		text := plan.Text()
		want := []string{"control-flow bodies placed per node: 2", "body then_branch of #0 If \"branch\"", "    |   #3    Log \"log\"", "declined by sim"}
		if !whole {
			want = append(want, "    |     | ") // the Loop's body, nested
		}
		for _, s := range want {
			if !strings.Contains(text, s) {
				t.Errorf("explain text lacks %q:\n%s", s, text)
			}
		}
		x := graph.MustFromSlice([]int{1, 2, 3, 3}, []float32{1, -2, 3, 0.5, -0.25, 2, 7, -1, 0, 4, 1, -3, 2, 2, -5, 0.75, 1, -1})
		for _, c := range []bool{true, false} {
			feeds := map[string]*graph.Tensor{"x": x, "c": graph.Scalar(c)}
			want, err := ref.Run(ctx, feeds)
			if err != nil {
				t.Fatal(err)
			}
			before := b.Calls()
			got, err := m.Run(ctx, feeds)
			if err != nil {
				t.Fatal(err)
			}
			if err := equalOutputs(want, got); err != nil {
				t.Errorf("cond %v: %v", c, err)
			}
			// then: two partitions; else: the Loop body's partition, three times
			calls, wantCalls := b.Calls()-before, int64(2)
			if !c {
				wantCalls = 3
				if whole {
					wantCalls = 1
				}
			}
			if calls != wantCalls {
				t.Errorf("cond %v: %d backend calls, want %d", c, calls, wantCalls)
			}
		}
	}
}

func loopBody(p *partitioner.Plan) []partitioner.NodePlacement {
	if p == nil || len(p.Bodies) == 0 || p.Bodies[0].Plan == nil {
		return nil
	}
	return p.Bodies[0].Plan.Nodes
}

// A Scan's body, its inputs declared without types, is typed from the
// Scan's inputs (the scan input's slice without its scan axis) and placed
// per node: the Add on the backend, called once per slice.
func TestScanBodyPlacedPerNode(t *testing.T) {
	ctx := context.Background()
	body := &graph.Graph{
		Name:    "scan_body",
		Inputs:  []graph.ValueInfo{{Name: "s"}, {Name: "xi"}},
		Outputs: []graph.ValueInfo{{Name: "s2"}, {Name: "y"}},
		Nodes: []*graph.Node{
			{Name: "acc", OpType: "Add", Inputs: []string{"s", "xi"}, Outputs: []string{"s2"}},
			{Name: "neg", OpType: "Neg", Inputs: []string{"s2"}, Outputs: []string{"y"}},
		},
	}
	g := &graph.Graph{
		Name:    "scanmodel",
		Inputs:  []graph.ValueInfo{{Name: "s0", Type: f32(2)}, {Name: "xs", Type: f32(2, 3)}},
		Outputs: []graph.ValueInfo{{Name: "sN", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32}}, {Name: "ys", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32}}},
		Nodes: []*graph.Node{{Name: "scan", OpType: "Scan", Inputs: []string{"s0", "xs"}, Outputs: []string{"sN", "ys"}, Attrs: map[string]*graph.Attribute{
			"body":            {Name: "body", Type: graph.AttrGraph, G: body},
			"num_scan_inputs": {Name: "num_scan_inputs", Type: graph.AttrInt, I: 1},
			"scan_input_axes": {Name: "scan_input_axes", Type: graph.AttrInts, Ints: []int64{1}},
		}}},
	}
	data := onnx.Encode(&graph.Model{IRVersion: 8, Opsets: []graph.Opset{{Version: 17}}, Graph: g})
	b := sim.New(sim.Options{Ops: []string{"Add"}})
	dev, err := hal.NewDevice(b, hal.LoadLinked)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	ref, err := runtime.LoadBytes(ctx, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	m, err := runtime.LoadBytes(ctx, data, &runtime.Options{Backends: []*hal.Device{dev}, Policy: partitioner.Policy{IgnoreCosts: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	bp := bodyOf(m.Plan(), "body")
	if bp == nil || bp.Nodes[0].Backend != "sim" || bp.Nodes[1].Backend != "cpu" {
		t.Fatalf("the Scan's body is not placed per node:\n%s", m.Plan().Text())
	}
	feeds := map[string]*graph.Tensor{
		"s0": graph.MustFromSlice([]int{2}, []float32{1, -1}),
		"xs": graph.MustFromSlice([]int{2, 3}, []float32{1, 2, 3, 4, 5, 6}),
	}
	want, err := ref.Run(ctx, feeds)
	if err != nil {
		t.Fatal(err)
	}
	before := b.Calls()
	got, err := m.Run(ctx, feeds)
	if err != nil {
		t.Fatal(err)
	}
	if err := equalOutputs(want, got); err != nil {
		t.Fatal(err)
	}
	if calls := b.Calls() - before; calls != 3 {
		t.Errorf("%d backend calls, want 3 (one per slice)", calls)
	}
}

// A Loop's carried value keeps the shape it enters with only where the
// body gives it back in that shape: v + 1 does, concat(v, v) does not.
func TestLoopTypes(t *testing.T) {
	for _, c := range []struct {
		op   string
		want string
	}{{"Add", "float32[2,3]"}, {"Concat", "float32[?…]"}} {
		body := &graph.Graph{
			Name: "b",
			Inputs: []graph.ValueInfo{{Name: "i", Type: graph.ValueType{Kind: "tensor", DType: graph.Int64, Shape: graph.StaticShape()}},
				{Name: "cin", Type: graph.ValueType{Kind: "tensor", DType: graph.Bool, Shape: graph.StaticShape()}}, {Name: "v", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32}}},
			Outputs: []graph.ValueInfo{{Name: "cout"}, {Name: "v2"}, {Name: "scan"}},
			Nodes: []*graph.Node{
				{OpType: "Identity", Inputs: []string{"cin"}, Outputs: []string{"cout"}},
				{OpType: c.op, Inputs: []string{"v", "v"}, Outputs: []string{"v2"}, Attrs: map[string]*graph.Attribute{"axis": {Name: "axis", Type: graph.AttrInt, I: 0}}},
				{OpType: "Identity", Inputs: []string{"v"}, Outputs: []string{"scan"}},
			},
		}
		if c.op == "Add" {
			body.Nodes[1].Attrs = nil
		}
		g := &graph.Graph{
			Name:         "loop",
			Initializers: map[string]*graph.Tensor{"trips": graph.Scalar(int64(2)), "go": graph.Scalar(true)},
			Inputs:       []graph.ValueInfo{{Name: "x", Type: f32(2, 3)}},
			Outputs:      []graph.ValueInfo{{Name: "y"}, {Name: "ys"}},
			Nodes: []*graph.Node{{OpType: "Loop", Inputs: []string{"trips", "go", "x"}, Outputs: []string{"y", "ys"},
				Attrs: map[string]*graph.Attribute{"body": {Name: "body", Type: graph.AttrGraph, G: body}}}},
		}
		types, _ := runtime.InferTypes(&graph.Model{Opsets: []graph.Opset{{Version: 17}}, Graph: g})
		if got := types["y"].String(); got != c.want {
			t.Errorf("%s body: y is %s, want %s", c.op, got, c.want)
		}
		if got := types["ys"]; got.DType != graph.Float32 {
			t.Errorf("%s body: ys is %v", c.op, got)
		}
	}
}
