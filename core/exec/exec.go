package exec

import (
	"context"
	"errors"
	"fmt"
	rt "runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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

	// inputPos and inputSlot: where each of inputs is among the graph's
	// inputs, and its slot in the main plan
	inputPos, inputSlot []int
}

// Compile prepares g (already validated) for execution.
func Compile(g *graph.Graph, opts Options) (*Program, error) {
	m := &Program{g: g, opsets: graph.Model{Opsets: opts.Opsets}, overrides: opts.Kernels, noFold: opts.NoFold, mainDone: opts.MainSimplified,
		subplans: map[*graph.Graph]*plan{}, arenas: map[string]*arenaCache{}, budget: opts.Budget, limit: opts.MaxTensorBytes,
		types: opts.Types, moves: map[*graph.Node]kernels.Func{}}
	for i, in := range g.Inputs {
		if _, isInit := g.Initializers[in.Name]; !isInit {
			m.inputs = append(m.inputs, in)
			m.inputPos = append(m.inputPos, i)
		}
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

// Inputs lists the graph inputs that are not initializers.
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
// (a slot, -1 for an omitted output), and the slots dead after it.
type step struct {
	in, out, free []int
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

// NodeTiming is the measured time of one node in a profiled run.
type NodeTiming struct {
	Node     string
	OpType   string
	Start    time.Duration // since the run began
	Duration time.Duration
	Depth    int // 0 for the main graph, >0 inside If/Loop bodies
}

// RunOptions controls one Run.
type RunOptions struct {
	// Profile records per-node timings into Stats.Nodes.
	Profile bool
	// Into names caller-allocated tensors for graph outputs (see RunInto).
	Into map[string]*graph.Tensor
	// Drop discards the outputs not written into Into's tensors: the run
	// returns no map (with Into for every output, a steady-state run
	// allocates nothing for its results).
	Drop bool
}

// Stats describes one run.
type Stats struct {
	Duration    time.Duration
	Nodes       []NodeTiming
	Allocations int   // new buffers allocated for intermediates
	Reuses      int   // buffers recycled by lifetime
	PeakBytes   int64 // peak bytes of live intermediates
	// InPlace counts the caller-allocated outputs (RunOptions.Into,
	// RunInto, RunBound) that the producing kernel wrote directly, Copied
	// those copied into them after the run (an output that is an input or
	// a constant, a kernel that allocated it with another shape, …).
	InPlace, Copied int
}

type run struct {
	m     *Program
	arena *arena
	opts  RunOptions
	stats *Stats
	depth int
	mu    sync.Mutex
	start time.Time
	// bound holds, by step of the main plan, the caller's tensors for
	// the step's outputs (by output index; nil where none), from
	// RunOptions.Into, RunInto or RunBound's outputs
	bound [][]*graph.Tensor
}

// Run executes the graph. inputs maps input names to tensors (an input with
// an initializer default may be omitted). It returns every graph output by
// name; the caller owns them.
func (m *Program) Run(ctx context.Context, inputs map[string]*graph.Tensor) (map[string]*graph.Tensor, error) {
	return m.runMap(ctx, inputs, RunOptions{}, nil)
}

// RunWithStats is Run with per-run statistics and optional profiling;
// opts.Into works as RunInto's into.
func (m *Program) RunWithStats(ctx context.Context, inputs map[string]*graph.Tensor, opts RunOptions) (out map[string]*graph.Tensor, st *Stats, err error) {
	st = &Stats{}
	out, err = m.runMap(ctx, inputs, opts, st)
	if err != nil {
		return nil, nil, err
	}
	return out, st, nil
}

// RunWith is RunWithStats filling the caller's st (nil: no statistics).
func (m *Program) RunWith(ctx context.Context, inputs map[string]*graph.Tensor, opts RunOptions, st *Stats) (map[string]*graph.Tensor, error) {
	return m.runMap(ctx, inputs, opts, st)
}

// RunInto is Run writing the outputs named in into (caller-allocated
// tensors of the result's dtype and shape) instead of handing over new
// tensors. The kernel producing such an output writes it in place when
// it allocates a tensor of that dtype and shape (or, for a node standing
// for a delegated partition, asks for it with Into); otherwise the result
// is copied into it after the run and its buffer stays in the program's
// arena. Either way steady-state calls allocate nothing for the outputs.
// Outputs not in into are returned as by Run. A caller tensor MUST NOT
// share memory with an input (one that does is filled after the run),
// unless it is an output written in place of that very input
// (InPlaceOutputs).
func (m *Program) RunInto(ctx context.Context, inputs, into map[string]*graph.Tensor) (map[string]*graph.Tensor, error) {
	return m.runMap(ctx, inputs, RunOptions{Into: into}, nil)
}

// RunBound is Run with inputs and outputs bound by position, the form
// backends call (nothing is looked up by name, and in steady state with
// caller-allocated outputs nothing is allocated). inputs[i] is the
// graph's i-th input (Graph().Inputs, initializer-defaulted ones
// included; a nil or missing one is omitted). outputs[i] receives the
// i-th graph output: one with Data, of the result's dtype and shape, is
// written into (in place, as RunInto does); any other non-nil tensor is
// overwritten with the result, which the caller then owns; a nil or
// missing one drops the result.
func (m *Program) RunBound(ctx context.Context, inputs, outputs []*graph.Tensor) error {
	var buf [8]*graph.Tensor
	feeds := buf[:0]
	if len(m.inputs) > len(buf) {
		feeds = make([]*graph.Tensor, 0, len(m.inputs))
	}
	for _, pos := range m.inputPos {
		var t *graph.Tensor
		if pos < len(inputs) {
			t = inputs[pos]
		}
		feeds = append(feeds, t)
	}
	res, a, cache, err := m.start(ctx, feeds, RunOptions{}, nil, outputs)
	if err != nil {
		return err
	}
	defer m.finish(a, cache)
	for i := range res {
		var dst *graph.Tensor
		if i < len(outputs) {
			dst = outputs[i]
		}
		if err := m.deliver(a, i, res[i], dst); err != nil {
			return err
		}
	}
	return nil
}

// OutputMismatchError: the run computed an output of another dtype or
// shape than the tensor the caller bound to it (a shape the inputs did not
// determine, bound on trust). It is an invalid-argument error.
type OutputMismatchError struct {
	Output             string
	DType, CallerDType graph.DType
	Shape, CallerShape []int
}

func (e *OutputMismatchError) Error() string {
	return fmt.Sprintf("exec: %v: output %q is %v%v, caller allocated %v%v", kernels.ErrInvalid, e.Output, e.DType, e.Shape, e.CallerDType, e.CallerShape)
}

// Unwrap makes errors.Is(err, graph.ErrInvalid) hold.
func (e *OutputMismatchError) Unwrap() error { return kernels.ErrInvalid }

// deliver hands output i (t) to the caller: copied into dst when it has
// data, else dst is overwritten with it (nil dst: dropped).
func (m *Program) deliver(a *arena, i int, t, dst *graph.Tensor) error {
	switch {
	case dst != nil && dst.Data != nil:
		if dst.DType != t.DType || !graph.SameShape(dst.Shape, t.Shape) {
			return &OutputMismatchError{Output: m.g.Outputs[i].Name, DType: t.DType, Shape: append([]int(nil), t.Shape...), CallerDType: dst.DType, CallerShape: append([]int(nil), dst.Shape...)}
		}
		if t == dst || dataPtr(t) != 0 && dataPtr(t) == dataPtr(dst) {
			a.run.stats.InPlace++ // the producing kernel wrote it
			return nil
		}
		graph.CopyData(dst.Data, t.Data)
		a.run.stats.Copied++
		a.release(t) // stays in the arena for the next run
	case dst != nil:
		a.disown(t) // the caller owns it now
		*dst = *t
	default:
		a.release(t)
	}
	return nil
}

func (m *Program) runMap(ctx context.Context, inputs map[string]*graph.Tensor, opts RunOptions, st *Stats) (map[string]*graph.Tensor, error) {
	into := opts.Into
	present := 0
	var fbuf [16]*graph.Tensor
	feeds := fbuf[:0]
	if len(m.inputs) > len(fbuf) {
		feeds = make([]*graph.Tensor, 0, len(m.inputs))
	}
	for _, in := range m.inputs {
		t, ok := inputs[in.Name]
		if ok {
			present++
		}
		feeds = append(feeds, t)
	}
	if present != len(inputs) {
		return nil, m.unknownInput(inputs)
	}
	var dbuf [16]*graph.Tensor
	var dsts []*graph.Tensor
	if len(into) > 0 {
		dsts = dbuf[:0]
		if len(m.g.Outputs) > len(dbuf) {
			dsts = make([]*graph.Tensor, 0, len(m.g.Outputs))
		}
		for _, o := range m.g.Outputs {
			dsts = append(dsts, into[o.Name])
		}
	}
	res, a, cache, err := m.start(ctx, feeds, opts, st, dsts)
	if err != nil {
		return nil, err
	}
	defer m.finish(a, cache)
	var out map[string]*graph.Tensor
	if !opts.Drop {
		out = make(map[string]*graph.Tensor, len(res))
	}
	for i, o := range m.g.Outputs {
		var dst *graph.Tensor
		if dsts != nil {
			dst = dsts[i]
		}
		if dst != nil && dst.Data != nil {
			if err := m.deliver(a, i, res[i], dst); err != nil {
				return nil, err
			}
			if out != nil {
				out[o.Name] = dst
			}
			continue
		}
		if out == nil {
			a.release(res[i])
			continue
		}
		a.disown(res[i])
		out[o.Name] = res[i]
	}
	return out, nil
}

// unknownInput is the error for an input the model does not have.
func (m *Program) unknownInput(inputs map[string]*graph.Tensor) error {
	known := map[string]bool{}
	var names []string
	for _, in := range m.inputs {
		known[in.Name] = true
		names = append(names, in.Name)
	}
	var bad []string
	for name := range inputs {
		if !known[name] {
			bad = append(bad, name)
		}
	}
	sort.Strings(bad)
	return fmt.Errorf("exec: %w: model has no input %q (inputs: %s)", kernels.ErrInvalid, bad[0], strings.Join(names, ", "))
}

// start checks the inputs (feeds, by m.inputs) and runs the main graph on
// an arena of their shape signature; the caller delivers the outputs and
// then calls finish. st, when set, receives the run's statistics; dsts
// (by graph output, may be short or nil) are the caller's tensors for the
// outputs, bound to the nodes producing them.
func (m *Program) start(ctx context.Context, feeds []*graph.Tensor, opts RunOptions, st *Stats, dsts []*graph.Tensor) ([]*graph.Tensor, *arena, *arenaCache, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := m.checkInputs(feeds); err != nil {
		return nil, nil, nil, err
	}
	cache := m.arenaFor(feeds)
	a := cache.get(m.budget, m.limit)
	start := time.Now()
	r := &a.run
	*r = run{m: m, arena: a, opts: opts, stats: st, start: start}
	if st == nil {
		a.stats = Stats{}
		r.stats = &a.stats
	}
	r.bound = a.bind(m.main, dsts, feeds)
	f := a.frame(m.main)
	f.r = r
	vals := f.s.vals
	copy(vals, m.main.init)
	for i, t := range feeds {
		if t != nil {
			vals[m.inputSlot[i]] = t
		}
	}
	outs, err := f.exec(ctx)
	clear(vals)
	a.putFrame(f)
	if err != nil {
		m.finish(a, cache)
		return nil, nil, nil, err
	}
	if st != nil {
		st.Duration = time.Since(start)
		st.Allocations, st.Reuses, st.PeakBytes = a.allocs, a.reuses, a.peak
	}
	return outs, a, cache, nil
}

// bind maps the steps of p producing graph outputs to the caller's
// tensors for them (dsts, by graph output) in a's reused table; nil when
// none is bound. A caller tensor without data, or one sharing memory
// with an input, is not bound (the latter is filled after the run),
// except an output that may be written in place of that very input
// (planInPlace); of two outputs that are one value only the first is
// bound.
func (a *arena) bind(p *plan, dsts, feeds []*graph.Tensor) [][]*graph.Tensor {
	some := false
	for i, dst := range dsts {
		if i >= len(p.producer) || dst == nil || dst.Data == nil || p.producer[i].step < 0 || aliasesAny(dst, feeds) && !p.overwrites(i, dst, feeds) {
			continue
		}
		if !some {
			if len(a.bound) != len(p.steps) {
				a.bound = make([][]*graph.Tensor, len(p.steps))
			}
			some = true
		}
		pr := p.producer[i]
		b := a.bound[pr.step]
		if len(b) != len(p.order[pr.step].Outputs) {
			b = make([]*graph.Tensor, len(p.order[pr.step].Outputs))
			a.bound[pr.step] = b
		}
		if b[pr.j] == nil {
			b[pr.j] = dst
		}
	}
	if !some {
		return nil
	}
	return a.bound
}

// unbindAll clears a's table of bound tensors (end of run).
func (a *arena) unbindAll() {
	for _, b := range a.bound {
		clear(b)
	}
}

// planInPlace works out which graph outputs may be bound in an input's
// memory: output i made as output j of a node whose op (or decl, for
// that node) lets output j be written in place of its input m, where
// input m is a graph input that this node alone reads (so nothing reads
// it after the write) and that is no graph output, and output i is
// listed once.
func (m *Program) planInPlace(decl map[*graph.Node][]ops.InPlace) {
	p := m.main
	readers, listed := map[string]int{}, map[string]int{}
	for _, n := range p.order {
		for _, r := range nodeReads(n) {
			readers[r]++
		}
	}
	for _, o := range m.g.Outputs {
		listed[o.Name]++
	}
	feed := map[string]int{}
	for k, in := range m.inputs {
		feed[in.Name] = k
	}
	var inplace []int
	for i, o := range m.g.Outputs {
		k := -1
		if pr := p.producer[i]; pr.step >= 0 && listed[o.Name] == 1 {
			n := p.order[pr.step]
			pairs, ok := decl[n]
			if !ok {
				if s, found := ops.Lookup(n.Domain, n.OpType); found {
					pairs = s.InPlace
				}
			}
			for _, ip := range pairs {
				if ip.Output != pr.j || ip.Input < 0 || ip.Input >= len(n.Inputs) {
					continue
				}
				name := n.Inputs[ip.Input]
				if f, isFeed := feed[name]; isFeed && readers[name] == 1 && listed[name] == 0 {
					k = f
				}
			}
		}
		if k >= 0 && inplace == nil {
			inplace = make([]int, len(m.g.Outputs))
			for j := range inplace {
				inplace[j] = -1
			}
		}
		if k >= 0 {
			inplace[i] = k
		}
	}
	p.inplace = inplace
}

// InPlaceOutputs lists the graph outputs the program may write into an
// input's memory, each with that input's index among Graph().Inputs (the
// position RunBound takes it at): a caller that binds such an output to
// the input's very tensor (same data, dtype and shape) has it updated in
// place. Any other output sharing an input's memory is filled after the
// run.
func (m *Program) InPlaceOutputs() []ops.InPlace {
	var out []ops.InPlace
	for i, k := range m.main.inplace {
		if k >= 0 {
			out = append(out, ops.InPlace{Output: i, Input: m.inputPos[k]})
		}
	}
	return out
}

// overwrites says whether dst, which shares memory with a feed, may be
// bound to graph output i: it is exactly the feed output i may be written
// in place of (same data, dtype and shape) and shares memory with no
// other feed.
func (p *plan) overwrites(i int, dst *graph.Tensor, feeds []*graph.Tensor) bool {
	if i >= len(p.inplace) || p.inplace[i] < 0 || p.inplace[i] >= len(feeds) {
		return false
	}
	k := p.inplace[i]
	f := feeds[k]
	d := dataPtr(dst)
	if f == nil || d == 0 || dataPtr(f) != d || f.DType != dst.DType || !graph.SameShape(f.Shape, dst.Shape) {
		return false
	}
	for j, in := range feeds {
		if j != k && in != nil && (in == dst || dataPtr(in) == d) {
			return false
		}
	}
	return true
}

func aliasesAny(t *graph.Tensor, inputs []*graph.Tensor) bool {
	p := dataPtr(t)
	for _, in := range inputs {
		if in != nil && (in == t || p != 0 && dataPtr(in) == p) {
			return true
		}
	}
	return false
}

// Into returns the caller-allocated tensor bound to output j of the node
// being run (RunOptions.Into, RunInto, RunBound), or nil when there is
// none. A kernel that gets one MUST write output j into it (dtype and
// shape are the caller's: a kernel whose result has another type returns
// its own tensor instead, which is then copied) and return it; kernels
// that allocate their outputs with Context.New need not call Into, since
// New hands out the bound tensor for an allocation of its dtype and
// shape. The executor uses it for nodes standing for delegated
// partitions, whose backends write caller outputs in place.
func Into(kc *kernels.Context, j int) *graph.Tensor {
	if kc == nil {
		return nil
	}
	na, ok := kc.Alloc.(*nodeAlloc)
	if !ok || j < 0 || j >= len(na.bound) || na.taken[j] {
		return nil
	}
	na.taken[j] = true
	return na.bound[j]
}

// finish ends a run begun by start: the arena goes back to its cache.
func (m *Program) finish(a *arena, cache *arenaCache) {
	if a.run.bound != nil {
		a.unbindAll()
	}
	a.run = run{}
	a.reset()
	cache.put(a)
}

// arenaCache keeps a few idle arenas of one shape signature. Unlike a
// sync.Pool it survives garbage collections, so a model's buffers stay
// allocated (and their pages faulted in) between runs: steady-state runs
// allocate nothing for intermediates.
type arenaCache struct {
	mu      sync.Mutex
	free    []*arena
	evicted bool // no longer in the program's map: arenas put back are dropped
}

// maxIdleArenas bounds the arenas kept per signature (one per concurrent Run).
const maxIdleArenas = 4

func (c *arenaCache) get(b *Budget, limit int64) *arena {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.free); n > 0 {
		a := c.free[n-1]
		c.free = c.free[:n-1]
		return a
	}
	return newArena(b, limit)
}

// adopt moves an idle arena of from (if any) to c when c has none.
func (c *arenaCache) adopt(from *arenaCache) {
	from.mu.Lock()
	var a *arena
	if n := len(from.free); n > 0 {
		a = from.free[n-1]
		from.free = from.free[:n-1]
	}
	from.mu.Unlock()
	if a == nil {
		return
	}
	c.mu.Lock()
	if len(c.free) > 0 || c.evicted {
		c.mu.Unlock()
		from.put(a)
		return
	}
	if !a.classes {
		a.dropFree() // its buffers are of exact sizes, not of classes
		a.classes = true
	}
	a.migrated = true
	c.free = append(c.free, a)
	c.mu.Unlock()
}

func (c *arenaCache) put(a *arena) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.free) < maxIdleArenas && !c.evicted {
		c.free = append(c.free, a)
		return
	}
	a.dropFree() // its buffers leave the budget with it
}

