package runtime

import (
	"context"
	"fmt"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/core/opcost"
	ops "github.com/switchyard-hal/switchyard/core/ops"
	shapeops "github.com/switchyard-hal/switchyard/core/ops/shape"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/partitioner"
)

// Cost-aware placement: the glue between the partitioner, which weighs
// candidate partitions, and the backends, which price them through
// hal.Device.EstimateCost (the only way estimates are asked for).
//
// Backends price concrete shapes. Models often declare symbolic input
// dims, so the estimates are made for representative shapes: each
// symbolic dim of an input takes the maximum of its Compile.ShapeBounds
// when given, else NominalBatch for the first dim and NominalDim for the
// others; types are then inferred again with shapes computed on the way
// (Shape → Slice → Concat → Reshape), so the subgraphs backends price are
// static wherever the model allows.

// NominalBatch and NominalDim are the sizes symbolic input dims take when
// estimating costs (without shape bounds).
const (
	NominalBatch = 1
	NominalDim   = 128
)

// costModel is the partitioner.Estimator of one placement.
type costModel struct {
	ctx   context.Context
	m     *Model
	devs  map[string]*hal.Device
	types map[string]graph.ValueType // with representative shapes
	// scope is the graph placed: the main graph, or a control-flow body
	// closed over what it captures (bodies.go)
	scope *scope
}

// scope is a graph being placed with the inferred types of its values.
type scope struct {
	g     *graph.Graph
	types map[string]graph.ValueType
}

// placeWithCosts partitions g weighing the backends' estimates: devs are
// the delegated backends by name; the fallback is priced through its own
// device (the one the runtime falls back to).
func (m *Model) placeWithCosts(ctx context.Context, g *graph.Graph, cands []partitioner.Candidate, pol partitioner.Policy, opts *Options, devs map[string]*hal.Device, fb *fallback) (*partitioner.Plan, error) {
	sc := &scope{g: g, types: m.types}
	if pol.IgnoreCosts {
		return partitioner.Place(g, cands, pol)
	}
	return m.placeScope(ctx, sc, representativeTypes(m.ir, opts.Compile.ShapeBounds), cands, pol, opts, devs, fb)
}

// placeScope partitions sc's graph, pricing it at the representative
// types rep.
func (m *Model) placeScope(ctx context.Context, sc *scope, rep map[string]graph.ValueType, cands []partitioner.Candidate, pol partitioner.Policy, opts *Options, devs map[string]*hal.Device, fb *fallback) (*partitioner.Plan, error) {
	g := sc.g
	if pol.IgnoreCosts {
		return partitioner.Place(g, cands, pol)
	}
	all := map[string]*hal.Device{}
	for k, d := range devs {
		all[k] = d
	}
	d, err := fb.device(ctx)
	if err != nil {
		return nil, fmt.Errorf("runtime: opening the fallback %q for cost estimates: %w", fb.name, err)
	}
	all[fb.name] = d
	withMemory(ctx, cands, devs, opts.Compile.Device)
	est := &costModel{ctx: ctx, m: m, devs: all, types: rep, scope: sc}
	// the backends' cost models read this machine's calibrated rates
	// (opcost.Calibrated) once loaded
	profile, perr := opcost.LoadDefaultProfile()
	plan, err := partitioner.PlaceWithCosts(g, cands, pol, est)
	if plan != nil {
		switch {
		case profile != "":
			plan.CostProfile = profile
		case perr != nil:
			plan.CostProfile = "built-in (" + perr.Error() + ")"
		default:
			plan.CostProfile = "built-in"
		}
	}
	return plan, err
}

// withMemory records on each candidate where its backend's buffers live,
// so the partitioner prices host↔device copies for device memory.
func withMemory(ctx context.Context, cands []partitioner.Candidate, devs map[string]*hal.Device, device int) {
	for i := range cands {
		d := devs[cands[i].Backend]
		if d == nil || !d.HasDeviceMemory() {
			continue
		}
		descs, err := d.Devices(ctx)
		if err != nil || device < 0 || device >= len(descs) {
			continue
		}
		for _, k := range descs[device].MemoryKinds {
			if k > cands[i].Memory {
				cands[i].Memory = k // device-local over host-visible over host
			}
		}
	}
}

