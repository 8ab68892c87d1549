package exec

import (
	"context"
	"errors"
	"fmt"
	rt "runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
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
	budget    *Budget
	limit     int64

	arenasMu sync.Mutex
	arenas   map[string]*arenaCache // per concrete input-shape signature
}

// Compile prepares g (already validated) for execution.
func Compile(g *graph.Graph, opts Options) (*Program, error) {
	m := &Program{g: g, opsets: graph.Model{Opsets: opts.Opsets}, overrides: opts.Kernels, noFold: opts.NoFold, mainDone: opts.MainSimplified,
		subplans: map[*graph.Graph]*plan{}, arenas: map[string]*arenaCache{}, budget: opts.Budget, limit: opts.MaxTensorBytes}
	for _, in := range g.Inputs {
		if _, isInit := g.Initializers[in.Name]; !isInit {
			m.inputs = append(m.inputs, in)
		}
	}
	var err error
	if m.main, err = m.compile(g, nil); err != nil {
		return nil, err
	}
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
// each, and for every value the step after which it is dead.
type plan struct {
	g       *graph.Graph
	order   []*graph.Node
	schemas []*kernels.Schema
	opsets  []int64
	// free[i] lists values whose last reader is step i (release after it)
	free     [][]string
	isOutput map[string]bool
	produced map[string]bool
	// consts holds values computed at load time (constant folding)
	consts map[string]*graph.Tensor
	// constVals is the initializers and consts together, looked up after a
	// run's own values (a caller's input overrides an initializer default)
	constVals map[string]*graph.Tensor
}

func (m *Program) compile(g *graph.Graph, outer map[string]*graph.Tensor) (*plan, error) {
	order, err := g.TopoSort()
	if err != nil {
		return nil, err
	}
	p := &plan{g: g, isOutput: map[string]bool{}, produced: map[string]bool{}}
	order, p.consts = m.fold(order, g, outer)
	p.order = order
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
	for _, o := range g.Outputs {
		p.isOutput[o.Name] = true
	}
	last := map[string]int{}
	for i, n := range order {
		s, _ := kernels.Lookup(n.Domain, n.OpType)
		if f, ok := m.overrides[n]; ok {
			s = &kernels.Schema{Domain: n.Domain, OpType: n.OpType, Kernel: f}
		}
		if s == nil {
			return nil, fmt.Errorf("exec: %s: %w: no kernel for op %s", n.Label(), kernels.ErrUnsupported, n.OpType)
		}
		p.schemas = append(p.schemas, s)
		p.opsets = append(p.opsets, m.opset(n.Domain))
		for _, in := range nodeReads(n) {
			last[in] = i
		}
		for _, o := range n.Outputs {
			if o != "" {
				p.produced[o] = true
				if _, ok := last[o]; !ok {
					last[o] = i // never read: dead right after it is made
				}
			}
		}
		for _, a := range n.Attrs {
			subs := a.Graphs
			if a.G != nil {
				subs = append([]*graph.Graph{a.G}, subs...)
			}
			for _, sg := range subs {
				sp, err := m.compile(sg, visible)
				if err != nil {
					return nil, err
				}
				m.subplans[sg] = sp
			}
		}
	}
	p.free = make([][]string, len(order))
	names := make([]string, 0, len(last))
	for v := range last {
		names = append(names, v)
	}
	sort.Strings(names)
	for _, v := range names {
		if p.isOutput[v] || !p.produced[v] {
			continue // outputs are returned; inputs/initializers/outer values are not ours
		}
		p.free[last[v]] = append(p.free[last[v]], v)
	}
	p.constVals = make(map[string]*graph.Tensor, len(g.Initializers)+len(p.consts))
	for k, v := range g.Initializers {
		p.constVals[k] = v
	}
	for k, v := range p.consts {
		p.constVals[k] = v
	}
	return p, nil
}

// nodeReads lists the values a node reads, including those its nested
// graphs capture from enclosing scopes.
func nodeReads(n *graph.Node) []string {
	reads := append([]string{}, n.Inputs...)
	for _, a := range n.Attrs {
		subs := a.Graphs
		if a.G != nil {
			subs = append([]*graph.Graph{a.G}, subs...)
		}
		for _, sg := range subs {
			reads = append(reads, sg.FreeVariables()...)
		}
	}
	return reads
}

// scope maps value names to tensors, with enclosing graphs' scopes behind it.
type scope struct {
	vals   map[string]*graph.Tensor // values of this run (inputs first)
	consts map[string]*graph.Tensor // the plan's initializers and folded values (shared, read-only)
	parent *scope
}

func (s *scope) lookup(name string) (*graph.Tensor, bool) {
	for c := s; c != nil; c = c.parent {
		if t, ok := c.vals[name]; ok {
			return t, true
		}
		if t, ok := c.consts[name]; ok {
			return t, true
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
}

// Stats describes one run.
type Stats struct {
	Duration    time.Duration
	Nodes       []NodeTiming
	Allocations int   // new buffers allocated for intermediates
	Reuses      int   // buffers recycled by lifetime
	PeakBytes   int64 // peak bytes of live intermediates
	// InPlace counts the caller-allocated outputs (RunOptions.Into) that
	// the producing kernel wrote directly, Copied those copied into them
	// after the run (an output that is an input or a constant, a kernel
	// that allocated it with another shape, …).
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
	// bound maps a main-graph node to the caller's tensors for its outputs
	// (by output index; nil where none), from RunOptions.Into
	bound map[*graph.Node][]*graph.Tensor
}

// Run executes the graph. inputs maps input names to tensors (an input with
// an initializer default may be omitted). It returns every graph output by
// name; the caller owns them.
func (m *Program) Run(ctx context.Context, inputs map[string]*graph.Tensor) (map[string]*graph.Tensor, error) {
	out, _, err := m.RunWithStats(ctx, inputs, RunOptions{})
	return out, err
}

// RunWithStats is Run with per-run statistics and optional profiling;
// opts.Into works as RunInto's into.
func (m *Program) RunWithStats(ctx context.Context, inputs map[string]*graph.Tensor, opts RunOptions) (out map[string]*graph.Tensor, st *Stats, err error) {
	return m.run(ctx, inputs, opts)
}

// RunInto is Run writing the outputs named in into (caller-allocated
// tensors of the result's dtype and shape) instead of handing over new
// tensors. The kernel producing such an output writes it in place when
// it allocates a tensor of that dtype and shape (or, for a node standing
// for a delegated partition, asks for it with Into); otherwise the result
// is copied into it after the run and its buffer stays in the program's
// arena. Either way steady-state calls allocate nothing for the outputs.
// Outputs not in into are returned as by Run. A caller tensor MUST NOT
// share memory with an input.
func (m *Program) RunInto(ctx context.Context, inputs, into map[string]*graph.Tensor) (map[string]*graph.Tensor, error) {
	out, _, err := m.run(ctx, inputs, RunOptions{Into: into})
	return out, err
}

// bind maps the nodes producing the outputs named in into to those
// tensors (nil when there are none). A caller tensor that shares memory
// with an input is not bound (it is filled after the run).
func (m *Program) bind(into, inputs map[string]*graph.Tensor) map[*graph.Node][]*graph.Tensor {
	if len(into) == 0 {
		return nil
	}
	var bound map[*graph.Node][]*graph.Tensor
	for _, n := range m.main.order {
		for j, o := range n.Outputs {
			dst := into[o]
			if o == "" || dst == nil || dst.Data == nil || !m.main.isOutput[o] || aliasesAny(dst, inputs) {
				continue
			}
			if bound == nil {
				bound = map[*graph.Node][]*graph.Tensor{}
			}
			if bound[n] == nil {
				bound[n] = make([]*graph.Tensor, len(n.Outputs))
			}
			bound[n][j] = dst
		}
	}
	return bound
}

func aliasesAny(t *graph.Tensor, inputs map[string]*graph.Tensor) bool {
	p := dataPtr(t)
	for _, in := range inputs {
		if in == t || p != 0 && dataPtr(in) == p {
			return true
		}
	}
	return false
}

// Into returns the caller-allocated tensor bound to output j of the node
// being run (RunOptions.Into, RunInto), or nil when there is none. A
// kernel that gets one MUST write output j into it (dtype and shape are
// the caller's: a kernel whose result has another type returns its own
// tensor instead, which is then copied) and return it; kernels that
// allocate their outputs with Context.New need not call Into, since New
// hands out the bound tensor for an allocation of its dtype and shape.
// The executor uses it for nodes standing for delegated partitions, whose
// backends write caller outputs in place.
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

func (m *Program) run(ctx context.Context, inputs map[string]*graph.Tensor, opts RunOptions) (out map[string]*graph.Tensor, st *Stats, err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	sig, err := m.checkInputs(inputs)
	if err != nil {
		return nil, nil, err
	}
	pool := m.arenaPool(sig)
	a := pool.get(m.budget, m.limit)
	defer func() {
		a.reset()
		pool.put(a)
	}()
	st = &Stats{}
	start := time.Now()
	into := opts.Into
	r := &run{m: m, arena: a, opts: opts, stats: st, start: start, bound: m.bind(into, inputs)}
	root := &scope{vals: make(map[string]*graph.Tensor, len(inputs)+len(m.main.order))}
	for k, v := range inputs {
		root.vals[k] = v
	}
	outs, err := r.exec(ctx, m.main, root)
	if err != nil {
		return nil, nil, err
	}
	out = make(map[string]*graph.Tensor, len(outs))
	for i, o := range m.main.g.Outputs {
		t := outs[i]
		if dst := into[o.Name]; dst != nil && dst.Data != nil {
			if dst.DType != t.DType || !graph.SameShape(dst.Shape, t.Shape) {
				return nil, nil, fmt.Errorf("exec: %w: output %q is %v%v, caller allocated %v%v", kernels.ErrInvalid, o.Name, t.DType, t.Shape, dst.DType, dst.Shape)
			}
			if t == dst || dataPtr(t) != 0 && dataPtr(t) == dataPtr(dst) {
				st.InPlace++ // the producing kernel wrote it
				out[o.Name] = dst
				continue
			}
			graph.CopyData(dst.Data, t.Data)
			st.Copied++
			a.release(t) // stays in the arena for the next run
			out[o.Name] = dst
			continue
		}
		a.disown(t) // the caller owns it now
		out[o.Name] = t
	}
	st.Duration = time.Since(start)
	st.Allocations, st.Reuses, st.PeakBytes = a.allocs, a.reuses, a.peak
	return out, st, nil
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

// checkInputs validates the caller's inputs and returns the concrete shape
// signature of the run.
func (m *Program) checkInputs(inputs map[string]*graph.Tensor) (string, error) {
	known := map[string]bool{}
	sym := map[string]int{}
	var sig strings.Builder
	for _, in := range m.inputs {
		known[in.Name] = true
		t, ok := inputs[in.Name]
		if !ok || t == nil {
			if _, hasDefault := m.g.Initializers[in.Name]; hasDefault {
				continue
			}
			return "", fmt.Errorf("exec: %w: input %q (%v) is missing", kernels.ErrInvalid, in.Name, in.Type)
		}
		if err := t.Check(); err != nil {
			return "", fmt.Errorf("exec: %w: input %q: %v", kernels.ErrInvalid, in.Name, err)
		}
		want := in.Type
		if want.DType != graph.Undefined && want.DType != t.DType {
			return "", fmt.Errorf("exec: %w: input %q is %v, model wants %v", kernels.ErrInvalid, in.Name, t.DType, want.DType)
		}
		if want.Shape != nil {
			if len(want.Shape) != len(t.Shape) {
				return "", fmt.Errorf("exec: %w: input %q has shape %v, model wants rank %d %v", kernels.ErrInvalid, in.Name, t.Shape, len(want.Shape), want.Shape)
			}
			for i, d := range want.Shape {
				switch {
				case d.Static() && int(d.Value) != t.Shape[i]:
					return "", fmt.Errorf("exec: %w: input %q has shape %v, model wants %v (dim %d)", kernels.ErrInvalid, in.Name, t.Shape, want.Shape, i)
				case d.Param != "":
					if v, seen := sym[d.Param]; seen && v != t.Shape[i] {
						return "", fmt.Errorf("exec: %w: input %q dim %d is %d but symbolic dim %q is already %d", kernels.ErrInvalid, in.Name, i, t.Shape[i], d.Param, v)
					}
					sym[d.Param] = t.Shape[i]
				}
			}
		}
		fmt.Fprintf(&sig, "%s%v;", t.DType, t.Shape)
	}
	for name := range inputs {
		if !known[name] {
			var names []string
			for _, in := range m.inputs {
				names = append(names, in.Name)
			}
			return "", fmt.Errorf("exec: %w: model has no input %q (inputs: %s)", kernels.ErrInvalid, name, strings.Join(names, ", "))
		}
	}
	return sig.String(), nil
}

// exec runs a plan in scope s (whose vals already hold the graph inputs)
// and returns the graph outputs, each owned by the caller.
func (r *run) exec(ctx context.Context, p *plan, s *scope) ([]*graph.Tensor, error) {
	ctx = context.WithValue(ctx, scopeKey{}, s)
	s.consts = p.constVals
	for i, n := range p.order {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("exec: stopped before %s: %w", n.Label(), err)
		}
		ins := make([]*graph.Tensor, len(n.Inputs))
		for j, name := range n.Inputs {
			if name == "" {
				continue
			}
			t, ok := s.lookup(name)
			if !ok {
				return nil, fmt.Errorf("exec: %s: input %q has no value", n.Label(), name)
			}
			ins[j] = t
		}
		var t0 time.Time
		if r.opts.Profile {
			t0 = time.Now()
		}
		outs, err := r.call(ctx, p.schemas[i], p.opsets[i], n, ins)
		if err != nil {
			return nil, err
		}
		if r.opts.Profile {
			r.mu.Lock()
			r.stats.Nodes = append(r.stats.Nodes, NodeTiming{Node: n.Name, OpType: n.OpType, Start: t0.Sub(r.start), Duration: time.Since(t0), Depth: r.depth})
			r.mu.Unlock()
		}
		for j, name := range n.Outputs {
			if name == "" {
				continue
			}
			s.vals[name] = outs[j]
		}
		for _, dead := range p.free[i] {
			if t, ok := s.vals[dead]; ok {
				r.arena.release(t)
			}
		}
	}
	res := make([]*graph.Tensor, len(p.g.Outputs))
	seen := map[*graph.Tensor]bool{}
	for i, o := range p.g.Outputs {
		t, ok := s.lookup(o.Name)
		if !ok {
			return nil, fmt.Errorf("exec: output %q was not produced", o.Name)
		}
		// an output that is an input, initializer, outer value or a repeat
		// of another output is copied so that callers own what they get
		if !p.produced[o.Name] || seen[t] {
			c, err := r.arena.Alloc(t.DType, t.Shape)
			if err != nil {
				return nil, err
			}
			graph.CopyData(c.Data, t.Data)
			t = c
		}
		seen[t] = true
		res[i] = t
	}
	return res, nil
}

// call runs one kernel, turning panics into errors and checking its outputs.
func (r *run) call(ctx context.Context, s *kernels.Schema, opset int64, n *graph.Node, ins []*graph.Tensor) (outs []*graph.Tensor, err error) {
	defer func() {
		if p := recover(); p != nil {
			buf := make([]byte, 4096)
			buf = buf[:rt.Stack(buf, false)]
			err = fmt.Errorf("exec: internal error in %s: %v\n%s", n.Label(), p, buf)
		}
	}()
	cc := &callCtx{na: nodeAlloc{a: r.arena, n: n}} // one allocation for both
	if b := r.bound[n]; b != nil {
		cc.na.bound, cc.na.taken = b, make([]bool, len(b))
	}
	cc.kc = kernels.Context{Context: ctx, Opset: opset, Alloc: &cc.na, RunSubgraph: r.subgraph}
	kc := &cc.kc
	outs, err = s.Kernel(kc, n, ins)
	if err == nil && cc.na.bound != nil {
		err = cc.na.unbind(n, outs)
	}
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
		// buffer recycling: copy it
		p := dataPtr(o)
		for _, in := range ins {
			if in != nil && (in == o || p != 0 && p == dataPtr(in)) {
				c, err := r.arena.Alloc(o.DType, o.Shape)
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

// subgraph implements kernels.SubgraphRunner for If/Loop bodies.
func (r *run) subgraph(ctx context.Context, g *graph.Graph, inputs []*graph.Tensor) ([]*graph.Tensor, error) {
	p, ok := r.m.subplans[g]
	if !ok {
		return nil, errors.New("exec: unknown subgraph (not part of the loaded model)")
	}
	parent, _ := ctx.Value(scopeKey{}).(*scope)
	if parent == nil {
		return nil, errors.New("exec: subgraph run outside a model run")
	}
	if len(inputs) != len(g.Inputs) {
		return nil, fmt.Errorf("exec: subgraph %q takes %d inputs, got %d", g.Name, len(g.Inputs), len(inputs))
	}
	s := &scope{vals: map[string]*graph.Tensor{}, parent: parent}
	for i, in := range g.Inputs {
		s.vals[in.Name] = inputs[i]
	}
	r.mu.Lock()
	r.depth++
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.depth--
		r.mu.Unlock()
	}()
	return r.exec(ctx, p, s)
}

type scopeKey struct{}

// callCtx is what one kernel call gets: its context and its allocator.
type callCtx struct {
	kc kernels.Context
	na nodeAlloc
}
