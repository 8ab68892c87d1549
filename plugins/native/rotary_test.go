package native

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	cexec "github.com/switchyard-hal/switchyard/core/exec"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/runtime"
)

// TestRotaryMatchesReference: native's float32 RotaryEmbedding gives the
// reference kernel's outputs bit for bit (3-D and 4-D input, interleaved
// pairs and halves, a position offset and per-token positions, a rotary
// dim below the head size), and leaves what it does not handle (an
// out-of-range position) to the reference kernel's error.
func TestRotaryMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	type rc struct {
		x           []int
		heads, rot  int
		interleaved int
		pos         *graph.Tensor
		bad         bool
	}
	cases := []rc{
		{x: []int{1, 1, 64}, heads: 8, interleaved: 1, pos: graph.MustFromSlice([]int{1}, []int64{7})}, // a decode step
		{x: []int{1, 5, 64}, heads: 8, interleaved: 1, pos: graph.MustFromSlice([]int{1}, []int64{0})}, // prefill
		{x: []int{2, 3, 32}, heads: 4, interleaved: 0, pos: graph.MustFromSlice([]int{2, 3}, []int64{0, 4, 9, 3, 2, 1})},
		{x: []int{1, 4, 3, 8}, interleaved: 1, pos: graph.MustFromSlice([]int{1}, []int64{5})},
		{x: []int{1, 2, 3, 8}, rot: 4, interleaved: 0, pos: graph.MustFromSlice([]int{1, 3}, []int64{1, 0, 2})},
		{x: []int{1, 2, 32}, heads: 4, interleaved: 1, pos: graph.MustFromSlice([]int{1}, []int64{15}), bad: true},
	}
	const maxPos, width = 16, 4
	cosT, sinT := make([]float32, maxPos*width), make([]float32, maxPos*width)
	for i := range cosT {
		a := rng.Float64() * 2 * math.Pi
		cosT[i], sinT[i] = float32(math.Cos(a)), float32(math.Sin(a))
	}
	b := New(Options{})
	defer b.Close()
	ctx := context.Background()
	for i, c := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			at := map[string]*graph.Attribute{"interleaved": {Name: "interleaved", Type: graph.AttrInt, I: int64(c.interleaved)}}
			if c.heads > 0 {
				at["num_heads"] = &graph.Attribute{Name: "num_heads", Type: graph.AttrInt, I: int64(c.heads)}
			}
			if c.rot > 0 {
				at["rotary_embedding_dim"] = &graph.Attribute{Name: "rotary_embedding_dim", Type: graph.AttrInt, I: int64(c.rot)}
			}
			g := &graph.Graph{Name: "rope", Initializers: map[string]*graph.Tensor{
				"pos": c.pos, "cos": graph.MustFromSlice([]int{maxPos, width}, cosT), "sin": graph.MustFromSlice([]int{maxPos, width}, sinT)},
				Inputs:  []graph.ValueInfo{{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(c.x...)}}},
				Outputs: []graph.ValueInfo{{Name: "y"}},
				Nodes: []*graph.Node{{Name: "rope", OpType: "RotaryEmbedding", Domain: "com.microsoft",
					Inputs: []string{"x", "pos", "cos", "sin"}, Outputs: []string{"y"}, Attrs: at}}}
			sg := runtime.TypedSubgraph(&hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}, {Domain: "com.microsoft", Version: 1}}})
			if v, err := b.Supports(ctx, sg); err != nil || !v[0].Supported {
				t.Fatalf("Supports: %v %v", v, err)
			}
			exe, err := b.Compile(ctx, sg, hal.CompileOptions{})
			if err != nil {
				t.Fatal(err)
			}
			x := graph.MustFromSlice(c.x, randSlice(rng, kernelsProd(c.x)))
			got := []*graph.Tensor{{}}
			gerr := exe.Execute(ctx, []*graph.Tensor{x}, got)
			ref, err := cexec.Compile(sg.Graph, cexec.Options{Opsets: sg.Opsets})
			if err != nil {
				t.Fatal(err)
			}
			want := []*graph.Tensor{{}}
			werr := ref.RunBound(ctx, []*graph.Tensor{x}, want)
			if c.bad {
				if gerr == nil || werr == nil {
					t.Fatalf("position out of range: native %v, reference %v", gerr, werr)
				}
				return
			}
			if gerr != nil || werr != nil {
				t.Fatalf("native %v, reference %v", gerr, werr)
			}
			gv, wv := graph.Data[float32](got[0]), graph.Data[float32](want[0])
			if len(gv) != len(wv) {
				t.Fatalf("%d outputs, want %d", len(gv), len(wv))
			}
			for j := range wv {
				if math.Float32bits(gv[j]) != math.Float32bits(wv[j]) {
					t.Fatalf("y[%d] = %v, reference %v", j, gv[j], wv[j])
				}
			}
		})
	}
}
