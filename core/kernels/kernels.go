// Package kernels holds the registry of Switchyard's reference CPU kernels
// and the small shared toolkit kernels are written with (broadcasting, axes,
// dtype conversion). Operator schemas (arity, opset range, shape/type
// inference) are not here: they live in core/ops, which links no kernel, and
// every kernel registers against its op's schema by name.
//
// The kernels themselves live in sub-packages (elementwise, nn, reduce, …)
// that register them in init; import core/kernels/all to get every one
// (it brings core/ops/all, every schema, with it).
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
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/ops"
)

// ErrUnsupported marks an op, attribute value or dtype that Switchyard does
// not implement (as opposed to invalid input); it is ops.ErrUnsupported.
var ErrUnsupported = ops.ErrUnsupported

// ErrInvalid marks invalid input: wrong shapes, bad attribute values; it is
// ops.ErrInvalid.
var ErrInvalid = ops.ErrInvalid

// ErrResourceExhausted marks a request refused for lack of memory: a
// model's memory budget would be exceeded (hal maps it to
// CodeResourceExhausted).
var ErrResourceExhausted = graph.ErrResourceExhausted

// Allocator hands out output tensors; the runtime's implementation recycles
// buffers whose lifetime has ended.
//
// Alloc and AllocUninit MUST NOT keep shape (the tensor gets a copy):
// Context passes them its own scratch.
type Allocator interface {
	Alloc(dt graph.DType, shape []int) (*graph.Tensor, error)
}

// UninitAllocator is implemented by allocators that can hand out a
// recycled buffer without zeroing it first (Context.NewUninit).
type UninitAllocator interface {
	AllocUninit(dt graph.DType, shape []int) (*graph.Tensor, error)
}

// Viewer is implemented by allocators that can let the output of the node
// being run share its input's memory (Context.View).
type Viewer interface {
	View(t *graph.Tensor, shape []int) *graph.Tensor
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
	// Memo, when set, is the slot the executor keeps for the node being
	// run in the program being run (Memoized, Memoize); nil outside one.
	Memo *Memo
	// Const: bit i set says input i is a constant of the program (an
	// initializer or a folded value no graph input overrides): the same
	// tensor, never written, on every call (IsConst).
	Const uint64

	outs [16]*graph.Tensor // Outputs' and OutputSlice's storage
	more []*graph.Tensor   // OutputSlice's storage for more than len(outs)
	shp  [8]int            // shapeArg's storage
}

// Memo is where a kernel keeps what it derives from its node and its
// constant inputs (requantisation multipliers, the zero points it reads
// on every call) across the runs of one compiled program, instead of
// deriving it again on every call: an executor keeps one per node of a
// plan and hands it over in Context.Memo. Runs may be concurrent, so a
// memo is stored whole (atomically) and never modified after it is
// stored; a kernel checks that a memo still describes its inputs before
// using it (a value computed by the run can change from run to run) and
// stores a new one when it does not. The zero value is empty.
type Memo struct{ p atomic.Pointer[memoBox] }

type memoBox struct{ v any }

// IsConst reports whether the executor says input i is a constant of the
// program (Context.Const): a kernel may then trust what it derived from
// that very tensor on an earlier call without looking at its values again.
func (c *Context) IsConst(i int) bool {
	return c != nil && i >= 0 && i < 64 && c.Const&(1<<i) != 0
}

// Memoized is what the kernel stored for its node with Memoize, or nil
// (none yet, or no executor slot).
func (c *Context) Memoized() any {
	if c == nil || c.Memo == nil {
		return nil
	}
	if b := c.Memo.p.Load(); b != nil {
		return b.v
	}
	return nil
}

// Memoize stores v for the node being run (nothing outside an executor
// slot). v must not be modified afterwards: other runs may be reading it.
func (c *Context) Memoize(v any) {
	if c == nil || c.Memo == nil {
		return
	}
	c.Memo.p.Store(&memoBox{v})
}

