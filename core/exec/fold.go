package exec

import (
	"context"
	"fmt"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// foldLimit bounds the bytes a single folded value may hold, so folding
// never inflates a model (e.g. a ConstantOfShape of a huge shape stays a
// run-time computation).
const foldLimit = 1 << 20

// fold evaluates, at load time, every node whose inputs are all constants
// (initializers, outer constants or earlier folded values) and that has no
// nested graph. It returns the remaining nodes and the folded values. A node
// whose kernel fails is left in place so the error surfaces at run time.
//
// With types (the main graph's inferred types), Shape and Size of values
// of static shape are constants too (static.go).
func (m *Program) fold(order []*graph.Node, g *graph.Graph, outer map[string]*graph.Tensor, types map[string]graph.ValueType) ([]*graph.Node, map[string]*graph.Tensor) {
	consts := map[string]*graph.Tensor{}
	lookup := func(name string) (*graph.Tensor, bool) {
		if t, ok := consts[name]; ok {
			return t, true
		}
		if t, ok := g.Initializers[name]; ok {
			return t, true
		}
		// a graph input with an initializer default can be overridden by the caller
		t, ok := outer[name]
		return t, ok
	}
	overridable := map[string]bool{}
	for _, in := range g.Inputs {
		overridable[in.Name] = true
	}
	if m.noFold || m.mainDone && g == m.g && types == nil {
		return order, nil
	}
	keep := make([]*graph.Node, 0, len(order))
	for _, n := range order {
		if _, over := m.overrides[n]; !over {
			if v := shapeConstant(n, m.opset(n.Domain), types); v != nil {
				consts[n.Outputs[0]] = v
				continue
			}
		}
		if !m.foldable(n) {
			keep = append(keep, n)
			continue
		}
		ins := make([]*graph.Tensor, len(n.Inputs))
		ok := true
		for i, name := range n.Inputs {
			if name == "" {
				continue
			}
			t, found := lookup(name)
			if !found || overridable[name] {
				ok = false
				break
			}
			ins[i] = t
		}
		if !ok {
			keep = append(keep, n)
			continue
		}
		if v := constantTensor(n); v != nil {
			// the model already holds the value: folding it costs nothing,
			// whatever its size (a weight given as a Constant node would
			// otherwise be copied on every run and hide from backends
			// that pack constant weights at compile)
			consts[n.Outputs[0]] = v
			continue
		}
		s, _ := kernels.Lookup(n.Domain, n.OpType)
		outs, err := safeKernel(s, n, m.opset(n.Domain), ins)
		if err != nil || len(outs) < len(n.Outputs) {
			keep = append(keep, n)
			continue
		}
		small := true
		for j, o := range n.Outputs {
			if o != "" && (outs[j] == nil || outs[j].Check() != nil || outs[j].Len()*max(outs[j].DType.Size(), 8) > foldLimit) {
				small = false
			}
		}
		if !small {
			keep = append(keep, n)
			continue
		}
		for j, o := range n.Outputs {
			if o != "" {
				consts[o] = outs[j]
			}
		}
	}
	return keep, consts
}

// constantTensor is the value of a Constant node given as a tensor
// attribute (read-only, shared: kernels never modify their inputs), nil for
// any other node.
func constantTensor(n *graph.Node) *graph.Tensor {
	if n.OpType != "Constant" || n.Domain != "" || len(n.Outputs) != 1 || n.Outputs[0] == "" {
		return nil
	}
	v := n.AttrTensor("value")
	if v == nil || v.Check() != nil {
		return nil
	}
	return v
}

// foldable: ops without nested graphs, and not the control-flow ops.
func (m *Program) foldable(n *graph.Node) bool {
	if _, over := m.overrides[n]; over || n.Domain != "" {
		return false
	}
	if len(n.Subgraphs()) > 0 {
		return false
	}
	switch n.OpType {
	case "If", "Loop", "Scan", "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli":
		return false
	}
	_, ok := kernels.Lookup(n.Domain, n.OpType)
	return ok
}

// safeKernel runs a kernel at load (constant folding); a kernel that
// panics is an internal error (the node then stays a run-time
// computation, where the executor reports the same panic with its node).
func safeKernel(s *kernels.Schema, n *graph.Node, opset int64, ins []*graph.Tensor) (outs []*graph.Tensor, err error) {
	defer func() {
		if p := recover(); p != nil {
			outs, err = nil, fmt.Errorf("exec: %w: %s node %q panicked while folding: %v", graph.ErrInternal, n.OpType, n.Name, p)
		}
	}()
	return s.Kernel(&kernels.Context{Context: context.Background(), Opset: opset, Alloc: foldAlloc{}}, n, ins)
}

// foldAlloc refuses outputs over foldLimit before allocating them: a node
// whose constant result would be big (an Expand to 8 GiB) stays a run-time
// computation, bounded there by the model's budget, instead of being
// evaluated (and allocated) at load.
type foldAlloc struct{}

func (foldAlloc) Alloc(dt graph.DType, shape []int) (*graph.Tensor, error) {
	if _, err := graph.CheckAllocLimit(dt, shape, foldLimit); err != nil {
		return nil, err
	}
	return graph.New(dt, shape)
}
