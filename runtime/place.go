package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard-hal/switchyard/core/exec"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/core/ops"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/partitioner"
)

// CPU is the registry name of the default fallback backend: the reference
// kernels (plugins/cpu registers it with hal.Default). The runtime runs the
// nodes placed on it itself, on the same reference kernels, so they cost
// no HAL call; any other fallback device is called like any backend.
const CPU = "cpu"

// PartitionDomain is the op domain of the nodes that stand for delegated
// partitions in the executed graph.
const PartitionDomain = "switchyard.partition"

// compiledPartition is a delegated partition compiled by its backend.
type compiledPartition struct {
	hostBytes int64 // the backend's own memory, held in the model's budget
	part      partitioner.Partition
	dev       *hal.Device
	compiled  *hal.Compiled
	sg        *hal.Subgraph
	policy    OnUnavailable
	strict    bool
	fallback  *fallback
	calls     atomic.Int64
	nanos     atomic.Int64

	// outTypes are the inferred types of the partition's outputs
	// (outTyped[j]: one was inferred)
	outTypes []graph.ValueType
	outTyped []bool

	// slot is the device the partition's values live on, nil for a
	// partition called on host tensors (a HAL 1.0 backend, or one without
	// asynchronous execution); io says where each boundary value goes.
	slot *slot
	io   *boundaryIO

	mu       sync.Mutex
	onCPU    atomic.Pointer[hal.Compiled] // set once re-placed
	hostExe  *hal.Compiled                // the partition compiled on the fallback (re-placement, declines)
	replaced *partitioner.Replacement

	// noProfile is set once the backend answered a profiled call on host
	// tensors with Unsupported: later profiled runs time it from the host.
	noProfile atomic.Bool

	declines    atomic.Int64
	declineMu   sync.Mutex
	lastDecline string
	lastAt      time.Time
}

// PartitionStats reports how often a delegated partition ran and its total time.
type PartitionStats struct {
	ID      int
	Backend string
	Nodes   int
	Calls   int64
	Total   time.Duration
}

// Plan returns the placement (partitions and the per-node report),
// including partitions re-placed at run time.
func (m *Model) Plan() *partitioner.Plan {
	if m.plan == nil {
		return nil
	}
	p := *m.plan
	p.Partitions = append([]partitioner.Partition{}, m.plan.Partitions...)
	byID := make(map[int][]int, len(p.Partitions))
	for i, pt := range p.Partitions {
		byID[pt.ID] = append(byID[pt.ID], i)
	}
	for _, cp := range m.parts {
		cp.mu.Lock()
		r := cp.replaced
		cp.mu.Unlock()
		d := cp.declineRecord()
		for _, i := range byID[cp.part.ID] {
			if r != nil {
				rc := *r
				p.Partitions[i].Replaced = &rc
			}
			p.Partitions[i].Declined = d
		}
	}
	return &p
}

// PartitionStats returns per-partition call counts and times so far.
func (m *Model) PartitionStats() []PartitionStats {
	var out []PartitionStats
	for _, cp := range m.parts {
		out = append(out, PartitionStats{ID: cp.part.ID, Backend: cp.part.Backend, Nodes: len(cp.part.Nodes), Calls: cp.calls.Load(), Total: time.Duration(cp.nanos.Load())})
	}
	return out
}

// releaseParts releases the compiled partitions (see Close).
func (m *Model) releaseParts() error {
	var errs []error
	for _, cp := range append(append([]*compiledPartition{}, m.parts...), m.bodyParts...) {
		if cp.compiled != nil {
			errs = append(errs, cp.compiled.Release())
		}
		m.budget.Release(cp.hostBytes)
		cp.hostBytes = 0
		cp.mu.Lock()
		if cp.hostExe != nil {
			errs = append(errs, cp.hostExe.Release())
		}
		cp.mu.Unlock()
	}
	return errors.Join(errs...)
}

