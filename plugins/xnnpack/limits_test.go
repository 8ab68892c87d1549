package xnnpack_test

import (
	"context"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/plugins/xnnpack"
)

func f32Input(name string, dims ...graph.Dim) graph.ValueInfo {
	return graph.ValueInfo{Name: name, Type: graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.Shape(dims)}}
}

func st(v int64) graph.Dim   { return graph.Dim{Value: v} }
func sym(p string) graph.Dim { return graph.Dim{Param: p} }
func opset17() []graph.Opset { return []graph.Opset{{Version: 17}} }

// A tensor over graph.MaxTensorBytes is refused with ResourceExhausted
// wrapping graph.ErrTooLarge before XNNPACK or malloc sees its size: at
// Compile for static shapes (a 10¹²-element input used to reach
// malloc(4 TB), and an element count past int64 wrapped around), and at
// Execute for shapes known only then (two 4 MB inputs broadcast to a
// 10¹²-element sum).
func TestHugeTensorsRefusedBeforeAllocation(t *testing.T) {
	b := xnnpack.OpenForTest(t, xnnpack.Options{Threads: 1})
	ctx := context.Background()
	tooLarge := func(t *testing.T, err error, shape string) {
		t.Helper()
		if !errors.Is(err, hal.ErrResourceExhausted) || !errors.Is(err, graph.ErrTooLarge) || !strings.Contains(err.Error(), shape) {
			t.Fatalf("got %v, want ResourceExhausted wrapping graph.ErrTooLarge naming the shape %s", err, shape)
		}
		if strings.Contains(err.Error(), "malloc") {
			t.Fatalf("the size reached malloc: %v", err)
		}
	}
	for _, c := range []struct {
		dims  []graph.Dim
		shape string
	}{
		{[]graph.Dim{st(1_000_000), st(1_000_000)}, "[1000000 1000000]"},
		{[]graph.Dim{st(1 << 32), st(1 << 32), st(1 << 32)}, "[4294967296 4294967296 4294967296]"},
	} {
		t.Run("compile"+c.shape, func(t *testing.T) {
			g := &graph.Graph{Name: "huge", Inputs: []graph.ValueInfo{f32Input("x", c.dims...)}, Outputs: []graph.ValueInfo{{Name: "y"}},
				Nodes: []*graph.Node{node("Relu", []string{"x"}, []string{"y"})}}
			exe, err := b.Compile(ctx, &hal.Subgraph{Graph: g, Opsets: opset17()}, hal.CompileOptions{})
			if err == nil {
				_ = exe.Release()
			}
			tooLarge(t, err, c.shape)
		})
	}
	t.Run("execute", func(t *testing.T) {
		g := &graph.Graph{Name: "broadcast", Inputs: []graph.ValueInfo{f32Input("a", sym("N"), st(1)), f32Input("b", st(1), sym("M"))},
			Outputs: []graph.ValueInfo{{Name: "y"}},
			Nodes:   []*graph.Node{node("Add", []string{"a", "b"}, []string{"y"})}}
		exe, err := b.Compile(ctx, &hal.Subgraph{Graph: g, Opsets: opset17()}, hal.CompileOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer exe.Release()
		const n = 1_000_000
		out := []*graph.Tensor{{}}
		err = exe.Execute(ctx, []*graph.Tensor{graph.MustFromSlice([]int{n, 1}, make([]float32, n)), graph.MustFromSlice([]int{1, n}, make([]float32, n))}, out)
		tooLarge(t, err, "[1000000 1000000]")
		if out[0].Data != nil {
			t.Fatalf("output allocated: %v", out[0].Shape)
		}
		// the executable still runs shapes it can take
		out = []*graph.Tensor{{}}
		if err := exe.Execute(ctx, []*graph.Tensor{graph.MustFromSlice([]int{2, 1}, []float32{1, 2}), graph.MustFromSlice([]int{1, 3}, []float32{10, 20, 30})}, out); err != nil {
			t.Fatal(err)
		}
		if got := graph.Data[float32](out[0]); len(got) != 6 || got[0] != 11 || got[5] != 32 {
			t.Fatalf("2×3 broadcast sum %v", got)
		}
	})
}

// Input shapes known only at run time that this XNNPACK cannot take (an
// empty dimension) are declined with hal.ErrDeclined naming the shapes,
// so that the runtime runs them on cpu visibly; the executable used to run
// them on the reference kernels it carried inside, logging only. A
// declined shape is declined again (remembered), and other shapes still
// run on XNNPACK.
func TestRunTimeDecline(t *testing.T) {
	b := xnnpack.OpenForTest(t, xnnpack.Options{Threads: 1})
	rng := rand.New(rand.NewPCG(5, 6))
	g := &graph.Graph{Name: "dyn", Initializers: map[string]*graph.Tensor{"w": randT(rng, 4, 3, 3, 3)},
		Inputs:  []graph.ValueInfo{f32Input("x", sym("N"), st(3), sym("H"), sym("W"))},
		Outputs: []graph.ValueInfo{{Name: "y"}},
		Nodes:   []*graph.Node{node("Conv", []string{"x", "w"}, []string{"c"}, ints("pads", 1, 1, 1, 1)), node("Relu", []string{"c"}, []string{"y"})}}
	ctx := context.Background()
	dev, err := hal.NewDevice(b, hal.LoadLibrary)
	if err != nil {
		t.Fatal(err)
	}
	exe, err := dev.Compile(ctx, &hal.Subgraph{Graph: g, Opsets: opset17()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Release()
	for rep := 0; rep < 2; rep++ {
		for _, s := range [][]int{{0, 3, 8, 8}, {1, 3, 0, 5}} {
			out := []*graph.Tensor{{}}
			err := exe.Execute(ctx, []*graph.Tensor{randT(rng, s...)}, out)
			if !errors.Is(err, hal.ErrDeclined) || !strings.Contains(err.Error(), "xnnpack: declines input shapes x"+shapeStr(s)) || !strings.Contains(err.Error(), "empty dimension") {
				t.Fatalf("run %d, shape %v: %v, want ErrDeclined naming x%v and the empty dimension", rep, s, err, shapeStr(s))
			}
			if out[0].Data != nil {
				t.Fatalf("declined call wrote its output %v", out[0].Shape)
			}
		}
	}
	out := []*graph.Tensor{{}}
	if err := exe.Execute(ctx, []*graph.Tensor{randT(rng, 1, 3, 6, 5)}, out); err != nil || !graph.SameShape(out[0].Shape, []int{1, 4, 6, 5}) {
		t.Fatalf("a shape XNNPACK takes, after declines: %v %v", err, out[0].Shape)
	}
}

func shapeStr(s []int) string { return fmt.Sprint(s) }

// The executable carries no hidden reference kernels any more: the
// package imports neither the cpu backend nor the shared executor.
func TestNoReferenceFallbackImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range af.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if p == "github.com/switchyard-hal/switchyard/plugins/cpu" || p == "github.com/switchyard-hal/switchyard/core/exec" {
				t.Errorf("%s imports %s (the reference fallback is the runtime's job, through ErrDeclined)", f, p)
			}
		}
	}
}
