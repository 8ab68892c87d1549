package runtime

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/switchyard-hal/switchyard/core/exec"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	shapeops "github.com/switchyard-hal/switchyard/core/ops/shape"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/partitioner"
)

// Control-flow bodies placed per node. An If, Loop or Scan that no
// backend takes whole (a backend's verdict covers the node with all its
// bodies) runs on the runtime's own executor, and its bodies are placed
// like the main graph: each body, closed over the values it captures
// from enclosing scopes (captured constants become its constants, other
// captured values its inputs) and typed by inference from those, is
// offered to every backend for verdicts, partitioned by the same
// partitioner and cost model, and its delegated partitions are compiled
// and stand as one node each in the body the executor runs; a body's node
// left on the fallback that has bodies of its own is placed the same way.
// An op no fast backend takes thus costs one node on the reference
// kernels, not the whole If around it. The plans are in Plan.Bodies,
// nested as the graphs are. Only an in-process cpu fallback runs bodies
// this way (a fallback behind the HAL runs the whole node), and backends
// with their own device memory take no part of a body (they take a
// control-flow node whole or not at all).

// bodyPlacer places the bodies of one model.
type bodyPlacer struct {
	m     *Model
	ctx   context.Context
	opts  *Options
	devs  map[string]*hal.Device
	fb    *fallback
	order []string // the candidates' backends in priority order
	pol   partitioner.Policy
}

// outerScope is what a body sees of its enclosing graphs: the types
// (inferred and representative) and constant values of the names it may
// capture.
type outerScope struct {
	types, rep map[string]graph.ValueType
	consts     map[string]*graph.Tensor
}