// place asks every backend for verdicts, partitions the main graph,
// compiles delegated partitions, decides where every boundary value lives
// and builds the executed program.
func (m *Model) place(ctx context.Context, opts *Options) error {
	ir := m.ir
	if err := checkTypes(ir); err != nil {
		return err
	}
	fb := newFallback(opts)
	m.fallback = fb
	whole := &hal.Subgraph{Graph: m.withTypes(ir.Graph), Opsets: ir.Opsets}
	var cands []partitioner.Candidate
	devs := map[string]*hal.Device{}
	var fbVerdicts []hal.Verdict // what the fallback takes; nil in strict mode without it
	fallbackVerdicts := func() ([]hal.Verdict, error) {
		if fbVerdicts != nil {
			return fbVerdicts, nil
		}
		d, err := fb.device(ctx)
		if err != nil {
			return nil, err
		}
		if fbVerdicts, err = d.Supports(ctx, whole); err != nil {
			return nil, fmt.Errorf("runtime: asking the fallback backend %q for verdicts: %w", d.Name(), err)
		}
		return fbVerdicts, nil
	}
	haveFallback := false
	for _, d := range opts.Backends {
		if d == nil {
			return fmt.Errorf("runtime: %w: nil backend in Options.Backends", kernels.ErrInvalid)
		}
		name := d.Name()
		if name == fb.name {
			// the fallback's place in the priority order
			haveFallback = true
			vs, err := fallbackVerdicts()
			if err != nil {
				return err
			}
			cands = append(cands, partitioner.Candidate{Backend: name, Verdicts: vs})
			continue
		}
		if _, dup := devs[name]; dup {
			return fmt.Errorf("runtime: %w: backend %q given twice", kernels.ErrInvalid, name)
		}
		vs, err := d.Supports(ctx, whole)
		if err != nil {
			return fmt.Errorf("runtime: asking backend %q for verdicts: %w", name, err)
		}
		cands = append(cands, partitioner.Candidate{Backend: name, Verdicts: vs})
		devs[name] = d
	}
	if !haveFallback && !opts.Policy.Strict {
		vs, err := fallbackVerdicts()
		if err != nil {
			return err
		}
		cands = append(cands, partitioner.Candidate{Backend: fb.name, Verdicts: vs})
	}
	pol := opts.Policy
	pol.Fallback = fb.name
	plan, err := m.placeWithCosts(ctx, ir.Graph, cands, pol, opts, devs, fb) // cost.go
	if err != nil {
		return fmt.Errorf("runtime: %w", err)
	}
	m.plan = plan
	// nodes left on the fallback that it cannot run: list them all at once
	ops := map[string]bool{}
	for i, np := range plan.Nodes {
		if np.Backend == fb.name && fbVerdicts != nil && !fbVerdicts[i].Supported {
			n := ir.Graph.Nodes[i]
			d := n.Domain
			if d == "" {
				d = "ai.onnx"
			}
			ops[fmt.Sprintf("%s:%s(opset %d)", d, n.OpType, ir.OpsetVersion(n.Domain))] = true
			// a nested-graph op whose body holds the unsupported op
			for _, inner := range nestedUnsupported(n, ir) {
				ops[inner] = true
			}
		}
	}
	if len(ops) > 0 {
		names := sortedKeys(ops)
		return &UnsupportedError{Ops: names}
	}
	// compile delegated partitions (and, for a fallback the runtime does
	// not run itself, the fallback's) and stand a node in for each
	inline := fb.name == CPU
	for _, p := range plan.Partitions {
		dev := devs[p.Backend]
		if p.Fallback || p.Backend == fb.name {
			if inline {
				continue
			}
			if dev, err = fb.device(ctx); err != nil {
				return err
			}
		}
		sg, err := m.subgraph(p)
		if err != nil {
			return err
		}
		copts := opts.Compile
		if dev == fb.resolved() {
			copts = hal.CompileOptions{Threads: opts.Compile.Threads, Profile: opts.Compile.Profile}
		}
		compiled, err := m.compilePartition(ctx, dev, sg, &copts, opts.CompileCache)
		if err != nil && errors.Is(err, hal.ErrUnsupported) && !opts.Policy.Strict && dev != fb.resolved() && allOnFallback(p, fbVerdicts) {
			// the backend claimed nodes it then would not compile (a
			// dishonest verdict): they run on the fallback, visibly
			m.demote(p, fb.name, err)
			if inline {
				continue
			}
			if dev, err = fb.device(ctx); err != nil {
				return err
			}
			copts = hal.CompileOptions{Threads: opts.Compile.Threads}
			compiled, err = dev.Compile(ctx, sg, &copts)
		}
		if err != nil {
			return fmt.Errorf("runtime: partition %d (%d nodes) on %s: %w", p.ID, len(p.Nodes), dev.Name(), err)
		}
		cp := &compiledPartition{part: p, dev: dev, compiled: compiled, sg: sg, policy: opts.OnUnavailable, strict: opts.Policy.Strict, fallback: fb}
		cp.outTypes, cp.outTyped = make([]graph.ValueType, len(p.Outputs)), make([]bool, len(p.Outputs))
		for j, o := range p.Outputs {
			cp.outTypes[j], cp.outTyped[j] = sg.TypeOf(o)
		}
		m.parts = append(m.parts, cp)
		// the backend's own memory for the partition counts against the
		// budget: a small file of many partitions must not hold gigabytes
		// outside it
		if n := compiled.HostBytes(); n > 0 {
			if !m.budget.Hold(n) {
				return fmt.Errorf("runtime: partition %d (%d nodes) on %s holds %s of its own host memory; with %s already held, that exceeds the model's memory budget of %s: %w",
					p.ID, len(p.Nodes), dev.Name(), exec.FormatBytes(n), exec.FormatBytes(m.budget.Held()), exec.FormatBytes(m.budget.Limit()), kernels.ErrResourceExhausted)
			}
			cp.hostBytes = n
		}
		if prec := compiled.Precision(); prec != hal.PrecisionFloat32 {
			m.setPartition(p.ID, func(pp *partitioner.Partition) { pp.Precision = string(prec) })
		}
	}
	if inline {
		order := make([]string, len(cands))
		for i, c := range cands {
			order[i] = c.Backend
		}
		if err := m.placeBodies(ctx, opts, devs, fb, order, pol); err != nil {
			return err
		}
	}
	if err := m.planResidency(ctx, opts); err != nil {
		return err
	}
	exe, overrides, inPlace := m.executedGraph()
	m.prog, err = exec.Compile(exe, exec.Options{Opsets: ir.Opsets, Kernels: overrides, InPlace: inPlace, MainSimplified: true, Budget: m.budget, MaxTensorBytes: m.limit})
	return err
}