// dropIdle lets go of the idle arenas' buffers.
func (c *arenaCache) dropIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range c.free {
		a.dropFree()
	}
}

func (m *Program) arenaPool(sig string) *arenaCache {
	m.arenasMu.Lock()
	defer m.arenasMu.Unlock()
	p, ok := m.arenas[sig]
	if !ok {
		if len(m.arenas) > 64 { // bound the cache for models fed many shapes
			for _, c := range m.arenas {
				c.mu.Lock()
				c.evicted = true
				c.mu.Unlock()
				c.dropIdle()
			}
			clear(m.arenas)
		}
		p = &arenaCache{}
		m.arenas[sig] = p
	}
	return p
}

// dropIdle lets go of every buffer idle arenas keep for later runs.
func (m *Program) dropIdle() {
	m.arenasMu.Lock()
	caches := make([]*arenaCache, 0, len(m.arenas))
	for _, c := range m.arenas {
		caches = append(caches, c)
	}
	m.arenasMu.Unlock()
	for _, c := range caches {
		c.dropIdle()
	}
}

// Trim drops the buffers kept for later runs (runs in flight keep theirs):
// their memory goes back to the garbage collector and leaves the budget.
func (m *Program) Trim() { m.dropIdle() }

// Budget returns the budget the program's buffers are accounted in (nil:
// none).
func (m *Program) Budget() *Budget { return m.budget }

