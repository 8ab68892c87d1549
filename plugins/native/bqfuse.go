package native

import (
	"fmt"
	"sync"

	"github.com/switchyard-hal/switchyard/core/ggml"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/core/kernels/blockquant"
	"github.com/switchyard-hal/switchyard/hal"
)

// Sibling BlockQuantMatMuls: a decoder layer's Q, K and V projections
// (and its gate and up) are typed BlockQuantMatMuls reading one input.
// Compile runs each such set as one node (bqGroupOp): the activation row
// is quantized once for all of them (once a quantization form: blocks of
// 32, super-blocks of 256) and one parallel dispatch covers the union of
// their rows, so a decode step waits at one barrier where it waited at
// three. Each weight keeps its own bytes, type and kernel, and each
// output gets the same bits as its own node's (the same kernel on the
// same quantized activations). A bias Add of a constant row after a
// member (Qwen2's Q, K and V biases) is taken into the group as well:
// the task adds it to the rows it computed, y + b in float32 as the Add.
//
// Prefill's products (more than one activation row) run each member as
// its own node would (its GEMM tiles), one after another.

// bqGroupOp is the op type of a group of sibling BlockQuantMatMuls
// (domain blockquant.Domain): inputs A, the members' B, then their bias
// rows ("" where none); one output a member.
const bqGroupOp = "BlockQuantMatMulGroup"

// bqGroupMax is the most members a group takes.
const bqGroupMax = 4

// bqGroupPlan is what fuseBQGroups found: the member nodes as they were
// and each one's bias row (nil where none).
type bqGroupPlan struct {
	nodes []*graph.Node
	bias  []*graph.Tensor
	// ffn: the SwiGLU (and down product, residual Add) after a gate
	// and up group that the node took over (fuse2_ffn.go), nil none
	ffn *ffnPlan
	// norm: the RMSNorm before it that the node took over
	// (fuse2_norm.go), nil none
	norm *normPlan
	// resid: a lone product's residual Add (fuse2_resid.go), nil none
	resid *residPlan
}

// bqGroupMember says n is a BlockQuantMatMul a group can take: a
// weight in ggml's block layout (not f16/f32), no fusion of its own.
func bqGroupMember(sg *hal.Subgraph, n *graph.Node, fused map[*graph.Node]*fusion) bool {
	if !bqDomainOK(n) || fused[n] != nil || len(n.Inputs) != 2 || len(n.Outputs) != 1 || n.Inputs[0] == "" {
		return false
	}
	t, ok := ggml.ParseType(n.AttrString("type", ""))
	return ok && t.Quantized() && constInput(sg, n, 1) != nil
}

// bqBiasAdd is the Add that is the only reader of member n's output when
// it adds a constant float32 row of n's N values (either operand order),
// with that row; else nil.
func bqBiasAdd(sg *hal.Subgraph, n *graph.Node, readers map[string][]*graph.Node, isOut map[string]bool, fused map[*graph.Node]*fusion) (*graph.Node, *graph.Tensor) {
	y := n.Outputs[0]
	if isOut[y] || len(readers[y]) != 1 {
		return nil, nil
	}
	r := readers[y][0]
	if r.OpType != "Add" || r.Domain != "" || len(r.Inputs) != 2 || len(r.Outputs) != 1 || fused[r] != nil || check(sg, r) != "" {
		return nil, nil
	}
	other := 1
	if r.Inputs[1] == y {
		other = 0
	}
	if r.Inputs[1-other] != y || r.Inputs[other] == y {
		return nil, nil
	}
	b := constInput(sg, r, other)
	if b == nil || b.DType != graph.Float32 || len(b.Shape) != 1 || b.Shape[0] != int(n.AttrInt("N", 0)) {
		return nil, nil
	}
	return r, b
}

