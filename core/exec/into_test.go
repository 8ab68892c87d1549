package exec_test

import (
	"context"
	"testing"

	"github.com/switchyard-hal/switchyard/core/exec"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func f32(shape []int, v ...float32) *graph.Tensor { return graph.MustFromSlice(shape, v) }

// TestRunIntoInPlace: a Relu producing the graph output writes the
// caller's tensor itself (the kernel's New hands it out): the result is
// the caller's tensor, nothing is copied, and an intermediate of the same
// shape is not given the caller's tensor.
func TestRunIntoInPlace(t *testing.T) {
	vt := graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(4)}
	g := &graph.Graph{
		Name:    "neg-relu",
		Inputs:  []graph.ValueInfo{{Name: "x", Type: vt}},
		Outputs: []graph.ValueInfo{{Name: "y", Type: vt}},
		Nodes: []*graph.Node{
			{Name: "neg", OpType: "Neg", Inputs: []string{"x"}, Outputs: []string{"t"}},
			{Name: "relu", OpType: "Relu", Inputs: []string{"t"}, Outputs: []string{"y"}},
		},
	}
	p, err := exec.Compile(g, exec.Options{Opsets: []graph.Opset{{Version: 17}}})
	if err != nil {
		t.Fatal(err)
	}
	dst := f32([]int{4}, 9, 9, 9, 9)
	for range 3 {
		out, st, err := p.RunWithStats(context.Background(), map[string]*graph.Tensor{"x": f32([]int{4}, -1, 2, -3, 4)}, exec.RunOptions{Into: map[string]*graph.Tensor{"y": dst}})
		if err != nil {
			t.Fatal(err)
		}
		if out["y"] != dst {
			t.Fatalf("output is not the caller's tensor")
		}
		if st.InPlace != 1 || st.Copied != 0 {
			t.Errorf("InPlace %d, Copied %d; want 1, 0", st.InPlace, st.Copied)
		}
		if got := dst.Data.([]float32); got[0] != 1 || got[1] != 0 || got[2] != 3 || got[3] != 0 {
			t.Fatalf("y = %v, want [1 0 3 0]", got)
		}
	}
	// a caller tensor aliasing an input is not bound: copied after the run
	x := f32([]int{4}, -1, 2, -3, 4)
	_, st, err := p.RunWithStats(context.Background(), map[string]*graph.Tensor{"x": x}, exec.RunOptions{Into: map[string]*graph.Tensor{"y": x}})
	if err != nil {
		t.Fatal(err)
	}
	if st.InPlace != 0 || st.Copied != 1 {
		t.Errorf("aliasing input: InPlace %d, Copied %d; want 0, 1", st.InPlace, st.Copied)
	}
	if got := x.Data.([]float32); got[0] != 1 || got[1] != 0 {
		t.Fatalf("aliasing input: y = %v", got)
	}
}

