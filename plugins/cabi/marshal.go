package cabi

import (
	"reflect"
	"sort"
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

// marshalled is a subgraph laid out as the C structs of the header, in Go
// memory. Everything hangs off root through unsafe.Pointer fields, so
// keeping root alive keeps all of it alive.
type marshalled struct {
	root *cSubgraph
}

// slicePtr returns the address of a slice's first element, or nil.
func slicePtr[T any](s []T) unsafe.Pointer {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Pointer(&s[0])
}

// dataPointer is the address of a tensor's elements (zero copy), or nil for
// empty and string tensors.
func dataPointer(t *graph.Tensor) unsafe.Pointer {
	if t == nil || t.Data == nil || t.DType == graph.String {
		return nil
	}
	v := reflect.ValueOf(t.Data)
	if v.Kind() != reflect.Slice || v.Len() == 0 {
		return nil
	}
	return v.UnsafePointer()
}

func tensorBytes(t *graph.Tensor) uint64 {
	if t.DType == graph.String {
		return 0
	}
	return uint64(t.Len()) * uint64(t.DType.Size())
}

// constTensor describes a constant (initializer or tensor attribute).
func constTensor(t *graph.Tensor) cTensor {
	shape := make([]int64, len(t.Shape))
	for i, d := range t.Shape {
		shape[i] = int64(d)
	}
	return cTensor{dtype: int32(t.DType), rank: int32(len(t.Shape)), shape: slicePtr(shape), data: dataPointer(t), numBytes: tensorBytes(t)}
}

func marshal(sg *hal.Subgraph) (*marshalled, error) {
	if sg == nil || sg.Graph == nil {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "cabi: nil subgraph")
	}
	g := sg.Graph
	for name, t := range g.Initializers {
		if t == nil {
			return nil, hal.Errorf(hal.CodeInvalidArgument, "cabi: initializer %q is nil", name)
		}
		if err := t.Check(); err != nil {
			return nil, hal.Errorf(hal.CodeInvalidArgument, "cabi: initializer %q: %v", name, err)
		}
	}
	if err := checkNodes(g); err != nil {
		return nil, err
	}
	order, err := g.TopoSort()
	if err != nil {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "cabi: %v", err)
	}
	types := inferTypes(sg)

	// constants, in name order
	constNames := make([]string, 0, len(g.Initializers))
	for name := range g.Initializers {
		constNames = append(constNames, name)
	}
	sort.Strings(constNames)
	constIndex := map[string]int32{}
	constants := make([]cTensor, len(constNames))
	for i, name := range constNames {
		constIndex[name] = int32(i)
		constants[i] = constTensor(g.Initializers[name])
	}

	// values: boundary inputs, constants, then in node order
	index := map[string]int32{}
	var values []cValue
	value := func(name string) int32 {
		if name == "" {
			return -1
		}
		if i, ok := index[name]; ok {
			return i
		}
		i := int32(len(values))
		index[name] = i
		vt := types[name]
		v := cValue{name: cstr(name), dtype: int32(vt.DType), rank: -1, isTensor: 1, constant: -1}
		if vt.Kind != "" && vt.Kind != "tensor" {
			v.isTensor = 0
		}
		if vt.Shape != nil {
			dims := make([]int64, len(vt.Shape))
			for k, d := range vt.Shape {
				dims[k] = -1
				if d.Static() {
					dims[k] = d.Value
				}
			}
			v.rank, v.dims = int32(len(dims)), slicePtr(dims)
		}
		if c, ok := constIndex[name]; ok {
			v.constant = c
		}
		values = append(values, v)
		return i
	}
	inputs := make([]int32, len(g.Inputs))
	for i, in := range g.Inputs {
		inputs[i] = value(in.Name)
	}
	for _, name := range constNames {
		value(name)
	}
	nodes := make([]cNode, len(g.Nodes))
	pos := make(map[*graph.Node]uint32, len(g.Nodes))
	for i, n := range g.Nodes {
		pos[n] = uint32(i)
		ins := make([]int32, len(n.Inputs))
		for k, name := range n.Inputs {
			ins[k] = value(name)
		}
		outs := make([]int32, len(n.Outputs))
		for k, name := range n.Outputs {
			outs[k] = value(name)
		}
		attrs := marshalAttrs(n)
		nodes[i] = cNode{
			name: cstr(n.Name), opType: cstr(n.OpType), domain: cstr(n.Domain),
			numInputs: uint32(len(ins)), numOutputs: uint32(len(outs)), inputs: slicePtr(ins), outputs: slicePtr(outs),
			numAttributes: uint32(len(attrs)), attributes: slicePtr(attrs),
		}
	}
	outputs := make([]int32, len(g.Outputs))
	for i, o := range g.Outputs {
		outputs[i] = value(o.Name)
	}
	topo := make([]uint32, len(order))
	for i, n := range order {
		p, ok := pos[n]
		if !ok {
			return nil, hal.Errorf(hal.CodeInternal, "cabi: topological order names a node outside the graph")
		}
		topo[i] = p
	}
	opsets := make([]cOpset, len(sg.Opsets))
	for i, o := range sg.Opsets {
		d := o.Domain
		if d == "ai.onnx" {
			d = ""
		}
		opsets[i] = cOpset{domain: cstr(d), version: o.Version}
	}
	if len(values) > 1<<30 || len(nodes) > 1<<30 {
		return nil, hal.Errorf(hal.CodeResourceExhausted, "cabi: subgraph too large (%d values, %d nodes)", len(values), len(nodes))
	}
	root := &cSubgraph{
		structSize: uint32(unsafe.Sizeof(cSubgraph{})),
		name:       cstr(g.Name),
		numValues:  uint32(len(values)), numNodes: uint32(len(nodes)),
		values: slicePtr(values), nodes: slicePtr(nodes), topoOrder: slicePtr(topo),
		numInputs: uint32(len(inputs)), numOutputs: uint32(len(outputs)),
		inputs: slicePtr(inputs), outputs: slicePtr(outputs),
		numConstants: uint32(len(constants)), numOpsets: uint32(len(opsets)),
		constants: slicePtr(constants), opsets: slicePtr(opsets),
	}
	return &marshalled{root: root}, nil
}

