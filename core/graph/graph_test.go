package graph

import (
	"errors"
	"testing"
)

func TestSubgraphs(t *testing.T) {
	a, b, c := &Graph{Name: "a"}, &Graph{Name: "b"}, &Graph{Name: "c"}
	n := &Node{OpType: "If", Attrs: map[string]*Attribute{
		"then_branch": {Name: "then_branch", Type: AttrGraph, G: b},
		"else_branch": {Name: "else_branch", Type: AttrGraph, G: a},
		"bodies":      {Name: "bodies", Type: AttrGraphs, Graphs: []*Graph{c, nil}},
		"axis":        {Name: "axis", Type: AttrInt, I: 1},
	}}
	got := n.Subgraphs()
	want := []*Graph{c, a, b} // by attribute name: bodies, else_branch, then_branch; nil dropped
	if len(got) != len(want) {
		t.Fatalf("Subgraphs: %d graphs, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Subgraphs[%d] = %s, want %s", i, got[i].Name, want[i].Name)
		}
	}
	if (&Node{OpType: "Add"}).Subgraphs() != nil {
		t.Error("a node without graph attributes has subgraphs")
	}
	if !errorsIs(ErrTooLarge, ErrResourceExhausted) {
		t.Error("ErrTooLarge is not a resource-exhausted error")
	}
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }
