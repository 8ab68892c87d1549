package binary

import (
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// TestPlanManyDims checks broadcasts whose merged dims outnumber a plan's
// own storage (planInline): shapes of rank 5 to 8 where every other dim
// is broadcast in one input, so no two adjacent dims merge, against the
// naive per-element index map.
func TestPlanManyDims(t *testing.T) {
	for rank := 5; rank <= 8; rank++ {
		full := make([]int, rank)
		sa, sb := make([]int, rank), make([]int, rank)
		for i := range full {
			full[i] = 2
			sa[i], sb[i] = 2, 2
			if i%2 == 0 {
				sb[i] = 1
			} else {
				sa[i] = 1
			}
		}
		fill := func(shape []int, base float32) *graph.Tensor {
			v := make([]float32, kernels.Prod(shape))
			for i := range v {
				v[i] = base + float32(i)
			}
			return f32(shape, v...)
		}
		a, b := fill(sa, 1), fill(sb, 1000)
		got := mustRun(t, node("Add"), 14, a, b)
		if !graph.SameShape(got.Shape, full) {
			t.Fatalf("rank %d: shape %v, want %v", rank, got.Shape, full)
		}
		ia, ib := kernels.BroadcastIndex(full, sa), kernels.BroadcastIndex(full, sb)
		for i := range ia {
			if w := a.Data.([]float32)[ia[i]] + b.Data.([]float32)[ib[i]]; got.Data.([]float32)[i] != w {
				t.Fatalf("rank %d: element %d = %v, want %v", rank, i, got.Data.([]float32)[i], w)
			}
		}
	}
}

// TestSameShapeOutputOwnShape: for equal input shapes the plan reuses
// the first input's shape; the output must still have its own, so that
// changing one leaves the other.
func TestSameShapeOutputOwnShape(t *testing.T) {
	a := graph.MustFromSlice([]int{1}, []int32{5})
	b := graph.MustFromSlice([]int{1}, []int32{3})
	got := mustRun(t, node("Sub"), 14, a, b)
	if v := got.Data.([]int32); len(v) != 1 || v[0] != 2 {
		t.Fatalf("5 - 3 = %v", v)
	}
	got.Shape[0] = 7
	if a.Shape[0] != 1 || b.Shape[0] != 1 {
		t.Fatalf("the output's shape is an input's: inputs now %v %v", a.Shape, b.Shape)
	}
}
