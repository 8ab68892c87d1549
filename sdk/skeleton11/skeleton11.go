// Package skeleton11 is a HAL 1.1 backend to start a device backend from:
// a device with memory of its own (buffers, uploads, downloads), an
// asynchronous queue with fences, Enqueue on buffers, per-call profiles
// and shape bounds, beside the synchronous Execute every backend has. It
// computes three float32 ops (Relu, Add, Mul on equal shapes) so that the
// conformance suite can certify it (skeleton11_test.go does), and keeps
// its "device" memory in Go slices: replace alloc, the copies and run
// with your driver's calls.
//
// To start a new device backend, copy this directory (see sdk/skeleton for
// the steps every backend shares), rename the package and Name, then:
//
//  1. Capabilities.Devices: one DeviceDesc per device you drive, with the
//     memory kinds you can allocate (a device-local buffer has no host
//     view; a host or host-visible one implements hal.Mappable), your
//     memory size and largest buffer, and the precisions a caller may opt
//     into (float32 first: never compute in less unless asked, and report
//     what you use through hal.PrecisionReporter).
//
//  2. Allocate/Free: Free never blocks; memory an enqueued operation
//     uses stays valid until that operation's fence signals (the uses
//     count below), even when the caller frees it first.
//
//  3. Upload/Download/Enqueue: order each operation after the fences it is
//     given, return at once with a fence of its own, and signal that fence
//     only when the work is complete (an upload has read its source, a
//     download has written its destination). Never wait for the device in
//     these calls.
//
//  4. Fences: Wait honours its context and returns promptly when it ends;
//     the work goes on. Close fails every pending fence (Unavailable).
//     hal/devkit has a ready one: signal it once the work is done.
//
//  5. Run the conformance suite (conformance.Run in a test): its
//     contract/devmem cases hold a backend to all of the above.
package skeleton11

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

// Name is the registry name; change it.
const Name = "skeleton11"

// The device's declared limits.
const (
	memoryBytes    = 64 << 20
	maxBufferBytes = 16 << 20
)

// ops are the op types the skeleton computes (float32, equal shapes).
var ops = map[string]int{"Relu": 1, "Add": 2, "Mul": 2}

// Backend is one device with its own memory and one queue.
type Backend struct {
	epoch time.Time
	halt  context.Context // done at Close: pending work fails
	stop  context.CancelCauseFunc

	mu     sync.Mutex
	closed bool
	used   int64 // bytes of live buffers and constants
	q      queue
}

// New returns the skeleton backend.
func New() *Backend {
	b := &Backend{epoch: time.Now()}
	b.halt, b.stop = context.WithCancelCause(context.Background())
	b.q.b = b
	return b
}

// Factory registers the skeleton with a registry (hal.Register(Factory())).
func Factory() hal.Factory {
	return hal.Factory{Info: New().Info(), Kind: hal.LoadLinked, Open: func(ctx context.Context) (hal.Backend, error) { return New(), nil }}
}

func (b *Backend) Info() hal.Info {
	return hal.Info{Name: Name, Vendor: "you", Version: "0.0.0", HAL: hal.VersionRange{Min: hal.V1_0, Max: hal.V1_1},
		Device: hal.DeviceCPU, Description: "HAL 1.1 skeleton backend: one device with its own memory and queue, Relu/Add/Mul in float32 (start a device backend from sdk/skeleton11)"}
}

func (b *Backend) Capabilities(ctx context.Context) (hal.Capabilities, error) {
	caps := hal.Capabilities{MaxTensorBytes: maxBufferBytes, Devices: []hal.DeviceDesc{{
		Index: 0, Name: Name + "-0", Kind: hal.DeviceCPU, MemoryBytes: memoryBytes, MaxBufferBytes: maxBufferBytes,
		MemoryKinds: []hal.MemoryKind{hal.MemoryHost, hal.MemoryDeviceLocal}, Precisions: []hal.Precision{hal.PrecisionFloat32},
		CacheKey: hal.CacheKey{Vendor: "you", Device: Name + "-0", Driver: "0.0.0"},
	}}}
	for _, op := range []string{"Add", "Mul", "Relu"} {
		caps.Ops = append(caps.Ops, hal.OpCapability{OpType: op, DTypes: []graph.DType{graph.Float32}})
	}
	return caps, nil
}

