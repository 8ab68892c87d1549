package native

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

// BenchmarkThrBands runs indirect convolutions of the zoo's shapes at 1
// thread and at 2 threads with the phase planes filled in row bands and
// by channels (thr_bands.go), alternating the three THR_ROUNDS times
// (default 300) 10 calls each, and prints each one's least, 10th
// percentile, 25th percentile and median wall time a call: on a shared
// machine the low percentiles are the calls that had both cores.
// THR_SWAP=1 runs the two 2-thread variants in the other order.
//
//	go test ./plugins/native -run '^$' -bench ThrBands -benchtime 1x
func BenchmarkThrBands(b *testing.B) {
	if igemmKernels == nil {
		b.Skip("no indirect kernels on this machine")
	}
	rounds := 300
	if s := os.Getenv("THR_ROUNDS"); s != "" {
		fmt.Sscan(s, &rounds)
	}
	type conv struct{ cin, cout, h, w, k, s, d int }
	for _, c := range []conv{
		{3, 16, 240, 320, 3, 2, 1}, // UltraFace's first layer
		{16, 16, 30, 40, 3, 1, 3},  // its dilated branches (wide)
		{8, 16, 30, 40, 3, 1, 1},
		{3, 16, 120, 160, 3, 2, 1}, // YuNet's first layer
		{12, 16, 104, 104, 3, 1, 1},
		{12, 16, 208, 208, 3, 1, 1}, // YOLOX-nano's first layer (after Focus)
	} {
		b.Run(fmt.Sprintf("%d-%d-%dx%d-k%ds%dd%d", c.cin, c.cout, c.h, c.w, c.k, c.s, c.d), func(b *testing.B) {
			defer func(v bool) { rowBands = v }(rowBands)
			type variant struct {
				name  string
				exe   hal.Executable
				in    []*graph.Tensor
				bands bool
				calls []time.Duration
			}
			var vs []*variant
			order := []struct {
				name    string
				threads int
				bands   bool
			}{{"1t", 1, true}, {"2t bands", 2, true}, {"2t channels", 2, false}}
			if os.Getenv("THR_SWAP") != "" {
				// the variant right after the 1-thread one runs at a
				// disadvantage (BenchmarkThrModel): the other order
				order[1], order[2] = order[2], order[1]
			}
			for _, v := range order {
				exe, in := thrConvExe(b, v.threads, c.cin, c.cout, c.h, c.w, c.k, c.s, c.d)
				vs = append(vs, &variant{name: v.name, exe: exe, in: in, bands: v.bands})
			}
			ctx := context.Background()
			for b.Loop() {
				for r := 0; r < rounds; r++ {
					for _, v := range vs {
						rowBands = v.bands
						out := []*graph.Tensor{{}}
						for k := 0; k < 10; k++ {
							t0 := time.Now()
							if err := v.exe.Execute(ctx, v.in, out); err != nil {
								b.Fatal(err)
							}
							if r > 0 {
								v.calls = append(v.calls, time.Since(t0))
							}
						}
					}
				}
			}
			for _, v := range vs {
				c := v.calls
				sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
				us := func(d time.Duration) float64 { return d.Seconds() * 1e6 }
				fmt.Printf("  %-12s least %7.1f  p10 %7.1f  p25 %7.1f  median %7.1f µs\n", v.name, us(c[0]), us(c[len(c)/10]), us(c[len(c)/4]), us(c[len(c)/2]))
			}
		})
	}
}

// thrConvExe is convBenchExe (igemm_bench_test.go) on a pool of threads.
func thrConvExe(tb testing.TB, threads, cin, cout, h, w, k, s, d int) (hal.Executable, []*graph.Tensor) {
	return thrConvGroupExe(tb, threads, cin, cout, 1, h, w, k, s, d)
}

// thrConvGroupExe is thrConvExe with groups (cin = cout = group: a
// depthwise convolution).
func thrConvGroupExe(tb testing.TB, threads, cin, cout, group, h, w, k, s, d int) (hal.Executable, []*graph.Tensor) {
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
				"group":     {Name: "group", Type: graph.AttrInt, I: int64(group)},
			}},
			{OpType: "Relu", Inputs: []string{"c"}, Outputs: []string{"y"}},
		},
		Initializers: map[string]*graph.Tensor{
			"w": graph.MustFromSlice([]int{cout, cin / group, k, k}, randSlice(rng, cout*cin/group*k*k)),
			"b": graph.MustFromSlice([]int{cout}, randSlice(rng, cout)),
		},
	}
	nb := New(Options{Threads: threads})
	tb.Cleanup(func() { nb.Close() })
	exe, err := nb.Compile(context.Background(), &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}}, hal.CompileOptions{Threads: threads})
	if err != nil {
		tb.Fatal(err)
	}
	return exe, []*graph.Tensor{graph.MustFromSlice([]int{1, cin, h, w}, randSlice(rng, cin*h*w))}
}