// checkInputs validates the caller's inputs (feeds, by m.inputs).
func (m *Program) checkInputs(feeds []*graph.Tensor) error {
	type symDim struct {
		name string
		v    int
	}
	var symBuf [4]symDim
	sym := symBuf[:0]
	for i, in := range m.inputs {
		t := feeds[i]
		if t == nil {
			if _, hasDefault := m.g.Initializers[in.Name]; hasDefault {
				continue
			}
			return fmt.Errorf("exec: %w: input %q (%v) is missing", kernels.ErrInvalid, in.Name, in.Type)
		}
		if err := t.Check(); err != nil {
			return fmt.Errorf("exec: %w: input %q: %v", kernels.ErrInvalid, in.Name, err)
		}
		want := in.Type
		if want.DType != graph.Undefined && want.DType != t.DType {
			return fmt.Errorf("exec: %w: input %q is %v, model wants %v", kernels.ErrInvalid, in.Name, t.DType, want.DType)
		}
		if want.Shape == nil {
			continue
		}
		if len(want.Shape) != len(t.Shape) {
			return fmt.Errorf("exec: %w: input %q has shape %v, model wants rank %d %v", kernels.ErrInvalid, in.Name, t.Shape, len(want.Shape), want.Shape)
		}
		for i, d := range want.Shape {
			switch {
			case d.Static() && int(d.Value) != t.Shape[i]:
				return fmt.Errorf("exec: %w: input %q has shape %v, model wants %v (dim %d)", kernels.ErrInvalid, in.Name, t.Shape, want.Shape, i)
			case d.Param != "":
				seen := false
				for _, s := range sym {
					if s.name == d.Param {
						seen = true
						if s.v != t.Shape[i] {
							return fmt.Errorf("exec: %w: input %q dim %d is %d but symbolic dim %q is already %d", kernels.ErrInvalid, in.Name, i, t.Shape[i], d.Param, s.v)
						}
					}
				}
				if !seen {
					sym = append(sym, symDim{d.Param, t.Shape[i]})
				}
			}
		}
	}
	return nil
}

