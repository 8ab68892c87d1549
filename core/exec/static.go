package exec

import (
	"sync/atomic"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// Static shapes: when Compile (Options.Types) or SimplifyTyped knows the
// inferred type of the values of the main graph, two things are done at
// load instead of on every run:
//
//   - Shape and Size of a value of static shape are constants, folded
//     with everything computed from them alone (the Gather, Concat,
//     Unsqueeze, Cast … of shape arithmetic), and
//   - a data-movement node (Reshape, Squeeze, Slice, Gather with constant
//     indices, Concat, Split, Transpose, Expand, …) whose data inputs have
//     static shapes and whose other inputs are constants gets a move plan:
//     its reference kernel is run once at load on tensors of element
//     indices, and the result, compressed into runs of contiguous
//     elements, is what the node copies on every run (byte copies, any
//     dtype but string). A run whose inputs do not have the planned shapes
//     (or dtype) takes the reference kernel, so a plan never changes a
//     result.

// staticOf is the shape of value name when types gives it one with every
// dim static.
func staticOf(types map[string]graph.ValueType, name string) ([]int, bool) {
	t, ok := types[name]
	if !ok || t.Shape == nil {
		return nil, false
	}
	return t.Shape.Ints()
}

// shapeConstant is the value of a Shape or Size node whose input has a
// static shape (nil when n is neither or the shape is not static).
func shapeConstant(n *graph.Node, opset int64, types map[string]graph.ValueType) *graph.Tensor {
	if types == nil || n.Domain != "" || len(n.Inputs) != 1 || len(n.Outputs) != 1 || n.Outputs[0] == "" {
		return nil
	}
	dims, ok := staticOf(types, n.Inputs[0])
	if !ok {
		return nil
	}
	switch n.OpType {
	case "Size":
		size := int64(1)
		for _, d := range dims {
			size *= int64(d)
		}
		return graph.MustFromSlice([]int{}, []int64{size})
	case "Shape":
		r := int64(len(dims))
		start, end := int64(0), r
		if opset >= 15 {
			start, end = n.AttrInt("start", 0), n.AttrInt("end", r)
		}
		clamp := func(v int64) int64 {
			if v < 0 {
				v += r
			}
			return min(max(v, 0), r)
		}
		start, end = clamp(start), clamp(end)
		out := []int64{}
		for i := start; i < end; i++ {
			out = append(out, int64(dims[i]))
		}
		return graph.MustFromSlice([]int{len(out)}, out)
	}
	return nil
}

// moveOps are the data-movement ops a move plan can stand for, with
// which inputs are data (all: -1; else the data input's index): the
// others must be constants.
var moveOps = map[string]int{
	"Reshape": 0, "Flatten": 0, "Squeeze": 0, "Unsqueeze": 0, "Identity": 0, "Dropout": 0,
	"Slice": 0, "Gather": 0, "Expand": 0, "Transpose": 0, "Tile": 0, "Split": 0,
	"DepthToSpace": 0, "SpaceToDepth": 0, "Concat": -1,
}

// maxMoveElems bounds the elements a move plan is built for (the index
// tensors are evaluated at load).
const maxMoveElems = 1 << 20

// moveRun copies n elements of data input src from srcOff to dstOff.
type moveRun struct{ src, srcOff, dstOff, n int }

type moveOut struct {
	shape []int
	runs  []moveRun
}

// movePlan is a data-movement node's precomputed copies.
type movePlan struct {
	data   []int   // the node's data inputs
	shapes [][]int // their planned shapes
	outs   []moveOut
	ref    kernels.Func
}

// planMove builds the move plan of n, nil when it has none (not a
// data-movement op, a data input of unknown shape, a non-data input that
// is not a constant, or a plan that would copy too many short runs).
func (m *Program) planMove(n *graph.Node, opset int64, types map[string]graph.ValueType, constant func(string) (*graph.Tensor, bool)) *movePlan {
	which, ok := moveOps[n.OpType]
	if !ok || !movable(n) {
		return nil
	}
	shapes := make([][]int, len(n.Inputs))
	consts := make([]*graph.Tensor, len(n.Inputs))
	for i, name := range n.Inputs {
		if name == "" {
			continue
		}
		if which == -1 || i == which {
			t, ok := types[name]
			dims, static := staticOf(types, name)
			if !ok || !static || t.DType == graph.String {
				return nil
			}
			shapes[i] = dims
			continue
		}
		c, ok := constant(name)
		if !ok {
			return nil
		}
		consts[i] = c
	}
	return buildMove(n, opset, shapes, consts)
}

// movable: a data-movement op of the default domain without nested
// graphs, of one output for Dropout.
func movable(n *graph.Node) bool {
	if _, ok := moveOps[n.OpType]; !ok || n.Domain != "" || len(n.Outputs) == 0 {
		return false
	}
	if len(n.Subgraphs()) > 0 {
		return false
	}
	return n.OpType != "Dropout" || len(n.Outputs) == 1
}

// buildMove builds n's move plan for data inputs of shapes (by input
// index; nil for the others) and the other inputs' values consts.
func buildMove(n *graph.Node, opset int64, shapes [][]int, consts []*graph.Tensor) *movePlan {
	s, _ := kernels.Lookup(n.Domain, n.OpType)
	if s == nil {
		return nil
	}
	ins := make([]*graph.Tensor, len(n.Inputs))
	plan := &movePlan{ref: s.Kernel}
	base := []int{}
	total := 0
	for i := range n.Inputs {
		if i < len(shapes) && shapes[i] != nil {
			dims := shapes[i]
			count, err := graph.NumElements(dims)
			if err != nil || total+count > maxMoveElems {
				return nil
			}
			idx := make([]int64, count)
			for k := range idx {
				idx[k] = int64(total + k)
			}
			ins[i] = graph.MustFromSlice(append([]int{}, dims...), idx)
			plan.data = append(plan.data, i)
			plan.shapes = append(plan.shapes, ins[i].Shape)
			base = append(base, total)
			total += count
			continue
		}
		if i < len(consts) {
			ins[i] = consts[i]
		}
	}
	if len(plan.data) == 0 {
		return nil
	}
	outs, err := safeKernel(s, n, opset, ins)
	if err != nil || len(outs) < len(n.Outputs) {
		return nil
	}
	runs, elems := 0, 0
	for j, name := range n.Outputs {
		o := outs[j]
		if name == "" {
			plan.outs = append(plan.outs, moveOut{})
			continue
		}
		if o == nil || o.DType != graph.Int64 || o.Check() != nil || o.Len() > maxMoveElems {
			return nil
		}
		mo := moveOut{shape: append([]int{}, o.Shape...)}
		for k, v := range o.Data.([]int64) {
			src := 0
			for src+1 < len(base) && int(v) >= base[src+1] {
				src++
			}
			off := int(v) - base[src]
			if r := len(mo.runs) - 1; r >= 0 && mo.runs[r].src == src && mo.runs[r].srcOff+mo.runs[r].n == off && mo.runs[r].dstOff+mo.runs[r].n == k {
				mo.runs[r].n++
				continue
			}
			mo.runs = append(mo.runs, moveRun{src: src, srcOff: off, dstOff: k, n: 1})
		}
		runs += len(mo.runs)
		elems += o.Len()
		plan.outs = append(plan.outs, mo)
	}
	if runs > 64 && runs*8 > elems {
		return nil // element-wise gathers: the reference kernel does as well
	}
	return plan
}

// kernel is the plan as a kernel: the planned copies when the data
// inputs have the planned shapes and one dtype, else the reference kernel.
func (p *movePlan) kernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	var dt graph.DType
	for k, i := range p.data {
		x := kernels.Input(in, i)
		if x == nil || x.DType == graph.String || !graph.SameShape(x.Shape, p.shapes[k]) || k > 0 && x.DType != dt || x.Check() != nil {
			return p.ref(ctx, n, in)
		}
		dt = x.DType
	}
	size := dt.Size()
	outs := ctx.OutputSlice(len(p.outs))
	for j, o := range p.outs {
		if o.shape == nil {
			continue
		}
		y, err := ctx.NewUninit(dt, o.shape)
		if err != nil {
			return nil, err
		}
		dst, _ := graph.RawBytes(y)
		for _, r := range o.runs {
			src, _ := graph.RawBytes(in[p.data[r.src]])
			copy(dst[r.dstOff*size:(r.dstOff+r.n)*size], src[r.srcOff*size:(r.srcOff+r.n)*size])
		}
		outs[j] = y
	}
	return outs, nil
}