// setPartition edits the plan's record of partition id.
func (m *Model) setPartition(id int, f func(p *partitioner.Partition)) {
	for k := range m.plan.Partitions {
		if m.plan.Partitions[k].ID == id {
			f(&m.plan.Partitions[k])
		}
	}
}

// executedGraph is the main graph with every compiled partition replaced
// by one node standing for it. Values that stay on a device are carried
// between stand-ins by ordering tokens. A stand-in for a host partition
// whose executable updates outputs in an input's memory
// (hal.InPlaceExecutable) declares those pairs, so that a caller's tensor
// bound to both reaches the backend.
func (m *Model) executedGraph() (*graph.Graph, map[*graph.Node]kernels.Func, map[*graph.Node][]ops.InPlace) {
	g := m.ir.Graph
	if len(m.parts) == 0 && len(m.bodyNodes) == 0 {
		return g, nil, nil
	}
	inPlace := map[*graph.Node][]ops.InPlace{}
	inPart := map[int]bool{}
	overrides := map[*graph.Node]kernels.Func{}
	for n, f := range m.bodyOver {
		overrides[n] = f
	}
	exe := &graph.Graph{Name: g.Name, Inputs: g.Inputs, Outputs: g.Outputs, ValueInfo: g.ValueInfo, Initializers: g.Initializers}
	var standIns []*graph.Node
	for _, cp := range m.parts {
		p := cp.part
		for _, i := range p.Nodes {
			inPart[i] = true
		}
		n := &graph.Node{Name: fmt.Sprintf("partition%d:%s", p.ID, cp.dev.Name()), OpType: "Partition", Domain: PartitionDomain, Inputs: p.Inputs, Outputs: p.Outputs}
		if cp.io != nil {
			n.Inputs, n.Outputs = cp.io.execInputs, cp.io.execOutputs
			overrides[n] = cp.deviceKernel
		} else {
			overrides[n] = cp.kernel
			if pairs := cp.inPlace(); len(pairs) > 0 {
				inPlace[n] = pairs
			}
		}
		standIns = append(standIns, n)
	}
	for i, n := range g.Nodes {
		if !inPart[i] {
			if c := m.bodyNodes[n]; c != nil {
				n = c // its bodies placed per node (bodies.go)
			}
			exe.Nodes = append(exe.Nodes, n)
		}
	}
	exe.Nodes = append(exe.Nodes, standIns...)
	return exe, overrides, inPlace
}

