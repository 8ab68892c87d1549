package native

import (
	"fmt"
	"os"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/core/kernels/blockquant"
	"github.com/switchyard-hal/switchyard/hal"
)

// A llama-family feed-forward block as one node: a group of two sibling
// BlockQuantMatMuls (gate and up, bqfuse.go) whose outputs only a SwiGLU
// (blockquant.SwiGLUOpType) reads takes the SwiGLU over, then, where the
// SwiGLU's output only feeds a typed BlockQuantMatMul (down), that
// product, and where down's output only feeds an Add (the residual),
// that Add. The node runs the parts one after another with the kernels
// their nodes run (the group's loop, the SwiGLU's arithmetic, down's
// loop, y + r in float32 where the residual has down's shape, else the
// reference Add), so every value has the nodes' bits; what goes is the
// executor between them (three nodes fewer a layer) and the Add's pass.
//
// Measured and not taken: the first loop's tasks computing matching rows
// of gate and up and writing silu(gate)·up for them (the SwiGLU inside
// the loop) ran that loop 12-29% slower at 2 threads than the group's
// tasks (gate's rows, then up's, one stream a task), 8 Qwen2.5-0.5B
// layers' FFNs in BenchmarkFFNDecode; the SwiGLU pass it saves is about a
// microsecond (4864 values in L1/L2). Nor the group's own tasks doing the
// SwiGLU and down's quantization of each block of 32 rows as its gate
// and up rows complete (a counter a block): 2-3% slower than the serial
// passes at 1 thread (per-block calls and atomics), not measurable at 2
// threads on the shared machine (load 6-7).

// ffnOp is the op type of a fused feed-forward block (domain
// blockquant.Domain): inputs X, gate's and up's B (the group's members in
// their order), then down's B and the residual where taken; one output.
const ffnOp = "BlockQuantFFN"

// ffnOn turns the fusion on for graphs compiled from now on
// (SWITCHYARD_NATIVE_FFN=0 turns it off, for measurements; tests compare
// both).
var ffnOn = os.Getenv("SWITCHYARD_NATIVE_FFN") != "0"

// ffnPlan is what fuseFFN took over after a group: its SwiGLU (gate: the
// member the SwiGLU gates), down and the residual Add (nil where not
// taken; resid is the Add's other operand's index).
type ffnPlan struct {
	swiglu *graph.Node
	gate   int
	down   *graph.Node
	add    *graph.Node
	resid  int
}

// fuseFFN returns g with each group of two members (no bias) that a
// SwiGLU alone reads replaced by one ffnOp node (with down and the
// residual Add where they fit), at the place of the last node it took
// (everything it reads is defined there, and nothing reads what it took
// in between). g's nodes are not modified.
func fuseFFN(sg *hal.Subgraph, g *graph.Graph, fused map[*graph.Node]*fusion) *graph.Graph {
	if !ffnOn {
		return g
	}
	readers := nodeReaders(g)
	isOut := map[string]bool{}
	for _, o := range g.Outputs {
		isOut[o.Name] = true
	}
	// only is the single reader of v, when nothing else sees it
	only := func(v string) *graph.Node {
		if isOut[v] || len(readers[v]) != 1 {
			return nil
		}
		return readers[v][0]
	}
	dropped := map[*graph.Node]bool{}
	at := map[*graph.Node]*graph.Node{}
	for _, c := range g.Nodes {
		f := fused[c]
		if f == nil || f.bqs == nil || len(c.Outputs) != 2 || f.bqs.bias[0] != nil || f.bqs.bias[1] != nil {
			continue
		}
		ms := f.bqs.nodes
		if ms[0].AttrInt("N", 0) != ms[1].AttrInt("N", 1) {
			continue
		}
		sw := only(c.Outputs[0])
		if sw == nil || only(c.Outputs[1]) != sw || sw.OpType != blockquant.SwiGLUOpType || sw.Domain != blockquant.Domain ||
			len(sw.Inputs) != 2 || len(sw.Outputs) != 1 || fused[sw] != nil || check(sg, sw) != "" {
			continue
		}
		p := &ffnPlan{swiglu: sw}
		switch {
		case sw.Inputs[0] == c.Outputs[0] && sw.Inputs[1] == c.Outputs[1]:
		case sw.Inputs[0] == c.Outputs[1] && sw.Inputs[1] == c.Outputs[0]:
			p.gate = 1
		default:
			continue
		}
		last := sw
		ins := []string{c.Inputs[0], c.Inputs[1], c.Inputs[2]}
		labels := []string{sw.Label()}
		if d := only(sw.Outputs[0]); d != nil && d.Inputs[0] == sw.Outputs[0] && bqGroupMember(sg, d, fused) &&
			d.AttrInt("K", 0) == ms[0].AttrInt("N", 0) {
			p.down, last = d, d
			ins = append(ins, d.Inputs[1])
			labels = append(labels, d.Label())
			if add, r := ffnResidual(sg, d, only(d.Outputs[0]), fused); add != nil {
				p.add, p.resid, last = add, r, add
				ins = append(ins, add.Inputs[r])
				labels = append(labels, add.Label())
			}
		}
		n := &graph.Node{Name: c.Name, OpType: ffnOp, Domain: blockquant.Domain, Inputs: ins, Outputs: []string{last.Outputs[0]}}
		plan := *f.bqs
		plan.ffn = p
		fused[n] = &fusion{bqs: &plan, nodes: append(append([]string{}, f.nodes...), labels...)}
		delete(fused, c)
		dropped[c], dropped[sw] = true, true
		if p.down != nil {
			dropped[p.down] = true
		}
		if p.add != nil {
			dropped[p.add] = true
		}
		at[last] = n
	}
	if len(at) == 0 {
		return g
	}
	return replaceNodes(g, at, dropped)
}

