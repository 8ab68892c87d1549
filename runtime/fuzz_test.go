package runtime_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/onnx"
	"github.com/switchyard-hal/switchyard/formats/tensorio"
	"github.com/switchyard-hal/switchyard/internal/demo"
	"github.com/switchyard-hal/switchyard/runtime"
)

func seedModel(nodes ...*graph.Node) []byte {
	f := graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(2, 3, 4, 4)}
	last := nodes[len(nodes)-1].Outputs[0]
	g := &graph.Graph{
		Name:    "seed",
		Inputs:  []graph.ValueInfo{{Name: "x", Type: f}},
		Outputs: []graph.ValueInfo{{Name: last, Type: graph.ValueType{Kind: "tensor", DType: graph.Float32}}},
		Initializers: map[string]*graph.Tensor{
			"w":     graph.MustFromSlice([]int{3, 3, 1, 1}, []float32{1, 0, 0, 0, 1, 0, 0, 0, 1}),
			"shape": graph.MustFromSlice([]int{2}, []int64{2, -1}),
			"idx":   graph.MustFromSlice([]int{2}, []int64{0, -1}),
		},
		Nodes: nodes,
	}
	return onnx.Encode(&graph.Model{IRVersion: 8, Opsets: []graph.Opset{{Version: 17}}, Graph: g})
}

func ints(name string, v ...int64) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrInts, Ints: v}
}

// FuzzLoadAndRun: any bytes as a model, loaded and (when valid) run on small
// inputs, must end in a result or an error — never a kernel panic (the
// runtime turns those into "internal error" errors, which this target
// treats as failures), a hang or an oversized allocation.
func FuzzLoadAndRun(f *testing.F) {
	f.Add(demo.Bytes())
	f.Add(seedModel(&graph.Node{OpType: "Conv", Inputs: []string{"x", "w"}, Outputs: []string{"y"}, Attrs: map[string]*graph.Attribute{"pads": ints("pads", 1, 1, 1, 1), "strides": ints("strides", 2, 2)}}))
	f.Add(seedModel(&graph.Node{OpType: "Reshape", Inputs: []string{"x", "shape"}, Outputs: []string{"y"}}))
	f.Add(seedModel(&graph.Node{OpType: "Gather", Inputs: []string{"x", "idx"}, Outputs: []string{"y"}, Attrs: map[string]*graph.Attribute{"axis": {Name: "axis", Type: graph.AttrInt, I: 1}}}))
	f.Add(seedModel(&graph.Node{OpType: "MaxPool", Inputs: []string{"x"}, Outputs: []string{"y"}, Attrs: map[string]*graph.Attribute{"kernel_shape": ints("kernel_shape", 2, 2), "ceil_mode": {Name: "ceil_mode", Type: graph.AttrInt, I: 1}}},
		&graph.Node{OpType: "Transpose", Inputs: []string{"y"}, Outputs: []string{"z"}, Attrs: map[string]*graph.Attribute{"perm": ints("perm", 0, 2, 3, 1)}}))
	f.Add(seedModel(&graph.Node{OpType: "Resize", Inputs: []string{"x", "", "", "shape"}, Outputs: []string{"y"}}))
	f.Add(seedModel(&graph.Node{OpType: "ReduceSum", Inputs: []string{"x", "idx"}, Outputs: []string{"y"}},
		&graph.Node{OpType: "Softmax", Inputs: []string{"y"}, Outputs: []string{"z"}}))
	// hostile shapes are refused, not allocated: a per-model tensor limit
	// and memory budget (nothing process-wide is changed)
	opts := &runtime.Options{MaxTensorBytes: 64 << 20, MemoryBudget: 256 << 20}
	f.Fuzz(func(t *testing.T, b []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		m, err := runtime.LoadBytes(ctx, b, opts)
		if err != nil {
			if strings.Contains(err.Error(), "internal error") || strings.Contains(err.Error(), "panic") {
				t.Fatalf("load: %v", err)
			}
			return
		}
		rng := rand.New(rand.NewPCG(1, 1))
		feeds := map[string]*graph.Tensor{}
		for _, in := range m.Inputs() {
			if in.Type.Shape == nil || !in.Type.DType.Supported() {
				return
			}
			shape := make([]int, len(in.Type.Shape))
			total := 1
			for i, d := range in.Type.Shape {
				shape[i] = 2
				if d.Static() {
					shape[i] = int(d.Value)
				}
				total *= max(shape[i], 1)
			}
			if total > 1<<16 {
				return
			}
			dt := in.Type.DType
			if dt == graph.Undefined {
				dt = graph.Float32
			}
			x, err := tensorio.Random(dt, shape, rng)
			if err != nil {
				return
			}
			feeds[in.Name] = x
		}
		if _, err := m.Run(ctx, feeds); err != nil && strings.Contains(err.Error(), "internal error") {
			t.Fatalf("run: %v", err)
		}
		if err := m.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
		if _, err := m.Run(ctx, feeds); !errors.Is(err, runtime.ErrClosed) {
			t.Fatalf("run after close: %v, want ErrClosed", err)
		}
	})
}