// planMoves gives the data-movement nodes of the main graph's order their
// move plans (m.moves); consts are the folded values.
func (m *Program) planMoves(order []*graph.Node, g *graph.Graph, consts map[string]*graph.Tensor, types map[string]graph.ValueType) {
	overridable := map[string]bool{}
	for _, in := range g.Inputs {
		overridable[in.Name] = true
	}
	constant := func(name string) (*graph.Tensor, bool) {
		if overridable[name] {
			return nil, false
		}
		if t, ok := consts[name]; ok {
			return t, true
		}
		t, ok := g.Initializers[name]
		return t, ok
	}
	isOutput := map[string]bool{}
	for _, o := range g.Outputs {
		isOutput[o.Name] = true
	}
	for _, n := range order {
		if _, over := m.overrides[n]; over || viewable(n, isOutput) {
			continue // views copy nothing: no plan
		}
		if p := m.planMove(n, m.opset(n.Domain), types, constant); p != nil {
			m.moves[n] = p.kernel
			continue
		}
		if movable(n) {
			if s, _ := kernels.Lookup(n.Domain, n.OpType); s != nil {
				d := &dynMove{n: n, which: moveOps[n.OpType], ref: s.Kernel}
				m.moves[n] = d.kernel
			}
		}
	}
}

// maxKeyElems bounds the elements of a non-data input a dynamic move plan
// is keyed on (shapes, axes, indices: small).
const maxKeyElems = 16