// decline says why a node is not taken ("" when it is).
func decline(sg *hal.Subgraph, n *graph.Node) string {
	arity, ok := ops[n.OpType]
	if n.Domain != "" || !ok {
		return fmt.Sprintf("op %s:%s is not one of Relu, Add, Mul", n.Domain, n.OpType)
	}
	if len(n.Inputs) != arity || len(n.Outputs) != 1 || len(n.Attrs) > 0 {
		return fmt.Sprintf("%s with %d inputs, %d outputs and %d attributes is not handled", n.OpType, len(n.Inputs), len(n.Outputs), len(n.Attrs))
	}
	var first graph.Shape
	for i, name := range append(append([]string{}, n.Inputs...), n.Outputs...) {
		t, ok := sg.TypeOf(name)
		if !ok || t.DType != graph.Float32 || t.Shape == nil {
			return fmt.Sprintf("%s: %q is not a float32 tensor of known rank (%v)", n.OpType, name, t.DType)
		}
		if i == 0 {
			first = t.Shape
			continue
		}
		if !sameDims(first, t.Shape) {
			return fmt.Sprintf("%s: %q has shape %v, %q has %v: only equal shapes (no broadcasting)", n.OpType, n.Inputs[0], first, name, t.Shape)
		}
	}
	return ""
}

// sameDims: equal rank, each dim the same number or the same symbol.
func sameDims(a, b graph.Shape) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Static() != b[i].Static() || a[i].Static() && a[i].Value != b[i].Value || !a[i].Static() && (a[i].Param == "" || a[i].Param != b[i].Param) {
			return false
		}
	}
	return true
}

func (b *Backend) Supports(ctx context.Context, sg *hal.Subgraph) ([]hal.Verdict, error) {
	vs := make([]hal.Verdict, len(sg.Graph.Nodes))
	for i, n := range sg.Graph.Nodes {
		if r := decline(sg, n); r != "" {
			vs[i].Reason = r
		} else {
			vs[i].Supported = true
		}
	}
	return vs, nil
}

// step is one node of a compiled program.
type step struct {
	node string
	op   string
	in   []string
	out  string
}

// Executable is a compiled subgraph: its steps in order, the device's
// copies of its constants, its boundary and shape bounds.
type Executable struct {
	b       *Backend
	steps   []step
	consts  map[string]*graph.Tensor
	inputs  []graph.ValueInfo
	outputs []graph.ValueInfo
	bounds  map[string][]hal.DimRange
	bytes   int64

	mu       sync.Mutex
	released bool
}

func (b *Backend) Compile(ctx context.Context, sg *hal.Subgraph, opts hal.CompileOptions) (hal.Executable, error) {
	if err := b.live(); err != nil {
		return nil, err
	}
	if opts.Device != 0 {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "device %d does not exist (the skeleton has one)", opts.Device)
	}
	if err := sg.Graph.Validate(map[string]bool{}); err != nil {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "invalid subgraph: %v", err)
	}
	order, err := sg.Graph.TopoSort()
	if err != nil {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "%v", err)
	}
	e := &Executable{b: b, consts: map[string]*graph.Tensor{}, inputs: append([]graph.ValueInfo{}, sg.Graph.Inputs...), outputs: append([]graph.ValueInfo{}, sg.Graph.Outputs...)}
	for _, n := range order {
		if r := decline(sg, n); r != "" {
			return nil, hal.Errorf(hal.CodeUnsupported, "node %s: %s", n.Label(), r)
		}
		e.steps = append(e.steps, step{node: n.Name, op: n.OpType, in: append([]string{}, n.Inputs...), out: n.Outputs[0]})
		for _, in := range n.Inputs {
			if c := sg.ConstOf(in); c != nil && e.consts[in] == nil {
				e.consts[in] = c.Clone() // the device's copy: sg is not ours after Compile
				e.bytes += int64(4 * c.Len())
			}
		}
	}
	for _, in := range e.inputs {
		if in.Type.DType != graph.Float32 {
			return nil, hal.Errorf(hal.CodeUnsupported, "input %q is %v, only float32 is handled", in.Name, in.Type.DType)
		}
	}
	if err := b.reserve(e.bytes); err != nil {
		return nil, err
	}
	for name, dims := range opts.ShapeBounds {
		if e.bounds == nil {
			e.bounds = map[string][]hal.DimRange{}
		}
		e.bounds[name] = append([]hal.DimRange(nil), dims...)
	}
	return e, nil
}