// lastSig is the shape signature of the latest run and its arenas, so
// that runs of one shape build no signature.
type lastSig struct {
	dts    []graph.DType
	shapes [][]int
	cache  *arenaCache
}

func (l *lastSig) matches(feeds []*graph.Tensor) bool {
	if l == nil || len(l.dts) != len(feeds) {
		return false
	}
	for i, t := range feeds {
		if t == nil {
			if l.shapes[i] != nil {
				return false
			}
			continue
		}
		if l.shapes[i] == nil || l.dts[i] != t.DType || !graph.SameShape(l.shapes[i], t.Shape) {
			return false
		}
	}
	return true
}

// arenaFor returns the arena cache of the feeds' concrete shape signature.
func (m *Program) arenaFor(feeds []*graph.Tensor) *arenaCache {
	if l := m.last.Load(); l.matches(feeds) {
		l.cache.mu.Lock()
		evicted := l.cache.evicted
		l.cache.mu.Unlock()
		if !evicted {
			return l.cache
		}
	}
	var buf [256]byte
	sig := buf[:0]
	l := &lastSig{dts: make([]graph.DType, len(feeds)), shapes: make([][]int, len(feeds))}
	for i, t := range feeds {
		if t == nil {
			sig = append(sig, '-', ';')
			continue
		}
		sig = strconv.AppendInt(sig, int64(t.DType), 10)
		for _, d := range t.Shape {
			sig = append(sig, ',')
			sig = strconv.AppendInt(sig, int64(d), 10)
		}
		sig = append(sig, ';')
		l.dts[i], l.shapes[i] = t.DType, append([]int{}, t.Shape...)
	}
	l.cache = m.arenaPool(string(sig))
	if prev := m.last.Load(); prev != nil && prev.cache != l.cache {
		// a new shape (a decoder's growing cache): an idle arena of the
		// previous shape moves here with its buffers, most of which the
		// new shape needs too; the first run here drops those it did not
		l.cache.adopt(prev.cache)
	}
	m.last.Store(l)
	return l.cache
}

