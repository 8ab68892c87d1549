//go:build amd64

package native_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/backendtest"
	"github.com/switchyard-hal/switchyard/plugins/native"
	"github.com/switchyard-hal/switchyard/plugins/xnnpack"
)

// BenchmarkZooOpsVsXNNPACK times the single ops the MediaPipe models of
// ../shared/testdata/zoo are made of, at their shapes (after the TFLite
// importer's NCHW lowering): PRelu with a [C,1,1] slope, 5×5 and 3×3
// depthwise convolutions (stride 1 and 2), a 2× bilinear Resize, a 2×2
// MaxPool and a channel Pad, each through native's and xnnpack's Execute
// at one thread, alternating the two every iteration, and reports the
// least time of each and native/xnnpack (> 1: native is slower):
//
//	go test ./plugins/native -run '^$' -bench ZooOpsVsXNNPACK -benchtime 200x
func BenchmarkZooOpsVsXNNPACK(b *testing.B) {
	xb, err := xnnpack.New(context.Background(), xnnpack.Options{Threads: 1})
	if err != nil {
		if backendtest.Required(xnnpack.Name) {
			b.Fatalf("xnnpack required by SWITCHYARD_REQUIRE_BACKENDS but unavailable: %v", err)
		}
		b.Skipf("xnnpack unavailable: %v", err)
	}
	defer xb.Close()
	nb := native.New(native.Options{Threads: 1})
	defer nb.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	rnd := func(shape ...int) *graph.Tensor {
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return graph.MustFromSlice(shape, v)
	}
	dw := func(c, hw, k, s int) (*graph.Node, map[string]*graph.Tensor) {
		p := int64(k / 2)
		return node("Conv", []string{"x", "w", "b"}, "y", attrs("group", c, "kernel_shape", []int64{int64(k), int64(k)},
				"strides", []int64{int64(s), int64(s)}, "pads", []int64{p, p, p, p})),
			map[string]*graph.Tensor{"w": rnd(c, 1, k, k), "b": rnd(c)}
	}
	type opBench struct {
		name   string
		n      *graph.Node
		x      []int
		consts map[string]*graph.Tensor
	}
	var cases []opBench
	add := func(name string, x []int, n *graph.Node, consts map[string]*graph.Tensor) {
		cases = append(cases, opBench{name, n, x, consts})
	}
	add("prelu-32x96x96", []int{1, 32, 96, 96}, node("PRelu", []string{"x", "s"}, "y", nil), map[string]*graph.Tensor{"s": rnd(32, 1, 1)})
	for _, c := range []struct{ c, hw, k, s int }{{32, 96, 5, 1}, {64, 48, 5, 2}, {128, 24, 5, 1}, {256, 12, 5, 1}, {256, 6, 5, 1}, {32, 64, 3, 1}, {128, 16, 3, 2}} {
		n, k := dw(c.c, c.hw, c.k, c.s)
		add("dw"+itoa(c.k)+"x"+itoa(c.k)+"s"+itoa(c.s)+"-"+itoa(c.c)+"x"+itoa(c.hw)+"x"+itoa(c.hw), []int{1, c.c, c.hw, c.hw}, n, k)
	}
	add("resize-linear2x-128x24x24", []int{1, 128, 24, 24}, node("Resize", []string{"x", "", "", "sz"}, "y", attrs("mode", "linear")),
		map[string]*graph.Tensor{"sz": i64s(1, 128, 48, 48)})
	add("maxpool2x2-64x48x48", []int{1, 64, 48, 48}, node("MaxPool", []string{"x"}, "y", attrs("kernel_shape", []int64{2, 2}, "strides", []int64{2, 2})), nil)
	add("maxpool2x2-256x12x12", []int{1, 256, 12, 12}, node("MaxPool", []string{"x"}, "y", attrs("kernel_shape", []int64{2, 2}, "strides", []int64{2, 2})), nil)
	add("pad-channels-32to64x48x48", []int{1, 32, 48, 48}, node("Pad", []string{"x", "p"}, "y", nil),
		map[string]*graph.Tensor{"p": i64s(0, 0, 0, 0, 0, 32, 0, 0)})
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			g := &graph.Graph{Name: c.name, Nodes: []*graph.Node{c.n}, Initializers: map[string]*graph.Tensor{},
				Inputs:  []graph.ValueInfo{{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(c.x...)}}},
				Outputs: []graph.ValueInfo{{Name: "y"}}}
			for k, v := range c.consts {
				g.Initializers[k] = v
			}
			sg := &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}}
			var exes [2]hal.Executable
			for i, be := range []hal.Backend{nb, xb} {
				vs, err := be.Supports(context.Background(), sg)
				if err != nil {
					b.Fatal(err)
				}
				if !vs[0].Supported {
					b.Skipf("%s declines: %s", []string{"native", "xnnpack"}[i], vs[0].Reason)
				}
				e, err := be.Compile(context.Background(), sg, hal.CompileOptions{Threads: 1})
				if err != nil {
					b.Fatal(err)
				}
				defer e.Release()
				exes[i] = e
			}
			in := []*graph.Tensor{rnd(c.x...)}
			outs := [2][]*graph.Tensor{{{}}, {{}}}
			for i := range exes { // warm, and the outputs allocated
				if err := exes[i].Execute(context.Background(), in, outs[i]); err != nil {
					b.Fatal(err)
				}
			}
			best := [2]time.Duration{time.Hour, time.Hour}
			b.ResetTimer()
			for it := 0; it < b.N; it++ {
				for i := range exes {
					t0 := time.Now()
					if err := exes[i].Execute(context.Background(), in, outs[i]); err != nil {
						b.Fatal(err)
					}
					best[i] = min(best[i], time.Since(t0))
				}
			}
			b.ReportMetric(float64(best[0].Nanoseconds())/1e3, "native-µs")
			b.ReportMetric(float64(best[1].Nanoseconds())/1e3, "xnnpack-µs")
			b.ReportMetric(float64(best[0])/float64(best[1]), "native/xnnpack")
		})
	}
}

func itoa(v int) string {
	if v < 10 {
		return string(rune('0' + v))
	}
	return itoa(v/10) + string(rune('0'+v%10))
}
