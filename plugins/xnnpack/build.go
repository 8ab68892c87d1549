package xnnpack

import (
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

// A partition is lowered, for concrete input shapes, into a plan: a list of
// stages, each an XNNPACK runtime or (rarely) a Go step that XNNPACK of this
// version cannot do (a general Concat, a layout change that is not a
// reshape). Values keep the graph's logical (NCHW) shape and carry a
// physical layout: perm maps physical dims to logical ones (physical[i] =
// logical[perm[i]]), nil meaning row-major as in the graph. Convolutions and pools produce NHWC;
// Transpose only relabels; partition inputs and outputs are converted once
// at the boundary.

var nhwc = []int{0, 2, 3, 1}

// tensor is one buffer XNNPACK sees, in physical dims.
type tensor struct {
	dims   []int
	static []float32 // constant data in physical order; nil when dynamic
	stage  int       // stage that writes it; -1 for partition inputs and statics
	slot   int       // external buffer, -1 when internal to one runtime
	view   *tensor   // re-views another tensor's buffer with other dims
	keep   bool      // needs a buffer (read by a later stage, an output, or viewed)
}

func (t *tensor) elems() int {
	n := 1
	for _, d := range t.dims {
		n *= d
	}
	return n
}

// val is a graph value during lowering.
type val struct {
	t     *tensor
	shape []int         // logical
	perm  []int         // physical layout; nil = identity
	konst *graph.Tensor // logical float32 data for constants
	alt   map[string]*tensor
}

// xop is one XNNPACK node.
type xop struct {
	kind string
	in   []*tensor // nil entries = absent (bias)
	out  *tensor
	u    []uint32
	f    []float32
	sz   []int
}

type stage struct {
	ops []*xop
	// nodes names the graph nodes the stage computes and opTypes their
	// ops, for profiles
	nodes, opTypes []string
	// Go step: reads and writes external buffers.
	goRun func(buf func(*tensor) []float32)
	goIn  []*tensor
	goOut *tensor
}

// binding ties a partition input or output to its buffer and layout.
type binding struct {
	t     *tensor // nil: the input is only used as a compile-time constant
	shape []int
	perm  []int
	// fill, when set, converts an input instead of a transpose to perm
	// (a gather of the input's only readers: spaceToDepth)
	fill func(dst, src []float32)
}

type plan struct {
	stages  []*stage
	tensors []*tensor
	inputs  []binding
	outputs []binding
	slots   []int // bytes per buffer
	threads int   // the executable's threads, which Go steps split their work over
}

// parallelMin is the fewest values a Go step splits over threads (a
// goroutine costs about a microsecond to start and join).
const parallelMin = 1 << 15

// parallel runs f over [0, n) in p.threads contiguous ranges, the first on
// the calling goroutine; work of size values below parallelMin (or one
// thread) runs as one range.
func (p *plan) parallel(n, size int, f func(lo, hi int)) {
	k := min(p.threads, n)
	if k < 2 || size < parallelMin {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	for i := 1; i < k; i++ {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			f(lo, hi)
		}(i*n/k, (i+1)*n/k)
	}
	f(0, n/k)
	wg.Wait()
}

type builder struct {
	sg      *graph.Graph
	opset   func(domain string) int64
	vals    map[string]*val
	consts  map[string]*graph.Tensor
	uses    map[string]int
	isOut   map[string]bool
	skip    map[*graph.Node]bool
	demand  map[string][]int
	p       *plan
	cur     int         // index of the open XNNPACK stage, -1 when none
	node1   *graph.Node // the graph node being lowered
	nodeErr func(n *graph.Node, format string, args ...any) error
}

// lower builds the plan for concrete input shapes; consts holds the
// subgraph's initializers and the captured constant inputs.
func lower(sg *graph.Graph, opsets []graph.Opset, shapes [][]int, consts map[string]*graph.Tensor) (*plan, error) {
	m := graph.Model{Opsets: opsets}
	b := &builder{sg: sg, opset: m.OpsetVersion, vals: map[string]*val{}, consts: consts, uses: map[string]int{}, isOut: map[string]bool{}, skip: map[*graph.Node]bool{}, demand: map[string][]int{}, p: &plan{}, cur: -1}
	b.nodeErr = func(n *graph.Node, format string, args ...any) error {
		return fmt.Errorf("xnnpack: node %s: %s", n.Label(), fmt.Sprintf(format, args...))
	}
	order, err := sg.TopoSort()
	if err != nil {
		return nil, err
	}
	for _, n := range order {
		for _, in := range n.Inputs {
			if in != "" {
				b.uses[in]++
			}
		}
	}
	for _, o := range sg.Outputs {
		b.isOut[o.Name] = true
	}
	b.computeDemand(order)
	s2d := b.findS2D(order)
	for name, t := range consts {
		b.vals[name] = b.constVal(t)
	}
	for i, in := range sg.Inputs {
		if _, ok := consts[in.Name]; ok {
			b.p.inputs = append(b.p.inputs, binding{shape: shapes[i]})
			continue
		}
		perm := b.demand[in.Name]
		if len(perm) != len(shapes[i]) {
			perm = nil
		}
		t := &tensor{dims: permute(shapes[i], perm), stage: -1, keep: true}
		b.p.tensors = append(b.p.tensors, t)
		b.vals[in.Name] = &val{t: t, shape: shapes[i], perm: perm}
		b.p.inputs = append(b.p.inputs, binding{t: t, shape: shapes[i], perm: perm})
	}
	for _, n := range order {
		if b.skip[n] {
			continue
		}
		if c := s2d[n]; c != nil {
			if err := b.lowerS2D(n, c); err != nil {
				return nil, err
			}
			continue
		}
		if err := b.node(n); err != nil {
			return nil, err
		}
	}
	for _, o := range sg.Outputs {
		v := b.vals[o.Name]
		if v == nil {
			return nil, fmt.Errorf("xnnpack: output %q is not produced", o.Name)
		}
		if v.t == nil || v.t.static != nil {
			return nil, fmt.Errorf("xnnpack: output %q is a constant", o.Name)
		}
		v.t.keep = true
		b.p.outputs = append(b.p.outputs, binding{t: v.t, shape: v.shape, perm: v.perm})
	}
	b.assignSlots()
	return b.p, nil
}

// computeDemand propagates, from the ops that want NHWC, the layout each
// value would best have, so partition inputs arrive in it.
func (b *builder) computeDemand(order []*graph.Node) {
	for i := len(order) - 1; i >= 0; i-- {
		n := order[i]
		out := ""
		if len(n.Outputs) > 0 {
			out = n.Outputs[0]
		}
		set := func(name string, p []int) {
			if name == "" || p == nil {
				return
			}
			if _, ok := b.demand[name]; !ok {
				b.demand[name] = p
			}
		}
		switch n.OpType {
		case "PRelu":
			if !b.preluLast(n) {
				set(n.Input(0), nhwc)
			}
		case "Conv", "ConvTranspose", "Resize", "Upsample", "MaxPool", "AveragePool", "GlobalAveragePool", "BatchNormalization", "DepthToSpace":
			set(n.Input(0), nhwc)
		case "Transpose":
			if p := b.demand[out]; p != nil {
				q := n.AttrInts("perm", nil)
				if len(q) == len(p) {
					in := make([]int, len(p))
					for k := range p {
						in[k] = int(q[p[k]])
					}
					set(n.Input(0), in)
				}
			}
		case "Concat":
			for _, in := range n.Inputs {
				set(in, b.demand[out])
			}
		default:
			if unaryOps[n.OpType] || binaryOps[n.OpType] || n.OpType == "Clip" || n.OpType == "LeakyRelu" || n.OpType == "Elu" || n.OpType == "HardSigmoid" || n.OpType == "Identity" || n.OpType == "Dropout" {
				for _, in := range n.Inputs {
					set(in, b.demand[out])
				}
			}
		}
	}
}

func (b *builder) constVal(t *graph.Tensor) *val {
	v := &val{shape: append([]int{}, t.Shape...), konst: t}
	if t.DType == graph.Float32 {
		v.t = &tensor{dims: append([]int{}, t.Shape...), static: graph.Data[float32](t), stage: -1, slot: -1}
	}
	return v
}

// stageFor returns the XNNPACK stage new ops go to.
func (b *builder) stageFor() int {
	if b.cur < 0 {
		b.p.stages = append(b.p.stages, &stage{})
		b.cur = len(b.p.stages) - 1
	}
	return b.cur
}

func (b *builder) newTensor(dims []int) *tensor {
	t := &tensor{dims: append([]int{}, dims...), stage: -2, slot: -1}
	b.p.tensors = append(b.p.tensors, t)
	return t
}

func (b *builder) add(x *xop) *tensor {
	s := b.stageFor()
	x.out.stage = s
	st := b.p.stages[s]
	st.ops = append(st.ops, x)
	st.noteNode(b.node1)
	return x.out
}

// noteNode records that the stage computes (part of) node n.
func (st *stage) noteNode(n *graph.Node) {
	if n == nil {
		return
	}
	name := n.Name
	if name == "" && len(n.Outputs) > 0 {
		name = n.Outputs[0]
	}
	if len(st.nodes) == 0 || st.nodes[len(st.nodes)-1] != name {
		st.nodes = append(st.nodes, name)
		st.opTypes = append(st.opTypes, n.OpType)
	}
}

func (b *builder) addGo(run func(buf func(*tensor) []float32), ins []*tensor, out *tensor) {
	for _, t := range ins {
		t.keep = true
	}
	out.keep = true
	st := &stage{goRun: run, goIn: ins, goOut: out}
	st.noteNode(b.node1)
	b.p.stages = append(b.p.stages, st)
	out.stage = len(b.p.stages) - 1
	b.cur = -1
}

// staticTensor makes a constant tensor in physical layout perm from a
// logical float32 constant.
func staticTensor(k *graph.Tensor, perm []int) *tensor {
	data := graph.Data[float32](k)
	if perm != nil {
		data = transposeData(data, k.Shape, nil, perm)
	}
	return &tensor{dims: permute(k.Shape, perm), static: data, stage: -1, slot: -1}
}

// need returns v's data in physical layout perm: itself, a re-viewed or
// reshaped buffer when only unit dims move, or a Go-side conversion.
func (b *builder) need(v *val, perm []int) *tensor {
	if isIdentity(perm) {
		perm = nil
	}
	if permEq(v.perm, perm) {
		return v.t
	}
	key := fmt.Sprint(perm)
	if t, ok := v.alt[key]; ok {
		return t
	}
	var t *tensor
	dims := permute(v.shape, perm)
	switch {
	case v.konst != nil:
		t = staticTensor(v.konst, perm)
	case sameOrder(v.shape, v.perm, perm):
		t = b.reshapeTensor(v.t, dims)
	default:
		t = b.newTensor(dims)
		src, srcPerm, shape := v.t, v.perm, v.shape
		b.addGo(func(buf func(*tensor) []float32) {
			transposeInto(buf(t), buf(src), shape, srcPerm, perm)
		}, []*tensor{src}, t)
	}
	if v.alt == nil {
		v.alt = map[string]*tensor{}
	}
	v.alt[key] = t
	return t
}

// reshapeTensor gives t's bytes new dims: a view of its buffer when t was
// written before the open stage, else an XNNPACK reshape (a copy).
func (b *builder) reshapeTensor(t *tensor, dims []int) *tensor {
	if graph.SameShape(t.dims, dims) {
		return t
	}
	if t.static != nil {
		return &tensor{dims: append([]int{}, dims...), static: t.static, stage: -1, slot: -1}
	}
	if t.stage == -1 || (t.stage >= 0 && t.stage != b.cur) {
		base := t
		for base.view != nil {
			base = base.view
		}
		base.keep = true
		nt := &tensor{dims: append([]int{}, dims...), stage: base.stage, slot: -1, view: base}
		b.p.tensors = append(b.p.tensors, nt)
		return nt
	}
	out := b.newTensor(dims)
	return b.add(&xop{kind: "reshape", in: []*tensor{t}, out: out, sz: dims})
}

// reshapeVal returns v with a new logical shape in identity layout.
func (b *builder) reshapeVal(v *val, shape []int) *val {
	if v.konst != nil {
		k := &graph.Tensor{DType: v.konst.DType, Shape: append([]int{}, shape...), Data: v.konst.Data}
		return b.constVal(k)
	}
	if perm, ok := reshapePerm(v.shape, v.perm, shape); ok {
		// the bytes stay where they are: the new shape in a layout of
		// its own (a detection head's NHWC [1,85,H,W] reshaped to
		// [1,85,H·W] is [1,H·W,85] in memory, no transpose)
		return &val{t: b.reshapeTensor(v.t, permute(shape, perm)), shape: append([]int{}, shape...), perm: perm}
	}
	t := b.need(v, nil)
	return &val{t: b.reshapeTensor(t, shape), shape: append([]int{}, shape...)}
}

// reshapePerm finds, for a value of logical shape from in layout perm
// (not the identity), a layout of the reshaped value whose physical order
// of elements is the same, so the reshape moves nothing: each run of dims
// that the reshape merges or splits must sit in memory next to each other
// and in order. ok is false when there is none.
func reshapePerm(from, perm, to []int) ([]int, bool) {
	if isIdentity(perm) {
		return nil, false
	}
	// the non-unit dims of each side, by logical index
	var fs, ts []int
	for i, d := range from {
		if d != 1 {
			fs = append(fs, i)
		}
	}
	for i, d := range to {
		if d != 1 {
			ts = append(ts, i)
		}
	}
	// physical rank of every non-unit logical dim of from
	pos := make([]int, len(from))
	k := 0
	for _, l := range perm {
		if from[l] != 1 {
			pos[l] = k
			k++
		}
	}
	// factor the two shapes into groups with equal products
	type grp struct{ f, t []int }
	var groups []grp
	i, j := 0, 0
	for i < len(fs) || j < len(ts) {
		var g grp
		pf, pt := 1, 1
		for {
			switch {
			case pf < pt || (pf == pt && len(g.f) == 0):
				if i == len(fs) {
					return nil, false
				}
				pf *= from[fs[i]]
				g.f = append(g.f, fs[i])
				i++
				continue
			case pt < pf:
				if j == len(ts) {
					return nil, false
				}
				pt *= to[ts[j]]
				g.t = append(g.t, ts[j])
				j++
				continue
			}
			break
		}
		// a group's from dims must be consecutive in memory, in order
		for q := 1; q < len(g.f); q++ {
			if pos[g.f[q]] != pos[g.f[q-1]]+1 {
				return nil, false
			}
		}
		groups = append(groups, g)
	}
	sort.Slice(groups, func(a, c int) bool { return pos[groups[a].f[0]] < pos[groups[c].f[0]] })
	np := make([]int, 0, len(to))
	for i, d := range to {
		if d == 1 {
			np = append(np, i)
		}
	}
	for _, g := range groups {
		np = append(np, g.t...)
	}
	if isIdentity(np) {
		np = nil
	}
	return np, true
}

func (b *builder) setOut(n *graph.Node, v *val) {
	b.vals[n.Outputs[0]] = v
}

// infer returns the node's output shapes from the reference inference.
func (b *builder) infer(n *graph.Node) ([][]int, error) {
	in := make([]ops.InferInput, len(n.Inputs))
	for i, name := range n.Inputs {
		if name == "" {
			continue
		}
		v := b.vals[name]
		if v == nil {
			return nil, b.nodeErr(n, "input %q is not available", name)
		}
		dt := graph.Float32
		if v.konst != nil {
			dt = v.konst.DType
		}
		in[i] = ops.InferInput{Type: graph.ValueType{Kind: "tensor", DType: dt, Shape: graph.StaticShape(v.shape...)}, Const: v.konst}
	}
	// the input shapes are the run's, known only now: the operator's own
	// inference gives the output shapes (the subgraph's types may be
	// symbolic)
	outs, ok, err := ops.Infer(n, b.opset(n.Domain), in)
	if !ok {
		return nil, b.nodeErr(n, "no shape inference")
	}
	if err != nil {
		return nil, b.nodeErr(n, "%v", err)
	}
	res := make([][]int, len(outs))
	for i, o := range outs {
		d, ok := o.Shape.Ints()
		if !ok {
			return nil, b.nodeErr(n, "output %d has no static shape (%v)", i, o.Shape)
		}
		res[i] = d
	}
	return res, nil
}

func (b *builder) in(n *graph.Node, i int) (*val, error) {
	v := b.vals[n.Input(i)]
	if v == nil {
		return nil, b.nodeErr(n, "input %d (%q) is missing", i, n.Input(i))
	}
	return v, nil
}

func (b *builder) konst(n *graph.Node, i int) (*graph.Tensor, error) {
	name := n.Input(i)
	if name == "" {
		return nil, nil
	}
	v := b.vals[name]
	if v == nil || v.konst == nil {
		return nil, b.nodeErr(n, "input %d (%q) must be a constant", i, name)
	}
	return v.konst, nil
}

var inf = float32(math.Inf(1))

func (b *builder) node(n *graph.Node) error {
	b.node1 = n
	if r := check(n, b.opset(n.Domain), builderInfo{b}); r != "" {
		return b.nodeErr(n, "%s", r)
	}
	outShapes, err := b.infer(n)
	if err != nil {
		return err
	}
	x, err := b.in(n, 0)
	if err != nil {
		return err
	}
	oshape := outShapes[0]
	unary := func(kind string, f ...float32) error {
		t := b.add(&xop{kind: kind, in: []*tensor{x.t}, out: b.newTensor(x.t.dims), f: f})
		b.setOut(n, &val{t: t, shape: x.shape, perm: x.perm})
		return nil
	}
	switch n.OpType {
	case "Identity", "Dropout":
		b.setOut(n, x)
		return nil
	case "Relu":
		return unary("clamp", 0, inf)
	case "Clip":
		lo, hi := float32(math.Inf(-1)), inf
		if b.opset("") < 11 {
			lo, hi = n.AttrFloat("min", lo), n.AttrFloat("max", hi)
		} else {
			if k, err := b.konst(n, 1); err != nil {
				return err
			} else if k != nil {
				lo = float32(k.Float64At(0))
			}
			if k, err := b.konst(n, 2); err != nil {
				return err
			} else if k != nil {
				hi = float32(k.Float64At(0))
			}
		}
		return unary("clamp", lo, hi)
	case "LeakyRelu":
		return unary("leaky", n.AttrFloat("alpha", 0.01))
	case "Elu":
		return unary("elu", n.AttrFloat("alpha", 1))
	case "Abs", "Ceil", "Floor", "Neg", "Sigmoid", "Sqrt", "HardSwish", "Round":
		return unary("unary:" + n.OpType)
	case "HardSigmoid":
		alpha, beta := n.AttrFloat("alpha", 0.2), n.AttrFloat("beta", 0.5)
		ones := make([]int, len(x.t.dims))
		for i := range ones {
			ones[i] = 1
		}
		ta := &tensor{dims: ones, static: []float32{alpha}, stage: -1, slot: -1}
		tb := &tensor{dims: ones, static: []float32{beta}, stage: -1, slot: -1}
		m := b.add(&xop{kind: "binary:Mul", in: []*tensor{x.t, ta}, out: b.newTensor(x.t.dims), f: []float32{float32(math.Inf(-1)), inf}})
		t := b.add(&xop{kind: "binary:Add", in: []*tensor{m, tb}, out: b.newTensor(x.t.dims), f: []float32{0, 1}})
		b.setOut(n, &val{t: t, shape: x.shape, perm: x.perm})
		return nil
	case "Add", "Sub", "Mul", "Div", "Max", "Min":
		y, err := b.in(n, 1)
		if err != nil {
			return err
		}
		return b.binary(n, n.OpType, x, y, oshape, float32(math.Inf(-1)), inf)
	case "Transpose":
		q := n.AttrInts("perm", nil)
		r := len(x.shape)
		if q == nil {
			for i := r - 1; i >= 0; i-- {
				q = append(q, int64(i))
			}
		}
		qinv := make([]int, r)
		for j, a := range q {
			qinv[a] = j
		}
		p := x.perm
		if p == nil {
			p = identity(r)
		}
		np := make([]int, r)
		for i := range p {
			np[i] = qinv[p[i]]
		}
		if isIdentity(np) {
			np = nil
		}
		b.setOut(n, &val{t: x.t, shape: oshape, perm: np})
		return nil
	case "Reshape", "Flatten", "Squeeze", "Unsqueeze":
		b.setOut(n, b.reshapeVal(x, oshape))
		return nil
	case "Conv":
		return b.conv(n, x, oshape)
	case "ConvTranspose":
		return b.convTranspose(n, x, oshape)
	case "Resize", "Upsample":
		if _, near := nearestAttrs(n, b.opset("")); near {
			return b.nearest(n, x, oshape)
		}
		return b.resize(n, x, oshape)
	case "Slice":
		return b.slice(n, x, oshape)
	case "Split":
		return b.split(n, x, outShapes)
	case "Tanh":
		return b.tanh(n, x)
	case "MaxPool", "AveragePool":
		return b.pool(n, x, oshape)
	case "GlobalAveragePool":
		in := b.need(x, nhwc)
		t := b.add(&xop{kind: "gap", in: []*tensor{in}, out: b.newTensor(permute(oshape, nhwc)), f: []float32{float32(math.Inf(-1)), inf}})
		b.setOut(n, &val{t: t, shape: oshape, perm: nhwc})
		return nil
	case "BatchNormalization":
		scale, shift, err := b.bnParams(n)
		if err != nil {
			return err
		}
		c := len(scale)
		sv := b.constVal(graph.MustFromSlice([]int{c, 1, 1}, scale))
		hv := b.constVal(graph.MustFromSlice([]int{c, 1, 1}, shift))
		tmp := n.Outputs[0] + "#scaled"
		if err := b.binaryNamed(n, tmp, "Mul", x, sv, oshape, float32(math.Inf(-1)), inf); err != nil {
			return err
		}
		return b.binary(n, "Add", b.vals[tmp], hv, oshape, float32(math.Inf(-1)), inf)
	case "PRelu":
		k, err := b.konst(n, 1)
		if err != nil {
			return err
		}
		if b.preluLast(n) {
			// channels last already (TFLite's [1,1,C] slope on NHWC
			// data): XNNPACK's layout, the input goes as it is
			c := x.shape[len(x.shape)-1]
			slope := append([]float32{}, graph.Data[float32](k)...)
			if len(slope) != c {
				return b.nodeErr(n, "slope of %d values for %d channels", len(slope), c)
			}
			in := b.need(x, nil)
			st := &tensor{dims: []int{c}, static: slope, stage: -1, slot: -1}
			t := b.add(&xop{kind: "prelu", in: []*tensor{in, st}, out: b.newTensor(in.dims)})
			b.setOut(n, &val{t: t, shape: oshape})
			return nil
		}
		c := x.shape[1]
		slope := make([]float32, c)
		kd := graph.Data[float32](k)
		for i := range slope {
			if len(kd) == 1 {
				slope[i] = kd[0]
			} else {
				slope[i] = kd[i]
			}
		}
		in := b.need(x, nhwc)
		st := &tensor{dims: []int{c}, static: slope, stage: -1, slot: -1}
		t := b.add(&xop{kind: "prelu", in: []*tensor{in, st}, out: b.newTensor(in.dims)})
		b.setOut(n, &val{t: t, shape: oshape, perm: nhwc})
		return nil
	case "Softmax":
		return b.softmax(n, x)
	case "Gemm", "MatMul":
		return b.fc(n, x, oshape)
	case "Pad":
		return b.pad(n, x, oshape)
	case "Concat":
		return b.concat(n, oshape)
	case "DepthToSpace":
		in := b.need(x, nhwc)
		t := b.add(&xop{kind: "d2s", in: []*tensor{in}, out: b.newTensor(permute(oshape, nhwc)), u: []uint32{uint32(n.AttrInt("blocksize", 1))}})
		b.setOut(n, &val{t: t, shape: oshape, perm: nhwc})
		return nil
	}
	return b.nodeErr(n, "op %s is not mapped", n.OpType)
}

func (b *builder) binary(n *graph.Node, op string, x, y *val, oshape []int, lo, hi float32) error {
	return b.binaryNamed(n, n.Outputs[0], op, x, y, oshape, lo, hi)
}

// binaryNamed lowers a broadcasting binary op; both operands are brought to
// the output's rank and layout (constants are laid out at compile).
func (b *builder) binaryNamed(n *graph.Node, outName, op string, x, y *val, oshape []int, lo, hi float32) error {
	r := len(oshape)
	var perm []int
	for _, v := range []*val{x, y} {
		if v.konst == nil && len(v.shape) == r {
			perm = v.perm
			break
		}
	}
	operand := func(v *val) *tensor {
		if len(v.shape) < r {
			e := make([]int, r-len(v.shape), r)
			for i := range e {
				e[i] = 1
			}
			v = b.reshapeVal(v, append(e, v.shape...))
		}
		return b.need(v, perm)
	}
	tx, ty := operand(x), operand(y)
	kind := "binary:" + op
	x0 := &xop{kind: kind, in: []*tensor{tx, ty}, out: b.newTensor(permute(oshape, perm)), f: []float32{lo, hi}}
	t := b.add(x0)
	b.vals[outName] = &val{t: t, shape: oshape, perm: perm}
	return nil
}