// frame is one execution of a plan: its scope, the inputs of the step
// being run and the context its kernels get (reused from node to node).
// An arena keeps a frame per plan for its runs.
type frame struct {
	r    *run
	s    scope
	ins  []*graph.Tensor
	res  []*graph.Tensor // the main graph's outputs (nested runs allocate theirs)
	cc   callCtx
	sub  kernels.SubgraphRunner // f.subgraph, bound once
	busy bool
}

// frame returns a's idle frame of plan p (a new one if it is in use).
func (a *arena) frame(p *plan) *frame {
	a.mu.Lock()
	f := a.frames[p]
	if f != nil && !f.busy {
		f.busy = true
		a.mu.Unlock()
		return f
	}
	a.mu.Unlock()
	f = &frame{s: scope{p: p, vals: make([]*graph.Tensor, len(p.slots))}, ins: make([]*graph.Tensor, p.maxIns), busy: true}
	f.cc.kc.Alloc = &f.cc.na
	f.sub = f.subgraph
	a.mu.Lock()
	if a.frames[p] == nil {
		a.frames[p] = f
	}
	a.mu.Unlock()
	return f
}

func (a *arena) putFrame(f *frame) {
	a.mu.Lock()
	f.busy = false
	f.r = nil
	f.s.parent = nil
	f.cc.kc.Context = nil
	a.mu.Unlock()
}