// dynMove is a data-movement node whose shapes are known only at run
// time: its plan is built for the shapes and non-data input values of a
// call once a second call in a row has them (so a node whose shapes
// change on every run, as a decoder's attention over its growing cache
// does, keeps the reference kernel and builds nothing), and used while
// calls keep them.
type dynMove struct {
	n     *graph.Node
	which int // moveOps
	ref   kernels.Func
	// last holds the two latest keys, each with its plan once built (a
	// decoder's steps of one token and of a few alternate)
	last [2]atomic.Pointer[dynPlan]
	// misses counts calls in a row whose key was neither: past
	// maxMisses the node is taken to change on every run and keys no more
	misses atomic.Int32
}

// maxMisses is how many calls in a row may miss before a node's dynamic
// plan gives up.
const maxMisses = 8

// dynPlan is a call's key (data shapes, non-data values) and its plan.
type dynPlan struct {
	shapes [][]int
	consts []*graph.Tensor
	plan   *movePlan // nil: seen once, not built yet (or no plan)
	built  bool
}

func (d *dynPlan) matches(which int, in []*graph.Tensor) bool {
	if len(in) != len(d.shapes) {
		return false
	}
	for i, x := range in {
		if which == -1 || i == which {
			if x == nil || d.shapes[i] == nil || !graph.SameShape(x.Shape, d.shapes[i]) {
				return false
			}
			continue
		}
		c := d.consts[i]
		if (x == nil) != (c == nil) {
			return false
		}
		if x != nil && !sameInts(x, c) {
			return false
		}
	}
	return true
}

