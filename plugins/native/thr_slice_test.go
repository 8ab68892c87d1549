package native

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// TestThrSliceStrided: Slice with steps other than 1 (sliceStrided)
// gives the reference kernel's shape and values at 1 and 2 threads:
// YOLOX's Focus cuts (every other row, then every other column, from 0
// and 1: the last row's deinterleave stops short of x's end), steps on
// several axes and the last, steps past the end, negative starts, a step
// on an axis of one element, rows longer than the odd floats' scratch.
func TestThrSliceStrided(t *testing.T) {
	ref, _ := kernels.Lookup("", "Slice")
	pl := newPool(2)
	defer pl.close()
	rng := rand.New(rand.NewPCG(9, 10))
	type cut struct {
		shape                     []int
		starts, ends, axes, steps []int64
	}
	const big = 1 << 62
	cases := []cut{
		{[]int{1, 3, 416, 416}, []int64{0}, []int64{big}, []int64{2}, []int64{2}},
		{[]int{1, 3, 208, 416}, []int64{1}, []int64{big}, []int64{3}, []int64{2}},
		{[]int{1, 3, 416, 416}, []int64{1, 0}, []int64{big, big}, []int64{2, 3}, []int64{2, 2}},
		{[]int{2, 5, 7, 9}, []int64{1, 0, 2}, []int64{5, 7, 9}, []int64{1, 2, 3}, []int64{3, 2, 4}},
		{[]int{2, 5, 7, 9}, []int64{-4}, []int64{big}, []int64{-1}, []int64{3}},
		{[]int{4, 6}, []int64{0, 5}, []int64{4, 6}, []int64{0, 1}, []int64{2, 7}},
		{[]int{1, 1, 8}, []int64{0, 0}, []int64{1, 8}, []int64{1, 2}, []int64{2, 5}},
		{[]int{6}, []int64{1}, []int64{6}, nil, []int64{2}},
		{[]int{2, 3, 1201}, []int64{1}, []int64{big}, []int64{2}, []int64{2}}, // rows past the scratch
		{[]int{2, 3, 1201}, []int64{0, 1}, []int64{big, big}, []int64{1, 2}, []int64{2, 2}},
	}
	for i, c := range cases {
		for _, p := range []*pool{nil, pl} {
			t.Run(fmt.Sprintf("%d_%v_%dt", i, c.shape, p.threads()), func(t *testing.T) {
				v := make([]float32, kernels.Prod(c.shape))
				for k := range v {
					v[k] = rng.Float32()
				}
				ints := func(v []int64) *graph.Tensor { return graph.MustFromSlice([]int{len(v)}, append([]int64{}, v...)) }
				n := &graph.Node{OpType: "Slice", Inputs: []string{"x", "s", "e", "a", "st"}, Outputs: []string{"y"}}
				in := []*graph.Tensor{graph.MustFromSlice(append([]int{}, c.shape...), v), ints(c.starts), ints(c.ends), nil, ints(c.steps)}
				if c.axes != nil {
					in[3] = ints(c.axes)
				}
				ctx := func() *kernels.Context { return &kernels.Context{Context: context.Background(), Opset: 13} }
				want, werr := ref.Kernel(ctx(), n, in)
				got, gerr := sliceKernel(p)(ctx(), n, in)
				if werr != nil || gerr != nil {
					t.Fatalf("error %v, reference %v", gerr, werr)
				}
				if !graph.SameShape(got[0].Shape, want[0].Shape) {
					t.Fatalf("shape %v, reference %v", got[0].Shape, want[0].Shape)
				}
				gv, wv := graph.Data[float32](got[0]), graph.Data[float32](want[0])
				for k := range wv {
					if gv[k] != wv[k] {
						t.Fatalf("y[%d] = %v, reference %v", k, gv[k], wv[k])
					}
				}
			})
		}
	}
}

// BenchmarkThrSliceFocus times YOLOX's Focus cuts, every other row of
// 3×416×416 (rows) and every other float of 3×208×416 rows (cols),
// through sliceKernel at 1 and 2 threads and the reference kernel.
//
//	go test ./plugins/native -run '^$' -bench ThrSliceFocus -cpu 2
func BenchmarkThrSliceFocus(b *testing.B) {
	ref, _ := kernels.Lookup("", "Slice")
	pl := newPool(2)
	defer pl.close()
	ints := func(v ...int64) *graph.Tensor { return graph.MustFromSlice([]int{len(v)}, v) }
	n := &graph.Node{OpType: "Slice", Inputs: []string{"x", "s", "e", "a", "st"}, Outputs: []string{"y"}}
	rows := []*graph.Tensor{graph.MustFromSlice([]int{1, 3, 416, 416}, make([]float32, 3*416*416)), ints(1), ints(1 << 62), ints(2), ints(2)}
	cols := []*graph.Tensor{graph.MustFromSlice([]int{1, 3, 208, 416}, make([]float32, 3*208*416)), ints(1), ints(1 << 62), ints(3), ints(2)}
	for _, k := range []struct {
		name string
		fn   kernels.Func
		in   []*graph.Tensor
	}{{"rows/reference", ref.Kernel, rows}, {"rows/1t", sliceKernel(nil), rows}, {"rows/2t", sliceKernel(pl), rows},
		{"cols/reference", ref.Kernel, cols}, {"cols/1t", sliceKernel(nil), cols}, {"cols/2t", sliceKernel(pl), cols}} {
		in := k.in
		b.Run(k.name, func(b *testing.B) {
			ctx := &kernels.Context{Context: context.Background(), Opset: 13, Alloc: &thrReuse{}}
			for b.Loop() {
				if _, err := k.fn(ctx, n, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// thrReuse hands out the same tensor while the shape stays (a
// benchmark's output, as the executor's recycled buffers).
type thrReuse struct{ t *graph.Tensor }

func (r *thrReuse) Alloc(dt graph.DType, shape []int) (*graph.Tensor, error) {
	if r.t == nil || r.t.DType != dt || !graph.SameShape(r.t.Shape, shape) {
		r.t = graph.MustFromSlice(append([]int{}, shape...), make([]float32, kernels.Prod(shape)))
	}
	return r.t, nil
}

func (r *thrReuse) AllocUninit(dt graph.DType, shape []int) (*graph.Tensor, error) {
	return r.Alloc(dt, shape)
}