// TestRunIntoSwappedOutputs: a kernel allocating its two same-shaped
// outputs in the opposite order computes output 1 in the caller's tensor
// of output 0 and the other way round: both caller tensors still end up
// with the right values (without unbinding, the copy into the first
// would overwrite the second's source).
func TestRunIntoSwappedOutputs(t *testing.T) {
	vt := graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(2)}
	node := &graph.Node{Name: "swap", OpType: "Swap", Inputs: []string{"x"}, Outputs: []string{"a", "b"}}
	g := &graph.Graph{
		Name:    "swap",
		Inputs:  []graph.ValueInfo{{Name: "x", Type: vt}},
		Outputs: []graph.ValueInfo{{Name: "a", Type: vt}, {Name: "b", Type: vt}},
		Nodes:   []*graph.Node{node},
	}
	swap := func(ctx *kernels.Context, _ *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		first, _ := ctx.New(graph.Float32, []int{2})  // gets a's tensor
		second, _ := ctx.New(graph.Float32, []int{2}) // gets b's tensor
		scratch, _ := ctx.New(graph.Float32, []int{2})
		x := in[0].Data.([]float32)
		copy(scratch.Data.([]float32), []float32{-7, -7})
		copy(second.Data.([]float32), []float32{x[0] * 10, x[1] * 10}) // a's values
		copy(first.Data.([]float32), []float32{x[0] + 1, x[1] + 1})    // b's values
		return []*graph.Tensor{second, first}, nil                     // swapped
	}
	p, err := exec.Compile(g, exec.Options{Opsets: []graph.Opset{{Version: 17}}, Kernels: map[*graph.Node]kernels.Func{node: swap}})
	if err != nil {
		t.Fatal(err)
	}
	da, db := f32([]int{2}, 0, 0), f32([]int{2}, 0, 0)
	_, st, err := p.RunWithStats(context.Background(), map[string]*graph.Tensor{"x": f32([]int{2}, 1, 2)}, exec.RunOptions{Into: map[string]*graph.Tensor{"a": da, "b": db}})
	if err != nil {
		t.Fatal(err)
	}
	if got := da.Data.([]float32); got[0] != 10 || got[1] != 20 {
		t.Errorf("a = %v, want [10 20]", got)
	}
	if got := db.Data.([]float32); got[0] != 2 || got[1] != 3 {
		t.Errorf("b = %v, want [2 3]", got)
	}
	if st.InPlace+st.Copied != 2 {
		t.Errorf("InPlace %d + Copied %d, want 2", st.InPlace, st.Copied)
	}
}

// TestRunBoundInPlace: RunBound binds caller outputs with data to the
// producing node like RunInto (the first node's New hands out the
// caller's tensor), and an output without data is handed the result.
func TestRunBoundInPlace(t *testing.T) {
	vt := graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(3)}
	first := &graph.Node{Name: "double", OpType: "Double", Inputs: []string{"x"}, Outputs: []string{"y"}}
	g := &graph.Graph{
		Name:    "double-neg",
		Inputs:  []graph.ValueInfo{{Name: "x", Type: vt}},
		Outputs: []graph.ValueInfo{{Name: "y", Type: vt}, {Name: "z", Type: vt}},
		Nodes:   []*graph.Node{first, {Name: "neg", OpType: "Neg", Inputs: []string{"y"}, Outputs: []string{"z"}}},
	}
	var got *graph.Tensor // what the kernel's New returned
	double := func(ctx *kernels.Context, _ *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		o, err := ctx.New(graph.Float32, []int{3})
		if err != nil {
			return nil, err
		}
		for i, v := range in[0].Data.([]float32) {
			o.Data.([]float32)[i] = 2 * v
		}
		got = o
		return []*graph.Tensor{o}, nil
	}
	p, err := exec.Compile(g, exec.Options{Opsets: []graph.Opset{{Version: 17}}, Kernels: map[*graph.Node]kernels.Func{first: double}})
	if err != nil {
		t.Fatal(err)
	}
	dst := f32([]int{3}, 9, 9, 9)
	for range 2 {
		z := &graph.Tensor{}
		if err := p.RunBound(context.Background(), []*graph.Tensor{f32([]int{3}, -1, 2, -3)}, []*graph.Tensor{dst, z}); err != nil {
			t.Fatal(err)
		}
		if got != dst {
			t.Fatalf("the kernel did not get the caller's tensor")
		}
		if y := dst.Data.([]float32); y[0] != -2 || y[1] != 4 || y[2] != -6 {
			t.Fatalf("y = %v, want [-2 4 -6]", y)
		}
		if v, ok := z.Data.([]float32); !ok || v[0] != 2 || v[1] != -4 || v[2] != 6 {
			t.Fatalf("z = %v, want [2 -4 6]", z.Data)
		}
	}
	// without a caller tensor the kernel gets an arena buffer
	if err := p.RunBound(context.Background(), []*graph.Tensor{f32([]int{3}, 1, 1, 1)}, []*graph.Tensor{nil, &graph.Tensor{}}); err != nil {
		t.Fatal(err)
	}
	if got == dst {
		t.Fatalf("unbound run handed out the previous run's caller tensor")
	}
}
