package native_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/plugins/native"
)

// The sparse 1×1 kernels against their Go definition: one to four vectors
// of positions with a partial last one (1, 15, 16, 17, 49, 64, 65, 196,
// 3136 positions), output channels fewer than the tasks, rows with no
// nonzero, two images, clamped and not, on one and two threads.
func TestSparse1x1Kernels(t *testing.T) {
	if !native.UseSparse1x1(true) {
		t.Skip("no sparse 1×1 kernels on this machine")
	}
	for _, c := range [][3]int{{8, 16, 1}, {24, 40, 15}, {16, 24, 16}, {40, 144, 17}, {192, 1152, 49}, {96, 80, 64}, {3, 200, 65}, {112, 672, 196}, {144, 24, 3136}} {
		for _, threads := range []int{1, 2} {
			for _, clamp := range []bool{false, true} {
				d, ok := native.Sparse1x1Agrees(c[0], c[1], c[2], 2, threads, clamp)
				if !ok {
					t.Fatalf("%v: the sparse path did not take it", c)
				}
				if d > 1e-6 {
					t.Errorf("cout %d cin %d hw %d threads %d clamp %v: kernels and Go differ by %g", c[0], c[1], c[2], threads, clamp, d)
				}
			}
		}
	}
}

// sparse1x1Cases are pruned 1×1 convolutions (three of four weights zero,
// as pose_detection's) with a BatchNormalization folded in, a Clip fused
// and a residual Add after, over images of 7×7, 14×14, 3×5 and 56×56.
func sparse1x1Cases() []opCase {
	var cs []opCase
	for i, c := range [][4]int{{192, 96, 7, 7}, {112, 672, 14, 14}, {24, 40, 3, 5}, {24, 144, 56, 56}} {
		cin, cout, h, w := c[0], c[1], c[2], c[3]
		wt := smallWeights(cout*cin, cin/4)
		for j := range wt {
			if (j*7+j/cin)%4 != 0 {
				wt[j] = 0
			}
		}
		cs = append(cs, opCase{name: fmt.Sprintf("sparse1x1_%d", i),
			nodes: []*graph.Node{node("Conv", []string{"x", "w", "b"}, "c", nil),
				node("BatchNormalization", []string{"c", "s", "o", "m", "v"}, "n", nil),
				node("Clip", []string{"n", "lo", "hi"}, "r", nil),
				node("Add", []string{"r", "z"}, "y", nil)},
			inputs: map[string][]int{"x": {2, cin, h, w}, "z": {2, cout, h, w}}, consts: map[string][]int{"b": {cout}, "s": {cout}, "o": {cout}, "m": {cout}},
			fixed: map[string]*graph.Tensor{"w": graph.MustFromSlice([]int{cout, cin, 1, 1}, wt), "v": graph.MustFromSlice([]int{cout}, ones(cout)), "lo": graph.Scalar(float32(-2)), "hi": graph.Scalar(float32(2.5))}, out: "y"})
	}
	return cs
}

// Pruned 1×1 convolutions against the reference kernels, by the sparse
// path and with it off (the dense paths compute the same cases).
func TestSparse1x1Conv(t *testing.T) {
	if native.Sparse1x1Density < 0.25 {
		t.Fatalf("the cases' weights are a quarter nonzero, above the sparse path's %g", native.Sparse1x1Density)
	}
	testOps(t, sparse1x1Cases())
	native.UseSparse1x1(false)
	defer native.UseSparse1x1(true)
	testOps(t, sparse1x1Cases())
}

// BenchmarkSparse1x1 times the sparse kernels on pose_detection's 1×1
// shapes (one thread; the least time of a call, a shared machine's
// preemptions left out, and it per vector multiply-add).
//
//	go test ./plugins/native -run '^$' -bench Sparse1x1
func BenchmarkSparse1x1(b *testing.B) {
	for _, c := range [][3]int{{64, 16, 12544}, {144, 24, 3136}, {240, 40, 784}, {40, 240, 784}, {672, 112, 196}, {112, 672, 196}, {1152, 192, 49}, {192, 1152, 49}, {192, 1152, 64}, {112, 672, 192}, {192, 1152, 196}} {
		b.Run(fmt.Sprintf("%d<-%d@%d", c[0], c[1], c[2]), func(b *testing.B) {
			run, fmas := native.Sparse1x1Runner(c[0], c[1], c[2])
			if run == nil {
				b.Skip("no sparse 1×1 kernels")
			}
			least := time.Duration(math.MaxInt64)
			for b.Loop() {
				t0 := time.Now()
				run()
				least = min(least, time.Since(t0))
			}
			b.ReportMetric(float64(least.Nanoseconds())/1e3, "least-µs")
			b.ReportMetric(float64(least.Nanoseconds())/float64(fmas), "ns/vfma")
		})
	}
}