// BenchmarkThrChain runs UltraFace's 1×1 → depthwise 3×3 → 1×1 blocks
// (each with its Relu) at 1 thread and at 2 threads, alternating as
// BenchmarkThrBands: what a second thread buys where each node reads
// what the one before wrote (the depthwise split by planes, the 1×1s by
// positions). The depthwise split in row bands instead (every plane's
// rows of a band a task, dw3Rows) was slower at 128 channels 15×20:
// least 115 µs against 92 by planes and 110 at 1 thread (600 rounds,
// load 9).
//
//	go test ./plugins/native -run '^$' -bench ThrChain -benchtime 1x
func BenchmarkThrChain(b *testing.B) {
	rounds := 300
	if s := os.Getenv("THR_ROUNDS"); s != "" {
		fmt.Sscan(s, &rounds)
	}
	for _, c := range []struct{ c, h, w, s int }{{128, 15, 20, 1}, {256, 8, 10, 1}, {64, 30, 40, 2}, {32, 60, 80, 2}} {
		b.Run(fmt.Sprintf("%d-%dx%d-s%d", c.c, c.h, c.w, c.s), func(b *testing.B) {
			defer func(v bool) { rowBands = v }(rowBands)
			type variant struct {
				name  string
				exe   hal.Executable
				in    []*graph.Tensor
				bands bool
				calls []time.Duration
			}
			var vs []*variant
			for _, v := range []struct {
				name    string
				threads int
				bands   bool
			}{{"1t", 1, true}, {"2t", 2, true}} {
				exe, in := thrChainExe(b, v.threads, c.c, c.h, c.w, c.s)
				vs = append(vs, &variant{name: v.name, exe: exe, in: in, bands: v.bands})
			}
			ctx := context.Background()
			for b.Loop() {
				for r := 0; r < rounds; r++ {
					for _, v := range vs {
						rowBands = v.bands
						out := []*graph.Tensor{{}}
						for k := 0; k < 10; k++ {
							t0 := time.Now()
							if err := v.exe.Execute(ctx, v.in, out); err != nil {
								b.Fatal(err)
							}
							if r > 0 {
								v.calls = append(v.calls, time.Since(t0))
							}
						}
					}
				}
			}
			for _, v := range vs {
				c := v.calls
				sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
				us := func(d time.Duration) float64 { return d.Seconds() * 1e6 }
				fmt.Printf("  %-12s least %7.1f  p10 %7.1f  p25 %7.1f  median %7.1f µs\n", v.name, us(c[0]), us(c[len(c)/10]), us(c[len(c)/4]), us(c[len(c)/2]))
			}
		})
	}
}

// thrChainExe compiles Conv 1×1 c→c, Relu, depthwise Conv 3×3 stride s
// (padding 1), Relu, Conv 1×1 c→c, Relu over a 1×c×h×w input on a pool
// of threads, with random constant weights, and returns it with an
// input.
func thrChainExe(tb testing.TB, threads, c, h, w, s int) (hal.Executable, []*graph.Tensor) {
	rng := rand.New(rand.NewPCG(13, 14))
	f32 := func(dims ...int) graph.ValueType {
		return graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(dims...)}
	}
	oh, ow := (h-1)/s+1, (w-1)/s+1
	ints := func(name string, v ...int64) *graph.Attribute {
		return &graph.Attribute{Name: name, Type: graph.AttrInts, Ints: v}
	}
	g := &graph.Graph{
		Inputs:  []graph.ValueInfo{{Name: "x", Type: f32(1, c, h, w)}},
		Outputs: []graph.ValueInfo{{Name: "y", Type: f32(1, c, oh, ow)}},
		ValueInfo: []graph.ValueInfo{{Name: "a", Type: f32(1, c, h, w)}, {Name: "ar", Type: f32(1, c, h, w)},
			{Name: "d", Type: f32(1, c, oh, ow)}, {Name: "dr", Type: f32(1, c, oh, ow)}, {Name: "p", Type: f32(1, c, oh, ow)}},
		Nodes: []*graph.Node{
			{OpType: "Conv", Inputs: []string{"x", "w1", "b1"}, Outputs: []string{"a"}},
			{OpType: "Relu", Inputs: []string{"a"}, Outputs: []string{"ar"}},
			{OpType: "Conv", Inputs: []string{"ar", "wd", "bd"}, Outputs: []string{"d"}, Attrs: map[string]*graph.Attribute{
				"strides": ints("strides", int64(s), int64(s)), "pads": ints("pads", 1, 1, 1, 1),
				"group": {Name: "group", Type: graph.AttrInt, I: int64(c)},
			}},
			{OpType: "Relu", Inputs: []string{"d"}, Outputs: []string{"dr"}},
			{OpType: "Conv", Inputs: []string{"dr", "w2", "b2"}, Outputs: []string{"p"}},
			{OpType: "Relu", Inputs: []string{"p"}, Outputs: []string{"y"}},
		},
		Initializers: map[string]*graph.Tensor{
			"w1": graph.MustFromSlice([]int{c, c, 1, 1}, randSlice(rng, c*c)),
			"b1": graph.MustFromSlice([]int{c}, randSlice(rng, c)),
			"wd": graph.MustFromSlice([]int{c, 1, 3, 3}, randSlice(rng, c*9)),
			"bd": graph.MustFromSlice([]int{c}, randSlice(rng, c)),
			"w2": graph.MustFromSlice([]int{c, c, 1, 1}, randSlice(rng, c*c)),
			"b2": graph.MustFromSlice([]int{c}, randSlice(rng, c)),
		},
	}
	nb := New(Options{Threads: threads})
	tb.Cleanup(func() { nb.Close() })
	exe, err := nb.Compile(context.Background(), &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}}, hal.CompileOptions{Threads: threads})
	if err != nil {
		tb.Fatal(err)
	}
	return exe, []*graph.Tensor{graph.MustFromSlice([]int{1, c, h, w}, randSlice(rng, c*h*w))}
}
