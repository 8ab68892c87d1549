package cabi

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

// Finding 3 for the C ABI: what a delegate's infer_outputs claims for an
// output (dtype, rank, dims, byte size) is checked against the host's
// types — including a symbolic dim the inputs bind — and bounded, before
// the host allocates anything. Each lie below fails the call with a clear
// error and without allocating the claimed size.
func TestInferredOutputsCheckedBeforeAllocation(t *testing.T) {
	ctx := context.Background()
	lib := brokenLib(t, "INFER")
	b, err := Open(ctx, lib, Options{MaxOutputBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	compile := func(out graph.ValueType) hal.Executable {
		g := &graph.Graph{
			Name:    "relu",
			Inputs:  []graph.ValueInfo{{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.Shape{{Param: "N"}}}}},
			Outputs: []graph.ValueInfo{{Name: "y", Type: out}},
			Nodes:   []*graph.Node{{OpType: "Relu", Inputs: []string{"x"}, Outputs: []string{"y"}}},
		}
		exe, err := b.Compile(ctx, &hal.Subgraph{Graph: g, Opsets: []graph.Opset{{Version: 17}}}, hal.CompileOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = exe.Release() })
		return exe
	}
	// the host knows y is float32 [N]; N is bound by x at run time
	typed := compile(graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.Shape{{Param: "N"}}})
	// the host knows nothing of y: only the byte bound holds
	untyped := compile(graph.ValueType{Kind: "tensor"})
	x := graph.MustFromSlice([]int{4}, []float32{-1, 0, 1, 2})
	cases := []struct {
		exe  hal.Executable
		mode string
		code error
		want string
	}{
		{typed, "huge", hal.ErrInternal, "dim 0 must be 4"},
		{typed, "negative", hal.ErrInternal, "dim 0 = -5"},
		{typed, "dtype", hal.ErrInternal, "dtype int64, the host inferred float32"},
		{typed, "rank", hal.ErrInternal, "the host inferred [N]"},
		{typed, "badrank", hal.ErrInternal, "rank 1000"},
		{typed, "overflow", hal.ErrInternal, "the host inferred [N]"},
		{untyped, "huge", hal.ErrResourceExhausted, "over the 1048576 bytes the host allocates on a delegate's word"},
		{untyped, "overflow", hal.ErrResourceExhausted, "over the 1048576 bytes"},
		{untyped, "negative", hal.ErrInternal, "dim 0 = -5"},
		{untyped, "badrank", hal.ErrInternal, "rank 1000"},
		// an honest claim passes the checks; this delegate's execute then fails
		{typed, "none", hal.ErrResourceExhausted, "device queue 3 is out of memory"},
		{untyped, "none", hal.ErrResourceExhausted, "device queue 3 is out of memory"},
	}
	for _, c := range cases {
		t.Setenv("SWITCHYARD_TEST_INFER", c.mode)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err := c.exe.Execute(ctx, []*graph.Tensor{x}, []*graph.Tensor{{}})
		runtime.ReadMemStats(&after)
		if !errors.Is(err, c.code) || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s output, claim %s: %v; want %v mentioning %q", map[bool]string{true: "typed", false: "untyped"}[c.exe == typed], c.mode, err, c.code, c.want)
		}
		if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
			t.Errorf("claim %s: the host allocated %d bytes", c.mode, d)
		}
	}
}

// checkInferred never panics, never accepts a dim the host knows
// otherwise, and never returns a size over its bound or one that does not
// match the shape.
func FuzzCheckInferred(f *testing.F) {
	f.Add(int32(1), int32(1), int64(4), int64(0), int64(0), uint8(1), int64(1<<20))
	f.Add(int32(1), int32(3), int64(1<<40), int64(1<<40), int64(1<<40), uint8(0), int64(8<<30))
	f.Add(int32(7), int32(2), int64(3), int64(-1), int64(0), uint8(2), int64(100))
	f.Add(int32(8), int32(1), int64(1), int64(0), int64(0), uint8(0), int64(0))
	f.Add(int32(16), int32(33), int64(0), int64(0), int64(0), uint8(3), int64(-5))
	f.Fuzz(func(t *testing.T, dtype, rank int32, d0, d1, d2 int64, shapeKind uint8, limit int64) {
		dims := make([]int64, maxRank)
		dims[0], dims[1], dims[2] = d0, d1, d2
		for k := 3; k < maxRank; k++ {
			dims[k] = 1
		}
		var want graph.ValueType
		bound := map[string]int64{"N": 4}
		switch shapeKind % 4 {
		case 1:
			want = graph.ValueType{DType: graph.Float32, Shape: graph.Shape{{Param: "N"}}}
		case 2:
			want = graph.ValueType{DType: graph.Int64, Shape: graph.Shape{{Value: 3}, {Param: "M"}}}
		case 3:
			want = graph.ValueType{Shape: graph.Shape{{Param: "N"}, {Value: 2}, {Param: "N"}}}
		}
		dt, shape, n, err := checkInferred(0, dtype, rank, dims, want, bound, limit)
		if err != nil {
			if !errors.Is(err, hal.ErrInternal) && !errors.Is(err, hal.ErrResourceExhausted) {
				t.Fatalf("error code %v: %v", hal.CodeOf(err), err)
			}
			return
		}
		if n < 0 || n > limit {
			t.Fatalf("accepted %d bytes over limit %d", n, limit)
		}
		if want.DType != graph.Undefined && dt != want.DType {
			t.Fatalf("accepted dtype %v, host said %v", dt, want.DType)
		}
		if want.Shape != nil {
			if len(shape) != len(want.Shape) {
				t.Fatalf("accepted rank %d, host said %v", len(shape), want.Shape)
			}
			for k, d := range want.Shape {
				if (d.Static() && int64(shape[k]) != d.Value) || (d.Param == "N" && shape[k] != 4) {
					t.Fatalf("accepted shape %v, host said %v with N=4", shape, want.Shape)
				}
			}
		}
		elems := int64(1)
		for _, d := range shape {
			if d < 0 {
				t.Fatalf("accepted negative dim in %v", shape)
			}
			elems *= int64(d)
		}
		if elems*int64(dt.Size()) != n {
			t.Fatalf("shape %v of %v is not %d bytes", shape, dt, n)
		}
		if _, err := graph.CheckAlloc(dt, shape); err != nil && n <= graph.MaxTensorBytes {
			t.Fatalf("accepted an unallocatable shape %v: %v", shape, err)
		}
	})
}
