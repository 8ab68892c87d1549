package hal_test

import (
	"fmt"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

// TestTypeOfIndexed: TypeOf answers as a search of Inputs, Outputs and
// ValueInfo in that order would (the first declaration wins), on graphs
// large enough to use its index, and follows a graph that grows.
func TestTypeOfIndexed(t *testing.T) {
	g := &graph.Graph{Initializers: map[string]*graph.Tensor{}}
	for i := range 40 {
		g.ValueInfo = append(g.ValueInfo, graph.ValueInfo{Name: fmt.Sprintf("v%d", i), Type: graph.ValueType{DType: graph.Float32, Shape: graph.StaticShape(i)}})
	}
	g.Inputs = []graph.ValueInfo{{Name: "v3", Type: graph.ValueType{DType: graph.Int64}}}
	sg := &hal.Subgraph{Graph: g}
	if ty, ok := sg.TypeOf("v3"); !ok || ty.DType != graph.Int64 {
		t.Fatalf("v3: %v %v, want the input's int64", ty, ok)
	}
	if ty, ok := sg.TypeOf("v39"); !ok || ty.Shape[0].Value != 39 {
		t.Fatalf("v39: %v %v", ty, ok)
	}
	if _, ok := sg.TypeOf("nope"); ok {
		t.Fatal("unknown name found")
	}
	g.ValueInfo = append(g.ValueInfo, graph.ValueInfo{Name: "late", Type: graph.ValueType{DType: graph.Uint8}})
	if ty, ok := sg.TypeOf("late"); !ok || ty.DType != graph.Uint8 {
		t.Fatalf("a value added after the first lookup: %v %v", ty, ok)
	}
}

// BenchmarkTypeOf looks up every value of a 20,000-value subgraph (the
// whole-graph subgraph backends see in Supports): linear in all, where a
// search per lookup was quadratic.
func BenchmarkTypeOf(b *testing.B) {
	g := &graph.Graph{Initializers: map[string]*graph.Tensor{}}
	names := make([]string, 20000)
	for i := range names {
		names[i] = fmt.Sprintf("v%d", i)
		g.ValueInfo = append(g.ValueInfo, graph.ValueInfo{Name: names[i], Type: graph.ValueType{DType: graph.Float32}})
	}
	for b.Loop() {
		sg := &hal.Subgraph{Graph: g}
		for _, n := range names {
			if _, ok := sg.TypeOf(n); !ok {
				b.Fatal(n)
			}
		}
	}
}