// inPlace is the compiled partition's in-place outputs as pairs of its
// stand-in's output and input (matched by value name).
func (cp *compiledPartition) inPlace() []ops.InPlace {
	var out []ops.InPlace
	for _, ip := range cp.compiled.InPlaceOutputs() {
		o, in := cp.sg.Graph.Outputs[ip.Output].Name, cp.sg.Graph.Inputs[ip.Input].Name
		j, i := slices.Index(cp.part.Outputs, o), slices.Index(cp.part.Inputs, in)
		if j >= 0 && i >= 0 {
			out = append(out, ops.InPlace{Output: j, Input: i})
		}
	}
	return out
}

func allOnFallback(p partitioner.Partition, verdicts []hal.Verdict) bool {
	if verdicts == nil {
		return false
	}
	for _, i := range p.Nodes {
		if !verdicts[i].Supported {
			return false
		}
	}
	return true
}

// demote moves a partition its backend failed to compile to the fallback
// and records why in the placement report.
func (m *Model) demote(p partitioner.Partition, to string, cause error) {
	reason := "claimed, then refused to compile: " + cause.Error()
	m.setPartition(p.ID, func(pp *partitioner.Partition) {
		pp.Replaced = &partitioner.Replacement{From: p.Backend, To: to, Reason: reason, At: time.Now()}
	})
	for _, i := range p.Nodes {
		np := &m.plan.Nodes[i]
		np.Declined = append(np.Declined, partitioner.Decline{Backend: np.Backend, Reason: reason})
		np.Backend = to
	}
}

func nestedUnsupported(n *graph.Node, ir *graph.Model) []string {
	var out []string
	for _, g := range n.Subgraphs() {
		for _, inner := range g.Nodes {
			if err := kernels.CheckNode(inner, ir.OpsetVersion(inner.Domain)); err != nil && errors.Is(err, kernels.ErrUnsupported) {
				d := inner.Domain
				if d == "" {
					d = "ai.onnx"
				}
				out = append(out, fmt.Sprintf("%s:%s(opset %d)", d, inner.OpType, ir.OpsetVersion(inner.Domain)))
			}
			out = append(out, nestedUnsupported(inner, ir)...)
		}
	}
	return out
}

// subgraph cuts a partition out of the main graph: its nodes, its boundary
// inputs and outputs with their inferred types, and the constants it uses.
func (m *Model) subgraph(p partitioner.Partition) (*hal.Subgraph, error) {
	return m.cut(m.ir.Graph, m.types, p)
}

// cut cuts a partition out of g (the main graph or a control-flow body
// closed over what it captures, bodies.go), whose values have types.
func (m *Model) cut(g *graph.Graph, types map[string]graph.ValueType, p partitioner.Partition) (*hal.Subgraph, error) {
	sg := &graph.Graph{Name: fmt.Sprintf("%s_partition%d", g.Name, p.ID), Initializers: map[string]*graph.Tensor{}}
	typeOf := func(name string) graph.ValueType {
		t := types[name]
		if t.Kind == "" {
			t.Kind = "tensor"
		}
		return t
	}
	isIn := make(map[string]bool, len(p.Inputs))
	for _, in := range p.Inputs {
		sg.Inputs = append(sg.Inputs, graph.ValueInfo{Name: in, Type: typeOf(in)})
		isIn[in] = true
	}
	for _, o := range p.Outputs {
		sg.Outputs = append(sg.Outputs, graph.ValueInfo{Name: o, Type: typeOf(o)})
	}
	for _, i := range p.Nodes {
		n := g.Nodes[i]
		sg.Nodes = append(sg.Nodes, n)
		reads := append([]string{}, n.Inputs...)
		for _, body := range n.Subgraphs() {
			reads = append(reads, body.FreeVariables()...)
		}
		for _, r := range reads {
			if t, ok := g.Initializers[r]; ok && !isIn[r] {
				sg.Initializers[r] = t
			}
		}
	}
	sg = annotate(sg, types)
	if err := sg.Validate(nil); err != nil {
		return nil, fmt.Errorf("runtime: partition %d on %s is not self-contained: %w", p.ID, p.Backend, err)
	}
	return &hal.Subgraph{Graph: sg, Opsets: m.ir.Opsets}, nil
}

