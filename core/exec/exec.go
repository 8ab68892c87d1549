package exec

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/core/ops"
)

// Options configure Compile.
type Options struct {
	// Opsets are the opset imports the graph's nodes follow.
	Opsets []graph.Opset
	// Kernels overrides the kernel of individual nodes of the main graph
	// (the runtime uses it for nodes standing for delegated partitions).
	Kernels map[*graph.Node]kernels.Func
	// NoFold disables constant folding at compile time.
	NoFold bool
	// MainSimplified says the main graph already went through Simplify:
	// only nested graphs are folded (nothing is evaluated twice at load).
	MainSimplified bool
	// MaxTensorBytes, when > 0, lowers the per-tensor size limit
	// (graph.MaxTensorBytes) for every buffer the program allocates.
	MaxTensorBytes int64
	// Budget, when set, bounds the bytes the program's buffers hold,
	// shared with every other program and concurrent run using it.
	Budget *Budget
	// Types, when set, are the inferred types of the main graph's values:
	// Shape and Size of static shapes fold, and data-movement nodes of
	// static shapes get move plans (see static.go).
	Types map[string]graph.ValueType
	// InPlace declares, for nodes of the main graph (the runtime's
	// stand-ins for delegated partitions), the outputs their kernels may
	// be handed in an input's memory, as ops.Schema.InPlace does for an
	// op; it replaces the op's declaration for those nodes.
	InPlace map[*graph.Node][]ops.InPlace
}

// Program is a graph compiled for execution on the reference kernels. It is
// immutable after Compile and safe for concurrent Run calls.
type Program struct {
	g         *graph.Graph
	opsets    graph.Model
	overrides map[*graph.Node]kernels.Func
	noFold    bool
	mainDone  bool
	main      *plan
	subplans  map[*graph.Graph]*plan
	inputs    []graph.ValueInfo
	types     map[string]graph.ValueType // Options.Types
	moves     map[*graph.Node]kernels.Func
	budget    *Budget
	limit     int64

	arenasMu sync.Mutex
	arenas   map[string]*arenaCache // per concrete input-shape signature
	last     atomic.Pointer[lastSig]
	prevSig  atomic.Pointer[lastSig] // the signature before last

	// inputPos and inputSlot: where each of inputs is among the graph's
	// inputs, and its slot in the main plan
	inputPos, inputSlot []int

	// lists holds *[]*graph.Tensor for a run's feeds and bound outputs
	// where the stack buffers are short (a decoder's 50 cache inputs and
	// outputs), so such a run allocates none (tensorList)
	lists sync.Pool
}

// tensorList is an empty list of capacity n or more from m.lists (give
// it back with putTensorList).
func (m *Program) tensorList(n int) *[]*graph.Tensor {
	l, _ := m.lists.Get().(*[]*graph.Tensor)
	if l == nil {
		l = new([]*graph.Tensor)
	}
	if cap(*l) < n {
		*l = make([]*graph.Tensor, 0, n)
	}
	*l = (*l)[:0]
	return l
}

// putTensorList gives back a list from tensorList, cleared (it keeps no
// tensor alive); u is what the caller used of it.
func (m *Program) putTensorList(l *[]*graph.Tensor, u []*graph.Tensor) {
	clear(u)
	*l = (*l)[:0]
	m.lists.Put(l)
}

// Compile prepares g (already validated) for execution.
func Compile(g *graph.Graph, opts Options) (*Program, error) {
	m := &Program{g: g, opsets: graph.Model{Opsets: opts.Opsets}, overrides: opts.Kernels, noFold: opts.NoFold, mainDone: opts.MainSimplified,
		subplans: map[*graph.Graph]*plan{}, arenas: map[string]*arenaCache{}, budget: opts.Budget, limit: opts.MaxTensorBytes,
		types: opts.Types, moves: map[*graph.Node]kernels.Func{}}
	// every graph input may be fed; one with an initializer has a
	// default (ONNX IR >= 4), used when the caller omits it
	for i, in := range g.Inputs {
		m.inputs = append(m.inputs, in)
		m.inputPos = append(m.inputPos, i)
	}
	var err error
	if m.main, err = m.compile(g, nil); err != nil {
		return nil, err
	}
	for _, in := range m.inputs {
		m.inputSlot = append(m.inputSlot, m.main.slots[in.Name])
	}
	m.planInPlace(opts.InPlace)
	m.budget.register(m)
	return m, nil
}