// placeBodies places the bodies of the main graph's control-flow nodes
// left on the fallback, recording the replacement nodes the executed
// graph runs (m.bodyNodes) and their stand-ins' kernels (m.bodyOver).
func (m *Model) placeBodies(ctx context.Context, opts *Options, devs map[string]*hal.Device, fb *fallback, order []string, pol partitioner.Policy) error {
	g := m.ir.Graph
	var todo []int
	for i, n := range g.Nodes {
		if len(n.Subgraphs()) > 0 && m.plan.Nodes[i].Backend == fb.name {
			todo = append(todo, i)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	bp := &bodyPlacer{m: m, ctx: ctx, opts: opts, devs: devs, fb: fb, order: order, pol: pol}
	out := outerScope{types: m.types, consts: visibleConsts(nil, g)}
	if !pol.IgnoreCosts {
		out.rep = representativeTypes(m.ir, opts.Compile.ShapeBounds)
	}
	m.bodyNodes = map[*graph.Node]*graph.Node{}
	m.bodyOver = map[*graph.Node]kernels.Func{}
	for _, i := range todo {
		c, bodies, err := bp.node(g.Nodes[i], i, out)
		if err != nil {
			return err
		}
		m.bodyNodes[g.Nodes[i]] = c
		m.plan.Bodies = append(m.plan.Bodies, bodies...)
	}
	return nil
}

// visibleConsts adds g's constants (initializers and Constant nodes) to
// a copy of outer.
func visibleConsts(outer map[string]*graph.Tensor, g *graph.Graph) map[string]*graph.Tensor {
	c := make(map[string]*graph.Tensor, len(outer)+len(g.Initializers))
	for k, v := range outer {
		c[k] = v
	}
	for k, v := range g.Initializers {
		c[k] = v
	}
	for _, in := range g.Inputs {
		delete(c, in.Name) // an input's default is no constant (nor is an outer name it shadows)
	}
	for _, n := range g.Nodes {
		if n.OpType == "Constant" && n.Domain == "" && len(n.Outputs) == 1 {
			if t, err := shapeops.ConstantValue(n); err == nil {
				c[n.Outputs[0]] = t
			}
		}
	}
	return c
}

// node returns a copy of control-flow node n whose bodies are the placed
// ones, and their plans. idx is n's index in its graph.
func (bp *bodyPlacer) node(n *graph.Node, idx int, out outerScope) (*graph.Node, []partitioner.Body, error) {
	c := *n
	c.Attrs = make(map[string]*graph.Attribute, len(n.Attrs))
	names := make([]string, 0, len(n.Attrs))
	for k, a := range n.Attrs {
		c.Attrs[k] = a
		if a != nil && a.G != nil {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	var bodies []partitioner.Body
	for _, k := range names {
		a := n.Attrs[k]
		exe, plan, err := bp.body(n, a.G, out)
		if err != nil {
			return nil, nil, fmt.Errorf("runtime: placing %s's %s: %w", n.Label(), k, err)
		}
		ca := *a
		ca.G = exe
		c.Attrs[k] = &ca
		bodies = append(bodies, partitioner.Body{Node: idx, OpType: n.OpType, Name: n.Name, Attribute: k, Plan: plan})
	}
	return &c, bodies, nil
}

// closeBody is body with what it captures made its own: captured
// constants become initializers, other captured values inputs typed as
// types says; inputs the body declares without a dtype take n's (a
// Loop's counter, condition and carried values; a Scan's state values
// and its scan inputs' slices).
func closeBody(n *graph.Node, body *graph.Graph, types map[string]graph.ValueType, consts map[string]*graph.Tensor, opsets []graph.Opset) *graph.Graph {
	c := *body
	c.Inputs = append([]graph.ValueInfo(nil), body.Inputs...)
	if n.OpType == "Loop" {
		for i := range c.Inputs {
			if c.Inputs[i].Type.DType != graph.Undefined || i >= len(n.Inputs) {
				continue
			}
			switch i {
			case 0:
				c.Inputs[i].Type = graph.ValueType{Kind: "tensor", DType: graph.Int64, Shape: graph.StaticShape()}
			case 1:
				c.Inputs[i].Type = graph.ValueType{Kind: "tensor", DType: graph.Bool, Shape: graph.StaticShape()}
			default:
				c.Inputs[i].Type = graph.ValueType{Kind: "tensor", DType: types[n.Inputs[i]].DType}
			}
		}
	}
	var tentative []int // Loop carried inputs given the shape of the Loop's input
	if n.OpType == "Loop" {
		for i := 2; i < len(c.Inputs) && i < len(n.Inputs); i++ {
			t := types[n.Inputs[i]]
			if c.Inputs[i].Type.Shape == nil && t.Shape != nil && t.DType == c.Inputs[i].Type.DType {
				c.Inputs[i].Type.Shape = t.Shape
				tentative = append(tentative, i)
			}
		}
	}
	if n.OpType == "Scan" && n.AttrInt("num_scan_inputs", 0) > 0 && len(n.Inputs) == len(c.Inputs) {
		// opset 9+: the state values as given, then one slice of each
		// scan input (its scan axis removed)
		m := int(n.AttrInt("num_scan_inputs", 0))
		axes := n.AttrInts("scan_input_axes", nil)
		for i := range c.Inputs {
			if c.Inputs[i].Type.DType != graph.Undefined || m > len(n.Inputs) {
				continue
			}
			t := types[n.Inputs[i]]
			if k := i - (len(n.Inputs) - m); k >= 0 {
				axis := int64(0)
				if k < len(axes) {
					axis = axes[k]
				}
				if r := int64(len(t.Shape)); t.Shape != nil && axis < 0 {
					axis += r
				}
				if t.Shape != nil && axis >= 0 && axis < int64(len(t.Shape)) {
					t.Shape = append(append(graph.Shape{}, t.Shape[:axis]...), t.Shape[axis+1:]...)
				} else {
					t.Shape = nil
				}
			}
			if t.Kind == "" {
				t.Kind = "tensor"
			}
			c.Inputs[i].Type = t
		}
	}
	c.Initializers = make(map[string]*graph.Tensor, len(body.Initializers))
	for k, v := range body.Initializers {
		c.Initializers[k] = v
	}
	for _, name := range body.FreeVariables() {
		if t, ok := consts[name]; ok {
			c.Initializers[name] = t
			continue
		}
		t := types[name]
		if t.Kind == "" {
			t.Kind = "tensor"
		}
		c.Inputs = append(c.Inputs, graph.ValueInfo{Name: name, Type: t})
	}
	if len(tentative) > 0 {
		// the shapes hold for every iteration only where the body gives
		// each carried value back in the shape it took (a fixed point);
		// otherwise none is claimed
		bt, _ := InferTypes(&graph.Model{Graph: &c, Opsets: opsets})
		for _, i := range tentative {
			o := 1 + (i - 2)
			if o >= len(c.Outputs) || !sameShape(bt[c.Outputs[o].Name].Shape, c.Inputs[i].Type.Shape) {
				for _, j := range tentative {
					c.Inputs[j].Type.Shape = nil
				}
				break
			}
		}
	}
	return &c
}

// sameShape says whether a and b are the same known shape.
func sameShape(a, b graph.Shape) bool {
	if a == nil || b == nil || len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// loopTypes gives a Loop's outputs the types its body implies: each
// carried value the type the body takes it in (closeBody: the Loop
// input's shape where the body keeps it), each scan output the body's
// type with a leading dim of unknown size.
func loopTypes(ir *graph.Model, n *graph.Node, types map[string]graph.ValueType, consts map[string]*graph.Tensor) {
	body := n.AttrGraph("body")
	if body == nil || len(body.Inputs) != len(n.Inputs) || len(body.Outputs) < len(body.Inputs)-1 {
		return
	}
	c := closeBody(n, body, types, consts, ir.Opsets)
	bt, _ := InferTypes(&graph.Model{Graph: c, Opsets: ir.Opsets})
	nCarried := len(n.Inputs) - 2
	for j, name := range n.Outputs {
		if name == "" {
			continue
		}
		if old, ok := types[name]; ok && old.DType != graph.Undefined && old.Shape != nil {
			continue
		}
		var t graph.ValueType
		if j < nCarried {
			t = c.Inputs[2+j].Type
		} else if o := 1 + j; o < len(c.Outputs) {
			t = bt[c.Outputs[o].Name]
			if t.DType == graph.Undefined {
				t.DType = c.Outputs[o].Type.DType
			}
			if t.Shape != nil {
				t.Shape = append(graph.Shape{{Value: -1}}, t.Shape...)
			}
		}
		if t.DType == graph.Undefined {
			continue
		}
		t.Kind = "tensor"
		types[name] = t
	}
}

// body places one body of n and returns the graph the executor runs for
// it (delegated partitions replaced by stand-ins) with its plan.
func (bp *bodyPlacer) body(n *graph.Node, body *graph.Graph, out outerScope) (*graph.Graph, *partitioner.Plan, error) {
	m := bp.m
	closed := closeBody(n, body, out.types, out.consts, m.ir.Opsets)
	types := inferTypes(&graph.Model{Graph: closed, Opsets: m.ir.Opsets})
	whole := &hal.Subgraph{Graph: annotate(closed, types), Opsets: m.ir.Opsets}
	fbDev, err := bp.fb.device(bp.ctx)
	if err != nil {
		return nil, nil, err
	}
	var cands []partitioner.Candidate
	for _, name := range bp.order {
		d := bp.devs[name]
		if name == bp.fb.name {
			d = fbDev
		}
		if d == nil {
			continue
		}
		if d.HasDeviceMemory() {
			// its partitions would be called on host tensors, each call
			// copying its boundary both ways outside the run's transfer
			// accounting (residency.go): a device backend runs a body only
			// when it takes the whole control-flow node
			continue
		}
		vs, err := d.Supports(bp.ctx, whole)
		if err == nil && len(vs) != len(closed.Nodes) {
			err = fmt.Errorf("%d verdicts for %d nodes", len(vs), len(closed.Nodes))
		}
		if err != nil {
			// a backend that cannot judge the body takes none of it
			vs = make([]hal.Verdict, len(closed.Nodes))
			for i := range vs {
				vs[i] = hal.Verdict{Reason: fmt.Sprintf("%s: verdicts for the body: %v", name, err)}
			}
		}
		cands = append(cands, partitioner.Candidate{Backend: name, Verdicts: vs})
	}
	sc := &scope{g: closed, types: types}
	var plan *partitioner.Plan
	var rep map[string]graph.ValueType
	if bp.pol.IgnoreCosts || out.rep == nil {
		plan, err = partitioner.Place(closed, cands, bp.pol)
	} else {
		rc := closeBody(n, body, out.rep, out.consts, m.ir.Opsets)
		rep = representativeTypes(&graph.Model{Graph: rc, Opsets: m.ir.Opsets}, nil)
		plan, err = m.placeScope(bp.ctx, sc, rep, cands, bp.pol, bp.opts, bp.devs, bp.fb)
	}
	if err != nil {
		return nil, nil, err
	}
	exe := &graph.Graph{Name: body.Name, Inputs: body.Inputs, Outputs: body.Outputs, ValueInfo: body.ValueInfo, Initializers: body.Initializers}
	inPart := map[int]bool{}
	var standIns []*graph.Node
	for _, p := range plan.Partitions {
		if p.Fallback || p.Backend == bp.fb.name {
			continue
		}
		dev := bp.devs[p.Backend]
		sg, err := m.cut(closed, types, p)
		if err != nil {
			return nil, nil, err
		}
		copts := bp.opts.Compile
		compiled, err := m.compilePartition(bp.ctx, dev, sg, &copts, bp.opts.CompileCache)
		if err != nil && errors.Is(err, hal.ErrUnsupported) && !bp.pol.Strict {
			demoteIn(plan, p, bp.fb.name, err) // its nodes stay on the executor
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("partition %d (%d nodes) on %s: %w", p.ID, len(p.Nodes), dev.Name(), err)
		}
		cp := &compiledPartition{part: p, dev: dev, compiled: compiled, sg: sg, policy: bp.opts.OnUnavailable, strict: bp.pol.Strict, fallback: bp.fb}
		cp.outTypes, cp.outTyped = make([]graph.ValueType, len(p.Outputs)), make([]bool, len(p.Outputs))
		for j, o := range p.Outputs {
			cp.outTypes[j], cp.outTyped[j] = sg.TypeOf(o)
		}
		m.bodyParts = append(m.bodyParts, cp)
		if nb := compiled.HostBytes(); nb > 0 {
			if !m.budget.Hold(nb) {
				return nil, nil, fmt.Errorf("partition %d (%d nodes) on %s holds %s of its own host memory; with %s already held, that exceeds the model's memory budget of %s: %w",
					p.ID, len(p.Nodes), dev.Name(), exec.FormatBytes(nb), exec.FormatBytes(m.budget.Held()), exec.FormatBytes(m.budget.Limit()), kernels.ErrResourceExhausted)
			}
			cp.hostBytes = nb
		}
		for _, i := range p.Nodes {
			inPart[i] = true
		}
		s := &graph.Node{Name: fmt.Sprintf("%s/partition%d:%s", body.Name, p.ID, dev.Name()), OpType: "Partition", Domain: PartitionDomain, Inputs: p.Inputs, Outputs: p.Outputs}
		m.bodyOver[s] = cp.kernel
		standIns = append(standIns, s)
	}
	inner := outerScope{types: mergeTypes(out.types, types), rep: mergeTypes(out.rep, rep), consts: visibleConsts(out.consts, body)}
	if out.rep == nil {
		inner.rep = nil
	}
	for i, nd := range closed.Nodes {
		if inPart[i] {
			continue
		}
		if len(nd.Subgraphs()) > 0 {
			c, bodies, err := bp.node(nd, i, inner)
			if err != nil {
				return nil, nil, err
			}
			plan.Bodies = append(plan.Bodies, bodies...)
			nd = c
		}
		exe.Nodes = append(exe.Nodes, nd)
	}
	exe.Nodes = append(exe.Nodes, standIns...)
	return exe, plan, nil
}

// mergeTypes is outer with inner's entries over it.
func mergeTypes(outer, inner map[string]graph.ValueType) map[string]graph.ValueType {
	c := make(map[string]graph.ValueType, len(outer)+len(inner))
	for k, v := range outer {
		c[k] = v
	}
	for k, v := range inner {
		c[k] = v
	}
	return c
}

// demoteIn moves a body partition its backend refused to compile to the
// fallback in plan, saying why.
func demoteIn(plan *partitioner.Plan, p partitioner.Partition, to string, cause error) {
	reason := "claimed, then refused to compile: " + cause.Error()
	for k := range plan.Partitions {
		if plan.Partitions[k].ID == p.ID {
			plan.Partitions[k].Replaced = &partitioner.Replacement{From: p.Backend, To: to, Reason: reason, At: time.Now()}
		}
	}
	for _, i := range p.Nodes {
		np := &plan.Nodes[i]
		np.Declined = append(np.Declined, partitioner.Decline{Backend: np.Backend, Reason: reason})
		np.Backend = to
	}
}