// Estimate prices a candidate partition on a backend.
func (c *costModel) Estimate(backend string, p partitioner.Partition) (hal.Cost, error) {
	d := c.devs[backend]
	if d == nil {
		return hal.Cost{}, &hal.Error{Code: hal.CodeUnsupported, Backend: backend, Op: "estimate-cost", Msg: "no device for the backend"}
	}
	sg, err := c.m.cut(c.scope.g, c.scope.types, p)
	if err != nil {
		return hal.Cost{}, err
	}
	sg.DynamicDims = dynamicDims(sg.Graph)
	c.retype(sg.Graph)
	return d.EstimateCost(c.ctx, sg)
}

// dynamicDims marks the boundary inputs' dims that are not fixed before
// retype makes them representative (hal.Subgraph.DynamicDims).
func dynamicDims(g *graph.Graph) map[string][]bool {
	var out map[string][]bool
	for _, vi := range g.Inputs {
		if _, isConst := g.Initializers[vi.Name]; isConst {
			continue
		}
		var dyn []bool
		for i, d := range vi.Type.Shape {
			if !d.Static() {
				if dyn == nil {
					dyn = make([]bool, len(vi.Type.Shape))
				}
				dyn[i] = true
			}
		}
		if dyn != nil {
			if out == nil {
				out = map[string][]bool{}
			}
			out[vi.Name] = dyn
		}
	}
	return out
}

// retype gives a partition's subgraph the representative types (the
// subgraph is a fresh copy; its nodes and constants are shared and left
// alone).
func (c *costModel) retype(g *graph.Graph) {
	set := func(list []graph.ValueInfo) {
		for i := range list {
			if t, ok := c.types[list[i].Name]; ok && t.Shape != nil {
				list[i].Type = t
			}
		}
	}
	set(g.Inputs)
	set(g.Outputs)
	set(g.ValueInfo)
	known := map[string]bool{}
	for _, list := range [][]graph.ValueInfo{g.Inputs, g.Outputs, g.ValueInfo} {
		for _, vi := range list {
			known[vi.Name] = true
		}
	}
	for _, n := range g.Nodes {
		for _, o := range n.Outputs {
			if t, ok := c.types[o]; ok && o != "" && !known[o] && t.Shape != nil {
				g.ValueInfo = append(g.ValueInfo, graph.ValueInfo{Name: o, Type: t})
				known[o] = true
			}
		}
	}
}

// ValueBytes is the size of a value at the representative shapes.
func (c *costModel) ValueBytes(name string) int64 {
	t, ok := c.types[name]
	if !ok || t.Shape == nil {
		return 0
	}
	n := int64(max(t.DType.Size(), 1))
	for _, d := range t.Shape {
		if d.Static() {
			n *= d.Value
		}
	}
	return n
}

// foldLimit bounds the values computed while inferring representative
// types (shapes and index arithmetic, not weights).
const foldLimit = 4096