func (m *Program) opset(domain string) int64 { return m.opsets.OpsetVersion(domain) }

// Opsets returns the opset versions the program was compiled with.
func (m *Program) Opsets() []graph.Opset { return append([]graph.Opset{}, m.opsets.Opsets...) }

// Graph returns the compiled graph.
func (m *Program) Graph() *graph.Graph { return m.g }

// Inputs lists the graph inputs, those with an initializer default
// (which a run may omit) included.
func (m *Program) Inputs() []graph.ValueInfo { return m.inputs }

// plan is a graph prepared for execution: nodes in order, the schema of
// each, and every value of the graph numbered, so that a run keeps its
// values in a slice and touches no name: each step reads and writes slots
// and, after it, releases the slots whose last reader it is.
type plan struct {
	g       *graph.Graph
	order   []*graph.Node
	schemas []*kernels.Schema
	opsets  []int64
	steps   []step
	// slots numbers the values of this graph (its inputs, initializers,
	// folded values and node outputs); a run's values live at these
	// indices, the constants (init) copied in first
	slots map[string]int
	names []string // by slot
	init  []*graph.Tensor
	// outer lists the names read from enclosing graphs (a ref of -2-k is
	// outer[k]), resolved by name at run time
	outer []string
	// outs are the graph outputs' refs; produced says which come from a
	// node of this graph (the others are copied for the caller)
	outs     []int
	produced []bool
	// producer[i] is the step making graph output i and the index of
	// that output among the step's outputs (step -1: not made here)
	producer []outProducer
	// view[i]: step i's output may be a view of its data input (a
	// reshape-like op whose result is no graph output; see viewable), and
	// the buffer under it is freed only after the view's last reader
	view []bool
	// inplace[i] is the input (by index among Program.inputs) whose
	// memory graph output i may be bound in (planInPlace), -1 for none;
	// nil when no output may
	inplace []int
	maxIns  int
	// consts holds values computed at load time (constant folding)
	consts map[string]*graph.Tensor
}

// outProducer locates the node output that is a graph output.
type outProducer struct{ step, j int }

// step is one node of a plan: where its inputs come from (a slot, -1 for
// an omitted optional input, -2-k for outer[k]) and where its outputs go
// (a slot, -1 for an omitted output), and the slots dead after it; memo
// is the node's kernels.Memo, kept across runs, and konst its constant
// inputs.
type step struct {
	in, out, free []int
	memo          kernels.Memo
	konst         uint64 // bit j: input j is a constant (kernels.Context.Const)
	// what frame.exec and call read of the node, its schema and opset,
	// kept in the step (packSteps): the node, its outputs' list, the
	// schema were each a cache line of their own, cold again every
	// decode step after the weights streamed through the caches
	kernel kernels.Func
	opset  int64
	view   bool
	nOut   int    // len(node.Outputs)
	named  uint64 // bit j: output j has a name (not omitted); outputs past 64 are read from the node
}

// namedOut says whether n's output j (j < st.nOut) is not omitted.
func (st *step) namedOut(n *graph.Node, j int) bool {
	if j < 64 {
		return st.named&(1<<j) != 0
	}
	return n.Outputs[j] != ""
}

// packSteps fills each step's node fields and moves every step's
// in, out and free lists into one array, in step order (a run reads
// them one step after the other; apart, each was a miss of its own).
func (p *plan) packSteps() {
	total := 0
	for i := range p.steps {
		st := &p.steps[i]
		total += len(st.in) + len(st.out) + len(st.free)
	}
	all := make([]int, 0, total)
	take := func(x []int) []int {
		if x == nil {
			return nil
		}
		k := len(all)
		all = append(all, x...)
		return all[k:len(all):len(all)]
	}
	for i, n := range p.order {
		st := &p.steps[i]
		st.in, st.out, st.free = take(st.in), take(st.out), take(st.free)
		st.kernel, st.opset, st.view, st.nOut, st.named = p.schemas[i].Kernel, p.opsets[i], p.view[i], len(n.Outputs), 0
		for j, o := range n.Outputs {
			if j < 64 && o != "" {
				st.named |= 1 << j
			}
		}
	}
}