// exec runs the frame's plan (its scope's vals already hold the graph
// inputs and constants) and returns the graph outputs.
func (f *frame) exec(ctx context.Context) ([]*graph.Tensor, error) {
	r, s, p := f.r, &f.s, f.s.p
	f.cc.kc.Context, f.cc.kc.RunSubgraph = ctx, f.sub
	f.cc.na.a = r.arena
	done := ctx.Done()
	for i, n := range p.order {
		if kernels.Done(done) {
			return nil, fmt.Errorf("exec: stopped before %s: %w", n.Label(), ctx.Err())
		}
		st := &p.steps[i]
		ins := f.ins[:len(st.in)]
		for j, ref := range st.in {
			if ref == -1 {
				ins[j] = nil
				continue
			}
			t, ok := s.get(ref)
			if !ok {
				return nil, fmt.Errorf("exec: %s: input %q has no value", n.Label(), n.Inputs[j])
			}
			ins[j] = t
		}
		var t0 time.Time
		if r.opts.Profile {
			t0 = time.Now()
		}
		var bound []*graph.Tensor
		if r.bound != nil && s.parent == nil {
			bound = r.bound[i]
		}
		f.cc.na.view = p.view[i]
		outs, err := f.call(ctx, p.schemas[i], p.opsets[i], n, ins, bound)
		f.cc.na.view = false
		clear(ins)
		if err != nil {
			return nil, err
		}
		if r.opts.Profile {
			r.mu.Lock()
			r.stats.Nodes = append(r.stats.Nodes, NodeTiming{Node: n.Name, OpType: n.OpType, Start: t0.Sub(r.start), Duration: time.Since(t0), Depth: r.depth})
			r.mu.Unlock()
		}
		for j, ref := range st.out {
			if ref >= 0 {
				s.vals[ref] = outs[j]
			}
		}
		for _, dead := range st.free {
			if t := s.vals[dead]; t != nil {
				r.arena.release(t)
				s.vals[dead] = nil
			}
		}
	}
	var res []*graph.Tensor
	if s.parent == nil {
		if len(f.res) != len(p.outs) {
			f.res = make([]*graph.Tensor, len(p.outs))
		}
		res = f.res
	} else {
		res = make([]*graph.Tensor, len(p.outs))
	}
	for i, ref := range p.outs {
		t, ok := s.get(ref)
		if !ok {
			return nil, fmt.Errorf("exec: output %q was not produced", p.g.Outputs[i].Name)
		}
		// an output that is an input, initializer, outer value or a repeat
		// of another output is copied so that callers own what they get
		repeat := false
		for _, u := range res[:i] {
			repeat = repeat || u == t
		}
		if !p.produced[i] || repeat {
			c, err := r.arena.AllocUninit(t.DType, t.Shape)
			if err != nil {
				return nil, err
			}
			graph.CopyData(c.Data, t.Data)
			t = c
		}
		res[i] = t
	}
	return res, nil
}

