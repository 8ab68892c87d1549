package partitioner_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	. "github.com/switchyard-hal/switchyard/partitioner"
	. "github.com/switchyard-hal/switchyard/partitioner/partitionertest"
)

func TestRandomDAGs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	allOps := []string{"Relu", "Neg", "Sigmoid", "Abs", "Tanh", "Add", "Mul", "Sub", "Max"}
	for trial := 0; trial < 400; trial++ {
		g := RandomDAG(rng, 2+rng.IntN(60))
		var cands []Candidate
		for b := 0; b < 1+rng.IntN(3); b++ {
			ops := map[string]bool{}
			for _, op := range allOps {
				if rng.IntN(2) == 0 {
					ops[op] = true
				}
			}
			cands = append(cands, Claims(g, fmt.Sprintf("b%d", b), ops))
		}
		all := map[string]bool{}
		for _, op := range allOps {
			all[op] = true
		}
		cands = append(cands, Claims(g, "cpu", all))
		pol := Policy{MinPartitionSize: rng.IntN(3)}
		p, err := Place(g, cands, pol)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		if err := CheckPlan(g, p); err != nil {
			t.Fatalf("trial %d: %v\n%s", trial, err, p.Text())
		}
		// deterministic
		p2, _ := Place(g, cands, pol)
		a, _ := p.JSON()
		b, _ := p2.JSON()
		if string(a) != string(b) {
			t.Fatalf("trial %d: two runs gave different plans", trial)
		}
	}
}

// The classic trap: a → b(other backend) → c with a, c on one backend
// must not fuse a and c.
func TestNoCycleThroughOtherBackend(t *testing.T) {
	g := &graph.Graph{
		Inputs: []graph.ValueInfo{{Name: "x"}},
		Nodes: []*graph.Node{
			{Name: "a", OpType: "Relu", Inputs: []string{"x"}, Outputs: []string{"a"}},
			{Name: "b", OpType: "Neg", Inputs: []string{"a"}, Outputs: []string{"b"}},
			{Name: "c", OpType: "Add", Inputs: []string{"a", "b"}, Outputs: []string{"c"}},
		},
		Outputs: []graph.ValueInfo{{Name: "c"}},
	}
	cands := []Candidate{Claims(g, "acc", map[string]bool{"Relu": true, "Add": true}), Claims(g, "cpu", map[string]bool{"Relu": true, "Neg": true, "Add": true})}
	p, err := Place(g, cands, Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckPlan(g, p); err != nil {
		t.Fatal(err)
	}
	if len(p.Partitions) != 3 {
		t.Fatalf("want 3 partitions (a | b | c), got:\n%s", p.Text())
	}
	if d := p.Nodes[1].Declined; len(d) != 1 || d[0].Backend != "acc" || !strings.Contains(d[0].Reason, "does not take Neg") {
		t.Errorf("decline of b: %+v", d)
	}
}

// Partitions of one backend that start from graph inputs and meet at a
// node are one partition (YOLOX's four input slices feeding a Concat were
// four), unless a path through another backend joins them.
func TestSiblingPartitionsMerge(t *testing.T) {
	n := func(name, op string, in ...string) *graph.Node {
		return &graph.Node{Name: name, OpType: op, Inputs: in, Outputs: []string{name}}
	}
	g := &graph.Graph{
		Inputs: []graph.ValueInfo{{Name: "x"}, {Name: "y"}},
		Nodes: []*graph.Node{
			n("s0", "Relu", "x"), n("s1", "Relu", "x"), n("s2", "Relu", "y"),
			n("t", "Abs", "s2"), // on another backend: s2 → t → c
			n("c", "Add", "s0", "s1"), n("d", "Add", "c", "t"), n("e", "Add", "d", "s2"),
		},
		Outputs: []graph.ValueInfo{{Name: "e"}},
	}
	cands := []Candidate{Claims(g, "acc", map[string]bool{"Relu": true, "Add": true}), Claims(g, "cpu", map[string]bool{"Relu": true, "Abs": true, "Add": true})}
	p, err := Place(g, cands, Policy{})
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckPlan(g, p); err != nil {
		t.Fatal(err)
	}
	part := func(i int) int { return p.Nodes[i].Partition }
	if part(0) != part(1) || part(0) != part(4) {
		t.Errorf("s0, s1 and c are in partitions %d, %d, %d, want one:\n%s", part(0), part(1), part(4), p.Text())
	}
	// s2 reaches d through t on cpu: merging it with c would be a cycle
	if part(2) == part(5) {
		t.Errorf("s2 and d share partition %d across cpu's t:\n%s", part(2), p.Text())
	}
	if len(p.Partitions) != 3 {
		t.Errorf("want 3 partitions (s2 | t | s0 s1 c d e), got:\n%s", p.Text())
	}
}

func TestPolicy(t *testing.T) {
	g := &graph.Graph{
		Inputs: []graph.ValueInfo{{Name: "x"}},
		Nodes: []*graph.Node{
			{Name: "a", OpType: "Relu", Inputs: []string{"x"}, Outputs: []string{"a"}},
			{Name: "b", OpType: "Neg", Inputs: []string{"a"}, Outputs: []string{"b"}},
		},
		Outputs: []graph.ValueInfo{{Name: "b"}},
	}
	both := map[string]bool{"Relu": true, "Neg": true}
	cands := []Candidate{Claims(g, "acc", both), Claims(g, "cpu", both)}
	p, _ := Place(g, cands, Policy{Deny: map[string][]string{"Neg": {"acc"}}})
	if p.Nodes[1].Backend != "cpu" || !strings.Contains(p.Nodes[1].Declined[0].Reason, "denied by policy") {
		t.Errorf("deny: %+v", p.Nodes[1])
	}
	p, _ = Place(g, cands, Policy{Allow: map[string][]string{"Relu": {"cpu"}}})
	if p.Nodes[0].Backend != "cpu" || p.Nodes[1].Backend != "acc" {
		t.Errorf("allow: %+v", p.Nodes)
	}
	p, _ = Place(g, []Candidate{Claims(g, "acc", map[string]bool{"Relu": true}), cands[1]}, Policy{MinPartitionSize: 2})
	if p.Nodes[0].Backend != "cpu" || !strings.Contains(p.Nodes[0].Declined[0].Reason, "below the minimum of 2") {
		t.Errorf("min size: %+v", p.Nodes[0])
	}
	_, err := Place(g, []Candidate{Claims(g, "acc", map[string]bool{"Relu": true})}, Policy{Strict: true})
	var ue *UnplacedError
	if !errorsAs(err, &ue) || len(ue.Nodes) != 1 || !strings.Contains(err.Error(), `Neg "b"`) || !strings.Contains(err.Error(), "acc: acc does not take Neg") {
		t.Errorf("strict: %v", err)
	}
}

func errorsAs(err error, target **UnplacedError) bool {
	e, ok := err.(*UnplacedError)
	if ok {
		*target = e
	}
	return ok
}