// withTypes returns a shallow copy of g whose ValueInfo lists the inferred
// type of every value its nodes produce, so backends (in process, behind
// the C ABI or over the wire) see dtypes and shapes without re-inferring.
func (m *Model) withTypes(g *graph.Graph) *graph.Graph { return annotate(g, m.types) }

// TypedSubgraph returns sg as the runtime hands subgraphs to backends: a
// shallow copy whose ValueInfo holds the inferred type of every value its
// nodes produce and whose outputs declared without a dtype or shape get
// the inferred ones (hal.Subgraph's guarantee). It is for tests and tools
// that build subgraphs by hand and call a backend directly; sg is not
// changed.
func TypedSubgraph(sg *hal.Subgraph) *hal.Subgraph {
	types, _ := InferTypes(&graph.Model{Graph: sg.Graph, Opsets: sg.Opsets})
	return &hal.Subgraph{Graph: annotate(sg.Graph, types), Opsets: sg.Opsets}
}

func annotate(g *graph.Graph, types map[string]graph.ValueType) *graph.Graph {
	c := *g
	declared := map[string]bool{}
	for _, vi := range g.Inputs {
		declared[vi.Name] = true
	}
	// a model output declared without a dtype or shape gets the inferred
	// one (the caller's graph is not changed: Outputs is copied)
	c.Outputs = append([]graph.ValueInfo(nil), g.Outputs...)
	for i, vi := range c.Outputs {
		declared[vi.Name] = true
		t, ok := types[vi.Name]
		if !ok {
			continue
		}
		if vi.Type.DType == graph.Undefined && t.DType != graph.Undefined {
			c.Outputs[i].Type.DType = t.DType
		}
		if vi.Type.Shape == nil && t.Shape != nil {
			c.Outputs[i].Type.Shape = t.Shape
		}
		if c.Outputs[i].Type.Kind == "" {
			c.Outputs[i].Type.Kind = "tensor"
		}
	}
	c.ValueInfo = nil
	for _, n := range g.Nodes {
		for _, o := range n.Outputs {
			if o == "" || declared[o] {
				continue
			}
			if t, ok := types[o]; ok && (t.DType != graph.Undefined || t.Shape != nil) {
				if t.Kind == "" {
					t.Kind = "tensor"
				}
				c.ValueInfo = append(c.ValueInfo, graph.ValueInfo{Name: o, Type: t})
				declared[o] = true
			}
		}
	}
	return &c
}

// kernel runs the partition through its backend as one node of the
// executed graph, on host tensors (HAL 1.0, or no asynchronous execution).
func (cp *compiledPartition) kernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	t0 := time.Now()
	defer func() {
		cp.calls.Add(1)
		cp.nanos.Add(int64(time.Since(t0)))
	}()
	outs, caller, err := cp.outputs(ctx, len(n.Outputs))
	if err != nil {
		return nil, err
	}
	if exe := cp.onCPU.Load(); exe != nil {
		return cp.executeOn(ctx, exe, in, outs)
	}
	err = cp.execute(ctx, in, outs, t0)
	switch {
	case err == nil:
		return outs, nil
	case errors.Is(err, hal.ErrDeclined):
		exe, derr := cp.declined(ctx, err)
		if derr != nil {
			return nil, derr
		}
		if rs := runStateOf(ctx); rs != nil {
			rs.declinedCall(cp, t0)
		}
		return cp.executeOn(ctx, exe, in, cp.refresh(outs, caller))
	case errors.Is(err, hal.ErrUnavailable) && cp.policy == ReplaceOnCPU:
		exe, rerr := cp.replaceOnCPU(ctx, err)
		if rerr != nil {
			return nil, fmt.Errorf("runtime: partition %d on %s: %w (re-placing it on %s failed: %v)", cp.part.ID, cp.part.Backend, err, cp.fallback.name, rerr)
		}
		return cp.executeOn(ctx, exe, in, cp.refresh(outs, caller))
	}
	return nil, fmt.Errorf("runtime: partition %d on %s (node %s): %w", cp.part.ID, cp.part.Backend, n.Name, err)
}

