package exec_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/switchyard-hal/switchyard/core/exec"
	"github.com/switchyard-hal/switchyard/core/graph"
	_ "github.com/switchyard-hal/switchyard/core/kernels/all"
)

// moveGraph: shape arithmetic (Shape, Gather, Concat) feeding a Reshape,
// a Slice, a Transpose and a Concat of x with a slice of itself, and a
// Split: every data-movement kind a move plan stands for.
func moveGraph(xShape graph.Shape) *graph.Graph {
	i64 := func(v ...int64) *graph.Tensor { return graph.MustFromSlice([]int{len(v)}, v) }
	return &graph.Graph{
		Name:    "moves",
		Inputs:  []graph.ValueInfo{{Name: "x", Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: xShape}}},
		Outputs: []graph.ValueInfo{{Name: "r"}, {Name: "c"}, {Name: "s0"}, {Name: "s1"}},
		Initializers: map[string]*graph.Tensor{
			"idx": i64(0, 1), "minus1": i64(-1), "starts": i64(1), "ends": i64(3), "axes": i64(2), "split": i64(1, 1),
		},
		Nodes: []*graph.Node{
			{Name: "shape", OpType: "Shape", Inputs: []string{"x"}, Outputs: []string{"sh"}},
			{Name: "lead", OpType: "Gather", Inputs: []string{"sh", "idx"}, Outputs: []string{"ld"}},
			{Name: "target", OpType: "Concat", Inputs: []string{"ld", "minus1"}, Outputs: []string{"tg"}, Attrs: map[string]*graph.Attribute{"axis": {Name: "axis", Type: graph.AttrInt, I: 0}}},
			{Name: "reshape", OpType: "Reshape", Inputs: []string{"x", "tg"}, Outputs: []string{"rs"}},
			{Name: "transpose", OpType: "Transpose", Inputs: []string{"rs"}, Outputs: []string{"r"}, Attrs: map[string]*graph.Attribute{"perm": {Name: "perm", Type: graph.AttrInts, Ints: []int64{1, 0, 2}}}},
			{Name: "slice", OpType: "Slice", Inputs: []string{"x", "starts", "ends", "axes"}, Outputs: []string{"sl"}},
			{Name: "concat", OpType: "Concat", Inputs: []string{"x", "sl"}, Outputs: []string{"c"}, Attrs: map[string]*graph.Attribute{"axis": {Name: "axis", Type: graph.AttrInt, I: 2}}},
			{Name: "split", OpType: "Split", Inputs: []string{"sl", "split"}, Outputs: []string{"s0", "s1"}, Attrs: map[string]*graph.Attribute{"axis": {Name: "axis", Type: graph.AttrInt, I: 2}}},
		},
	}
}

