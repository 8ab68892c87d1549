package native

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

// BenchmarkConvIndirect runs convolutions with a window from the zoo
// (UltraFace's first layer and its dilated RFB branches, YuNet's and
// YOLOX's small-channel 3×3s, wider 3×3s) through native's Execute at one
// thread with the indirect GEMM on and off, in CPU time per run:
//
//	go test ./plugins/native -run '^$' -bench ConvIndirect -benchtime 200x
func BenchmarkConvIndirect(b *testing.B) {
	if igemmKernels == nil {
		b.Skip("no indirect kernels on this machine")
	}
	type conv struct{ cin, cout, h, w, k, s, d int }
	for _, c := range []conv{
		{3, 16, 240, 320, 3, 2, 1}, // UltraFace's first layer
		{16, 16, 30, 40, 3, 1, 3},  // its dilated branches
		{16, 16, 30, 40, 3, 1, 5},
		{8, 16, 30, 40, 3, 1, 1},
		{16, 16, 60, 80, 3, 1, 1},
		{3, 16, 120, 160, 3, 2, 1}, // YuNet's first layer
		{12, 16, 104, 104, 3, 1, 1},
		{64, 64, 30, 40, 3, 1, 1},
		{128, 128, 15, 20, 3, 1, 1},
		{32, 64, 60, 80, 3, 2, 1},
	} {
		for _, ind := range []bool{false, true} {
			b.Run(fmt.Sprintf("%d-%d-%dx%d-k%ds%dd%d/indirect=%v", c.cin, c.cout, c.h, c.w, c.k, c.s, c.d, ind), func(b *testing.B) {
				defer func(v bool) { useIndirect = v }(useIndirect)
				useIndirect = ind
				exe, in := convBenchExe(b, c.cin, c.cout, c.h, c.w, c.k, c.s, c.d)
				out := []*graph.Tensor{{}}
				ctx := context.Background()
				cpuLoop(b, func() {
					if err := exe.Execute(ctx, in, out); err != nil {
						b.Fatal(err)
					}
				})
			})
		}
	}
}

// convBenchExe compiles Conv (cin→cout, k×k, stride s, dilation d,
// padding d·(k/2)) + Relu over a 1×cin×h×w input on native at one
// thread, with random constant weights, and returns it with an input.
func convBenchExe(tb testing.TB, cin, cout, h, w, k, s, d int) (hal.Executable, []*graph.Tensor) {
	rng := rand.New(rand.NewPCG(11, 12))
	p := int64(d * (k / 2))
	f32 := func(dims ...int) graph.ValueType {
		return graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(dims...)}
	}
	oh, ow := (h+2*int(p)-d*(k-1)-1)/s+1, (w+2*int(p)-d*(k-1)-1)/s+1
	g := &graph.Graph{
		Inputs:    []graph.ValueInfo{{Name: "x", Type: f32(1, cin, h, w)}},
		Outputs:   []graph.ValueInfo{{Name: "y", Type: f32(1, cout, oh, ow)}},
		ValueInfo: []graph.ValueInfo{{Name: "c", Type: f32(1, cout, oh, ow)}},
		Nodes: []*graph.Node{
			{OpType: "Conv", Inputs: []string{"x", "w", "b"}, Outputs: []string{"c"}, Attrs: map[string]*graph.Attribute{
				"strides":   {Name: "strides", Type: graph.AttrInts, Ints: []int64{int64(s), int64(s)}},
				"dilations": {Name: "dilations", Type: graph.AttrInts, Ints: []int64{int64(d), int64(d)}},
				"pads":      {Name: "pads", Type: graph.AttrInts, Ints: []int64{p, p, p, p}},
			}},
			{OpType: "Relu", Inputs: []string{"c"}, Outputs: []string{"y"}},
		},
		Initializers: map[string]*graph.Tensor{
			"w": graph.MustFromSlice([]int{cout, cin, k, k}, randSlice(rng, cout*cin*k*k)),
			"b": graph.MustFromSlice([]int{cout}, randSlice(rng, cout)),
		},
	}
	nb := New(Options{Threads: 1})
	tb.Cleanup(func() { nb.Close() })
	exe, err := nb.Compile(context.Background(), &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}}, hal.CompileOptions{Threads: 1})
	if err != nil {
		tb.Fatal(err)
	}
	return exe, []*graph.Tensor{graph.MustFromSlice([]int{1, cin, h, w}, randSlice(rng, cin*h*w))}
}