func (m *Program) compile(g *graph.Graph, outer map[string]*graph.Tensor) (*plan, error) {
	order, err := g.TopoSort()
	if err != nil {
		return nil, err
	}
	p := &plan{g: g, slots: map[string]int{}}
	var types map[string]graph.ValueType
	if g == m.g {
		types = m.types
	}
	order, p.consts = m.fold(order, g, outer, types)
	p.order = order
	if m.types != nil {
		// nested graphs have no types: their data movement gets dynamic
		// plans only
		m.planMoves(order, g, p.consts, types)
	}
	visible := map[string]*graph.Tensor{}
	for k, v := range outer {
		visible[k] = v
	}
	for k, v := range g.Initializers {
		visible[k] = v
	}
	for k, v := range p.consts {
		visible[k] = v
	}
	slot := func(name string) int {
		if i, ok := p.slots[name]; ok {
			return i
		}
		i := len(p.slots)
		p.slots[name] = i
		return i
	}
	for _, in := range g.Inputs {
		slot(in.Name)
	}
	for _, name := range sortedTensorNames(g.Initializers) {
		slot(name)
	}
	for _, name := range sortedTensorNames(p.consts) {
		slot(name)
	}
	isOutput, produced := map[string]bool{}, map[string]bool{}
	for _, o := range g.Outputs {
		isOutput[o.Name] = true
	}
	for _, n := range order {
		for _, o := range n.Outputs {
			if o != "" {
				slot(o)
				produced[o] = true
			}
		}
	}
	outerRef := map[string]int{}
	ref := func(name string) int {
		if name == "" {
			return -1
		}
		if i, ok := p.slots[name]; ok {
			return i
		}
		k, ok := outerRef[name]
		if !ok {
			k = len(p.outer)
			p.outer = append(p.outer, name)
			outerRef[name] = k
		}
		return -2 - k
	}
	last := map[string]int{}
	p.steps = make([]step, len(order))
	p.view = make([]bool, len(order))
	root := map[string]string{} // a view → the value whose buffer it shares
	for i, n := range order {
		if _, over := m.overrides[n]; !over && viewable(n, isOutput) {
			p.view[i] = true
			x := n.Inputs[0]
			if r, ok := root[x]; ok {
				x = r
			}
			root[n.Outputs[0]] = x
		}
		s, _ := kernels.Lookup(n.Domain, n.OpType)
		if f, ok := m.overrides[n]; ok {
			s = &kernels.Schema{Domain: n.Domain, OpType: n.OpType, Kernel: f}
		} else if f, ok := m.moves[n]; ok {
			s = &kernels.Schema{Domain: n.Domain, OpType: n.OpType, Kernel: f}
		}
		if s == nil {
			return nil, fmt.Errorf("exec: %s: %w: no kernel for op %s", n.Label(), kernels.ErrUnsupported, n.OpType)
		}
		if p.view[i] {
			v := &viewNode{ref: s.Kernel}
			s = &kernels.Schema{Domain: n.Domain, OpType: n.OpType, Kernel: v.kernel}
		}
		p.schemas = append(p.schemas, s)
		p.opsets = append(p.opsets, m.opset(n.Domain))
		st := &p.steps[i]
		for _, in := range n.Inputs {
			st.in = append(st.in, ref(in))
		}
		for _, o := range n.Outputs {
			st.out = append(st.out, ref(o))
		}
		p.maxIns = max(p.maxIns, len(n.Inputs))
		for _, in := range nodeReads(n) {
			last[in] = i
		}
		for _, o := range n.Outputs {
			if o != "" {
				if _, ok := last[o]; !ok {
					last[o] = i // never read: dead right after it is made
				}
			}
		}
		for _, sg := range n.Subgraphs() {
			sp, err := m.compile(sg, visible)
			if err != nil {
				return nil, err
			}
			m.subplans[sg] = sp
		}
	}
	// a buffer lives until the last reader of any view of it; views
	// themselves own nothing
	for v, r := range root {
		if last[v] > last[r] {
			last[r] = last[v]
		}
	}
	names := make([]string, 0, len(last))
	for v := range last {
		names = append(names, v)
	}
	sort.Strings(names)
	for _, v := range names {
		if _, isView := root[v]; isOutput[v] || !produced[v] || isView {
			continue // outputs are returned; inputs/initializers/outer values are not ours
		}
		st := &p.steps[last[v]]
		st.free = append(st.free, p.slots[v])
	}
	p.names = make([]string, len(p.slots))
	for k, i := range p.slots {
		p.names[i] = k
	}
	p.init = make([]*graph.Tensor, len(p.slots))
	for k, v := range g.Initializers {
		p.init[p.slots[k]] = v
	}
	for k, v := range p.consts {
		p.init[p.slots[k]] = v
	}
	// the inputs of each step that are constants (kernels.Context.Const):
	// an initializer or folded value no graph input overrides
	fed := map[int]bool{}
	for _, in := range g.Inputs {
		fed[p.slots[in.Name]] = true
	}
	for i := range p.steps {
		st := &p.steps[i]
		for j, r := range st.in {
			if j < 64 && r >= 0 && p.init[r] != nil && !fed[r] {
				st.konst |= 1 << j
			}
		}
	}
	made := map[string]outProducer{}
	for i, n := range order {
		for j, o := range n.Outputs {
			if o != "" {
				made[o] = outProducer{i, j}
			}
		}
	}
	for _, o := range g.Outputs {
		p.outs = append(p.outs, ref(o.Name))
		p.produced = append(p.produced, produced[o.Name])
		pr, ok := made[o.Name]
		if !ok {
			pr = outProducer{-1, -1}
		}
		p.producer = append(p.producer, pr)
	}
	p.packSteps()
	return p, nil
}