// execute calls the backend on host tensors. In a profiled run it asks
// for that call's own profile (hal.ProfilingExecutable), so concurrent
// runs each get their own device timings; a backend that cannot profile
// single calls is asked once, then timed from the host.
func (cp *compiledPartition) execute(kc *kernels.Context, in, outs []*graph.Tensor, t0 time.Time) error {
	rs := runStateOf(kc)
	if rs == nil || !rs.profile || cp.noProfile.Load() {
		return cp.compiled.Execute(kc, in, outs)
	}
	p, err := cp.compiled.ExecuteProfiled(kc, in, outs)
	if err != nil && p == nil && hal.CodeOf(err) == hal.CodeUnsupported {
		cp.noProfile.Store(true)
		return cp.compiled.Execute(kc, in, outs)
	}
	if err == nil && p != nil {
		rs.hostCall(cp, t0, p)
	}
	return err
}

func freshOutputs(n int) []*graph.Tensor {
	outs := make([]*graph.Tensor, n)
	for i := range outs {
		outs[i] = &graph.Tensor{}
	}
	return outs
}

// outputs are the output tensors of a call on host tensors: the caller's
// tensor where the run binds one to a partition output (RunOptions.Into)
// whose inferred type it fits (the backend writes it in place, as the HAL
// requires; the caller vouches for the size of a symbolic dim), else a
// buffer of the run's arena for an output of static inferred shape (also
// written in place, recycled by the executor when the value is dead),
// else an empty tensor the backend fills. Bit j of caller marks the
// caller's tensors, which a retry on another backend writes into again. The slice is
// kc's own (kernels.Context.OutputSlice).
func (cp *compiledPartition) outputs(kc *kernels.Context, n int) (outs []*graph.Tensor, caller uint64, err error) {
	outs = kc.OutputSlice(n)
	for j := range outs {
		dst := exec.Into(kc, j)
		if dst == nil || j >= len(cp.part.Outputs) {
			continue
		}
		if t := cp.outTypes[j]; j < 64 && cp.outTyped[j] && t.DType == dst.DType && shapeFits(t.Shape, dst.Shape) {
			outs[j] = dst
			caller |= 1 << j
		}
	}
	for j := range outs {
		if outs[j] != nil {
			continue
		}
		if cp.staticOut(j) {
			var sb [8]int
			if dims, ok := staticDims(cp.outTypes[j].Shape, sb[:0]); ok {
				t, err := kc.NewUninit(cp.outTypes[j].DType, dims)
				if err != nil {
					return nil, 0, err
				}
				outs[j] = t
				continue
			}
		}
		outs[j] = &graph.Tensor{}
	}
	return outs, caller, nil
}

// staticDims appends s's dims to buf when every dim is static.
func staticDims(s graph.Shape, buf []int) ([]int, bool) {
	if s == nil {
		return nil, false
	}
	for _, d := range s {
		if !d.Static() {
			return nil, false
		}
		buf = append(buf, int(d.Value))
	}
	return buf, true
}

// refresh empties the outputs a failed call may have filled in; the
// caller's tensors stay (the next call writes them again).
// The outputs of static shape hold the run's buffers: they stay too.
func (cp *compiledPartition) refresh(outs []*graph.Tensor, caller uint64) []*graph.Tensor {
	for j := range outs {
		if (j >= 64 || caller&(1<<j) == 0) && !cp.staticOut(j) {
			outs[j] = &graph.Tensor{}
		}
	}
	return outs
}

// staticOut says whether outputs gives output j a buffer of the run.
func (cp *compiledPartition) staticOut(j int) bool {
	if j >= len(cp.outTypes) || !cp.outTyped[j] || cp.outTypes[j].DType == graph.Undefined || cp.outTypes[j].DType == graph.String {
		return false
	}
	_, ok := staticDims(cp.outTypes[j].Shape, nil)
	return ok
}

// shapeFits says whether a tensor of shape dims can be a value of shape s:
// same rank, same static dims (symbolic ones take any size).
func shapeFits(s graph.Shape, dims []int) bool {
	if s == nil || len(s) != len(dims) {
		return false
	}
	for i, d := range s {
		if d.Static() && int(d.Value) != dims[i] {
			return false
		}
	}
	return true
}