// ffnResidual is add (and its other operand's index) when it is an Add
// of down's output and another value, else nil. The kernel adds in place
// where the other value is float32 of down's output's shape and runs the
// reference Add otherwise.
func ffnResidual(sg *hal.Subgraph, down, add *graph.Node, fused map[*graph.Node]*fusion) (*graph.Node, int) {
	if add == nil || add.OpType != "Add" || add.Domain != "" || len(add.Inputs) != 2 || len(add.Outputs) != 1 ||
		fused[add] != nil || check(sg, add) != "" {
		return nil, 0
	}
	y := down.Outputs[0]
	r := 1
	if add.Inputs[1] == y {
		r = 0
	}
	if add.Inputs[1-r] != y || add.Inputs[r] == y || add.Inputs[r] == "" {
		return nil, 0
	}
	return add, r
}

// ffn is a compiled ffnOp node.
type ffn struct {
	pool *pool
	g    *bqGroup   // gate and up
	gate int        // g's member that is the gate
	down *bqWeights // nil: the node ends at the SwiGLU
	add  *residAdd  // the residual Add (fuse2_resid.go), nil none
	norm *normPlan  // the RMSNorm before it (fuse2_norm.go), nil none
}

// buildFFN compiles an ffnOp node: the group as its node is, then down
// as its node is, both in decode's prefetch chain in this order (as
// apart).
func buildFFN(bc *buildCtx, p *bqGroupPlan) (kernels.Func, error) {
	g, err := newBQGroup(bc, p, true)
	if err != nil {
		return nil, err
	}
	f := &ffn{pool: bc.pool, g: g, gate: p.ffn.gate, norm: p.norm}
	if d := p.ffn.down; d != nil {
		w, err := bc.productWeights(d, nil)
		if err != nil {
			return nil, err
		}
		if w.k != g.ws[0].n {
			return nil, fmt.Errorf("%s: down's K %d, gate's N %d", ffnOp, w.k, g.ws[0].n)
		}
		f.down = w
		if p.ffn.add != nil {
			if f.add, err = newResidAdd(bc, p.ffn.resid); err != nil {
				return nil, fmt.Errorf("%s: %v", ffnOp, err)
			}
		}
	}
	return f.run, nil
}

// run is the node's kernel: the parts one after another as their nodes
// would run them, their intermediate values in buffers of the run.
func (f *ffn) run(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	g := f.g
	a, err := f.norm.normed(ctx, in[0], g.ws[0].k) // fuse2_norm.go
	if err != nil {
		return nil, err
	}
	if f.norm != nil {
		defer ctx.Release(a)
	}
	var parts [2]*graph.Tensor
	var ys [bqGroupMax][]float32
	for i, w := range g.ws {
		y, err := bqMatMulOut(ctx, a, w.k, w.n)
		if err != nil {
			return nil, err
		}
		parts[i], ys[i] = y, f32(y)
	}
	m := a.Len() / g.ws[0].k
	g.run(f.pool, f32(a), ys, m)
	h, err := ctx.NewUninit(graph.Float32, parts[0].Shape)
	if err != nil {
		return nil, err
	}
	swigluRows(f32(h), ys[f.gate], ys[1-f.gate])
	ctx.Release(parts[0])
	ctx.Release(parts[1])
	if f.down == nil {
		return ctx.Outputs(h), nil
	}
	d := f.down
	y, err := bqMatMulOut(ctx, h, d.k, d.n)
	if err != nil {
		return nil, err
	}
	d.run(f.pool, f32(h), f32(y), m)
	ctx.Release(h)
	if f.add == nil {
		return ctx.Outputs(y), nil
	}
	return f.add.apply(ctx, node, y, in[len(in)-1])
}

// swigluRows writes silu(a[i])·b[i] into y[i] as swigluKernel does (each
// value's bits do not depend on where it is in the row).
func swigluRows(y, a, b []float32) {
	d := swiglu16(y, a, b)
	blockquant.SwiGLU(y[d:], a[d:], b[d:])
}
