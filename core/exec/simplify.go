package exec

import (
	"github.com/switchyard-hal/switchyard/core/graph"
)

// SimplifyTyped returns a copy of g (g itself is not modified) in which
//   - every node whose inputs are all constants (initializers, Constant
//     outputs, earlier folded values) is evaluated once, its outputs
//     becoming initializers (bounded in size; see fold), and
//   - every node whose outputs nobody reads (and that are not graph
//     outputs) is removed.
//
// The runtime simplifies before partitioning, so backends are not offered
// weight-producing Constant nodes or dead code. Nested graphs are left as
// they are (Compile folds inside them). Knowing the inferred types of g's
// values (types may be nil), Shape and Size of values of static shape fold
// too, with the shape arithmetic computed from them alone.
func SimplifyTyped(g *graph.Graph, opsets []graph.Opset, types map[string]graph.ValueType) (*graph.Graph, error) {
	order, err := g.TopoSort()
	if err != nil {
		return nil, err
	}
	p := &Program{g: g, opsets: graph.Model{Opsets: opsets}}
	keep, consts := p.fold(order, g, nil, types)
	// dead-code elimination, walking backwards from the graph outputs
	live := map[string]bool{}
	for _, o := range g.Outputs {
		live[o.Name] = true
	}
	alive := make([]bool, len(keep))
	for i := len(keep) - 1; i >= 0; i-- {
		n := keep[i]
		for _, o := range n.Outputs {
			if o != "" && live[o] {
				alive[i] = true
			}
		}
		if alive[i] {
			for _, in := range nodeReads(n) {
				live[in] = true
			}
		}
	}
	out := &graph.Graph{Name: g.Name, Inputs: g.Inputs, Outputs: g.Outputs, ValueInfo: g.ValueInfo,
		Initializers: make(map[string]*graph.Tensor, len(g.Initializers)+len(consts))}
	for k, v := range g.Initializers {
		out.Initializers[k] = v
	}
	for k, v := range consts {
		if live[k] {
			out.Initializers[k] = v
		}
	}
	for i, n := range keep {
		if alive[i] {
			out.Nodes = append(out.Nodes, n)
		}
	}
	return out, nil
}