// Outputs returns ts as a kernel's result without allocating: the slice
// is the context's own, valid until the next kernel call with this
// context (the executor reads a kernel's results before the next call).
// A kernel returns it at once and keeps no reference to it.
func (c *Context) Outputs(ts ...*graph.Tensor) []*graph.Tensor {
	if c == nil || len(ts) > len(c.outs) {
		return append([]*graph.Tensor(nil), ts...)
	}
	n := copy(c.outs[:], ts)
	return c.outs[:n:n]
}

// OutputSlice returns n nil entries for a kernel's results, filled by
// the kernel and returned: the context's own storage when n is small (as
// for Outputs), else a slice the context keeps for its later calls
// (a new one without a context).
func (c *Context) OutputSlice(n int) []*graph.Tensor {
	if c == nil {
		return make([]*graph.Tensor, n)
	}
	if n > len(c.outs) {
		// a partition's many outputs: a slice the context keeps and
		// reuses on its later calls, as it does its own storage
		if n > cap(c.more) {
			c.more = make([]*graph.Tensor, n)
		}
		clear(c.more[:n])
		return c.more[:n:n]
	}
	clear(c.outs[:n])
	return c.outs[:n:n]
}

// New returns a zero-filled tensor for a kernel output, refusing sizes over
// graph.MaxTensorBytes before allocating.
func (c *Context) New(dt graph.DType, shape []int) (*graph.Tensor, error) {
	sh := c.shapeArg(shape)
	if c != nil && c.Alloc != nil {
		return c.Alloc.Alloc(dt, sh)
	}
	return graph.New(dt, sh)
}

// View returns a tensor of shape (as many elements as t) sharing t's
// data, a reshape without a copy, when the executor allows it for the
// node being run (core/exec: Reshape, Flatten, Squeeze, Unsqueeze and
// Identity whose result is no graph output; it keeps t's buffer alive as
// long as the view), else nil, and the kernel copies. Values are never
// written after they are made, so a view sees what a copy would.
func (c *Context) View(t *graph.Tensor, shape []int) *graph.Tensor {
	if c == nil || c.Alloc == nil || t == nil {
		return nil
	}
	if v, ok := c.Alloc.(Viewer); ok {
		return v.View(t, shape)
	}
	return nil
}

// NewUninit is New for a kernel that writes every element of the output
// before returning it: the contents are unspecified (a recycled buffer is
// not zeroed, which saves a pass over memory). A kernel that may leave any
// element unwritten, or that fails part way and returns the tensor anyway,
// must use New.
func (c *Context) NewUninit(dt graph.DType, shape []int) (*graph.Tensor, error) {
	sh := c.shapeArg(shape)
	if c != nil && c.Alloc != nil {
		if u, ok := c.Alloc.(UninitAllocator); ok {
			return u.AllocUninit(dt, sh)
		}
		return c.Alloc.Alloc(dt, sh)
	}
	return graph.New(dt, sh)
}

// shapeArg is shape as handed to the allocator: a copy in the context's
// scratch, so that the kernel's own shape slice does not escape to the
// heap through the interface call (allocators copy shapes).
func (c *Context) shapeArg(shape []int) []int {
	if c == nil || len(shape) > len(c.shp) {
		return append([]int(nil), shape...)
	}
	n := copy(c.shp[:], shape)
	return c.shp[:n:n]
}

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

// InferInput is what shape inference knows about one input (ops.InferInput).
type InferInput = ops.InferInput

// InferFunc computes output types from input types (ops.InferFunc).
type InferFunc = ops.InferFunc

// Schema is an operator's schema (see ops.Schema) joined with its reference
// kernel: what Lookup returns.
type Schema struct {
	Domain string // "" for the default ONNX domain
	OpType string
	// MinOpset/MaxOpset: the opset range (ops.Schema).
	MinOpset, MaxOpset int64
	// MinInputs/MaxInputs bound the number of inputs (MaxInputs -1 = variadic).
	MinInputs, MaxInputs int
	// MinOutputs/MaxOutputs bound the number of outputs.
	MinOutputs, MaxOutputs int
	// TypeInput and Types: the dtypes accepted (ops.Schema).
	TypeInput int
	Types     []graph.DType
	Kernel    Func
	Infer     InferFunc
	// InPlace: the outputs the kernel may be handed in an input's memory
	// (ops.Schema.InPlace).
	InPlace []ops.InPlace
}

