package native

import (
	"os"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/hal"
)

// An RMSNorm before a group (bqfuse.go: Q, K and V; fuse2_ffn.go: the
// feed-forward block) as part of the group's node: where a
// SimplifiedLayerNormalization over the last axis with a constant
// float32 scale is read by nothing but a group's node, that node reads
// the norm's input and computes the norm itself (rmsNormRows, the
// native kernel's arithmetic and order: the same bits) into a buffer of
// the run before its products. One node fewer where a decoder layer has
// two (attention_norm, ffn_norm).

// normOn turns the fusion on for graphs compiled from now on
// (SWITCHYARD_NATIVE_FUSENORM=0 turns it off, for measurements).
var normOn = os.Getenv("SWITCHYARD_NATIVE_FUSENORM") != "0"

// normPlan is an RMSNorm a group's node took over: its node, scale and ε.
type normPlan struct {
	node  *graph.Node
	scale []float32
	eps   float32
}

// fuseNorms returns g with each group node (fused[n].bqs) whose input
// an RMSNorm alone reads taking that norm over (normPlan). g's nodes are
// not modified.
func fuseNorms(sg *hal.Subgraph, g *graph.Graph, fused map[*graph.Node]*fusion) *graph.Graph {
	if !normOn {
		return g
	}
	readers := map[string]int{}
	producer := map[string]*graph.Node{}
	for _, n := range g.Nodes {
		for _, in := range nodeReadsAll(n) {
			if in != "" {
				readers[in]++
			}
		}
		for _, o := range n.Outputs {
			producer[o] = n
		}
	}
	for _, o := range g.Outputs {
		readers[o.Name]++
	}
	dropped := map[*graph.Node]bool{}
	repl := map[*graph.Node]*graph.Node{}
	for _, c := range g.Nodes {
		f := fused[c]
		if f == nil || f.bqs == nil || f.bqs.norm != nil || len(c.Inputs) == 0 || readers[c.Inputs[0]] != 1 {
			continue
		}
		nrm := producer[c.Inputs[0]]
		if nrm == nil || dropped[nrm] {
			continue
		}
		p := normOf(sg, nrm, fused)
		if p == nil || len(p.scale) != int(f.bqs.nodes[0].AttrInt("K", -1)) {
			continue
		}
		n := *c
		n.Inputs = append([]string{nrm.Inputs[0]}, c.Inputs[1:]...)
		plan := *f.bqs
		plan.norm = p
		fused[&n] = &fusion{bqs: &plan, nodes: append(append([]string{}, f.nodes...), nrm.Label())}
		delete(fused, c)
		dropped[nrm], repl[c] = true, &n
	}
	if len(repl) == 0 {
		return g
	}
	out := *g
	out.Nodes = make([]*graph.Node, 0, len(g.Nodes))
	for _, n := range g.Nodes {
		switch {
		case repl[n] != nil:
			out.Nodes = append(out.Nodes, repl[n])
		case !dropped[n]:
			out.Nodes = append(out.Nodes, n)
		}
	}
	return &out
}

// normOf is n's plan when it is an RMSNorm the native kernel computes in
// ggml's order whatever its input (float32 X is checked at run): over
// the last axis, a constant float32 scale of rank 1, one output; else
// nil.
func normOf(sg *hal.Subgraph, n *graph.Node, fused map[*graph.Node]*fusion) *normPlan {
	if n.OpType != "SimplifiedLayerNormalization" || (n.Domain != "" && n.Domain != "ai.onnx") || fused[n] != nil ||
		len(n.Inputs) != 2 || len(n.Outputs) != 1 || n.Inputs[0] == "" || n.AttrInt("axis", -1) != -1 || check(sg, n) != "" {
		return nil
	}
	s := constInput(sg, n, 1)
	if s == nil || s.DType != graph.Float32 || s.Rank() != 1 || s.Shape[0] == 0 {
		return nil
	}
	return &normPlan{node: n, scale: f32(s), eps: n.AttrFloat("epsilon", 1e-5)}
}

// normed is the group's activations: a itself (p nil), or its RMSNorm
// in a buffer of the run that the caller releases (ctx.Release).
func (p *normPlan) normed(ctx *kernels.Context, a *graph.Tensor, k int) (*graph.Tensor, error) {
	if p == nil {
		return a, nil
	}
	if a == nil || a.DType != graph.Float32 || a.Rank() < 1 || a.Shape[a.Rank()-1] != k {
		_, err := bqMatMulOut(ctx, a, k, 1) // its error
		return nil, err
	}
	y, err := ctx.NewUninit(graph.Float32, a.Shape)
	if err != nil {
		return nil, err
	}
	rmsNormRows(f32(a), f32(y), p.scale, k, p.eps) // srvh_rmsnorm.go
	return y, nil
}