// TestMovePlans: with the inferred types (Options.Types) the program
// folds the shape arithmetic and runs the data movement as planned
// copies; its outputs equal the reference kernels' for static shapes,
// for symbolic ones (the plans built at run time once a shape repeats),
// and for a run whose shapes differ from the plan's (the reference
// kernel again). With static shapes and caller tensors for the outputs a
// run allocates nothing.
func TestMovePlans(t *testing.T) {
	ctx := context.Background()
	opsets := []graph.Opset{{Version: 17}}
	x := func(a, b, c int) *graph.Tensor {
		v := make([]float32, a*b*c)
		for i := range v {
			v[i] = float32(i)
		}
		return graph.MustFromSlice([]int{a, b, c}, v)
	}
	ref, err := exec.Compile(moveGraph(graph.Shape{{Param: "a"}, {Param: "b"}, {Param: "c"}}), exec.Options{Opsets: opsets, NoFold: true})
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, p *exec.Program, in *graph.Tensor) {
		t.Helper()
		want, err := ref.Run(ctx, map[string]*graph.Tensor{"x": in})
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Run(ctx, map[string]*graph.Tensor{"x": in})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for k, w := range want {
			g := got[k]
			if !graph.SameShape(g.Shape, w.Shape) || !slices.Equal(g.Data.([]float32), w.Data.([]float32)) {
				t.Fatalf("%s: output %s = %v %v, want %v %v", name, k, g.Shape, g.Data, w.Shape, w.Data)
			}
		}
	}
	static := moveGraph(graph.StaticShape(3, 2, 4))
	types := map[string]graph.ValueType{"x": static.Inputs[0].Type}
	for k, v := range static.Initializers {
		types[k] = graph.ValueType{Kind: "tensor", DType: v.DType, Shape: graph.StaticShape(v.Shape...)}
	}
	// the inferred types of the data-movement inputs
	types["rs"] = graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(3, 2, 4)}
	types["sl"] = graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(3, 2, 2)}
	p, err := exec.Compile(static, exec.Options{Opsets: opsets, Types: types})
	if err != nil {
		t.Fatal(err)
	}
	check("static", p, x(3, 2, 4))
	outs := map[string]*graph.Tensor{}
	first, _ := p.Run(ctx, map[string]*graph.Tensor{"x": x(3, 2, 4)})
	for k, v := range first {
		outs[k] = v.Clone()
	}
	in := map[string]*graph.Tensor{"x": x(3, 2, 4)}
	if a := testing.AllocsPerRun(20, func() {
		if _, err := p.RunWith(ctx, in, exec.RunOptions{Into: outs, Drop: true}, nil); err != nil {
			t.Fatal(err)
		}
	}); a != 0 {
		t.Errorf("static shapes: %v allocations per run, want 0", a)
	}

	dyn := moveGraph(graph.Shape{{Param: "a"}, {Param: "b"}, {Param: "c"}})
	dtypes := map[string]graph.ValueType{"x": dyn.Inputs[0].Type}
	q, err := exec.Compile(dyn, exec.Options{Opsets: opsets, Types: dtypes})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		check("symbolic", q, x(3, 2, 4)) // the plan is built at the second run
		check("symbolic, another shape", q, x(2, 5, 3+i%2))
	}
}