// call runs one kernel, turning panics into errors and checking its outputs.
// bound are the caller's tensors for n's outputs (nil: none).
func (f *frame) call(ctx context.Context, s *kernels.Schema, opset int64, n *graph.Node, ins, bound []*graph.Tensor) (outs []*graph.Tensor, err error) {
	defer func() {
		if p := recover(); p != nil {
			buf := make([]byte, 4096)
			buf = buf[:rt.Stack(buf, false)]
			err = fmt.Errorf("exec: internal error in %s: %v\n%s", n.Label(), p, buf)
		}
	}()
	r := f.r
	na := &f.cc.na
	f.cc.kc.Opset, na.n = opset, n
	na.bound, na.taken = bound, nil
	if bound != nil {
		if len(bound) <= len(na.takenBuf) {
			na.taken = na.takenBuf[:len(bound)]
			clear(na.taken)
		} else {
			na.taken = make([]bool, len(bound))
		}
	}
	outs, err = s.Kernel(&f.cc.kc, n, ins)
	if err == nil && bound != nil {
		err = na.unbind(n, outs)
	}
	na.bound, na.taken = nil, nil
	if err == nil && kernels.Done(ctx.Done()) {
		// long kernels stop early once the context is done, leaving their
		// outputs incomplete: nothing they return after that is used
		return nil, fmt.Errorf("exec: stopped in %s: %w", n.Label(), ctx.Err())
	}
	if err != nil {
		if msg := err.Error(); strings.Contains(msg, n.OpType) || n.Name != "" && strings.Contains(msg, n.Name) {
			return nil, err // already names the node
		}
		return nil, fmt.Errorf("%s: %w", n.Label(), err)
	}
	if len(outs) < len(n.Outputs) {
		// trailing optional outputs may be omitted by the kernel
		for j := len(outs); j < len(n.Outputs); j++ {
			if n.Outputs[j] != "" {
				return nil, fmt.Errorf("exec: %s returned %d outputs, node needs %d", n.Label(), len(outs), len(n.Outputs))
			}
		}
	}
	for j, name := range n.Outputs {
		if name == "" {
			continue
		}
		o := outs[j]
		if o == nil {
			return nil, fmt.Errorf("exec: %s produced no value for output %q", n.Label(), name)
		}
		if err := o.Check(); err != nil {
			return nil, fmt.Errorf("exec: %s output %q: %v", n.Label(), name, err)
		}
		// a kernel that hands back an input (or a view of one) breaks
		// buffer recycling: copy it (unless the plan made it a view, or
		// it is the caller's tensor bound to the output, which bind let
		// share an input's memory: written in place of that input)
		p := dataPtr(o)
		for _, in := range ins {
			if na.view || j < len(bound) && bound[j] == o {
				break
			}
			if in != nil && (in == o || p != 0 && p == dataPtr(in)) {
				c, err := r.arena.AllocUninit(o.DType, o.Shape)
				if err != nil {
					return nil, err
				}
				graph.CopyData(c.Data, o.Data)
				outs[j] = c
				break
			}
		}
	}
	return outs, nil
}

