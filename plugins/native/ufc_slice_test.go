package native

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// TestSliceKernel: native's float32 Slice gives the reference kernel's
// shape and values (or its error) for UltraFace's cut, cuts on every
// axis of ranks 1-5, negative and clamped starts and ends, negative
// axes, empty results, opset 9 (attributes) and 13 (inputs, int32 and
// int64, unit and other steps), and errors (repeated axis, out of range).
func TestSliceKernel(t *testing.T) {
	ref, _ := kernels.Lookup("", "Slice")
	mine := sliceKernel(nil)
	rng := rand.New(rand.NewPCG(7, 8))
	type cut struct {
		shape                     []int
		starts, ends, axes, steps []int64
	}
	cases := []cut{
		{[]int{1, 4420, 4}, []int64{0}, []int64{2}, []int64{2}, nil},
		{[]int{1, 4420, 4}, []int64{2}, []int64{4}, []int64{-1}, nil},
		{[]int{1, 4420, 4}, []int64{2}, []int64{1 << 40}, []int64{2}, nil},
		{[]int{7}, []int64{-3}, []int64{-1}, nil, nil},
		{[]int{7}, []int64{5}, []int64{2}, nil, nil},
		{[]int{3, 5, 6}, []int64{1, 2}, []int64{3, 4}, []int64{0, 2}, nil},
		{[]int{3, 5, 6}, []int64{0, 1, 1}, []int64{2, 4, 5}, nil, nil},
		{[]int{3, 5, 6}, []int64{0}, []int64{6}, []int64{2}, nil},
		{[]int{3, 5, 6}, []int64{1}, []int64{2}, []int64{1}, []int64{1}},
		{[]int{3, 5, 6}, []int64{0}, []int64{6}, []int64{2}, []int64{2}},
		{[]int{3, 5, 6}, []int64{0, 0}, []int64{1, 1}, []int64{1, 1}, nil},
		{[]int{3, 5, 6}, []int64{0}, []int64{1}, []int64{3}, nil},
		{[]int{2, 1, 3, 4, 5}, []int64{1, 0, 1}, []int64{2, 3, 4}, []int64{0, 2, -1}, nil},
	}
	for r := 1; r <= 5; r++ {
		for range 6 {
			shape := make([]int, r)
			var c cut
			for d := range shape {
				shape[d] = 1 + rng.IntN(6)
				if rng.IntN(2) == 0 {
					c.starts = append(c.starts, int64(rng.IntN(shape[d]+2)-1))
					c.ends = append(c.ends, int64(rng.IntN(shape[d]+3)-2))
					c.axes = append(c.axes, int64(d))
				}
			}
			c.shape = shape
			if len(c.axes) == 0 {
				c.starts, c.ends, c.axes = []int64{0}, []int64{1}, []int64{0}
			}
			cases = append(cases, c)
		}
	}
	ints := func(v []int64, i32 bool) *graph.Tensor {
		if i32 {
			w := make([]int32, len(v))
			for i, x := range v {
				w[i] = int32(x)
			}
			return graph.MustFromSlice([]int{len(w)}, w)
		}
		return graph.MustFromSlice([]int{len(v)}, append([]int64{}, v...))
	}
	for i, c := range cases {
		for _, opset := range []int64{9, 13} {
			for _, i32 := range []bool{false, true} {
				if opset < 10 && (i32 || c.steps != nil) {
					continue
				}
				t.Run(fmt.Sprintf("%d_%v_opset%d_i32%v", i, c.shape, opset, i32), func(t *testing.T) {
					v := make([]float32, kernels.Prod(c.shape))
					for k := range v {
						v[k] = rng.Float32()
					}
					x := graph.MustFromSlice(append([]int{}, c.shape...), v)
					n := &graph.Node{OpType: "Slice", Inputs: []string{"x"}, Outputs: []string{"y"}, Attrs: map[string]*graph.Attribute{}}
					in := []*graph.Tensor{x}
					if opset < 10 {
						n.Attrs["starts"] = &graph.Attribute{Name: "starts", Type: graph.AttrInts, Ints: c.starts}
						n.Attrs["ends"] = &graph.Attribute{Name: "ends", Type: graph.AttrInts, Ints: c.ends}
						if c.axes != nil {
							n.Attrs["axes"] = &graph.Attribute{Name: "axes", Type: graph.AttrInts, Ints: c.axes}
						}
					} else {
						n.Inputs = append(n.Inputs, "s", "e")
						in = append(in, ints(c.starts, i32), ints(c.ends, i32))
						if c.axes != nil || c.steps != nil {
							n.Inputs = append(n.Inputs, "a")
							in = append(in, nil)
							if c.axes != nil {
								in[3] = ints(c.axes, i32)
							}
						}
						if c.steps != nil {
							n.Inputs = append(n.Inputs, "st")
							in = append(in, ints(c.steps, i32))
						}
					}
					ctx := func() *kernels.Context { return &kernels.Context{Context: context.Background(), Opset: opset} }
					want, werr := ref.Kernel(ctx(), n, in)
					got, gerr := mine(ctx(), n, in)
					if (werr != nil) != (gerr != nil) {
						t.Fatalf("error %v, reference %v", gerr, werr)
					}
					if werr != nil {
						return
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
}
