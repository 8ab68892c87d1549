package runtime

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard-hal/switchyard/core/exec"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/partitioner"
	"github.com/switchyard-hal/switchyard/plugins/cpu"
)

// CPU is the name of the reference-kernel backend (the fallback).
const CPU = cpu.Name

// PartitionDomain is the op domain of the nodes that stand for delegated
// partitions in the executed graph.
const PartitionDomain = "switchyard.partition"

// compiledPartition is a delegated partition compiled by its backend.
type compiledPartition struct {
	part     partitioner.Partition
	dev      *hal.Device
	compiled *hal.Compiled
	sg       *hal.Subgraph
	policy   OnUnavailable
	budget   *exec.Budget // the model's, shared by a re-placed program
	limit    int64        // per-tensor byte limit
	calls    atomic.Int64
	nanos    atomic.Int64

	mu       sync.Mutex
	onCPU    atomic.Pointer[cpu.Executable] // set once re-placed
	replaced *partitioner.Replacement
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
	for _, cp := range m.parts {
		cp.mu.Lock()
		r := cp.replaced
		cp.mu.Unlock()
		if r != nil {
			for i := range p.Partitions {
				if p.Partitions[i].ID == cp.part.ID {
					rc := *r
					p.Partitions[i].Replaced = &rc
				}
			}
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
	for _, cp := range m.parts {
		if cp.compiled != nil {
			errs = append(errs, cp.compiled.Release())
		}
	}
	return errors.Join(errs...)
}

// place asks every backend for verdicts, partitions the main graph,
// compiles delegated partitions and builds the executed program.
func (m *Model) place(ctx context.Context, opts *Options) error {
	ir := m.ir
	if err := checkTypes(ir); err != nil {
		return err
	}
	whole := &hal.Subgraph{Graph: m.withTypes(ir.Graph), Opsets: ir.Opsets}
	cpuVerdicts := cpu.Verdicts(whole, nil)
	var cands []partitioner.Candidate
	devs := map[string]*hal.Device{}
	haveCPU := false
	for _, d := range opts.Backends {
		if d == nil {
			return fmt.Errorf("runtime: %w: nil backend in Options.Backends", kernels.ErrInvalid)
		}
		name := d.Name()
		if name == CPU {
			haveCPU = true
			cands = append(cands, partitioner.Candidate{Backend: CPU, Verdicts: cpuVerdicts})
			continue
		}
		vs, err := d.Supports(ctx, whole)
		if err != nil {
			return fmt.Errorf("runtime: asking backend %q for verdicts: %w", name, err)
		}
		cands = append(cands, partitioner.Candidate{Backend: name, Verdicts: vs})
		devs[name] = d
	}
	if !haveCPU && !opts.Policy.Strict {
		cands = append(cands, partitioner.Candidate{Backend: CPU, Verdicts: cpuVerdicts})
	}
	pol := opts.Policy
	pol.Fallback = CPU
	plan, err := m.placeWithCosts(ctx, ir.Graph, cands, pol, opts, devs) // cost.go
	if err != nil {
		return fmt.Errorf("runtime: %w", err)
	}
	m.plan = plan
	// nodes left on cpu that cpu cannot run: list them all at once
	ops := map[string]bool{}
	for i, np := range plan.Nodes {
		if np.Backend == CPU && !cpuVerdicts[i].Supported {
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
	// compile delegated partitions and stand a node in for each
	g := ir.Graph
	inPart := map[int]bool{}
	overrides := map[*graph.Node]kernels.Func{}
	var standIns []*graph.Node
	for _, p := range plan.Partitions {
		if p.Fallback {
			continue
		}
		dev := devs[p.Backend]
		sg, err := m.subgraph(p)
		if err != nil {
			return err
		}
		compiled, err := m.compilePartition(ctx, dev, sg, opts)
		if err != nil && errors.Is(err, hal.ErrUnsupported) && !opts.Policy.Strict && allOnCPU(p, cpuVerdicts) {
			// the backend claimed nodes it then would not compile (a
			// dishonest verdict): they run on cpu, visibly
			m.demote(p, err)
			continue
		}
		if err != nil {
			return fmt.Errorf("runtime: partition %d (%d nodes) on %s: %w", p.ID, len(p.Nodes), p.Backend, err)
		}
		cp := &compiledPartition{part: p, dev: dev, compiled: compiled, sg: sg, policy: opts.OnUnavailable, budget: m.budget, limit: m.limit}
		m.parts = append(m.parts, cp)
		for _, i := range p.Nodes {
			inPart[i] = true
		}
		n := &graph.Node{Name: fmt.Sprintf("partition%d:%s", p.ID, p.Backend), OpType: "Partition", Domain: PartitionDomain, Inputs: p.Inputs, Outputs: p.Outputs}
		standIns = append(standIns, n)
		overrides[n] = cp.kernel
	}
	exe := g
	if len(standIns) > 0 {
		exe = &graph.Graph{Name: g.Name, Inputs: g.Inputs, Outputs: g.Outputs, ValueInfo: g.ValueInfo, Initializers: g.Initializers}
		for i, n := range g.Nodes {
			if !inPart[i] {
				exe.Nodes = append(exe.Nodes, n)
			}
		}
		exe.Nodes = append(exe.Nodes, standIns...)
	}
	m.prog, err = exec.Compile(exe, exec.Options{Opsets: ir.Opsets, Kernels: overrides, MainSimplified: true, Budget: m.budget, MaxTensorBytes: m.limit})
	return err
}

func allOnCPU(p partitioner.Partition, cpuVerdicts []hal.Verdict) bool {
	for _, i := range p.Nodes {
		if !cpuVerdicts[i].Supported {
			return false
		}
	}
	return true
}

// demote moves a partition its backend failed to compile back to cpu and
// records why in the placement report.
func (m *Model) demote(p partitioner.Partition, cause error) {
	reason := "claimed, then refused to compile: " + cause.Error()
	for k := range m.plan.Partitions {
		if m.plan.Partitions[k].ID == p.ID {
			m.plan.Partitions[k].Replaced = &partitioner.Replacement{From: p.Backend, To: CPU, Reason: reason, At: time.Now()}
		}
	}
	for _, i := range p.Nodes {
		np := &m.plan.Nodes[i]
		np.Declined = append(np.Declined, partitioner.Decline{Backend: np.Backend, Reason: reason})
		np.Backend = CPU
	}
}

func nestedUnsupported(n *graph.Node, ir *graph.Model) []string {
	var out []string
	for _, a := range n.Attrs {
		subs := a.Graphs
		if a.G != nil {
			subs = append([]*graph.Graph{a.G}, subs...)
		}
		for _, g := range subs {
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
	}
	return out
}

// subgraph cuts a partition out of the main graph: its nodes, its boundary
// inputs and outputs with their inferred types, and the constants it uses.
func (m *Model) subgraph(p partitioner.Partition) (*hal.Subgraph, error) {
	g := m.ir.Graph
	sg := &graph.Graph{Name: fmt.Sprintf("%s_partition%d", g.Name, p.ID), Initializers: map[string]*graph.Tensor{}}
	typeOf := func(name string) graph.ValueType {
		t := m.types[name]
		if t.Kind == "" {
			t.Kind = "tensor"
		}
		return t
	}
	for _, in := range p.Inputs {
		sg.Inputs = append(sg.Inputs, graph.ValueInfo{Name: in, Type: typeOf(in)})
	}
	for _, o := range p.Outputs {
		sg.Outputs = append(sg.Outputs, graph.ValueInfo{Name: o, Type: typeOf(o)})
	}
	for _, i := range p.Nodes {
		n := g.Nodes[i]
		sg.Nodes = append(sg.Nodes, n)
		reads := append([]string{}, n.Inputs...)
		for _, a := range n.Attrs {
			subs := a.Graphs
			if a.G != nil {
				subs = append([]*graph.Graph{a.G}, subs...)
			}
			for _, body := range subs {
				reads = append(reads, body.FreeVariables()...)
			}
		}
		for _, r := range reads {
			if t, ok := g.Initializers[r]; ok && !isInput(sg, r) {
				sg.Initializers[r] = t
			}
		}
	}
	sg = m.withTypes(sg)
	if err := sg.Validate(nil); err != nil {
		return nil, fmt.Errorf("runtime: partition %d on %s is not self-contained: %w", p.ID, p.Backend, err)
	}
	return &hal.Subgraph{Graph: sg, Opsets: m.ir.Opsets}, nil
}

// withTypes returns a shallow copy of g whose ValueInfo lists the inferred
// type of every value its nodes produce, so backends (in process, behind
// the C ABI or over the wire) see dtypes and shapes without re-inferring.
func (m *Model) withTypes(g *graph.Graph) *graph.Graph {
	c := *g
	declared := map[string]bool{}
	for _, vi := range append(append([]graph.ValueInfo{}, g.Inputs...), g.Outputs...) {
		declared[vi.Name] = true
	}
	c.ValueInfo = nil
	for _, n := range g.Nodes {
		for _, o := range n.Outputs {
			if o == "" || declared[o] {
				continue
			}
			if t, ok := m.types[o]; ok && (t.DType != graph.Undefined || t.Shape != nil) {
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

func isInput(g *graph.Graph, name string) bool {
	for _, in := range g.Inputs {
		if in.Name == name {
			return true
		}
	}
	return false
}

// kernel runs the partition through its backend as one node of the
// executed graph.
func (cp *compiledPartition) kernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	outs := make([]*graph.Tensor, len(n.Outputs))
	for i := range outs {
		outs[i] = &graph.Tensor{}
	}
	t0 := time.Now()
	defer func() {
		cp.calls.Add(1)
		cp.nanos.Add(int64(time.Since(t0)))
	}()
	if exe := cp.onCPU.Load(); exe != nil {
		return outs, exe.Execute(ctx, in, outs)
	}
	err := cp.compiled.Execute(ctx, in, outs)
	if err != nil && errors.Is(err, hal.ErrUnavailable) && cp.policy == ReplaceOnCPU {
		exe, rerr := cp.replaceOnCPU(err)
		if rerr != nil {
			return nil, fmt.Errorf("runtime: partition %d on %s: %w (re-placing it on cpu failed: %v)", cp.part.ID, cp.part.Backend, err, rerr)
		}
		for i := range outs {
			outs[i] = &graph.Tensor{}
		}
		return outs, exe.Execute(ctx, in, outs)
	}
	if err != nil {
		return nil, fmt.Errorf("runtime: partition %d on %s (node %s): %w", cp.part.ID, cp.part.Backend, n.Name, err)
	}
	return outs, nil
}

// replaceOnCPU compiles the partition on the reference kernels and makes
// every later call use it; the placement report records why.
func (cp *compiledPartition) replaceOnCPU(cause error) (*cpu.Executable, error) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if exe := cp.onCPU.Load(); exe != nil {
		return exe, nil
	}
	prog, err := exec.Compile(cp.sg.Graph, exec.Options{Opsets: cp.sg.Opsets, Budget: cp.budget, MaxTensorBytes: cp.limit})
	if err != nil {
		return nil, err
	}
	exe := &cpu.Executable{Program: prog}
	cp.replaced = &partitioner.Replacement{From: cp.part.Backend, To: CPU, Reason: cause.Error(), At: time.Now()}
	cp.onCPU.Store(exe)
	return exe, nil
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
			for _, a := range n.Attrs {
				if a.G != nil {
					walk(a.G)
				}
				for _, sg := range a.Graphs {
					walk(sg)
				}
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
