// Package ops holds Switchyard's operator schemas: for every op its arity,
// opset range, accepted dtypes and shape/type inference. It links no kernel:
// a backend that needs to know what an op is, or to infer the types its
// outputs will have, imports ops (and ops/all for every schema) without
// pulling in the reference CPU kernels of core/kernels; hal/halkit
// adds the HAL side (per-node verdicts, output hand-over).
//
// The schemas themselves live in sub-packages (elementwise, nn, reduce, …)
// that register them in init; import core/ops/all to get every one. The
// reference kernels of core/kernels register against these schemas, one
// way: ops never imports kernels.
//
// Contracts every InferFunc MUST keep:
//   - It never panics on user input and never modifies the node or the
//     constant values it is shown.
//   - It returns an error only when the inputs are certainly invalid;
//     what it cannot decide is an unknown dim (-1) or an unknown rank (nil).
package ops

import (
	"fmt"
	"sort"
	"sync"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// ErrUnsupported marks an op, attribute value or dtype that Switchyard does
// not implement (as opposed to invalid input).
var ErrUnsupported = graph.ErrUnsupported

// ErrInvalid marks invalid input: wrong shapes, bad attribute values.
var ErrInvalid = graph.ErrInvalid

// InferInput is what shape inference knows about one input: its type and,
// when the value is known at load time (initializer or Constant), the value.
type InferInput struct {
	Type  graph.ValueType
	Const *graph.Tensor
}

// InferFunc computes output types from input types. Unknown dims are
// graph.Dim{Value: -1}; an unknown rank is a nil Shape. It returns an error
// only when the inputs are certainly invalid.
type InferFunc func(n *graph.Node, opset int64, in []InferInput) ([]graph.ValueType, error)

// Schema describes an operator: its arity, opset range, accepted dtypes
// and shape inference.
type Schema struct {
	Domain string // "" for the default ONNX domain
	OpType string
	// MinOpset is the oldest opset version of Domain Switchyard implements
	// (usually 1). MaxOpset is the newest (0 = up to MaxKnownOpset).
	MinOpset, MaxOpset int64
	// MinInputs/MaxInputs bound the number of inputs (MaxInputs -1 = variadic).
	MinInputs, MaxInputs int
	// MinOutputs/MaxOutputs bound the number of outputs.
	MinOutputs, MaxOutputs int
	// TypeInput is the index of the input whose dtype selects the kernel's
	// type (usually 0); Types lists the dtypes accepted there. Empty = any
	// dtype Switchyard supports.
	TypeInput int
	Types     []graph.DType
	// Infer computes output types; nil when the op's outputs cannot be
	// inferred statically (Loop, Scan).
	Infer InferFunc
	// InPlace lists the outputs every kernel of the op may be handed in
	// the memory of one of its inputs (a KV cache appended in place):
	// such a kernel MUST recognise a bound output that is that input's
	// tensor (same data, dtype and shape) and update it without reading
	// what it overwrote. The executor binds them so only where the input
	// is a graph input read by this node alone (core/exec).
	InPlace []InPlace
}

// InPlace pairs an op's output with the input whose memory it may be
// written into.
type InPlace struct{ Output, Input int }

// MaxKnownOpset is the newest default-domain opset whose operator set (as seen in the ONNX 1.2x test suite)
// Switchyard knows.
const MaxKnownOpset = 28

var (
	regMu    sync.RWMutex
	registry = map[string]*Schema{}
)

// Key is the registry key of an op ("ai.onnx" and "" are the same domain).
func Key(domain, op string) string {
	if domain == "ai.onnx" {
		domain = ""
	}
	return domain + "::" + op
}

// Register adds a schema. It panics on a duplicate or incomplete schema:
// that is a programming error in a schema package, caught by any test.
func Register(s Schema) {
	if s.OpType == "" {
		panic("ops: schema without an op type")
	}
	if s.MinOpset == 0 {
		s.MinOpset = 1
	}
	if s.MaxOpset == 0 {
		s.MaxOpset = MaxKnownOpset
	}
	if s.MaxOutputs == 0 {
		s.MaxOutputs = 1
	}
	if s.MinOutputs == 0 {
		s.MinOutputs = 1
	}
	regMu.Lock()
	defer regMu.Unlock()
	k := Key(s.Domain, s.OpType)
	if _, dup := registry[k]; dup {
		panic(fmt.Sprintf("ops: %s registered twice", s.OpType))
	}
	registry[k] = &s
}

// Lookup finds an op's schema.
func Lookup(domain, op string) (*Schema, bool) {
	regMu.RLock()
	defer regMu.RUnlock()
	s, ok := registry[Key(domain, op)]
	return s, ok
}

// All lists every registered schema sorted by domain and op type.
func All() []*Schema {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]*Schema, 0, len(registry))
	for _, s := range registry {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Domain != out[j].Domain {
			return out[i].Domain < out[j].Domain
		}
		return out[i].OpType < out[j].OpType
	})
	return out
}

