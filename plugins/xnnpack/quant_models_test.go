package xnnpack_test

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats"
	_ "github.com/switchyard-hal/switchyard/formats/all"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/shared"
	"github.com/switchyard-hal/switchyard/partitioner"
	"github.com/switchyard-hal/switchyard/plugins/xnnpack"
	"github.com/switchyard-hal/switchyard/runtime"
)

// MobileNetV2 int8 on the dog image: xnnpack (int8 opted in) against the
// reference kernels. Both must pick a dog class; the logits may differ
// (one step per op, accumulated over 65 ops).
func TestInt8MobileNetV2(t *testing.T) {
	dev := device(t, xnnpack.Options{Threads: 1, Int8: true})
	dir := shared.Path(t, "testdata/tflite")
	raw, err := os.ReadFile(filepath.Join(dir, "dog_1x3x224x224.bin"))
	if err != nil {
		t.Fatal(err)
	}
	x := make([]int8, len(raw))
	for i, b := range raw {
		x[i] = int8(b)
	}
	load := func() *graph.Model {
		m, err := formats.LoadFile(filepath.Join(dir, "mobilenet_v2_quantized_1x3x224x224.tflite"), formats.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	in := m0Input(t, load())
	feeds := map[string]*graph.Tensor{in: graph.MustFromSlice([]int{1, 3, 224, 224}, x)}
	ctx := context.Background()
	run := func(opts *runtime.Options) (map[string]*graph.Tensor, *runtime.Model) {
		m, err := runtime.Prepare(ctx, load(), opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = m.Close() })
		out, err := m.Run(ctx, feeds)
		if err != nil {
			t.Fatal(err)
		}
		return out, m
	}
	want, _ := run(nil)
	perNode(t, ctx, dev, load, feeds)
	got, m := run(&runtime.Options{Backends: []*hal.Device{dev}, Policy: partitioner.Policy{IgnoreCosts: true}})
	if n := m.Plan().Summary()[xnnpack.Name]; n < 60 {
		t.Fatalf("only %d nodes on xnnpack:\n%s", n, m.Plan().Text())
	}
	g := load().Graph
	out := g.Outputs[0].Name
	differ, worst, hist := stepDiff(graph.Data[int8](got[out]), graph.Data[int8](want[out]))
	t.Logf("logits: %d of %d differ from the reference, max %d steps; histogram by steps %v", differ, len(got[out].Data.([]int8)), worst, hist)
	for name, r := range map[string]*graph.Tensor{"cpu": want[out], "xnnpack": got[out]} {
		top := top5(graph.Data[int8](r))
		t.Logf("%s top-5 %v", name, top)
		if top[0] < 151 || top[0] > 268 {
			t.Errorf("%s: top-1 class %d is not a dog (151–268)", name, top[0])
		}
	}
}

// stepDiff counts differing values, the largest difference and how many
// differ by each number of steps.
func stepDiff(got, want []int8) (differ, worst int, hist map[int]int) {
	hist = map[int]int{}
	for i := range got {
		d := int(got[i]) - int(want[i])
		if d < 0 {
			d = -d
		}
		if d > 0 {
			differ++
		}
		hist[d]++
		worst = max(worst, d)
	}
	return differ, worst, hist
}

// perNode runs each int8 node of the model alone on xnnpack, fed the
// reference's own inputs, and checks it is within one step of the
// reference's output: the per-op bound (the full model drifts further as
// differences propagate).
func perNode(t *testing.T, ctx context.Context, dev *hal.Device, load func() *graph.Model, feeds map[string]*graph.Tensor) {
	t.Helper()
	traced := load()
	for _, n := range traced.Graph.Nodes {
		for _, o := range n.Outputs {
			traced.Graph.Outputs = append(traced.Graph.Outputs, graph.ValueInfo{Name: o})
		}
	}
	ref, err := runtime.Prepare(ctx, traced, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	vals, err := ref.Run(ctx, feeds)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range feeds {
		vals[k] = v
	}
	base := load()
	checked, differ, total := 0, 0, 0
	for _, n := range base.Graph.Nodes {
		if n.Domain != "switchyard.quant" {
			continue
		}
		g := &graph.Graph{Name: n.Label(), Nodes: []*graph.Node{n}, Initializers: map[string]*graph.Tensor{}, Outputs: []graph.ValueInfo{{Name: n.Outputs[0]}}}
		in := map[string]*graph.Tensor{}
		for _, name := range n.Inputs {
			if name == "" {
				continue
			}
			if k, ok := base.Graph.Initializers[name]; ok {
				g.Initializers[name] = k
				continue
			}
			v := vals[name]
			g.Inputs = append(g.Inputs, graph.ValueInfo{Name: name, Type: graph.ValueType{Kind: "tensor", DType: v.DType, Shape: graph.StaticShape(v.Shape...)}})
			in[name] = v
		}
		m, err := runtime.Prepare(ctx, &graph.Model{IRVersion: base.IRVersion, Opsets: base.Opsets, Graph: g}, &runtime.Options{Backends: []*hal.Device{dev}, Policy: partitioner.Policy{IgnoreCosts: true}})
		if err != nil {
			t.Fatalf("%s: %v", n.Label(), err)
		}
		if m.Plan().Summary()[xnnpack.Name] != 1 {
			t.Fatalf("%s not on xnnpack:\n%s", n.Label(), m.Plan().Text())
		}
		got, err := m.Run(ctx, in)
		_ = m.Close()
		if err != nil {
			t.Fatalf("%s: %v", n.Label(), err)
		}
		d, worst, _ := stepDiff(graph.Data[int8](got[n.Outputs[0]]), graph.Data[int8](vals[n.Outputs[0]]))
		if worst > 1 {
			t.Errorf("%s alone: %d values differ from the reference, by up to %d steps (allowed 1)", n.Label(), d, worst)
		}
		checked++
		differ += d
		total += vals[n.Outputs[0]].Len()
	}
	t.Logf("each of %d int8 nodes alone, on the reference's inputs: %d of %d values differ by 1 step, none by more", checked, differ, total)
}

func m0Input(t *testing.T, m *graph.Model) string {
	if len(m.Graph.Inputs) != 1 {
		t.Fatalf("want one input, got %d", len(m.Graph.Inputs))
	}
	return m.Graph.Inputs[0].Name
}

func top5(v []int8) []int {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return v[idx[a]] > v[idx[b]] })
	return idx[:5]
}
