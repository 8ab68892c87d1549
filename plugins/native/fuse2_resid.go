package native

import (
	"fmt"
	"os"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/core/kernels/blockquant"
	"github.com/switchyard-hal/switchyard/hal"
)

// A residual Add after a lone typed BlockQuantMatMul (a decoder layer's
// o_proj) as part of the product's node: where the product's output is
// read by nothing but an Add of another value, the node runs the product
// as its own node would and adds the other value (y + r in float32 where
// it has the product's shape, the Add's bits; else the reference Add).
// One node fewer a decoder layer.

// residOp is the op type of a product with its residual Add (domain
// blockquant.Domain): inputs A, B and the Add's other operand; one
// output, the Add's.
const residOp = "BlockQuantMatMulAdd"

// residOn turns the fusion on for graphs compiled from now on
// (SWITCHYARD_NATIVE_FUSERESID=0 turns it off, for measurements).
var residOn = os.Getenv("SWITCHYARD_NATIVE_FUSERESID") != "0"

// residPlan is a residual Add a node took over: the Add and its other
// operand's index.
type residPlan struct {
	add *graph.Node
	r   int
}

// fuseResidAdds returns g with each lone typed BlockQuantMatMul (one no
// fusion took, bqGroupMember) whose output only an Add reads replaced by
// one residOp node at the Add's place. g's nodes are not modified.
func fuseResidAdds(sg *hal.Subgraph, g *graph.Graph, fused map[*graph.Node]*fusion) *graph.Graph {
	if !residOn {
		return g
	}
	readers := nodeReaders(g)
	isOut := map[string]bool{}
	for _, o := range g.Outputs {
		isOut[o.Name] = true
	}
	dropped := map[*graph.Node]bool{}
	at := map[*graph.Node]*graph.Node{}
	for _, n := range g.Nodes {
		if dropped[n] || !bqGroupMember(sg, n, fused) || isOut[n.Outputs[0]] || len(readers[n.Outputs[0]]) != 1 {
			continue
		}
		add, r := ffnResidual(sg, n, readers[n.Outputs[0]][0], fused) // fuse2_ffn.go
		if add == nil || dropped[add] || at[add] != nil {
			continue
		}
		c := &graph.Node{Name: n.Name, OpType: residOp, Domain: blockquant.Domain, Inputs: []string{n.Inputs[0], n.Inputs[1], add.Inputs[r]}, Outputs: []string{add.Outputs[0]}}
		fused[c] = &fusion{bqs: &bqGroupPlan{nodes: []*graph.Node{n}, bias: []*graph.Tensor{nil}, resid: &residPlan{add: add, r: r}}, nodes: []string{add.Label()}}
		dropped[n], dropped[add] = true, true
		at[add] = c
	}
	if len(at) == 0 {
		return g
	}
	return replaceNodes(g, at, dropped)
}

// residAdd is a compiled residual Add: the other operand's index and the
// reference Add for what the in-place one does not take.
type residAdd struct {
	r   int
	ref kernels.Func
	// opset is the graph's opset of the Add's domain (the node's own is
	// blockquant's)
	opset int64
}

// newResidAdd compiles a residual Add whose other operand is input r.
func newResidAdd(bc *buildCtx, r int) (*residAdd, error) {
	ref, ok := kernels.Lookup("", "Add")
	if !ok {
		return nil, fmt.Errorf("no Add kernel")
	}
	a := &residAdd{r: r, ref: ref.Kernel}
	for _, o := range bc.sg.Opsets {
		if o.Domain == "" || o.Domain == "ai.onnx" {
			a.opset = o.Version
		}
	}
	return a, nil
}

// apply is the Add of the product's output y and the other operand o:
// y + o into y where o is float32 of y's shape, else the reference Add.
func (a *residAdd) apply(ctx *kernels.Context, node *graph.Node, y, o *graph.Tensor) ([]*graph.Tensor, error) {
	if o != nil && o.DType == graph.Float32 && graph.SameShape(o.Shape, y.Shape) {
		addRow(f32(y), f32(o)) // y + o: the Add's float32 sums
		return ctx.Outputs(y), nil
	}
	ops := [2]*graph.Tensor{o, o}
	ops[1-a.r] = y
	c := *ctx
	c.Opset, c.Memo = a.opset, nil
	return a.ref(&c, node, ops[:])
}

// buildResid compiles a residOp node: the product as buildBlockQuant
// compiles it (its place in decode's prefetch chain included), then the
// Add.
func buildResid(bc *buildCtx, p *bqGroupPlan) (kernels.Func, error) {
	n := p.nodes[0]
	w, err := bc.productWeights(n, nil)
	if err != nil {
		return nil, err
	}
	add, err := newResidAdd(bc, p.resid.r)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", residOp, err)
	}
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		a := in[0]
		y, err := bqMatMulOut(ctx, a, w.k, w.n)
		if err != nil {
			return nil, err
		}
		w.run(bc.pool, f32(a), f32(y), a.Len()/w.k)
		return add.apply(ctx, node, y, in[2])
	}, nil
}
