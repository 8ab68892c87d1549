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
			for _, v := range []struct {
				name    string
				threads int
				bands   bool
			}{{"1t", 1, true}, {"2t bands", 2, true}, {"2t channels", 2, false}} {
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
	nb := New(Options{Threads: threads})
	tb.Cleanup(func() { nb.Close() })
	exe, err := nb.Compile(context.Background(), &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}}, hal.CompileOptions{Threads: threads})
	if err != nil {
		tb.Fatal(err)
	}
	return exe, []*graph.Tensor{graph.MustFromSlice([]int{1, cin, h, w}, randSlice(rng, cin*h*w))}
}