// fuseBQGroups returns g with each set of two or more sibling
// BlockQuantMatMuls (bqGroupMember, one input) replaced by one bqGroupOp
// node at the place of the first, recording its plan in fused. g's node
// list is replaced; its nodes are not modified.
func fuseBQGroups(sg *hal.Subgraph, g *graph.Graph, fused map[*graph.Node]*fusion) (ret *graph.Graph) {
	// then the feed-forward blocks, residual Adds and norms (fuse2_*.go)
	defer func() { ret = fuseNorms(sg, fuseResidAdds(sg, fuseFFN(sg, ret, fused), fused), fused) }()
	byInput := map[string][]*graph.Node{}
	var inputs []string
	for _, n := range g.Nodes {
		if bqGroupMember(sg, n, fused) {
			x := n.Inputs[0]
			if len(byInput[x]) == 0 {
				inputs = append(inputs, x)
			}
			if len(byInput[x]) < bqGroupMax {
				byInput[x] = append(byInput[x], n)
			}
		}
	}
	readers := nodeReaders(g)
	isOut := map[string]bool{}
	for _, o := range g.Outputs {
		isOut[o.Name] = true
	}
	dropped := map[*graph.Node]bool{}
	at := map[*graph.Node]*graph.Node{}
	for _, x := range inputs {
		ms := byInput[x]
		if len(ms) < 2 {
			continue
		}
		p := &bqGroupPlan{nodes: ms, bias: make([]*graph.Tensor, len(ms))}
		c := &graph.Node{Name: ms[0].Name, OpType: bqGroupOp, Domain: blockquant.Domain, Inputs: []string{x}}
		f := &fusion{bqs: p}
		biasIn := make([]string, len(ms))
		for i, n := range ms {
			c.Inputs = append(c.Inputs, n.Inputs[1])
			out := n.Outputs[0]
			if add, b := bqBiasAdd(sg, n, readers, isOut, fused); add != nil {
				p.bias[i], out = b, add.Outputs[0]
				biasIn[i] = add.Inputs[0]
				if biasIn[i] == n.Outputs[0] {
					biasIn[i] = add.Inputs[1]
				}
				dropped[add] = true
				f.nodes = append(f.nodes, add.Label())
			}
			c.Outputs = append(c.Outputs, out)
			if i > 0 {
				dropped[n] = true
				f.nodes = append(f.nodes, n.Label())
			}
		}
		c.Inputs = append(c.Inputs, biasIn...)
		fused[c] = f
		at[ms[0]] = c
	}
	if len(at) == 0 {
		return g
	}
	return replaceNodes(g, at, dropped)
}

// bqGroup is a compiled group: its members' weights (each with its own
// kernel) and bias rows.
type bqGroup struct {
	ws   []*bqWeights
	bias [][]float32
	// ab is each member's activation form: 0 blocks of 32, 1 the K
	// types' super-blocks (ggml.ActBlock)
	ab      []int
	intPath bool // every member takes the integer path
	acts    sync.Pool
	pfl     *pfLink // decode's weight prefetch (bw_prefetch.go)
}

// bqGroupActs are one call's quantized activations, a form each.
type bqGroupActs [2]ggml.Act

// buildBQGroup compiles a group's node.
func buildBQGroup(bc *buildCtx, p *bqGroupPlan) (kernels.Func, error) {
	if p.ffn != nil {
		return buildFFN(bc, p) // fuse2_ffn.go
	}
	if p.resid != nil {
		return buildResid(bc, p) // fuse2_resid.go
	}
	g, err := newBQGroup(bc, p, true)
	if err != nil {
		return nil, err
	}
	k := g.ws[0].k
	return func(ctx *kernels.Context, node *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		a, err := p.norm.normed(ctx, in[0], k) // fuse2_norm.go
		if err != nil {
			return nil, err
		}
		if p.norm != nil {
			defer ctx.Release(a)
		}
		outs := ctx.OutputSlice(len(g.ws))
		var ys [bqGroupMax][]float32 // by value into the job: no allocation
		for i, w := range g.ws {
			y, err := bqMatMulOut(ctx, a, w.k, w.n)
			if err != nil {
				return nil, err
			}
			outs[i], ys[i] = y, f32(y)
		}
		g.run(bc.pool, f32(a), ys, a.Len()/k)
		return outs, nil
	}, nil
}

// newBQGroup compiles a group's weights; link: into decode's prefetch
// chain (bw_prefetch.go) in member order (a caller that runs the rows in
// another order links them itself).
func newBQGroup(bc *buildCtx, p *bqGroupPlan, link bool) (*bqGroup, error) {
	g := &bqGroup{intPath: bc.precision == hal.PrecisionInt8}
	g.acts.New = func() any { return new(bqGroupActs) }
	k := -1
	for i, n := range p.nodes {
		w, err := newBQWeights(n, constInput(bc.sg, n, 1), nil)
		if err != nil {
			return nil, err
		}
		if k >= 0 && w.k != k {
			return nil, fmt.Errorf("BlockQuantMatMul group: K %d and %d differ", k, w.k)
		}
		k = w.k
		bc.bqPrecision(n, w)
		g.intPath = g.intPath && w.gk != nil
		g.ws = append(g.ws, w)
		ab := 0
		if ggml.ActBlock(w.typ) != 32 {
			ab = 1
		}
		g.ab = append(g.ab, ab)
		var b []float32
		if p.bias[i] != nil {
			b = f32(p.bias[i])
		}
		g.bias = append(g.bias, b)
	}
	if g.intPath && link {
		raws := make([][]byte, len(g.ws))
		for i, w := range g.ws {
			raws[i] = w.raw
		}
		g.pfl = bc.pf.link(g.ws[0].intTaskRows(bc.pool, 1)*g.ws[0].rb, raws...)
	}
	return g, nil
}