// representativeTypes infers every value's type of the main graph with
// symbolic input dims made concrete, evaluating small computations on
// constants and shapes so that shapes computed at run time become known.
func representativeTypes(ir *graph.Model, bounds map[string][]hal.DimRange) map[string]graph.ValueType {
	g := ir.Graph
	types := map[string]graph.ValueType{}
	consts := map[string]*graph.Tensor{}
	for _, vi := range g.ValueInfo {
		types[vi.Name] = vi.Type
	}
	isInput := make(map[string]bool, len(g.Inputs))
	for _, vi := range g.Inputs {
		isInput[vi.Name] = true
	}
	for name, t := range g.Initializers {
		types[name] = graph.ValueType{Kind: "tensor", DType: t.DType, Shape: graph.StaticShape(t.Shape...)}
		if !isInput[name] { // an input's default is no constant: runs may feed another value
			consts[name] = t
		}
	}
	for _, vi := range g.Inputs {
		if _, isInit := g.Initializers[vi.Name]; isInit {
			continue // its default's shape is representative
		}
		t := vi.Type
		if t.Shape != nil {
			s := make(graph.Shape, len(t.Shape))
			for i, d := range t.Shape {
				switch {
				case d.Static():
					s[i] = d
				case i < len(bounds[vi.Name]) && bounds[vi.Name][i].Max > 0:
					s[i] = graph.Dim{Value: int64(bounds[vi.Name][i].Max)}
				case i == 0:
					s[i] = graph.Dim{Value: NominalBatch}
				default:
					s[i] = graph.Dim{Value: NominalDim}
				}
			}
			t.Shape = s
		}
		types[vi.Name] = t
	}
	order, err := g.TopoSort()
	if err != nil {
		return types
	}
	for _, n := range order {
		if n.OpType == "Constant" && n.Domain == "" && len(n.Outputs) == 1 {
			if t, err := shapeops.ConstantValue(n); err == nil {
				consts[n.Outputs[0]] = t
			}
		}
		s, ok := kernels.Lookup(n.Domain, n.OpType)
		if !ok || s.Infer == nil {
			continue
		}
		opset := ir.OpsetVersion(n.Domain)
		in := make([]kernels.InferInput, len(n.Inputs))
		for i, name := range n.Inputs {
			if name != "" {
				in[i] = kernels.InferInput{Type: types[name], Const: consts[name]}
			}
		}
		outs, _, err := ops.Infer(n, opset, in)
		if err != nil {
			continue
		}
		for i, name := range n.Outputs {
			if name != "" && i < len(outs) {
				if old, ok := types[name]; ok && old.DType != graph.Undefined && outs[i].DType == graph.Undefined {
					continue
				}
				types[name] = outs[i]
			}
		}
		for i, t := range evaluate(s, n, opset, types, consts) {
			if i < len(n.Outputs) && n.Outputs[i] != "" && t != nil {
				consts[n.Outputs[i]] = t
				types[n.Outputs[i]] = graph.ValueType{Kind: "tensor", DType: t.DType, Shape: graph.StaticShape(t.Shape...)}
			}
		}
	}
	return types
}

// evaluate computes a node's outputs when they follow from small constants
// and static shapes alone: Shape of a value of static shape, or a kernel
// whose inputs are all small constants. It returns nil otherwise.
func evaluate(s *kernels.Schema, n *graph.Node, opset int64, types map[string]graph.ValueType, consts map[string]*graph.Tensor) []*graph.Tensor {
	if n.Domain != "" || len(n.Outputs) == 0 {
		return nil
	}
	if len(n.Subgraphs()) > 0 {
		return nil
	}
	switch n.OpType {
	case "Shape":
		dims, ok := types[n.Input(0)].Shape.Ints()
		if !ok {
			return nil
		}
		r := int64(len(dims))
		start, end := n.AttrInt("start", 0), n.AttrInt("end", r)
		if start < 0 {
			start += r
		}
		if end < 0 {
			end += r
		}
		start, end = max(0, min(start, r)), max(0, min(end, r))
		v := []int64{}
		for _, d := range dims[start:max(start, end)] {
			v = append(v, int64(d))
		}
		return []*graph.Tensor{graph.MustFromSlice([]int{len(v)}, v)}
	case "Size":
		dims, ok := types[n.Input(0)].Shape.Ints()
		if !ok {
			return nil
		}
		size := int64(1)
		for _, d := range dims {
			size *= int64(d)
		}
		return []*graph.Tensor{graph.Scalar(size)}
	case "Constant", "If", "Loop", "Scan", "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli":
		return nil
	}
	ins := make([]*graph.Tensor, len(n.Inputs))
	for i, name := range n.Inputs {
		if name == "" {
			continue
		}
		t := consts[name]
		if t == nil || t.Len() > foldLimit {
			return nil
		}
		ins[i] = t
	}
	outs, err := safeEval(s, n, opset, ins)
	if err != nil {
		return nil
	}
	for _, t := range outs {
		if t == nil || t.Check() != nil || t.Len() > foldLimit {
			return nil
		}
	}
	return outs
}

func safeEval(s *kernels.Schema, n *graph.Node, opset int64, ins []*graph.Tensor) (outs []*graph.Tensor, err error) {
	defer func() {
		if p := recover(); p != nil {
			outs, err = nil, fmt.Errorf("runtime: %s panicked: %v", n.Label(), p)
		}
	}()
	return s.Kernel(&kernels.Context{Context: context.Background(), Opset: opset}, n, ins)
}
