package graph

import (
	"fmt"
	"sort"
	"strings"
)

// Dim is one dimension of a declared shape: a static size (Value >= 0), a
// named symbolic size (Param != ""), or unknown (Value < 0, Param == "").
type Dim struct {
	Value int64
	Param string
}

// Static reports whether the dimension has a known size.
func (d Dim) Static() bool { return d.Param == "" && d.Value >= 0 }

func (d Dim) String() string {
	switch {
	case d.Param != "":
		return d.Param
	case d.Value < 0:
		return "?"
	}
	return fmt.Sprint(d.Value)
}

// Shape is a declared shape; nil means unknown rank.
type Shape []Dim

// StaticShape builds a Shape from concrete sizes.
func StaticShape(dims ...int) Shape {
	s := make(Shape, len(dims))
	for i, d := range dims {
		s[i] = Dim{Value: int64(d)}
	}
	return s
}

// Ints returns the concrete dims and whether all are static.
func (s Shape) Ints() ([]int, bool) {
	out := make([]int, len(s))
	for i, d := range s {
		if !d.Static() {
			return nil, false
		}
		out[i] = int(d.Value)
	}
	return out, s != nil
}

func (s Shape) String() string {
	if s == nil {
		return "[?…]"
	}
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = d.String()
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// ValueType is the static type of a value: element type and declared shape.
// DType Undefined means unknown; Shape nil means unknown rank. Kind is
// "tensor" for tensors, or "sequence", "map", "optional" for non-tensor
// types that Switchyard recognises but does not compute on.
type ValueType struct {
	Kind  string
	DType DType
	Shape Shape
}

func (t ValueType) String() string {
	if t.Kind != "" && t.Kind != "tensor" {
		return t.Kind
	}
	return t.DType.String() + t.Shape.String()
}

// ValueInfo names a graph input, output or intermediate with its type.
type ValueInfo struct {
	Name string
	Type ValueType
}

// AttrType is the type of an attribute, numbered as ONNX AttributeProto.
type AttrType int32

const (
	AttrUndefined AttrType = 0
	AttrFloat     AttrType = 1
	AttrInt       AttrType = 2
	AttrString    AttrType = 3
	AttrTensor    AttrType = 4
	AttrGraph     AttrType = 5
	AttrFloats    AttrType = 6
	AttrInts      AttrType = 7
	AttrStrings   AttrType = 8
	AttrTensors   AttrType = 9
	AttrGraphs    AttrType = 10
	AttrSparse    AttrType = 11
	AttrTypeProto AttrType = 13
)

var attrNames = map[AttrType]string{AttrUndefined: "undefined", AttrFloat: "float", AttrInt: "int", AttrString: "string", AttrTensor: "tensor", AttrGraph: "graph", AttrFloats: "floats", AttrInts: "ints", AttrStrings: "strings", AttrTensors: "tensors", AttrGraphs: "graphs", AttrSparse: "sparse_tensor", AttrTypeProto: "type_proto"}

func (a AttrType) String() string {
	if s, ok := attrNames[a]; ok {
		return s
	}
	return fmt.Sprintf("attr(%d)", int32(a))
}

// Attribute is a typed node attribute; only the field matching Type is set.
type Attribute struct {
	Name    string
	Type    AttrType
	F       float32
	I       int64
	S       string
	T       *Tensor
	G       *Graph
	Floats  []float32
	Ints    []int64
	Strings []string
	Tensors []*Tensor
	Graphs  []*Graph
}

// Node is one operator application.
type Node struct {
	Name    string
	OpType  string
	Domain  string   // "" is the default ONNX domain ("ai.onnx")
	Inputs  []string // "" marks an omitted optional input
	Outputs []string // "" marks an omitted optional output
	Attrs   map[string]*Attribute
}

// Attr returns the named attribute or nil.
func (n *Node) Attr(name string) *Attribute {
	if n.Attrs == nil {
		return nil
	}
	return n.Attrs[name]
}

// Subgraphs are the graphs the attribute holds: G, then Graphs (nil
// entries left out).
func (a *Attribute) Subgraphs() []*Graph {
	if a == nil || a.G == nil && len(a.Graphs) == 0 {
		return nil
	}
	out := make([]*Graph, 0, 1+len(a.Graphs))
	if a.G != nil {
		out = append(out, a.G)
	}
	for _, g := range a.Graphs {
		if g != nil {
			out = append(out, g)
		}
	}
	return out
}

// Subgraphs are the nested graphs of the node's attributes (the branches
// of If, the bodies of Loop and Scan), in attribute-name order.
func (n *Node) Subgraphs() []*Graph {
	if len(n.Attrs) == 0 {
		return nil
	}
	var names []string
	for name, a := range n.Attrs {
		if a != nil && (a.G != nil || len(a.Graphs) > 0) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names)
	var out []*Graph
	for _, name := range names {
		out = append(out, n.Attrs[name].Subgraphs()...)
	}
	return out
}

// SubgraphReads are the values the node's nested graphs read from the
// scopes around them (the free variables of each, in Subgraphs order):
// inputs of the node as far as ordering goes.
func (n *Node) SubgraphReads() []string {
	var reads []string
	for _, g := range n.Subgraphs() {
		reads = append(reads, g.FreeVariables()...)
	}
	return reads
}

// AttrInt returns an int attribute or def.
func (n *Node) AttrInt(name string, def int64) int64 {
	if a := n.Attr(name); a != nil && a.Type == AttrInt {
		return a.I
	}
	return def
}

// AttrFloat returns a float attribute or def.
func (n *Node) AttrFloat(name string, def float32) float32 {
	if a := n.Attr(name); a != nil {
		switch a.Type {
		case AttrFloat:
			return a.F
		case AttrInt:
			return float32(a.I)
		}
	}
	return def
}

// AttrString returns a string attribute or def.
func (n *Node) AttrString(name, def string) string {
	if a := n.Attr(name); a != nil && a.Type == AttrString {
		return a.S
	}
	return def
}

// AttrInts returns an ints attribute or def (def may be nil). The slice is a copy.
func (n *Node) AttrInts(name string, def []int64) []int64 {
	if a := n.Attr(name); a != nil && (a.Type == AttrInts || a.Type == AttrInt) {
		if a.Type == AttrInt {
			return []int64{a.I}
		}
		return append([]int64{}, a.Ints...)
	}
	return def
}

// AttrFloats returns a floats attribute or def.
func (n *Node) AttrFloats(name string, def []float32) []float32 {
	if a := n.Attr(name); a != nil && a.Type == AttrFloats {
		return append([]float32{}, a.Floats...)
	}
	return def
}

// AttrStrings returns a strings attribute or def.
func (n *Node) AttrStrings(name string, def []string) []string {
	if a := n.Attr(name); a != nil && a.Type == AttrStrings {
		return append([]string{}, a.Strings...)
	}
	return def
}

// AttrTensor returns a tensor attribute or nil.
func (n *Node) AttrTensor(name string) *Tensor {
	if a := n.Attr(name); a != nil && a.Type == AttrTensor {
		return a.T
	}
	return nil
}

// AttrGraph returns a graph attribute or nil.
func (n *Node) AttrGraph(name string) *Graph {
	if a := n.Attr(name); a != nil && a.Type == AttrGraph {
		return a.G
	}
	return nil
}

// HasAttr reports whether the attribute is present.
func (n *Node) HasAttr(name string) bool { return n.Attr(name) != nil }

// Input returns input i's name, or "" when absent.
func (n *Node) Input(i int) string {
	if i < len(n.Inputs) {
		return n.Inputs[i]
	}
	return ""
}

// Label names the node for error messages.
func (n *Node) Label() string {
	if n.Name != "" {
		return fmt.Sprintf("%s node %q", n.OpType, n.Name)
	}
	if len(n.Outputs) > 0 {
		return fmt.Sprintf("%s node (output %q)", n.OpType, n.Outputs[0])
	}
	return n.OpType + " node"
}

// Graph is a list of nodes in any order (Validate checks it is acyclic and
// TopoSort orders it), with its inputs, outputs and initializers. Nested
// graphs (If/Loop bodies) may refer to values of enclosing graphs by name.
type Graph struct {
	Name         string
	Inputs       []ValueInfo
	Outputs      []ValueInfo
	ValueInfo    []ValueInfo
	Initializers map[string]*Tensor
	Nodes        []*Node
}

// Opset is an operator set import.
type Opset struct {
	Domain  string
	Version int64
}

// Model is a graph plus its metadata.
type Model struct {
	IRVersion       int64
	Opsets          []Opset
	ProducerName    string
	ProducerVersion string
	Domain          string
	ModelVersion    int64
	DocString       string
	Metadata        map[string]string
	Graph           *Graph
	// Functions lists the names of model-local functions (domain:name); they
	// are recorded so an unsupported-op error can say where an op came from.
	Functions []string
}

// OpsetVersion returns the imported version for a domain ("" and "ai.onnx"
// are the same domain), or 0 when the domain is not imported.
func (m *Model) OpsetVersion(domain string) int64 {
	if domain == "ai.onnx" {
		domain = ""
	}
	for _, o := range m.Opsets {
		d := o.Domain
		if d == "ai.onnx" {
			d = ""
		}
		if d == domain {
			return o.Version
		}
	}
	return 0
}