// bqGroupJob is one group call's arguments for parallelFor. The tasks
// are each member's, member after member, of per[i] rows; end[i] is the
// number of tasks of members 0..i. (The last member's last tasks were
// once split finer so that the loop ended on small tasks: the gate+up
// loop of Qwen2.5-0.5B Q4_0 at 2 threads ran 4-7% faster without that
// split, as single products' loops did — more task starts cost more
// than the shorter tail saves.)
type bqGroupJob struct {
	g    *bqGroup
	acts *bqGroupActs
	ys   [bqGroupMax][]float32
	per  [bqGroupMax]int
	end  [bqGroupMax]int
	m    int
}

// run computes each member's y [m, n] = x [m, k] · Wᵀ (+ bias).
func (g *bqGroup) run(p *pool, x []float32, ys [bqGroupMax][]float32, m int) {
	p.prefetchNext(decodeLink(g.pfl, m)) // bw_prefetch.go
	if m > 1 && g.runFewGroup(p, x, ys, m) {
		return // a batched decode step's rows in one loop (srv4_fewgroup_amd64.go)
	}
	if !g.intPath || m != 1 {
		for i, w := range g.ws {
			w.run(p, x, ys[i], m)
			if b := g.bias[i]; b != nil {
				for r := 0; r < m; r++ {
					addRow(ys[i][r*w.n:(r+1)*w.n], b)
				}
			}
		}
		return
	}
	acts := g.acts.Get().(*bqGroupActs)
	defer g.acts.Put(acts)
	var done [2]bool
	j := bqGroupJob{g: g, acts: acts, ys: ys, m: m}
	tasks := 0
	for i, w := range g.ws {
		if ab := g.ab[i]; !done[ab] {
			quantizeGGMLAct(&acts[ab], x, m, w.k, ggml.ActBlock(w.typ))
			done[ab] = true
		}
		per := w.intTaskRows(p, m)
		j.per[i] = per
		tasks += (w.n + per - 1) / per
		j.end[i] = tasks
	}
	parallelFor(p, tasks, j, func(j bqGroupJob, t int) {
		i, first := groupMember(&j.end, t)
		w, per := j.g.ws[i], j.per[i]
		n0 := (t - first) * per
		n1 := min(w.n, n0+per)
		y := j.ys[i]
		w.intRows(&j.acts[j.g.ab[i]], y, j.m, n0, n1)
		addBiasRows(y, j.g.bias[i], j.m, w.n, n0, n1)
	})
}

// groupMember is the member of a group loop that task t belongs to
// (end: each member's tasks end there, cumulative) and its first task.
func groupMember(end *[bqGroupMax]int, t int) (i, first int) {
	for t >= end[i] {
		first = end[i]
		i++
	}
	return i, first
}

// addBiasRows adds bias b (nil: none) to columns n0..n1 of each of the m
// rows of n of y.
func addBiasRows(y, b []float32, m, n, n0, n1 int) {
	if b == nil {
		return
	}
	for r := 0; r < m; r++ {
		addRow(y[r*n+n0:r*n+n1], b[n0:n1])
	}
}

// addRow adds b to y element by element (float32, as an Add node).
func addRow(y, b []float32) {
	b = b[:len(y)]
	for i := range y {
		y[i] += b[i]
	}
}

// nodeReaders is each value of g's nodes' readers (subgraph reads
// included), in node order.
func nodeReaders(g *graph.Graph) map[string][]*graph.Node {
	readers := map[string][]*graph.Node{}
	for _, n := range g.Nodes {
		for _, in := range nodeReadsAll(n) {
			if in != "" {
				readers[in] = append(readers[in], n)
			}
		}
	}
	return readers
}

// replaceNodes is g with each node n where at[n] is set replaced by it
// and each other dropped node left out (g itself is not modified).
func replaceNodes(g *graph.Graph, at map[*graph.Node]*graph.Node, dropped map[*graph.Node]bool) *graph.Graph {
	out := *g
	out.Nodes = make([]*graph.Node, 0, len(g.Nodes))
	for _, n := range g.Nodes {
		switch {
		case at[n] != nil:
			out.Nodes = append(out.Nodes, at[n])
		case !dropped[n]:
			out.Nodes = append(out.Nodes, n)
		}
	}
	return &out
}