// CheckNode reports why a node is not a valid use of a known op at the
// given opset (unknown op, opset out of range, wrong arity), or nil.
func CheckNode(n *graph.Node, opset int64) error {
	s, ok := Lookup(n.Domain, n.OpType)
	if !ok {
		return fmt.Errorf("%w: op %s", ErrUnsupported, OpName(n.Domain, n.OpType, opset))
	}
	if opset < s.MinOpset || opset > s.MaxOpset {
		return fmt.Errorf("%w: op %s (supported opsets %d–%d)", ErrUnsupported, OpName(n.Domain, n.OpType, opset), s.MinOpset, s.MaxOpset)
	}
	nin := len(n.Inputs)
	if nin < s.MinInputs || (s.MaxInputs >= 0 && nin > s.MaxInputs) {
		return fmt.Errorf("%w: %s has %d inputs, expected %d..%d", ErrInvalid, n.Label(), nin, s.MinInputs, s.MaxInputs)
	}
	nout := len(n.Outputs)
	if nout < s.MinOutputs || (s.MaxOutputs >= 0 && nout > s.MaxOutputs) {
		return fmt.Errorf("%w: %s has %d outputs, expected %d..%d", ErrInvalid, n.Label(), nout, s.MinOutputs, s.MaxOutputs)
	}
	return nil
}

// OpName spells an op for messages: "ai.onnx:Conv(opset 13)".
func OpName(domain, op string, opset int64) string {
	if domain == "" {
		domain = "ai.onnx"
	}
	return fmt.Sprintf("%s:%s(opset %d)", domain, op, opset)
}

// Errorf makes an error naming the node; wrap ErrInvalid or ErrUnsupported
// with %w to classify it.
func Errorf(n *graph.Node, format string, args ...any) error {
	return fmt.Errorf("%s: %w", n.Label(), fmt.Errorf(format, args...))
}

// Unsupportedf reports an unimplemented dtype/attribute for a node.
func Unsupportedf(n *graph.Node, format string, args ...any) error {
	return fmt.Errorf("%s: %w: %s", n.Label(), ErrUnsupported, fmt.Sprintf(format, args...))
}

// Invalidf reports invalid input for a node.
func Invalidf(n *graph.Node, format string, args ...any) error {
	return fmt.Errorf("%s: %w: %s", n.Label(), ErrInvalid, fmt.Sprintf(format, args...))
}

// Infer runs the registered shape/type inference of n's op at the given
// opset. ok is false when the op has no schema or no inference; a panic in
// an InferFunc comes back as an error, not across the call.
func Infer(n *graph.Node, opset int64, in []InferInput) (types []graph.ValueType, ok bool, err error) {
	s, found := Lookup(n.Domain, n.OpType)
	if !found || s.Infer == nil {
		return nil, false, nil
	}
	defer func() {
		if p := recover(); p != nil {
			types, err = nil, fmt.Errorf("%s: shape inference panicked: %v", n.Label(), p)
		}
	}()
	types, err = s.Infer(n, opset, in)
	return types, true, err
}
