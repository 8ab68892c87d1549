package exec_test

import (
	"context"
	"testing"

	"github.com/switchyard-hal/switchyard/core/exec"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// TestKernelMemoAndConst: a kernel gets its node's memo slot, kept from
// run to run (what it memoised in one run is there in the next, and
// another node's slot is another), and Context.Const marks exactly the
// inputs that are constants: an initializer, not a graph input (even one
// with an initializer default, which a caller may feed), not a computed
// value.
func TestKernelMemoAndConst(t *testing.T) {
	vt := graph.ValueType{Kind: "tensor", DType: graph.Float32, Shape: graph.StaticShape(2)}
	g := &graph.Graph{
		Name:         "memo",
		Inputs:       []graph.ValueInfo{{Name: "x", Type: vt}, {Name: "d", Type: vt}},
		Outputs:      []graph.ValueInfo{{Name: "y", Type: vt}},
		Initializers: map[string]*graph.Tensor{"w": f32([]int{2}, 1, 2), "d": f32([]int{2}, 3, 4)},
		Nodes: []*graph.Node{
			{Name: "a", OpType: "Sum", Inputs: []string{"x", "w", "d"}, Outputs: []string{"t"}},
			{Name: "b", OpType: "Sum", Inputs: []string{"t", "w"}, Outputs: []string{"y"}},
		},
	}
	type seen struct {
		konst [3]bool
		memo  any
		slot  *kernels.Memo
	}
	got := map[string][]seen{}
	sum := func(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		s := seen{memo: ctx.Memoized(), slot: ctx.Memo}
		for i := range s.konst {
			s.konst[i] = ctx.IsConst(i)
		}
		got[n.Name] = append(got[n.Name], s)
		ctx.Memoize(n.Name + "'s memo")
		out, err := ctx.New(graph.Float32, []int{2})
		if err != nil {
			return nil, err
		}
		o := out.Data.([]float32)
		for _, x := range in {
			for k, v := range x.Data.([]float32) {
				o[k] += v
			}
		}
		return ctx.Outputs(out), nil
	}
	p, err := exec.Compile(g, exec.Options{Opsets: []graph.Opset{{Version: 17}}, NoFold: true,
		Kernels: map[*graph.Node]kernels.Func{g.Nodes[0]: sum, g.Nodes[1]: sum}})
	if err != nil {
		t.Fatal(err)
	}
	for run := 0; run < 2; run++ {
		out, err := p.Run(context.Background(), map[string]*graph.Tensor{"x": f32([]int{2}, 10, 20)})
		if err != nil {
			t.Fatal(err)
		}
		if y := out["y"].Data.([]float32); y[0] != 15 || y[1] != 28 {
			t.Fatalf("y = %v, want [15 28]", y)
		}
	}
	a, b := got["a"], got["b"]
	if len(a) != 2 || len(b) != 2 {
		t.Fatalf("calls: a %d, b %d", len(a), len(b))
	}
	if a[0].konst != [3]bool{false, true, false} {
		t.Errorf("a's constant inputs %v, want [false true false] (x fed, w an initializer, d a graph input with a default)", a[0].konst)
	}
	if b[0].konst != [3]bool{false, true, false} {
		t.Errorf("b's constant inputs %v, want [false true false] (t computed, w an initializer)", b[0].konst)
	}
	if a[0].slot == nil || a[0].slot == b[0].slot || a[1].slot != a[0].slot {
		t.Errorf("memo slots: a %p then %p, b %p", a[0].slot, a[1].slot, b[0].slot)
	}
	if a[0].memo != nil || a[1].memo != "a's memo" || b[1].memo != "b's memo" {
		t.Errorf("memos seen: a %v then %v, b then %v", a[0].memo, a[1].memo, b[1].memo)
	}
}