// executeOn runs the partition on host tensors through another executable
// (the fallback's), into outs (as from cp.outputs; nil: fresh ones).
func (cp *compiledPartition) executeOn(ctx context.Context, exe *hal.Compiled, in, outs []*graph.Tensor) ([]*graph.Tensor, error) {
	if outs == nil {
		outs = freshOutputs(len(cp.part.Outputs))
	}
	if err := exe.Execute(ctx, in, outs); err != nil {
		return nil, fmt.Errorf("runtime: partition %d (moved from %s to %s): %w", cp.part.ID, cp.part.Backend, cp.fallback.name, err)
	}
	return outs, nil
}

// fallbackExe compiles the partition on the fallback backend, once.
func (cp *compiledPartition) fallbackExe(ctx context.Context) (*hal.Compiled, error) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.hostExe != nil {
		return cp.hostExe, nil
	}
	d, err := cp.fallback.device(ctx)
	if err != nil {
		return nil, err
	}
	exe, err := d.Compile(ctx, cp.sg, &hal.CompileOptions{})
	if err != nil {
		return nil, err
	}
	cp.hostExe = exe
	return exe, nil
}

// replaceOnCPU moves the partition to the fallback backend for every later
// call; the placement report records why.
func (cp *compiledPartition) replaceOnCPU(ctx context.Context, cause error) (*hal.Compiled, error) {
	if exe := cp.onCPU.Load(); exe != nil {
		return exe, nil
	}
	exe, err := cp.fallbackExe(ctx)
	if err != nil {
		return nil, err
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if cp.replaced == nil {
		cp.replaced = &partitioner.Replacement{From: cp.part.Backend, To: cp.fallback.name, Reason: cause.Error(), At: time.Now()}
	}
	cp.onCPU.Store(exe)
	return exe, nil
}

// declined handles a run-time decline: strict mode fails; otherwise the
// call runs on the fallback, counted and reported.
func (cp *compiledPartition) declined(ctx context.Context, cause error) (*hal.Compiled, error) {
	if cp.strict {
		return nil, fmt.Errorf("runtime: partition %d on %s declined at run time, and strict mode forbids running it elsewhere: %w", cp.part.ID, cp.part.Backend, cause)
	}
	exe, err := cp.fallbackExe(ctx)
	if err != nil {
		return nil, fmt.Errorf("runtime: partition %d on %s declined at run time (%v), and the fallback could not take it: %w", cp.part.ID, cp.part.Backend, cause, err)
	}
	cp.declines.Add(1)
	cp.declineMu.Lock()
	cp.lastDecline, cp.lastAt = cause.Error(), time.Now()
	cp.declineMu.Unlock()
	return exe, nil
}

func (cp *compiledPartition) declineRecord() *partitioner.RunDeclines {
	n := cp.declines.Load()
	if n == 0 {
		return nil
	}
	cp.declineMu.Lock()
	defer cp.declineMu.Unlock()
	return &partitioner.RunDeclines{Calls: n, To: cp.fallback.name, Reason: cp.lastDecline, At: cp.lastAt}
}

// checkTypes refuses value kinds and dtypes Switchyard cannot hold.
func checkTypes(ir *graph.Model) error {
	others := map[string]bool{}
	var walk func(g *graph.Graph)
	walk = func(g *graph.Graph) {
		for _, vi := range append(append([]graph.ValueInfo{}, g.Inputs...), g.Outputs...) {
			if vi.Type.Kind != "" && vi.Type.Kind != "tensor" {
				others[fmt.Sprintf("value %q has %s type", vi.Name, vi.Type.Kind)] = true
			} else if vi.Type.DType != graph.Undefined && !vi.Type.DType.Supported() {
				others[fmt.Sprintf("value %q has dtype %v", vi.Name, vi.Type.DType)] = true
			}
		}
		for _, n := range g.Nodes {
			for _, sg := range n.Subgraphs() {
				walk(sg)
			}
		}
	}
	walk(ir.Graph)
	if len(others) > 0 {
		// list unsupported ops too, so one error names everything
		var ops []string
		if err := CheckSupported(ir); err != nil {
			var ue *UnsupportedError
			if errors.As(err, &ue) {
				ops = ue.Ops
			}
		}
		o := sortedKeys(others)
		sort.Strings(o)
		return &UnsupportedError{Ops: ops, Others: o}
	}
	return nil
}