// subgraph implements kernels.SubgraphRunner for If/Loop bodies run by the
// frame's kernels: the body's scope encloses in the frame's.
func (f *frame) subgraph(ctx context.Context, g *graph.Graph, inputs []*graph.Tensor) ([]*graph.Tensor, error) {
	r := f.r
	if r == nil {
		return nil, errors.New("exec: subgraph run outside a model run")
	}
	p, ok := r.m.subplans[g]
	if !ok {
		return nil, errors.New("exec: unknown subgraph (not part of the loaded model)")
	}
	if len(inputs) != len(g.Inputs) {
		return nil, fmt.Errorf("exec: subgraph %q takes %d inputs, got %d", g.Name, len(g.Inputs), len(inputs))
	}
	sf := r.arena.frame(p)
	defer r.arena.putFrame(sf)
	sf.r, sf.s.parent = r, &f.s
	vals := sf.s.vals
	copy(vals, p.init)
	defer clear(vals)
	for i, in := range g.Inputs {
		vals[p.slots[in.Name]] = inputs[i]
	}
	r.mu.Lock()
	r.depth++
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.depth--
		r.mu.Unlock()
	}()
	return sf.exec(ctx)
}

// callCtx is what one kernel call gets: its context and its allocator.
type callCtx struct {
	kc kernels.Context
	na nodeAlloc
}