// viewOps are the ops whose output is their data input (input 0)
// reshaped: where the executor allows (viewable), the reference kernels
// return a view of it (kernels.Context.View) instead of a copy.
var viewOps = map[string]bool{"Reshape": true, "Flatten": true, "Squeeze": true, "Unsqueeze": true, "Identity": true}

// viewable says whether n's output may be a view of its data input: a
// reshape-like op of the default domain whose output is not one of the
// graph's outputs (those are handed to the caller, or written into the
// caller's tensors).
func viewable(n *graph.Node, isOutput map[string]bool) bool {
	return (n.Domain == "" || n.Domain == "ai.onnx") && viewOps[n.OpType] && len(n.Outputs) == 1 && n.Outputs[0] != "" &&
		!isOutput[n.Outputs[0]] && len(n.Inputs) > 0 && n.Inputs[0] != ""
}

func sortedTensorNames(m map[string]*graph.Tensor) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// nodeReads lists the values a node reads, including those its nested
// graphs capture from enclosing scopes.
func nodeReads(n *graph.Node) []string {
	reads := append([]string{}, n.Inputs...)
	for _, sg := range n.Subgraphs() {
		reads = append(reads, sg.FreeVariables()...)
	}
	return reads
}

// scope is the values of one graph's run (indexed by its plan's slots),
// with enclosing graphs' scopes behind it.
type scope struct {
	p      *plan
	vals   []*graph.Tensor
	parent *scope
}

// get resolves ref r of the plan's steps or outputs: a slot of this
// scope (an input left without a value is looked for outside), else a
// name of an enclosing scope.
func (s *scope) get(r int) (*graph.Tensor, bool) {
	if r >= 0 {
		if t := s.vals[r]; t != nil {
			return t, true
		}
		return s.parent.lookupName(s.p.names[r])
	}
	return s.parent.lookupName(s.p.outer[-2-r])
}

// lookupName finds a value by name in s and the scopes enclosing it.
func (s *scope) lookupName(name string) (*graph.Tensor, bool) {
	for c := s; c != nil; c = c.parent {
		if i, ok := c.p.slots[name]; ok {
			if t := c.vals[i]; t != nil {
				return t, true
			}
		}
	}
	return nil, false
}