// live refuses work on a closed backend.
func (b *Backend) live() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return hal.Errorf(hal.CodeFailedPrecondition, "%s is closed", Name)
	}
	return nil
}

// reserve accounts n bytes of device memory.
func (b *Backend) reserve(n int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return hal.Errorf(hal.CodeFailedPrecondition, "%s is closed", Name)
	}
	if b.used+n > memoryBytes {
		return hal.Errorf(hal.CodeResourceExhausted, "%d bytes in use, %d more do not fit in %d", b.used, n, memoryBytes)
	}
	b.used += n
	return nil
}

func (b *Backend) unreserve(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// Release gives the constants back.
func (e *Executable) Release() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.released {
		e.released = true
		e.b.unreserve(e.bytes)
	}
	return nil
}

// shapes checks input shapes against the boundary and the shape bounds
// and returns each value's shape (elementwise: a node's output has its
// first input's shape).
func (e *Executable) shapes(in [][]int) (map[string][]int, error) {
	if len(in) != len(e.inputs) {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "got %d inputs, the subgraph has %d", len(in), len(e.inputs))
	}
	sh := map[string][]int{}
	for i, vi := range e.inputs {
		s := in[i]
		if len(s) != len(vi.Type.Shape) {
			return nil, hal.Errorf(hal.CodeInvalidArgument, "input %q has shape %v, the subgraph declares %v", vi.Name, s, vi.Type.Shape)
		}
		for d, dim := range vi.Type.Shape {
			if dim.Static() && int(dim.Value) != s[d] {
				return nil, hal.Errorf(hal.CodeInvalidArgument, "input %q has shape %v, the subgraph declares %v", vi.Name, s, vi.Type.Shape)
			}
		}
		if b, ok := e.bounds[vi.Name]; ok {
			for d, n := range s {
				if d < len(b) && (n < b[d].Min || n > b[d].Max) {
					return nil, hal.Errorf(hal.CodeDeclined, "input %q dim %d is %d, outside the compiled bound [%d, %d]", vi.Name, d, n, b[d].Min, b[d].Max)
				}
			}
		}
		sh[vi.Name] = s
	}
	for name, c := range e.consts {
		sh[name] = c.Shape
	}
	for _, st := range e.steps {
		first := sh[st.in[0]]
		for _, x := range st.in[1:] {
			if !graph.SameShape(sh[x], first) {
				return nil, hal.Errorf(hal.CodeInvalidArgument, "%s: inputs of shapes %v and %v (only equal shapes)", st.op, first, sh[x])
			}
		}
		sh[st.out] = first
	}
	return sh, nil
}

// run computes the program on float32 data (the kernel a real backend
// launches on its device); into receives the outputs in place. With prof
// it records one kernel per node.
func (e *Executable) run(ctx context.Context, in, into [][]float32, prof *hal.CallProfile) error {
	vals := map[string][]float32{}
	for i, vi := range e.inputs {
		vals[vi.Name] = in[i]
	}
	for name, c := range e.consts {
		vals[name] = c.Data.([]float32)
	}
	outAt := map[string]int{}
	for i, o := range e.outputs {
		outAt[o.Name] = i
	}
	produced := map[string]bool{}
	for _, st := range e.steps {
		if err := ctxErr(ctx); err != nil {
			return err
		}
		t0 := e.b.now()
		a := vals[st.in[0]]
		var dst []float32
		if i, ok := outAt[st.out]; ok {
			dst = into[i]
		} else {
			dst = make([]float32, len(a))
		}
		for lo := 0; lo < len(a); lo += 1 << 16 {
			if lo > 0 {
				if err := ctxErr(ctx); err != nil {
					return err
				}
			}
			hi := min(lo+1<<16, len(a))
			switch st.op {
			case "Relu":
				for j := lo; j < hi; j++ {
					if v := a[j]; v < 0 {
						dst[j] = 0
					} else {
						dst[j] = v
					}
				}
			case "Add":
				bb := vals[st.in[1]]
				for j := lo; j < hi; j++ {
					dst[j] = a[j] + bb[j]
				}
			case "Mul":
				bb := vals[st.in[1]]
				for j := lo; j < hi; j++ {
					dst[j] = a[j] * bb[j]
				}
			}
		}
		vals[st.out], produced[st.out] = dst, true
		if prof != nil {
			k := hal.KernelTiming{Name: st.op, StartNS: t0, EndNS: e.b.now()}
			if st.node != "" {
				k.Name += " " + st.node
				k.Nodes = []string{st.node}
			}
			prof.Kernels = append(prof.Kernels, k)
		}
	}
	// an output no node writes (an input or a constant passed through)
	for i, o := range e.outputs {
		if !produced[o.Name] {
			copy(into[i], vals[o.Name])
		}
	}
	return nil
}

