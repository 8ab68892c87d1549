package exec

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/core/ops"
)

// NodeTiming is the measured time of one node in a profiled run.
type NodeTiming struct {
	Node string // the node's name, else its first output's

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
	return m.RunBoundWith(ctx, inputs, outputs, RunOptions{}, nil)
}

// RunBoundWith is RunBound with run options (Profile; Into and Drop are
// ignored: outputs binds them) filling the caller's st (nil: no
// statistics): a backend's profiled call.
func (m *Program) RunBoundWith(ctx context.Context, inputs, outputs []*graph.Tensor, opts RunOptions, st *Stats) error {
	opts.Into, opts.Drop = nil, false
	var buf [8]*graph.Tensor
	feeds := buf[:0]
	if len(m.inputs) > len(buf) {
		l := m.tensorList(len(m.inputs))
		feeds = *l
		defer func() { m.putTensorList(l, feeds) }()
	}
	for _, pos := range m.inputPos {
		var t *graph.Tensor
		if pos < len(inputs) {
			t = inputs[pos]
		}
		feeds = append(feeds, t)
	}
	res, a, cache, err := m.start(ctx, feeds, opts, st, outputs)
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
		l := m.tensorList(len(m.inputs))
		feeds = *l
		defer func() { m.putTensorList(l, feeds) }()
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
			l := m.tensorList(len(m.g.Outputs))
			dsts = *l
			defer func() { m.putTensorList(l, dsts) }()
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
	var start time.Time // read for stats and profiles only (a clock read per run otherwise)
	if st != nil || opts.Profile {
		start = time.Now()
	}
	r := &a.run
	*r = run{m: m, arena: a, opts: opts, stats: st, start: start}
	if st == nil {
		a.stats = Stats{}
		r.stats = &a.stats
	}
	r.bound = a.bind(m.main, dsts, feeds)
	f := a.mainFrame(m.main)
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
	a.putMainFrame(f)
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
	var fp []uintptr // the feeds' data pointers, read once (a decoder binds 50 outputs among 50 feeds)
	for i, dst := range dsts {
		if i >= len(p.producer) || dst == nil || dst.Data == nil || p.producer[i].step < 0 {
			continue
		}
		if fp == nil {
			fp = a.dataPtrs(feeds)
		}
		if d := dataPtr(dst); aliasesAnyAt(dst, d, feeds, fp) && !p.overwritesAt(i, dst, d, feeds, fp) {
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

// overwritesAt says whether dst, which shares memory with a feed, may be
// bound to graph output i: it is exactly the feed output i may be written
// in place of (same data, dtype and shape) and shares memory with no
// other feed. d is dst's data pointer, fp the feeds' (by feed).
func (p *plan) overwritesAt(i int, dst *graph.Tensor, d uintptr, feeds []*graph.Tensor, fp []uintptr) bool {
	if i >= len(p.inplace) || p.inplace[i] < 0 || p.inplace[i] >= len(feeds) {
		return false
	}
	k := p.inplace[i]
	f := feeds[k]
	if f == nil || d == 0 || fp[k] != d || f.DType != dst.DType || !graph.SameShape(f.Shape, dst.Shape) {
		return false
	}
	for j, in := range feeds {
		if j != k && in != nil && (in == dst || fp[j] == d) {
			return false
		}
	}
	return true
}

// aliasesAnyAt says whether t (data pointer p) shares memory with one of
// inputs (data pointers ip, by input).
func aliasesAnyAt(t *graph.Tensor, p uintptr, inputs []*graph.Tensor, ip []uintptr) bool {
	for j, in := range inputs {
		if in != nil && (in == t || p != 0 && ip[j] == p) {
			return true
		}
	}
	return false
}

// dataPtrs is the data pointer of each of ts (0 for nil), in a's reused
// list (valid until the next call).
func (a *arena) dataPtrs(ts []*graph.Tensor) []uintptr {
	if cap(a.ptrs) < len(ts) {
		a.ptrs = make([]uintptr, len(ts))
	}
	a.ptrs = a.ptrs[:len(ts)]
	for j, t := range ts {
		a.ptrs[j] = dataPtr(t)
	}
	return a.ptrs
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
