package native

import (
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// BenchmarkT2aTail: UltraFace's serial tail kernels, Concat of two
// [1,4420,2] on axis 2, Slice of [1,4420,4] to [..., 2:] and Softmax of
// 4420 rows of 2, with the CPU time per op (steadier than wall time on a
// loaded machine).
//
//	go test ./plugins/native -run '^$' -bench T2aTail
func BenchmarkT2aTail(b *testing.B) {
	a := graph.MustFromSlice([]int{1, 4420, 2}, make([]float32, 8840))
	c := graph.MustFromSlice([]int{1, 4420, 2}, make([]float32, 8840))
	y := make([]float32, 17680)
	for i := range f32(a) { // pairs in varied order
		f32(a)[i] = float32(i*7919%1000)/100 - 5
	}
	b.Run("concat", func(b *testing.B) {
		c0 := cpuNow()
		defer func() { b.ReportMetric(float64(cpuNow()-c0)/float64(b.N), "cpu-ns/op") }()
		for b.Loop() {
			concatF32(nil, y, []*graph.Tensor{a, c}, nil, 2, 4)
		}
	})
	b.Run("slice", func(b *testing.B) {
		var s sliceSpec
		s.k, s.starts[0], s.ends[0], s.axes[0], s.hasAxes = 1, 2, 1<<40, 2, true
		p, _ := s.plan([]int{1, 4420, 4})
		out := make([]float32, 8840)
		c0 := cpuNow()
		defer func() { b.ReportMetric(float64(cpuNow()-c0)/float64(b.N), "cpu-ns/op") }()
		for b.Loop() {
			sliceCopy(out, y, []int{1, 4420, 4}, &p)
		}
	})
	b.Run("softmax", func(b *testing.B) {
		out := make([]float32, 8840)
		x := f32(a)
		c0 := cpuNow()
		defer func() { b.ReportMetric(float64(cpuNow()-c0)/float64(b.N), "cpu-ns/op") }()
		for b.Loop() {
			softmaxShort(x, out, 0, 4420, 2)
		}
	})
}