// sameInts: two small integer tensors of one dtype, shape and contents.
func sameInts(a, b *graph.Tensor) bool {
	if a.DType != b.DType || !graph.SameShape(a.Shape, b.Shape) {
		return false
	}
	x, okx := graph.RawBytes(a)
	y, oky := graph.RawBytes(b)
	return okx && oky && string(x) == string(y)
}

func (d *dynMove) kernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	if d.misses.Load() >= maxMisses {
		return d.ref(ctx, n, in)
	}
	for i := range d.last {
		cur := d.last[i].Load()
		if cur == nil || !cur.matches(d.which, in) {
			continue
		}
		d.misses.Store(0)
		if cur.built {
			if cur.plan != nil {
				return cur.plan.kernel(ctx, n, in)
			}
			return d.ref(ctx, n, in)
		}
		next := &dynPlan{shapes: cur.shapes, consts: cur.consts, built: true}
		next.plan = buildMove(d.n, ctx.Opset, cur.shapes, cur.consts)
		d.last[i].Store(next)
		if next.plan != nil {
			return next.plan.kernel(ctx, n, in)
		}
		return d.ref(ctx, n, in)
	}
	d.misses.Add(1)
	if k := d.key(in); k != nil {
		// the older key gives way
		d.last[1].Store(d.last[0].Load())
		d.last[0].Store(k)
	}
	return d.ref(ctx, n, in)
}

// key is a call's key (nil when it cannot have a plan: a string or large
// non-data input, a data input of strings).
func (d *dynMove) key(in []*graph.Tensor) *dynPlan {
	k := &dynPlan{shapes: make([][]int, len(in)), consts: make([]*graph.Tensor, len(in))}
	for i, x := range in {
		if x == nil {
			continue
		}
		if d.which == -1 || i == d.which {
			if x.DType == graph.String {
				return nil
			}
			k.shapes[i] = append([]int{}, x.Shape...)
			continue
		}
		if x.DType == graph.String || x.Len() > maxKeyElems || x.Check() != nil {
			return nil
		}
		k.consts[i] = x.Clone()
	}
	return k
}

// viewNode runs a node whose output may be a view of its input
// (plan.view) without allocating in steady state: the reference kernel
// (which returns a view, kernels.Context.View) works out the output shape
// once for an input shape and non-data inputs (a Reshape's target, a
// Squeeze's axes), and calls with the same ones reuse it.
type viewNode struct {
	ref  kernels.Func
	last [2]atomic.Pointer[viewKey] // the two latest keys (shapes that alternate)
}

// viewKey is a call's data shape and non-data inputs, with the output
// shape they give.
type viewKey struct {
	in     []int
	consts []*graph.Tensor
	out    []int
}

func (v *viewNode) kernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	for i := range v.last {
		if k := v.last[i].Load(); k != nil && x != nil && graph.SameShape(x.Shape, k.in) && k.same(in[1:]) {
			if t := ctx.View(x, k.out); t != nil {
				outs := ctx.OutputSlice(1)
				outs[0] = t
				return outs, nil
			}
		}
	}
	outs, err := v.ref(ctx, n, in)
	if err != nil || len(outs) != 1 || outs[0] == nil || x == nil {
		return outs, err
	}
	k := &viewKey{in: append([]int{}, x.Shape...), out: append([]int{}, outs[0].Shape...), consts: make([]*graph.Tensor, len(in)-1)}
	for i, c := range in[1:] {
		if c == nil {
			continue
		}
		if c.DType == graph.String || c.Len() > maxKeyElems || c.Check() != nil {
			return outs, nil // not keyed: the reference kernel every time
		}
		k.consts[i] = c.Clone()
	}
	v.last[1].Store(v.last[0].Load())
	v.last[0].Store(k)
	return outs, nil
}

// same says whether the non-data inputs are the key's.
func (k *viewKey) same(in []*graph.Tensor) bool {
	if len(in) != len(k.consts) {
		return false
	}
	for i, x := range in {
		c := k.consts[i]
		if (x == nil) != (c == nil) || x != nil && !sameInts(x, c) {
			return false
		}
	}
	return true
}
