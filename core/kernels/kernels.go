// Package kernels holds the registry of Switchyard's reference CPU kernels
// and the operator schemas (arity, opset range, shape/type inference) that
// go with them, plus the small shared toolkit kernels are written with
// (broadcasting, axes, dtype conversion).
//
// The kernels themselves live in sub-packages (elementwise, nn, reduce,
// tensorops, …) that register their schemas in init; import
// core/kernels/all to get every one.
//
// Contracts every kernel MUST keep:
//   - Outputs are freshly allocated with Context.New (never an input tensor,
//     a view of one, or a tensor kept from an earlier call), so the runtime
//     can recycle buffers by lifetime.
//   - Inputs are read-only. An omitted optional input arrives as nil.
//   - Bad shapes, attributes or dtypes produce an error naming the node
//     (use Errorf); kernels never panic on user input.
//   - Results are exact reference semantics (ONNX), not approximations.
package kernels

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// ErrUnsupported marks an op, attribute value or dtype that Switchyard does
// not implement (as opposed to invalid input).
var ErrUnsupported = errors.New("unsupported")

// ErrInvalid marks invalid input: wrong shapes, bad attribute values.
var ErrInvalid = errors.New("invalid argument")

// ErrResourceExhausted marks a request refused for lack of memory: a
// model's memory budget would be exceeded (hal maps it to
// CodeResourceExhausted).
var ErrResourceExhausted = errors.New("resource exhausted")

// Allocator hands out output tensors; the runtime's implementation recycles
// buffers whose lifetime has ended.
type Allocator interface {
	Alloc(dt graph.DType, shape []int) (*graph.Tensor, error)
}

// Releaser is implemented by allocators that can take back a tensor before
// the end of the run (Context.Release).
type Releaser interface {
	Release(t *graph.Tensor)
}

// SubgraphRunner runs a nested graph (an If branch, a Loop body) with its
// formal inputs bound in order to inputs; values of enclosing graphs are
// resolved by the runtime. Returned tensors belong to the caller.
type SubgraphRunner func(ctx context.Context, g *graph.Graph, inputs []*graph.Tensor) ([]*graph.Tensor, error)

// Context is what a kernel receives besides its node and inputs.
type Context struct {
	context.Context
	// Opset is the model's imported version of the node's domain.
	Opset int64
	// Alloc, when set, provides recycled buffers; otherwise New allocates.
	Alloc Allocator
	// RunSubgraph runs nested graphs (If, Loop); nil outside a runtime.
	RunSubgraph SubgraphRunner
}

// New returns a zero-filled tensor for a kernel output, refusing sizes over
// graph.MaxTensorBytes before allocating.
func (c *Context) New(dt graph.DType, shape []int) (*graph.Tensor, error) {
	if c != nil && c.Alloc != nil {
		return c.Alloc.Alloc(dt, shape)
	}
	return graph.New(dt, shape)
}

// Release hands back a tensor the kernel obtained from New or RunSubgraph
// and will not return or read again (a Loop's carried values of the
// previous iteration), so that its buffer is recycled now rather than at
// the end of the run. Tensors the allocator does not own (inputs, weights)
// are left alone.
func (c *Context) Release(t *graph.Tensor) {
	if c == nil || t == nil {
		return
	}
	if r, ok := c.Alloc.(Releaser); ok {
		r.Release(t)
	}
}

// Stopped reports, without blocking, whether the run's context is done
// (cancelled or past its deadline). Long kernels call it between blocks of
// work (a row block, a tile, some 64 Ki elements) and then return
// Context.Stop's error: their output is incomplete.
func (c *Context) Stopped() bool {
	return Done(DoneOf(c))
}

// DoneOf is the Done channel of a kernel call's context (nil when there is
// none), for loops that poll it with Done.
func DoneOf(c *Context) <-chan struct{} {
	if c == nil || c.Context == nil {
		return nil
	}
	return c.Context.Done()
}

// Done reports whether the channel (a context's Done) is closed; a nil
// channel never is.
func Done(ch <-chan struct{}) bool {
	if ch == nil {
		return false
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Stop is the error a kernel returns when it stopped early because its
// context is done (it wraps the context's error, naming the node).
func (c *Context) Stop(n *graph.Node) error {
	err := context.Canceled
	if c != nil && c.Context != nil && c.Context.Err() != nil {
		err = c.Context.Err()
	}
	return fmt.Errorf("%s: stopped: %w", n.Label(), err)
}

// stopChecked discards what a kernel returns once its context is done:
// long kernels stop early (between blocks of work) when it is, and their
// outputs are then incomplete.
func stopChecked(f Func) Func {
	return func(ctx *Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
		out, err := f(ctx, n, in)
		if err == nil && ctx.Stopped() {
			return nil, ctx.Stop(n)
		}
		return out, err
	}
}

// StopCheckElems is how many elements a simple loop over a big output
// handles between two Stopped checks.
const StopCheckElems = 64 << 10

// Func computes a node's outputs from its inputs. It returns one tensor per
// node output (nil for an omitted optional output is allowed).
type Func func(ctx *Context, n *graph.Node, inputs []*graph.Tensor) ([]*graph.Tensor, error)

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

// Schema describes an operator: its arity, opset range, accepted dtypes,
// kernel and shape inference.
type Schema struct {
	Domain string // "" for the default ONNX domain
	OpType string
	// MinOpset is the oldest opset version of Domain this kernel implements
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
	Kernel    Func
	Infer     InferFunc
}

// MaxKnownOpset is the newest default-domain opset whose operator set (as seen in the ONNX 1.2x test suite)
// Switchyard knows.
const MaxKnownOpset = 28

var (
	regMu    sync.RWMutex
	registry = map[string]*Schema{}
)

func key(domain, op string) string {
	if domain == "ai.onnx" {
		domain = ""
	}
	return domain + "::" + op
}

// Register adds a schema. It panics on a duplicate or incomplete schema:
// that is a programming error in a kernel package, caught by any test.
func Register(s Schema) {
	if s.OpType == "" || s.Kernel == nil {
		panic(fmt.Sprintf("kernels: incomplete schema for %q", s.OpType))
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
	s.Kernel = stopChecked(s.Kernel)
	regMu.Lock()
	defer regMu.Unlock()
	k := key(s.Domain, s.OpType)
	if _, dup := registry[k]; dup {
		panic(fmt.Sprintf("kernels: %s registered twice", s.OpType))
	}
	registry[k] = &s
}

// Lookup finds an op's schema.
func Lookup(domain, op string) (*Schema, bool) {
	regMu.RLock()
	defer regMu.RUnlock()
	s, ok := registry[key(domain, op)]
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

// CheckNode reports why a node cannot run at the given opset (unknown op,
// opset out of range, wrong arity), or nil.
func CheckNode(n *graph.Node, opset int64) error {
	s, ok := Lookup(n.Domain, n.OpType)
	if !ok {
		return fmt.Errorf("%w: op %s", ErrUnsupported, opName(n.Domain, n.OpType, opset))
	}
	if opset < s.MinOpset || opset > s.MaxOpset {
		return fmt.Errorf("%w: op %s (supported opsets %d–%d)", ErrUnsupported, opName(n.Domain, n.OpType, opset), s.MinOpset, s.MaxOpset)
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

func opName(domain, op string, opset int64) string {
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
