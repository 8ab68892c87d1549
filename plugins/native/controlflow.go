package native

import (
	"fmt"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/hal"
)

// Control flow: an If whose branches hold only ops the backend takes is
// claimed whole, so that a model built around one (silero_vad_v5 is one
// If over the whole network) runs on this backend rather than on cpu. The
// branches run on core/exec's executor like the partition itself; inside
// them the Conv nodes with constant weights (initializers or Constant
// nodes of the branch or an enclosing graph), with a Relu that only they
// feed fused in, get this package's kernels, and so do LSTM and Pow by a
// constant 2 (both check their inputs at run time and defer to the
// reference kernel for what they do not take). The other nodes of a
// branch run the reference kernels: types inside branches are not inferred
// by the runtime, and the fast builders need them.

// checkIf is the verdict for an If: "" when every node of both branches,
// nested If included, is one the backend takes.
func checkIf(sg *hal.Subgraph, n *graph.Node) string {
	for _, name := range []string{"then_branch", "else_branch"} {
		a := n.Attrs[name]
		if a == nil || a.G == nil {
			return fmt.Sprintf("native: If without %s", name)
		}
		if r := checkBody(sg, a.G); r != "" {
			return r
		}
	}
	return ""
}

// checkBody checks the nodes of a branch.
func checkBody(sg *hal.Subgraph, g *graph.Graph) string {
	opset := sg.OpsetVersion("")
	for _, n := range g.Nodes {
		if n.Domain != "" && n.Domain != "ai.onnx" {
			return fmt.Sprintf("native: If branch %q: domain %q not implemented", g.Name, n.Domain)
		}
		if err := kernels.CheckNode(n, opset); err != nil {
			return fmt.Sprintf("native: If branch %q: %v", g.Name, err)
		}
		if n.OpType == "If" {
			if r := checkIf(sg, n); r != "" {
				return r
			}
			continue
		}
		if _, fast := fastOps[n.OpType]; !fast && !referenceRunnable(n) {
			return fmt.Sprintf("native: If branch %q: op %s not implemented", g.Name, n.OpType)
		}
		if len(n.Subgraphs()) > 0 {
			return fmt.Sprintf("native: If branch %q: %s with a nested graph not taken", g.Name, n.OpType)
		}
	}
	return ""
}

// rewriteIf returns a copy of an If whose branches are rewritten by
// rewriteBody (the original is shared and stays as it is), adding the
// kernels of the branches' nodes to over. consts are the constants
// visible where the If is.
func rewriteIf(bc *buildCtx, n *graph.Node, consts map[string]*graph.Tensor, over map[*graph.Node]kernels.Func) (*graph.Node, error) {
	c := *n
	c.Attrs = make(map[string]*graph.Attribute, len(n.Attrs))
	for k, a := range n.Attrs {
		if a.G != nil {
			ca := *a
			g, err := rewriteBody(bc, a.G, consts, over)
			if err != nil {
				return nil, err
			}
			ca.G = g
			a = &ca
		}
		c.Attrs[k] = a
	}
	return &c, nil
}

// rewriteBody returns a copy of a branch where each Conv with constant
// float32 weights (and bias) gets this package's kernel, with the Relu
// that is its output's only reader fused in; nested If are rewritten the
// same way.
func rewriteBody(bc *buildCtx, g *graph.Graph, outer map[string]*graph.Tensor, over map[*graph.Node]kernels.Func) (*graph.Graph, error) {
	consts := make(map[string]*graph.Tensor, len(outer)+len(g.Initializers))
	for k, v := range outer {
		consts[k] = v
	}
	for k, v := range g.Initializers {
		consts[k] = v
	}
	for _, n := range g.Nodes {
		if n.OpType == "Constant" && len(n.Outputs) == 1 {
			if a := n.Attrs["value"]; a != nil && a.T != nil {
				consts[n.Outputs[0]] = a.T
			}
		}
	}
	readers := map[string]int{}
	for _, n := range g.Nodes {
		for _, in := range nodeReadsAll(n) {
			readers[in]++
		}
	}
	for _, o := range g.Outputs {
		readers[o.Name]++
	}
	reluOf := map[string]*graph.Node{} // value → a Relu reading it
	index := map[*graph.Node]int{}
	for i, n := range g.Nodes {
		index[n] = i
		if n.OpType == "Relu" && len(n.Inputs) == 1 && len(n.Outputs) == 1 {
			reluOf[n.Inputs[0]] = n
		}
	}
	out := *g
	out.Nodes = make([]*graph.Node, 0, len(g.Nodes))
	dropped := map[*graph.Node]bool{}
	for i, n := range g.Nodes {
		if dropped[n] {
			continue
		}
		switch {
		case n.OpType == "If":
			c, err := rewriteIf(bc, n, consts, over)
			if err != nil {
				return nil, err
			}
			out.Nodes = append(out.Nodes, c)
			continue
		case n.OpType == "Pow" && n.Domain == "" && len(n.Inputs) == 2 && isSquare(consts[n.Inputs[1]]):
			over[n] = powSquare(bc)
		case n.OpType == "LSTM" && n.Domain == "":
			f, err := lstmKernel(bc, n, bc.sg.OpsetVersion(""))
			if err != nil {
				return nil, err
			}
			over[n] = f
		case n.OpType == "Conv" && n.Domain == "" && len(n.Outputs) == 1:
			w := consts[n.Inputs[1]]
			var b *graph.Tensor
			if len(n.Inputs) > 2 && n.Inputs[2] != "" {
				if b = consts[n.Inputs[2]]; b == nil {
					break
				}
			}
			if w == nil || w.DType != graph.Float32 || (len(w.Shape) != 3 && len(w.Shape) != 4) {
				break
			}
			if gr := int(n.AttrInt("group", 1)); gr < 1 || w.Shape[0]%gr != 0 {
				break
			}
			if _, err := readWindow(n, len(w.Shape)-2, w.Shape[2:]); err != nil {
				break
			}
			c := *n
			f := &fusion{lo: negInf, hi: posInf}
			if r := reluOf[n.Outputs[0]]; r != nil && readers[n.Outputs[0]] == 1 && index[r] > i {
				f.clamp, f.lo = true, 0
				f.nodes = []string{r.Label()}
				c.Outputs = append([]string{}, r.Outputs...)
				dropped[r] = true
			}
			p, err := newConvPlan(bc, &c, w, b, f, true)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", n.Label(), err)
			}
			p.ss, p.planeSS = &scratchSet{}, &scratchSet{}
			over[&c] = func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
				y, err := p.run(bc, ctx, in[0], nil)
				return ctx.Outputs(y), err
			}
			out.Nodes = append(out.Nodes, &c)
			continue
		}
		out.Nodes = append(out.Nodes, n)
	}
	if verifyRewrites {
		if err := checkRewrite(g, &out); err != nil {
			return nil, rewriteFailed(err)
		}
	}
	return &out, nil
}

// nodeReadsAll lists what a node reads, with what its nested graphs
// capture from the enclosing scopes.
func nodeReadsAll(n *graph.Node) []string {
	return append(append([]string{}, n.Inputs...), n.SubgraphReads()...)
}
