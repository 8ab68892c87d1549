package graph

import (
	"fmt"
	"strings"
)

// ValidationError lists every problem Validate found.
type ValidationError struct {
	Problems []string
}

func (e *ValidationError) Error() string {
	if len(e.Problems) == 1 {
		return "graph: invalid: " + e.Problems[0]
	}
	return fmt.Sprintf("graph: invalid (%d problems): %s", len(e.Problems), strings.Join(e.Problems, "; "))
}

// Validate checks the model's graph and all nested graphs: every input of a
// node is defined (as a graph input, initializer, node output or a value of
// an enclosing graph), no value is defined twice, outputs exist, the graph is
// acyclic and initializers agree with declared input types.
func (m *Model) Validate() error {
	if m == nil || m.Graph == nil {
		return &ValidationError{Problems: []string{"model has no graph"}}
	}
	var probs []string
	validateGraph(m.Graph, nil, "", &probs)
	if len(probs) > 0 {
		if len(probs) > 20 {
			probs = append(probs[:20], fmt.Sprintf("… and %d more", len(probs)-20))
		}
		return &ValidationError{Problems: probs}
	}
	return nil
}

// Validate checks one graph with the given names visible from enclosing scopes.
func (g *Graph) Validate(outer map[string]bool) error {
	var probs []string
	validateGraph(g, outer, "", &probs)
	if len(probs) > 0 {
		return &ValidationError{Problems: probs}
	}
	return nil
}

func validateGraph(g *Graph, outer map[string]bool, where string, probs *[]string) {
	add := func(format string, args ...any) {
		*probs = append(*probs, where+fmt.Sprintf(format, args...))
	}
	defined := map[string]bool{}
	for _, in := range g.Inputs {
		if in.Name == "" {
			add("graph input with empty name")
			continue
		}
		if defined[in.Name] {
			add("graph input %q declared twice", in.Name)
		}
		defined[in.Name] = true
	}
	for name, t := range g.Initializers {
		if err := t.Check(); err != nil {
			add("initializer %q: %v", name, err)
		}
		defined[name] = true
	}
	for _, in := range g.Inputs {
		if t, ok := g.Initializers[in.Name]; ok && in.Type.DType != Undefined && in.Type.DType != t.DType {
			add("input %q declared %v but its initializer is %v", in.Name, in.Type.DType, t.DType)
		}
	}
	producer := map[string]int{}
	for i, n := range g.Nodes {
		if n.OpType == "" {
			add("node %d has no op_type", i)
		}
		for _, o := range n.Outputs {
			if o == "" {
				continue
			}
			if defined[o] {
				add("%s: output %q is already a graph input or initializer", n.Label(), o)
			}
			if j, dup := producer[o]; dup {
				add("%s: output %q is also produced by %s", n.Label(), o, g.Nodes[j].Label())
			}
			producer[o] = i
		}
	}
	visible := func(name string) bool {
		if defined[name] {
			return true
		}
		if _, ok := producer[name]; ok {
			return true
		}
		return outer[name]
	}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			if in != "" && !visible(in) {
				add("%s: input %q is not defined", n.Label(), in)
			}
		}
		for _, a := range n.Attrs {
			subs := a.Subgraphs()
			for _, sg := range subs {
				if sg == nil {
					continue
				}
				scope := map[string]bool{}
				for k := range outer {
					scope[k] = true
				}
				for k := range defined {
					scope[k] = true
				}
				for k := range producer {
					scope[k] = true
				}
				validateGraph(sg, scope, where+fmt.Sprintf("%s attribute %q: ", n.Label(), a.Name), probs)
			}
		}
	}
	for _, o := range g.Outputs {
		if !visible(o.Name) {
			add("graph output %q is not produced", o.Name)
		}
	}
	if _, err := g.TopoSort(); err != nil {
		add("%v", err)
	}
}

// TopoSort returns the nodes in an order where every producer precedes its
// consumers (stable: ties keep file order). It reports a cycle with the
// nodes involved.
func (g *Graph) TopoSort() ([]*Node, error) {
	producer := make(map[string]int, len(g.Nodes))
	for i, n := range g.Nodes {
		for _, o := range n.Outputs {
			if o != "" {
				producer[o] = i
			}
		}
	}
	indeg := make([]int, len(g.Nodes))
	users := make([][]int, len(g.Nodes))
	lastUser := make([]int, len(g.Nodes)) // 1 + the last node counted as p's user
	for i, n := range g.Nodes {
		for _, in := range nodeDeps(n) {
			if p, ok := producer[in]; ok && lastUser[p] != i+1 {
				lastUser[p] = i + 1
				indeg[i]++
				users[p] = append(users[p], i)
			}
		}
	}
	// the ready nodes in a min-heap of indices: among nodes whose inputs
	// are all available, the earliest in file order goes first, in
	// O(n log n) however wide the graph
	ready := &intHeap{}
	for i := range g.Nodes {
		if indeg[i] == 0 {
			ready.push(i)
		}
	}
	order := make([]*Node, 0, len(g.Nodes))
	for len(*ready) > 0 {
		i := ready.pop()
		order = append(order, g.Nodes[i])
		for _, u := range users[i] {
			indeg[u]--
			if indeg[u] == 0 {
				ready.push(u)
			}
		}
	}
	if len(order) != len(g.Nodes) {
		var stuck []string
		for i, d := range indeg {
			if d > 0 {
				stuck = append(stuck, g.Nodes[i].Label())
				if len(stuck) == 5 {
					break
				}
			}
		}
		return nil, fmt.Errorf("graph %q has a cycle through %s", g.Name, strings.Join(stuck, ", "))
	}
	return order, nil
}

// nodeDeps lists the values a node reads, including the outer-scope values
// referenced by its nested graphs.
func nodeDeps(n *Node) []string {
	sgs := n.Subgraphs()
	if len(sgs) == 0 {
		return n.Inputs
	}
	deps := append([]string{}, n.Inputs...)
	for _, sg := range sgs {
		deps = append(deps, sg.FreeVariables()...)
	}
	return deps
}

// FreeVariables lists names a graph (and its nested graphs) reads but does
// not define: the values it captures from enclosing scopes.
func (g *Graph) FreeVariables() []string {
	if g == nil {
		return nil
	}
	defined := map[string]bool{}
	for _, in := range g.Inputs {
		defined[in.Name] = true
	}
	for k := range g.Initializers {
		defined[k] = true
	}
	for _, n := range g.Nodes {
		for _, o := range n.Outputs {
			defined[o] = true
		}
	}
	seen := map[string]bool{}
	var free []string
	for _, n := range g.Nodes {
		for _, in := range nodeDeps(n) {
			if in != "" && !defined[in] && !seen[in] {
				seen[in] = true
				free = append(free, in)
			}
		}
	}
	for _, o := range g.Outputs {
		if !defined[o.Name] && !seen[o.Name] {
			seen[o.Name] = true
			free = append(free, o.Name)
		}
	}
	return free
}

// intHeap is a binary min-heap of ints.
type intHeap []int

func (h *intHeap) push(v int) {
	*h = append(*h, v)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if a[p] <= a[i] {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}

func (h *intHeap) pop() int {
	a := *h
	top := a[0]
	last := len(a) - 1
	a[0] = a[last]
	a = a[:last]
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < len(a) && a[l] < a[m] {
			m = l
		}
		if r := l + 1; r < len(a) && a[r] < a[m] {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}
