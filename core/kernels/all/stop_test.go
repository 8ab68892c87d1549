package all_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	_ "github.com/switchyard-hal/switchyard/core/kernels/all"
)

func zeros(dt graph.DType, shape ...int) *graph.Tensor {
	t, err := graph.New(dt, shape)
	if err != nil {
		panic(err)
	}
	return t
}

func ints(v ...int64) *graph.Tensor { return graph.MustFromSlice([]int{len(v)}, v) }

// TestLongKernelsStopOnCancel: the kernels whose work grows with big
// outputs (products, convolutions, reductions, elementwise and broadcast
// loops, copies) give up when their context is done: a cancelled call
// returns context.Canceled naming the node, and returns much sooner than
// the same call left to finish (they used to check the context only
// between nodes, so one big kernel ran 51 s past a 1 s deadline).
func TestLongKernelsStopOnCancel(t *testing.T) {
	attr := func(name string, v ...int64) *graph.Attribute {
		return &graph.Attribute{Name: name, Type: graph.AttrInts, Ints: v}
	}
	cases := []struct {
		op    string
		in    []*graph.Tensor
		attrs map[string]*graph.Attribute
	}{
		{op: "MatMul", in: []*graph.Tensor{zeros(graph.Float32, 384, 384), zeros(graph.Float32, 384, 384)}},
		{op: "MatMul", in: []*graph.Tensor{zeros(graph.Int32, 256, 256), zeros(graph.Int32, 256, 256)}},
		{op: "MatMul", in: []*graph.Tensor{zeros(graph.Float32, 64, 128, 128), zeros(graph.Float32, 64, 128, 128)}},
		{op: "Gemm", in: []*graph.Tensor{zeros(graph.Float32, 384, 384), zeros(graph.Float32, 384, 384)}},
		{op: "Gemm", in: []*graph.Tensor{zeros(graph.Float64, 384, 384), zeros(graph.Float64, 384, 384)}},
		{op: "Conv", in: []*graph.Tensor{zeros(graph.Float32, 1, 32, 64, 64), zeros(graph.Float32, 32, 32, 3, 3)}, attrs: map[string]*graph.Attribute{"pads": attr("pads", 1, 1, 1, 1)}},
		{op: "Conv", in: []*graph.Tensor{zeros(graph.Float64, 1, 16, 64, 64), zeros(graph.Float64, 16, 16, 3, 3)}},
		{op: "ConvTranspose", in: []*graph.Tensor{zeros(graph.Float32, 1, 64, 64, 64), zeros(graph.Float32, 64, 64, 3, 3)}},
		{op: "MaxPool", in: []*graph.Tensor{zeros(graph.Float32, 16, 16, 64, 64)}, attrs: map[string]*graph.Attribute{"kernel_shape": attr("kernel_shape", 5, 5)}},
		{op: "ReduceSum", in: []*graph.Tensor{zeros(graph.Float32, 1<<21), ints(0)}},
		{op: "ReduceMax", in: []*graph.Tensor{zeros(graph.Int32, 1<<21)}},
		{op: "Exp", in: []*graph.Tensor{zeros(graph.Float32, 1<<21)}},
		{op: "Add", in: []*graph.Tensor{zeros(graph.Float32, 1024, 2048), zeros(graph.Float32, 2048)}},
		{op: "Where", in: []*graph.Tensor{zeros(graph.Bool, 1<<21), zeros(graph.Float32, 1<<21), zeros(graph.Float32, 1)}},
		{op: "Expand", in: []*graph.Tensor{zeros(graph.Float32, 1), ints(1 << 21)}},
		{op: "Transpose", in: []*graph.Tensor{zeros(graph.Float32, 1024, 2048)}},
	}
	for _, c := range cases {
		s, ok := kernels.Lookup("", c.op)
		if !ok {
			t.Fatalf("no kernel %s", c.op)
		}
		n := &graph.Node{Name: "big", OpType: c.op, Attrs: c.attrs, Outputs: []string{"y"}}
		run := func(ctx context.Context) (time.Duration, error) {
			start := time.Now()
			_, err := s.Kernel(&kernels.Context{Context: ctx, Opset: 17}, n, c.in)
			return time.Since(start), err
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		// the fastest of three of each: the machine may be shared
		full, stopped := time.Duration(1<<62), time.Duration(1<<62)
		for try := 0; try < 3; try++ {
			d, err := run(context.Background())
			if err != nil {
				t.Fatalf("%s %v: %v", c.op, c.in[0].Shape, err)
			}
			full = min(full, d)
			d, err = run(ctx)
			if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), `"big"`) {
				t.Fatalf("%s %v with a cancelled context: got %v, want Canceled naming the node", c.op, c.in[0].Shape, err)
			}
			stopped = min(stopped, d)
		}
		// only meaningful when the whole call takes long enough to measure
		if full > 20*time.Millisecond && stopped > full/2 {
			t.Errorf("%s %v: cancelled call took %v, the whole one %v (the context is not checked inside)", c.op, c.in[0].Shape, stopped, full)
		}
		t.Logf("%-13s %v: %v whole, %v cancelled", c.op, c.in[0].Shape, full.Round(time.Microsecond), stopped.Round(time.Microsecond))
	}
}