// TestAlternatingShapes: a program fed two shapes in turn (a decoder's
// one-token steps and the few-token steps that verify drafted tokens)
// keeps both shapes' move plans and arenas: once each has run a few
// times, a run allocates nothing (caller tensors taking the outputs), as
// a run of one shape does; the outputs stay the first runs'.
func TestAlternatingShapes(t *testing.T) {
	ctx := context.Background()
	x := func(a, b, c int) *graph.Tensor {
		v := make([]float32, a*b*c)
		for i := range v {
			v[i] = float32(i)
		}
		return graph.MustFromSlice([]int{a, b, c}, v)
	}
	dyn := moveGraph(graph.Shape{{Param: "a"}, {Param: "b"}, {Param: "c"}})
	p, err := exec.Compile(dyn, exec.Options{Opsets: []graph.Opset{{Version: 17}}, Types: map[string]graph.ValueType{"x": dyn.Inputs[0].Type}})
	if err != nil {
		t.Fatal(err)
	}
	ins := []map[string]*graph.Tensor{{"x": x(3, 2, 4)}, {"x": x(3, 2, 5)}}
	var want, outs [2]map[string]*graph.Tensor
	for i, in := range ins {
		first, err := p.Run(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		want[i], outs[i] = map[string]*graph.Tensor{}, map[string]*graph.Tensor{}
		for k, v := range first {
			want[i][k], outs[i][k] = v.Clone(), v.Clone()
		}
	}
	run := func() {
		for i, in := range ins {
			if _, err := p.RunWith(ctx, in, exec.RunOptions{Into: outs[i], Drop: true}, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	for range 3 {
		run()
	}
	if a := testing.AllocsPerRun(20, run); a != 0 {
		t.Errorf("two shapes in turn: %v allocations per pair of runs, want 0", a)
	}
	for i := range ins {
		for k, w := range want[i] {
			if g := outs[i][k]; !graph.SameShape(g.Shape, w.Shape) || !slices.Equal(g.Data.([]float32), w.Data.([]float32)) {
				t.Errorf("shape %d: output %s = %v %v, want %v %v", i, k, g.Shape, g.Data, w.Shape, w.Data)
			}
		}
	}
}

// TestGrowingShapes: a program fed one more element each run (a
// decoder's growing cache) reuses its buffers across the shape
// signatures: new buffers only when a size class is passed, not two per
// run as with exact sizes.
func TestGrowingShapes(t *testing.T) {
	vt := graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.Shape{{Param: "n"}}}
	g := &graph.Graph{
		Name:    "grow",
		Inputs:  []graph.ValueInfo{{Name: "x", Type: vt}},
		Outputs: []graph.ValueInfo{{Name: "y", Type: vt}},
		Nodes: []*graph.Node{
			{Name: "neg", OpType: "Neg", Inputs: []string{"x"}, Outputs: []string{"t"}},
			{Name: "relu", OpType: "Relu", Inputs: []string{"t"}, Outputs: []string{"u"}},
			{Name: "neg2", OpType: "Neg", Inputs: []string{"u"}, Outputs: []string{"y"}},
		},
	}
	p, err := exec.Compile(g, exec.Options{Opsets: []graph.Opset{{Version: 17}}})
	if err != nil {
		t.Fatal(err)
	}
	fresh := 0
	for n := 100; n < 140; n++ {
		x := graph.MustFromSlice([]int{n}, make([]float32, n))
		x.Data.([]float32)[n-1] = -2
		out, st, err := p.RunWithStats(context.Background(), map[string]*graph.Tensor{"x": x}, exec.RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if y := out["y"].Data.([]float32); len(y) != n || y[n-1] != -2 {
			t.Fatalf("n=%d: y has %d elements, last %v", n, len(y), y[len(y)-1])
		}
		if n > 101 {
			fresh += st.Allocations
		}
	}
	// each run hands its output to the caller (one new buffer a run);
	// the intermediates' buffers are reused but where a class is passed
	if fresh-38 > 4 {
		t.Errorf("%d new buffers over 38 growing runs, want at most 38+4 (size classes)", fresh)
	}
}

// TestMovePlansConcurrent: concurrent runs of shapes that alternate
// (each call may find another run's plan) get the reference results.
func TestMovePlansConcurrent(t *testing.T) {
	ctx := context.Background()
	opsets := []graph.Opset{{Version: 17}}
	dyn := moveGraph(graph.Shape{{Param: "a"}, {Param: "b"}, {Param: "c"}})
	ref, err := exec.Compile(dyn, exec.Options{Opsets: opsets, NoFold: true})
	if err != nil {
		t.Fatal(err)
	}
	q, err := exec.Compile(dyn, exec.Options{Opsets: opsets, Types: map[string]graph.ValueType{"x": dyn.Inputs[0].Type}})
	if err != nil {
		t.Fatal(err)
	}
	inputs := []*graph.Tensor{}
	for _, s := range [][]int{{3, 2, 4}, {2, 5, 3}, {1, 1, 3}} {
		n := s[0] * s[1] * s[2]
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(i) - 3
		}
		inputs = append(inputs, graph.MustFromSlice(s, v))
	}
	want := make([]map[string]*graph.Tensor, len(inputs))
	for i, x := range inputs {
		if want[i], err = ref.Run(ctx, map[string]*graph.Tensor{"x": x}); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, 4)
	for w := range 4 {
		go func() {
			for k := range 60 {
				i := (w + k/3) % len(inputs)
				got, err := q.Run(ctx, map[string]*graph.Tensor{"x": inputs[i]})
				if err == nil {
					for name, wt := range want[i] {
						if g := got[name]; !graph.SameShape(g.Shape, wt.Shape) || !slices.Equal(g.Data.([]float32), wt.Data.([]float32)) {
							err = fmt.Errorf("input %d, output %s = %v %v, want %v %v", i, name, g.Shape, g.Data, wt.Shape, wt.Data)
							break
						}
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