// checkNodes refuses what cannot cross as the header describes: a nil
// node or attribute, and attribute tensors whose data does not match their
// dtype and shape (the C side reads shape × dtype size bytes of them).
func checkNodes(g *graph.Graph) error {
	for i, n := range g.Nodes {
		if n == nil {
			return hal.Errorf(hal.CodeInvalidArgument, "cabi: node %d is nil", i)
		}
		for name, a := range n.Attrs {
			if a == nil {
				return hal.Errorf(hal.CodeInvalidArgument, "cabi: node %q: attribute %q is nil", n.Name, name)
			}
			ts := a.Tensors
			if a.Type == graph.AttrTensor && a.T != nil {
				ts = []*graph.Tensor{a.T}
			}
			for k, t := range ts {
				if t == nil {
					continue
				}
				if err := t.Check(); err != nil {
					return hal.Errorf(hal.CodeInvalidArgument, "cabi: node %q: attribute %q tensor %d: %v", n.Name, name, k, err)
				}
			}
		}
	}
	return nil
}

func marshalAttrs(n *graph.Node) []cAttribute {
	names := make([]string, 0, len(n.Attrs))
	for name := range n.Attrs {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make([]cAttribute, 0, len(names))
	for _, name := range names {
		a := n.Attrs[name]
		if a == nil {
			continue
		}
		ca := cAttribute{name: cstr(name), typ: int32(a.Type)}
		switch a.Type {
		case graph.AttrFloat:
			ca.f = a.F
		case graph.AttrInt:
			ca.i = a.I
		case graph.AttrString:
			ca.s, ca.sLen = cstr(a.S), uint64(len(a.S))
		case graph.AttrTensor:
			if a.T != nil {
				t := constTensor(a.T)
				ca.t = unsafe.Pointer(&t)
			}
		case graph.AttrFloats:
			ca.count, ca.floats = uint64(len(a.Floats)), slicePtr(append([]float32{}, a.Floats...))
		case graph.AttrInts:
			ca.count, ca.ints = uint64(len(a.Ints)), slicePtr(append([]int64{}, a.Ints...))
		case graph.AttrStrings:
			ss := make([]unsafe.Pointer, len(a.Strings))
			for i, s := range a.Strings {
				ss[i] = cstr(s)
			}
			ca.count, ca.strings = uint64(len(ss)), slicePtr(ss)
		case graph.AttrTensors:
			ts := make([]cTensor, 0, len(a.Tensors))
			for _, t := range a.Tensors {
				if t != nil {
					ts = append(ts, constTensor(t))
				}
			}
			ca.count, ca.tensors = uint64(len(ts)), slicePtr(ts)
		}
		// graphs (If/Loop/Scan bodies) and sparse tensors cross with their
		// type only: a delegate must decline such nodes in HAL 1.0
		out = append(out, ca)
	}
	return out
}

// inferTypes gives every value of the subgraph the type the host knows:
// the declared types of inputs, outputs and value infos (the runtime puts
// the type of every value the nodes produce there: hal.Subgraph) and the
// initializers'. A C delegate can then decide per node (dtype, rank)
// without its own type inference; nothing is re-inferred here.
func inferTypes(sg *hal.Subgraph) map[string]graph.ValueType {
	g := sg.Graph
	types := map[string]graph.ValueType{}
	for _, vi := range g.Inputs {
		types[vi.Name] = vi.Type
	}
	for _, vi := range g.ValueInfo {
		types[vi.Name] = vi.Type
	}
	for name, t := range g.Initializers {
		types[name] = graph.ValueType{Kind: "tensor", DType: t.DType, Shape: graph.StaticShape(t.Shape...)}
	}
	declaredOut := map[string]graph.ValueType{}
	for _, vi := range g.Outputs {
		declaredOut[vi.Name] = vi.Type
	}
	// declared output types win where they say more
	for name, vt := range declaredOut {
		old := types[name]
		if vt.DType != graph.Undefined && old.DType == graph.Undefined {
			old.DType = vt.DType
		}
		if vt.Shape != nil {
			if _, static := vt.Shape.Ints(); static || old.Shape == nil {
				old.Shape = vt.Shape
			}
		}
		if old.Kind == "" {
			old.Kind = vt.Kind
		}
		types[name] = old
	}
	return types
}