// MaxKnownOpset is ops.MaxKnownOpset.
const MaxKnownOpset = ops.MaxKnownOpset

var (
	regMu    sync.RWMutex
	registry = map[string]*Schema{}
)

// RegisterKernel adds the reference kernel of an op whose schema is
// registered in core/ops. It panics on a missing schema, a nil kernel or a
// duplicate: a programming error in a kernel package, caught by any test.
func RegisterKernel(domain, op string, f Func) {
	if f == nil {
		panic(fmt.Sprintf("kernels: nil kernel for %q", op))
	}
	os, ok := ops.Lookup(domain, op)
	if !ok {
		panic(fmt.Sprintf("kernels: kernel for %q, which has no schema in core/ops", op))
	}
	s := &Schema{
		Domain: os.Domain, OpType: os.OpType, MinOpset: os.MinOpset, MaxOpset: os.MaxOpset,
		MinInputs: os.MinInputs, MaxInputs: os.MaxInputs, MinOutputs: os.MinOutputs, MaxOutputs: os.MaxOutputs,
		TypeInput: os.TypeInput, Types: os.Types, Infer: os.Infer, InPlace: os.InPlace,
		Kernel: stopChecked(f),
	}
	regMu.Lock()
	defer regMu.Unlock()
	k := ops.Key(domain, op)
	if _, dup := registry[k]; dup {
		panic(fmt.Sprintf("kernels: %s registered twice", op))
	}
	registry[k] = s
}

// Register adds a schema and its kernel at once (an op defined outside
// core/ops, such as a test's): the schema goes to ops.Register, the kernel
// to RegisterKernel. It panics on a duplicate or incomplete schema.
func Register(s Schema) {
	if s.OpType == "" || s.Kernel == nil {
		panic(fmt.Sprintf("kernels: incomplete schema for %q", s.OpType))
	}
	ops.Register(ops.Schema{
		Domain: s.Domain, OpType: s.OpType, MinOpset: s.MinOpset, MaxOpset: s.MaxOpset,
		MinInputs: s.MinInputs, MaxInputs: s.MaxInputs, MinOutputs: s.MinOutputs, MaxOutputs: s.MaxOutputs,
		TypeInput: s.TypeInput, Types: s.Types, Infer: s.Infer, InPlace: s.InPlace,
	})
	RegisterKernel(s.Domain, s.OpType, s.Kernel)
}

// Lookup finds an op that has a reference kernel: its schema and kernel.
func Lookup(domain, op string) (*Schema, bool) {
	regMu.RLock()
	defer regMu.RUnlock()
	s, ok := registry[ops.Key(domain, op)]
	return s, ok
}

// All lists every op with a reference kernel sorted by domain and op type
// (the order of ops.All).
func All() []*Schema {
	var out []*Schema
	for _, s := range ops.All() {
		if k, ok := Lookup(s.Domain, s.OpType); ok {
			out = append(out, k)
		}
	}
	return out
}

// CheckNode reports why a node cannot run on the reference kernels at the
// given opset (no kernel for the op, opset out of range, wrong arity), or
// nil: ops.CheckNode, restricted to the ops that have a kernel.
func CheckNode(n *graph.Node, opset int64) error {
	if _, ok := Lookup(n.Domain, n.OpType); !ok {
		return fmt.Errorf("%w: op %s", ErrUnsupported, ops.OpName(n.Domain, n.OpType, opset))
	}
	return ops.CheckNode(n, opset)
}

// Errorf makes an error naming the node (ops.Errorf).
func Errorf(n *graph.Node, format string, args ...any) error {
	return ops.Errorf(n, format, args...)
}

// Unsupportedf reports an unimplemented dtype/attribute for a node
// (ops.Unsupportedf).
func Unsupportedf(n *graph.Node, format string, args ...any) error {
	return ops.Unsupportedf(n, format, args...)
}

// Invalidf reports invalid input for a node (ops.Invalidf).
func Invalidf(n *graph.Node, format string, args ...any) error {
	return ops.Invalidf(n, format, args...)
}