func ctxErr(ctx context.Context) error {
	switch err := ctx.Err(); {
	case errors.Is(err, context.DeadlineExceeded):
		return hal.Errorf(hal.CodeDeadlineExceeded, "%v", err)
	case err != nil:
		return hal.Errorf(hal.CodeCancelled, "%v", err)
	}
	return nil
}

// Execute is the synchronous call on host tensors.
func (e *Executable) Execute(ctx context.Context, inputs, outputs []*graph.Tensor) error {
	_, err := e.execute(ctx, inputs, outputs, false)
	return err
}

// ExecuteProfiled is Execute with this call's profile.
func (e *Executable) ExecuteProfiled(ctx context.Context, inputs, outputs []*graph.Tensor) (*hal.CallProfile, error) {
	return e.execute(ctx, inputs, outputs, true)
}

func (e *Executable) execute(ctx context.Context, inputs, outputs []*graph.Tensor, profile bool) (*hal.CallProfile, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	if err := e.b.live(); err != nil {
		return nil, err
	}
	in := make([][]int, len(inputs))
	data := make([][]float32, len(inputs))
	for i, t := range inputs {
		if t == nil || t.DType != graph.Float32 || t.Check() != nil {
			return nil, hal.Errorf(hal.CodeInvalidArgument, "input %d is not a float32 tensor", i)
		}
		in[i], data[i] = t.Shape, t.Data.([]float32)
		if n := int64(4 * len(data[i])); n > maxBufferBytes {
			return nil, hal.Errorf(hal.CodeResourceExhausted, "input %d holds %d bytes, over the declared limit of %d", i, n, maxBufferBytes)
		}
	}
	sh, err := e.shapes(in)
	if err != nil {
		return nil, err
	}
	if len(outputs) != len(e.outputs) {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "got %d outputs, the subgraph has %d", len(outputs), len(e.outputs))
	}
	into := make([][]float32, len(outputs))
	for i, o := range e.outputs {
		t, want := outputs[i], sh[o.Name]
		if t == nil {
			return nil, hal.Errorf(hal.CodeInvalidArgument, "output %d is nil", i)
		}
		if t.Data != nil {
			d, ok := t.Data.([]float32)
			if !ok || t.DType != graph.Float32 || !graph.SameShape(t.Shape, want) || len(d) != len(data0(want)) {
				return nil, hal.Errorf(hal.CodeInvalidArgument, "output %q is %v%v, the call writes float32%v", o.Name, t.DType, t.Shape, want)
			}
			into[i] = d
			continue
		}
		into[i] = data0(want)
	}
	var prof *hal.CallProfile
	if profile {
		prof = &hal.CallProfile{Device: 0, Queue: "host", StartNS: e.b.now()}
	}
	if err := e.run(ctx, data, into, prof); err != nil {
		return nil, err
	}
	if prof != nil {
		prof.EndNS = e.b.now()
	}
	for i, o := range e.outputs {
		if outputs[i].Data == nil {
			*outputs[i] = graph.Tensor{DType: graph.Float32, Shape: append([]int{}, sh[o.Name]...), Data: into[i]}
		}
	}
	return prof, nil
}

func data0(shape []int) []float32 {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return make([]float32, n)
}

// now is the device clock: nanoseconds since the backend was made.
func (b *Backend) now() int64 { return int64(time.Since(b.epoch)) }

// Close fails every pending fence with Unavailable, stops the queue and
// releases all memory. It is safe to call twice.
func (b *Backend) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.mu.Unlock()
	b.stop(hal.Errorf(hal.CodeUnavailable, "%s was closed with the work pending", Name))
	b.q.shutdown()
	return nil
}

var (
	_ hal.Backend             = (*Backend)(nil)
	_ hal.DeviceMemory        = (*Backend)(nil)
	_ hal.AsyncExecutable     = (*Executable)(nil)
	_ hal.ProfilingExecutable = (*Executable)(nil)
)
