package exec_test

import (
	"context"
	"testing"

	"github.com/switchyard-hal/switchyard/core/exec"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/core/ops"
)

// appendGraph is a cache buffer c [4] and one node writing x [1] at
// position pos of it: c' = c with c[pos] = x. With reader, a second node
// reads c too.
func appendGraph(reader bool) (*graph.Graph, *graph.Node) {
	buf := graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(4)}
	one := graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(1)}
	pos := graph.ValueType{Kind: "tensor", DType: graph.Int64, Shape: graph.StaticShape(1)}
	app := &graph.Node{Name: "append", OpType: "Append", Inputs: []string{"c", "x", "pos"}, Outputs: []string{"c2"}}
	g := &graph.Graph{
		Name:    "append",
		Inputs:  []graph.ValueInfo{{Name: "x", Type: one}, {Name: "c", Type: buf}, {Name: "pos", Type: pos}},
		Outputs: []graph.ValueInfo{{Name: "c2", Type: buf}},
		Nodes:   []*graph.Node{app},
	}
	if reader {
		g.Nodes = append(g.Nodes, &graph.Node{Name: "neg", OpType: "Neg", Inputs: []string{"c"}, Outputs: []string{"nc"}})
		g.Outputs = append(g.Outputs, graph.ValueInfo{Name: "nc", Type: buf})
	}
	return g, app
}

// appendKernel is Append's kernel: given its input's own memory as the
// output (exec.Into) it writes the one element; otherwise it copies.
// inPlace counts the former.
func appendKernel(inPlace *int) kernels.Func {
	return func(ctx *kernels.Context, _ *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		c, x, pos := in[0], in[1], int(in[2].Data.([]int64)[0])
		out := exec.Into(ctx, 0)
		if out != nil && &out.Data.([]float32)[0] == &c.Data.([]float32)[0] {
			*inPlace++
		} else {
			var err error
			if out, err = ctx.New(graph.Float32, []int{4}); err != nil {
				return nil, err
			}
			copy(out.Data.([]float32), c.Data.([]float32))
		}
		out.Data.([]float32)[pos] = x.Data.([]float32)[0]
		return []*graph.Tensor{out}, nil
	}
}

// TestInPlaceOutputs: an output declared writable in place of an input
// is bound to the caller's tensor that is that input (the kernel writes
// the new element alone, nothing is copied), InPlaceOutputs reports it
// by the input's position, and it is not bound so when another node reads
// the input, when the tensor's shape differs, or when it is also another
// input.
func TestInPlaceOutputs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reader bool
		want   bool
	}{{"alone", false, true}, {"read by another node", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			g, app := appendGraph(tc.reader)
			var inPlace int
			p, err := exec.Compile(g, exec.Options{Opsets: []graph.Opset{{Version: 17}},
				Kernels: map[*graph.Node]kernels.Func{app: appendKernel(&inPlace)},
				InPlace: map[*graph.Node][]ops.InPlace{app: {{Output: 0, Input: 0}}}})
			if err != nil {
				t.Fatal(err)
			}
			got := p.InPlaceOutputs()
			if tc.want != (len(got) == 1 && got[0] == ops.InPlace{Output: 0, Input: 1}) || !tc.want && len(got) != 0 {
				t.Fatalf("InPlaceOutputs = %v (want output 0 in input 1: %v)", got, tc.want)
			}
			c := f32([]int{4}, 0, 0, 0, 0)
			outs := []*graph.Tensor{c}
			if tc.reader {
				outs = append(outs, f32([]int{4}, 0, 0, 0, 0))
			}
			for i := range 4 {
				pos := graph.MustFromSlice([]int{1}, []int64{int64(i)})
				if err := p.RunBound(context.Background(), []*graph.Tensor{f32([]int{1}, float32(i+1)), c, pos}, outs); err != nil {
					t.Fatal(err)
				}
			}
			if v := c.Data.([]float32); v[0] != 1 || v[1] != 2 || v[2] != 3 || v[3] != 4 {
				t.Fatalf("cache = %v, want [1 2 3 4]", v)
			}
			if wantN := map[bool]int{true: 4, false: 0}[tc.want]; inPlace != wantN {
				t.Errorf("%d of 4 calls wrote in place, want %d", inPlace, wantN)
			}
			if tc.reader {
				if v := outs[1].Data.([]float32); v[0] != -1 || v[1] != -2 || v[2] != -3 || v[3] != 0 {
					t.Errorf("the other reader saw %v, want the cache before the last write negated [-1 -2 -3 0]", v)
				}
			}
		})
	}
	t.Run("not the same tensor", func(t *testing.T) {
		g, app := appendGraph(false)
		var inPlace int
		p, err := exec.Compile(g, exec.Options{Opsets: []graph.Opset{{Version: 17}},
			Kernels: map[*graph.Node]kernels.Func{app: appendKernel(&inPlace)},
			InPlace: map[*graph.Node][]ops.InPlace{app: {{Output: 0, Input: 0}}}})
		if err != nil {
			t.Fatal(err)
		}
		pos := graph.MustFromSlice([]int{1}, []int64{1})
		// the output is the cache's memory and the x input's too
		c := f32([]int{4}, 5, 6, 7, 8)
		x := &graph.Tensor{DType: graph.Float32, Shape: []int{1}, Data: c.Data.([]float32)[:1]}
		if err := p.RunBound(context.Background(), []*graph.Tensor{x, c, pos}, []*graph.Tensor{c}); err != nil {
			t.Fatal(err)
		}
		if v := c.Data.([]float32); inPlace != 0 || v[0] != 5 || v[1] != 5 || v[2] != 7 {
			t.Errorf("aliasing two inputs: in place %d times, cache %v; want 0 times, [5 5 7 8]", inPlace, v)
		}
	})
}
