package hal

import (
	"context"
	"sync/atomic"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// DeviceKind says what a backend computes on.
type DeviceKind string

const (
	DeviceCPU DeviceKind = "cpu"
	DeviceGPU DeviceKind = "gpu"
	DeviceNPU DeviceKind = "npu"
	DeviceDSP DeviceKind = "dsp"
	// DeviceSimulated marks test doubles; they are never presented as hardware.
	DeviceSimulated DeviceKind = "simulated"
)

// LoadKind says how a backend reaches the process; the registry sets it.
type LoadKind string

const (
	LoadLinked  LoadKind = "linked"  // a Go package compiled into the binary
	LoadLibrary LoadKind = "library" // a C-ABI shared library opened at run time
	LoadProcess LoadKind = "process" // a plugin process spoken to over gRPC
)

// Info is a backend's static description. It must not change over the
// backend's life and must be cheap.
type Info struct {
	Name        string       // registry name, e.g. "cpu", "xnnpack"
	Vendor      string       // who ships it
	Version     string       // the backend's own version
	HAL         VersionRange // HAL versions it speaks
	Device      DeviceKind
	Description string
}

// AttrConstraint restricts an attribute of a claimed op: the values allowed
// (Ints/Strings) or a numeric range. An empty constraint allows anything.
type AttrConstraint struct {
	Name    string   `json:"name"`
	Ints    []int64  `json:"ints,omitempty"`
	Strings []string `json:"strings,omitempty"`
	Min     *float64 `json:"min,omitempty"`
	Max     *float64 `json:"max,omitempty"`
}

// OpCapability is one operator a backend can take.
type OpCapability struct {
	Domain   string           `json:"domain,omitempty"` // "" = ai.onnx
	OpType   string           `json:"op_type"`
	MinOpset int64            `json:"min_opset,omitempty"`
	MaxOpset int64            `json:"max_opset,omitempty"` // 0 = no bound
	DTypes   []graph.DType    `json:"dtypes,omitempty"`    // empty = any
	MaxRank  int              `json:"max_rank,omitempty"`  // 0 = any
	Attrs    []AttrConstraint `json:"attrs,omitempty"`
}

// Capabilities is what a backend can do, as data. It is a summary for
// tools and planners; Supports gives the authoritative per-node verdict.
type Capabilities struct {
	Ops            []OpCapability `json:"ops"`
	Layouts        []string       `json:"layouts,omitempty"`          // e.g. "NCHW", "NHWC"
	MaxTensorBytes int64          `json:"max_tensor_bytes,omitempty"` // 0 = no stated limit
	MaxInputs      int            `json:"max_inputs,omitempty"`       // per subgraph; 0 = any
	// ControlFlow reports whether If/Loop/Scan with their bodies can be taken.
	ControlFlow bool `json:"control_flow,omitempty"`
	// Devices lists the devices the backend drives (HAL 1.1), each with
	// its memory, limits, precisions and cache key. Empty means one device
	// described by Info alone.
	Devices []DeviceDesc `json:"devices,omitempty"`
}

// Verdict is a backend's answer for one node: whether it takes it and, when
// it declines, why (a human-readable reason naming the attribute, dtype or
// limit).
type Verdict struct {
	Supported bool   `json:"supported"`
	Reason    string `json:"reason,omitempty"`
}

// Subgraph is a self-contained piece of a model sent to a backend: its
// graph (nodes, boundary inputs and outputs with types, and the constants it
// uses as initializers) and the opset versions its nodes follow. It is plain
// data and can be serialised as an ONNX model.
//
// The runtime guarantees that the type of every value the subgraph's
// nodes produce, as far as the runtime inferred it, is in Graph.ValueInfo
// (boundary values in Graph.Inputs and Graph.Outputs), and that every
// constant the nodes read is in Graph.Initializers. Backends read them with
// TypeOf and ConstOf and MUST NOT re-infer types themselves.
//
// A backend MUST NOT modify the subgraph, its nodes, attributes or
// constants: they are shared with the runtime and with other backends.
type Subgraph struct {
	Graph  *graph.Graph
	Opsets []graph.Opset
	// DynamicDims, set by the runtime on the subgraphs it asks a
	// CostEstimator to price, marks the dims of boundary inputs that are
	// not fixed in the model (symbolic, such as a decoder's sequence and
	// past lengths) and were given a representative size for the
	// estimate: DynamicDims[input][i] is true for dim i. Calls may then
	// bring a different size there every time. Nil elsewhere (Compile,
	// Supports) and for inputs whose dims are all fixed; the wire
	// protocols do not carry it.
	DynamicDims map[string][]bool

	// types indexes the declared types for TypeOf (built on first use;
	// rebuilt when Graph or the lengths of its type lists change).
	types atomic.Pointer[typeIndex]
}

// typeIndex maps a value name to its declared type, first declaration
// winning (Inputs, then Outputs, then ValueInfo), as a linear search would.
type typeIndex struct {
	g             *graph.Graph
	nIn, nOut, nV int
	types         map[string]graph.ValueType
}

func (s *Subgraph) typeIndex() *typeIndex {
	g := s.Graph
	if x := s.types.Load(); x != nil && x.g == g && x.nIn == len(g.Inputs) && x.nOut == len(g.Outputs) && x.nV == len(g.ValueInfo) {
		return x
	}
	x := &typeIndex{g: g, nIn: len(g.Inputs), nOut: len(g.Outputs), nV: len(g.ValueInfo),
		types: make(map[string]graph.ValueType, len(g.Inputs)+len(g.Outputs)+len(g.ValueInfo))}
	for _, list := range [][]graph.ValueInfo{g.Inputs, g.Outputs, g.ValueInfo} {
		for _, vi := range list {
			if _, dup := x.types[vi.Name]; !dup {
				x.types[vi.Name] = vi.Type
			}
		}
	}
	s.types.Store(x)
	return x
}

// TypeOf returns the type the runtime inferred for a value of the
// subgraph (a boundary input or output, a value its nodes produce, or a
// constant). ok is false for names the subgraph does not know.
func (s *Subgraph) TypeOf(name string) (t graph.ValueType, ok bool) {
	g := s.Graph
	if c, isConst := g.Initializers[name]; isConst {
		return graph.ValueType{Kind: "tensor", DType: c.DType, Shape: graph.StaticShape(c.Shape...)}, true
	}
	if len(g.Inputs)+len(g.Outputs)+len(g.ValueInfo) <= 16 {
		for _, list := range [][]graph.ValueInfo{g.Inputs, g.Outputs, g.ValueInfo} {
			for _, vi := range list {
				if vi.Name == name {
					return vi.Type, true
				}
			}
		}
		return graph.ValueType{}, false
	}
	t, ok = s.typeIndex().types[name]
	return t, ok
}

// ConstOf returns the constant value of name, or nil when it is not a
// constant of the subgraph. The tensor is read-only.
func (s *Subgraph) ConstOf(name string) *graph.Tensor {
	return s.Graph.Initializers[name]
}

// OpsetVersion returns the subgraph's opset for a domain.
func (s *Subgraph) OpsetVersion(domain string) int64 {
	m := graph.Model{Opsets: s.Opsets}
	return m.OpsetVersion(domain)
}

// CompileOptions tune compilation. The zero value is valid.
type CompileOptions struct {
	// Threads is a hint for CPU backends (0 = backend's choice).
	Threads int
	// Profile asks for per-node timings where the backend can give them.
	Profile bool

	// HAL 1.1:

	// Device selects one of the backend's devices (an index into
	// Capabilities.Devices; 0 = the first).
	Device int
	// Precision is the lowest precision the caller accepts for float32
	// values. "" means PrecisionFloat32: a backend MUST NOT reduce
	// precision unless the caller opted in here, and discloses what it
	// uses through PrecisionReporter.
	Precision Precision
	// ShapeBounds bounds the symbolic dims of dynamic inputs (input name →
	// one range per dim; static dims repeat their value). A backend may
	// plan memory for the bounds and decline larger shapes at run time
	// with ErrDeclined.
	ShapeBounds map[string][]DimRange
}

// Backend is what a vendor implements. Methods may be called concurrently.
type Backend interface {
	// Info MUST be cheap and constant.
	Info() Info
	// Capabilities describes what the backend can take, as data.
	Capabilities(ctx context.Context) (Capabilities, error)
	// Supports MUST return one Verdict per node of g.Graph.Nodes, in order.
	// A declined node MUST carry a reason. Claiming a node is a promise:
	// Compile of a subgraph made of claimed nodes must succeed.
	Supports(ctx context.Context, g *Subgraph) ([]Verdict, error)
	// Compile prepares sg for execution. It MUST NOT retain sg after
	// returning except by copying what it needs, and MUST NOT modify it.
	// A backend with its own memory uploads the constants here, once.
	Compile(ctx context.Context, sg *Subgraph, opts CompileOptions) (Executable, error)
	// Close releases the backend. Executables are released first by the
	// caller; Close MUST be safe to call more than once.
	Close() error
}

// Executable is a compiled subgraph.
type Executable interface {
	// Execute runs the subgraph. inputs follow the subgraph's Inputs order,
	// outputs its Outputs order; both slices and the tensors in them are
	// owned by the caller. An output whose Data is non-nil MUST be written
	// in place (its dtype and shape are the caller's expectation; a mismatch
	// is InvalidArgument); an output with nil Data is filled in by the
	// executable (DType, Shape, Data). Execute MUST honour ctx and MAY be
	// called concurrently. It MUST NOT modify inputs, and MUST NOT keep,
	// read or write any caller tensor after it returns. It MAY return
	// ErrDeclined for input shapes it will not take at run time (the
	// runtime then runs the subgraph elsewhere, visibly).
	Execute(ctx context.Context, inputs, outputs []*graph.Tensor) error
	// Release frees the executable; it MUST be safe to call more than once.
	Release() error
}
