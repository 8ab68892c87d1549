package sim

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/switchyard-hal/switchyard/core/exec"
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/hal/devkit"
	"github.com/switchyard-hal/switchyard/hal/halkit"
	"github.com/switchyard-hal/switchyard/plugins/cpu"
)

// devExecutable runs a subgraph on a simulated device.
type devExecutable struct {
	*executable
	b         *DeviceBackend
	q         *queue
	g         *graph.Graph
	opsets    []graph.Opset
	weights   []*buffer
	precision hal.Precision
	order     []*graph.Node             // the nodes in execution order (for shape inference)
	bounds    map[string][]hal.DimRange // CompileOptions.ShapeBounds, copied

	mu       sync.Mutex
	shapes   map[string][]outType // output types per input-shape signature
	released bool
}

// Precision reports what the executable computes in.
func (e *devExecutable) Precision() hal.Precision { return e.precision }

// InPlaceOutputs lists the outputs the reference kernels update in the
// memory of an input (exec.Program.InPlaceOutputs): on Enqueue, such an
// output handed the input's very buffer is written in place, only the
// positions that change (hal.InPlaceExecutable).
func (e *devExecutable) InPlaceOutputs() []hal.InPlace {
	return halkit.InPlace(e.prog.InPlaceOutputs())
}

// Release frees the device copies of the weights.
func (e *devExecutable) Release() error {
	e.mu.Lock()
	if e.released {
		e.mu.Unlock()
		return nil
	}
	e.released = true
	e.mu.Unlock()
	for _, w := range e.weights {
		_ = e.b.Free(w)
	}
	return nil
}

// decline refuses inputs over DeclineShapesOver elements, and inputs
// outside the shape bounds the executable was compiled for.
func (e *devExecutable) decline(shapes [][]int, lens []int) error {
	for i, shape := range shapes {
		b, ok := e.bounds[e.g.Inputs[i].Name]
		if !ok {
			continue
		}
		if len(b) != len(shape) {
			return hal.Errorf(hal.CodeDeclined, "input %q has rank %d, the compiled shape bounds have %d dims", e.g.Inputs[i].Name, len(shape), len(b))
		}
		for d, n := range shape {
			if n < b[d].Min || n > b[d].Max {
				e.b.mu.Lock()
				e.b.counters.Declines++
				e.b.mu.Unlock()
				return hal.Errorf(hal.CodeDeclined, "input %q dim %d is %d, outside the compiled bound [%d, %d]", e.g.Inputs[i].Name, d, n, b[d].Min, b[d].Max)
			}
		}
	}
	lim := e.b.dopts.DeclineShapesOver
	if lim <= 0 {
		return nil
	}
	for i, n := range lens {
		if n > lim {
			e.b.mu.Lock()
			e.b.counters.Declines++
			e.b.mu.Unlock()
			return hal.Errorf(hal.CodeDeclined, "input %q has %d elements, over the simulated limit of %d", e.g.Inputs[i].Name, n, lim)
		}
	}
	return nil
}

// outputShapes infers the concrete output shapes for concrete input
// shapes (a device allocates outputs before it runs). Shapes that depend
// on values computed on the device cannot be known: declined.

func (e *devExecutable) outputShapes(in [][]int) ([]outType, error) {
	var sig strings.Builder
	for _, s := range in {
		fmt.Fprint(&sig, s, ";")
	}
	e.mu.Lock()
	if s, ok := e.shapes[sig.String()]; ok {
		e.mu.Unlock()
		return s, nil
	}
	e.mu.Unlock()
	types := map[string]graph.ValueType{}
	for i, vi := range e.g.Inputs {
		types[vi.Name] = graph.ValueType{Kind: "tensor", DType: vi.Type.DType, Shape: graph.StaticShape(in[i]...)}
	}
	for name, t := range e.g.Initializers {
		types[name] = graph.ValueType{Kind: "tensor", DType: t.DType, Shape: graph.StaticShape(t.Shape...)}
	}
	model := graph.Model{Opsets: e.opsets}
	for _, n := range e.order {
		ins := make([]ops.InferInput, len(n.Inputs))
		for i, name := range n.Inputs {
			if name != "" {
				ins[i] = ops.InferInput{Type: types[name], Const: e.g.Initializers[name]}
			}
		}
		outs, ok, err := ops.Infer(n, model.OpsetVersion(n.Domain), ins)
		if !ok {
			return nil, hal.Errorf(hal.CodeDeclined, "node %s: no shape inference, output shapes unknown before running", n.Label())
		}
		if err != nil {
			return nil, hal.Errorf(hal.CodeInvalidArgument, "node %s: %v", n.Label(), err)
		}
		for i, name := range n.Outputs {
			if name != "" && i < len(outs) {
				types[name] = outs[i]
			}
		}
	}
	res := make([]outType, len(e.g.Outputs))
	for i, o := range e.g.Outputs {
		t := types[o.Name]
		dims, ok := t.Shape.Ints()
		if t.DType == graph.Undefined && o.Type.DType == graph.Undefined {
			return nil, hal.Errorf(hal.CodeDeclined, "output %q is %v%v, known only after running", o.Name, t.DType, t.Shape)
		}
		if !ok {
			// known only after running: the caller's buffer says, else declined
			dims = nil
		}
		res[i] = outType{dtype: o.Type.DType, shape: dims, unknown: !ok}
		if res[i].dtype == graph.Undefined {
			res[i].dtype = t.DType
		}
	}
	e.mu.Lock()
	if len(e.shapes) > 64 {
		clear(e.shapes)
	}
	e.shapes[sig.String()] = res
	e.mu.Unlock()
	return res, nil
}

// outType is an output's concrete dtype and shape.
type outType struct {
	dtype   graph.DType
	shape   []int
	unknown bool // the shape is known only after running (shape nil)
}

// compute runs the subgraph on device-side tensors: into (when non-nil)
// receives the outputs in place. With profile it times every node.
func (e *devExecutable) compute(ctx context.Context, inputs []*graph.Tensor, into []*graph.Tensor, profile bool, prof *hal.CallProfile) ([]*graph.Tensor, error) {
	if err := e.pre(ctx, inputs); err != nil {
		return nil, err
	}
	feeds := make(map[string]*graph.Tensor, len(inputs))
	for i, vi := range e.g.Inputs {
		feeds[vi.Name] = inputs[i]
	}
	var res map[string]*graph.Tensor
	var err error
	base := e.b.now()
	if profile {
		var st *exec.Stats
		res, st, err = e.prog.RunWithStats(ctx, feeds, exec.RunOptions{Profile: true})
		if err == nil {
			for _, nt := range st.Nodes {
				name := nt.OpType
				if nt.Node != "" {
					name += " " + nt.Node
				}
				k := hal.KernelTiming{Name: name, StartNS: base + int64(nt.Start), EndNS: base + int64(nt.Start+nt.Duration)}
				if nt.Depth == 0 && nt.Node != "" {
					k.Nodes = []string{nt.Node}
				}
				prof.Kernels = append(prof.Kernels, k)
			}
		}
	} else {
		dst := map[string]*graph.Tensor{}
		for i, o := range e.g.Outputs {
			if into != nil && into[i] != nil {
				dst[o.Name] = into[i]
			}
		}
		res, err = e.prog.RunInto(ctx, feeds, dst)
	}
	if err != nil {
		return nil, err
	}
	outs := make([]*graph.Tensor, len(e.g.Outputs))
	for i, o := range e.g.Outputs {
		t := res[o.Name]
		if t == nil {
			return nil, hal.Errorf(hal.CodeInternal, "output %q was not computed", o.Name)
		}
		if into != nil && into[i] != nil && t != into[i] {
			if t.DType != into[i].DType || !graph.SameShape(t.Shape, into[i].Shape) {
				return nil, hal.Errorf(hal.CodeInternal, "output %q is %v%v, the device allocated %v%v", o.Name, t.DType, t.Shape, into[i].DType, into[i].Shape)
			}
			graph.CopyData(into[i].Data, t.Data)
			t = into[i]
		}
		outs[i] = t
	}
	e.post(inputs, outs)
	if e.precision != hal.PrecisionFloat32 {
		for _, o := range outs {
			roundTo(o, e.precision)
		}
	}
	return outs, nil
}

// roundTo rounds float32 values through a reduced precision.
func roundTo(t *graph.Tensor, p hal.Precision) {
	d, ok := t.Data.([]float32)
	if !ok {
		return
	}
	for i, v := range d {
		switch p {
		case hal.PrecisionFloat16:
			d[i] = graph.F16FromFloat32(v).Float32()
		case hal.PrecisionBFloat16:
			d[i] = graph.BF16FromFloat32(v).Float32()
		}
	}
}

// Enqueue schedules the subgraph on the executable's device after the
// fences; outputs not given are allocated (the caller frees them).
func (e *devExecutable) Enqueue(ctx context.Context, inputs, outputs []hal.Buffer, after []hal.Fence, opts hal.EnqueueOptions) (hal.Fence, error) {
	if err := e.b.call(); err != nil {
		return nil, err
	}
	e.mu.Lock()
	released := e.released
	e.mu.Unlock()
	if released {
		return nil, hal.Errorf(hal.CodeFailedPrecondition, "executable was released")
	}
	ins := make([]*stored, len(inputs))
	shapes := make([][]int, len(inputs))
	lens := make([]int, len(inputs))
	for i, hb := range inputs {
		h, st, err := e.b.resolve(hb, fmt.Sprintf("input %d (%q)", i, e.g.Inputs[i].Name))
		if err != nil {
			return nil, err
		}
		if st.q != e.q {
			return nil, hal.Errorf(hal.CodeInvalidArgument, "input %q lives on device %d, the executable runs on device %d", e.g.Inputs[i].Name, h.device, e.q.index)
		}
		ins[i], shapes[i], lens[i] = st, h.shape, st.t.Len()
	}
	if err := e.decline(shapes, lens); err != nil {
		return nil, err
	}
	if n := e.b.dopts.DeclineEvery; n > 0 && e.b.enqueues.Add(1)%n == 0 {
		e.b.mu.Lock()
		e.b.counters.Declines++
		e.b.mu.Unlock()
		return nil, hal.Errorf(hal.CodeDeclined, "simulated fault: every %d-th enqueue is declined", n)
	}
	outShapes, err := e.outputShapes(shapes)
	if err != nil {
		if hal.CodeOf(err) == hal.CodeDeclined {
			e.b.mu.Lock()
			e.b.counters.Declines++
			e.b.mu.Unlock()
		}
		return nil, err
	}
	outs := make([]*stored, len(outputs))
	var allocated []*buffer
	for i := range outputs {
		o := e.g.Outputs[i]
		if outputs[i] != nil {
			h, st, err := e.b.resolve(outputs[i], fmt.Sprintf("output %d (%q)", i, o.Name))
			if err == nil && (st.q != e.q || h.dtype != outShapes[i].dtype || !outShapes[i].unknown && !graph.SameShape(h.shape, outShapes[i].shape)) {
				err = hal.Errorf(hal.CodeInvalidArgument, "output %q: buffer of %v%v on device %d, the call writes %v%v on device %d", o.Name, h.dtype, h.shape, h.device, outShapes[i].dtype, outShapes[i].shape, e.q.index)
			}
			if err != nil {
				for _, a := range allocated {
					_ = e.b.Free(a)
				}
				return nil, err
			}
			outs[i] = st
			continue
		}
		if e.b.opts.AliasOutput && !outShapes[i].unknown {
			// MUTATION: an input's buffer returned as this output
			k := -1
			for j, hb := range inputs {
				if hb.DType() == outShapes[i].dtype && graph.SameShape(hb.Shape(), outShapes[i].shape) {
					k = j
					break
				}
			}
			if k >= 0 {
				outputs[i], outs[i] = inputs[k], ins[k]
				continue
			}
		}
		if outShapes[i].unknown {
			for _, a := range allocated {
				_ = e.b.Free(a)
			}
			e.b.mu.Lock()
			e.b.counters.Declines++
			e.b.mu.Unlock()
			return nil, hal.Errorf(hal.CodeDeclined, "output %q: its shape is known only after running, and no buffer was given for it", o.Name)
		}
		shape := outShapes[i].shape
		if e.b.opts.WrongShape {
			shape = wrongShape(shape)
		}
		h, st, err := e.b.alloc(e.q, outShapes[i].dtype, shape, false)
		if err != nil {
			for _, a := range allocated {
				_ = e.b.Free(a)
			}
			return nil, err
		}
		allocated = append(allocated, h)
		outputs[i], outs[i] = h, st
	}
	e.b.mu.Lock()
	e.b.counters.Enqueues++
	for i, st := range ins {
		name := e.g.Inputs[i].Name
		if st.uploaded && !st.counted[name] {
			if st.counted == nil {
				st.counted = map[string]bool{}
			}
			st.counted[name] = true
			e.b.counters.UploadedValues[name]++
		}
	}
	for i, st := range outs {
		st.producer, st.uploaded, st.counted = e.g.Outputs[i].Name, false, nil
	}
	e.b.mu.Unlock()
	uses := append(append([]*stored{}, ins...), outs...)
	w := &work{kind: "execute", after: after, uses: uses, hang: e.b.dopts.FenceNeverSignals, profile: opts.Profile, early: e.b.opts.SignalEarly}
	w.run = func(ctx context.Context) error {
		in := make([]*graph.Tensor, len(ins))
		into := make([]*graph.Tensor, len(outs))
		for i, st := range ins {
			in[i] = st.t
		}
		for i, st := range outs {
			into[i] = st.t
		}
		_, err := e.compute(ctx, in, into, opts.Profile, w.prof)
		if err == nil && e.b.opts.WriteInput {
			writeFirst(in) // MUTATION: the call writes its input buffer
		}
		return err
	}
	return e.q.submit(w)
}

// Execute is the synchronous call on host tensors: the inputs are copied
// to the device (counted as uploads), the call runs on the queue, and the
// outputs are copied back (downloads) once it signalled. A call whose
// context ends first returns at once; the device finishes on its own
// copies and never touches the caller's tensors afterwards.
func (e *devExecutable) Execute(ctx context.Context, inputs, outputs []*graph.Tensor) error {
	_, err := e.execute(ctx, inputs, outputs, false)
	return err
}

// ExecuteProfiled is Execute with this call's profile: device timestamps
// of the call and one kernel per node (hal.ProfilingExecutable).
func (e *devExecutable) ExecuteProfiled(ctx context.Context, inputs, outputs []*graph.Tensor) (*hal.CallProfile, error) {
	return e.execute(ctx, inputs, outputs, true)
}

func (e *devExecutable) execute(ctx context.Context, inputs, outputs []*graph.Tensor, profile bool) (*hal.CallProfile, error) {
	if err := e.b.call(); err != nil {
		return nil, err
	}
	// A call whose context is already done never starts: without this a
	// fast queue could signal the fence before Wait looks at ctx.
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	lens := make([]int, len(inputs))
	shapes := make([][]int, len(inputs))
	for i, t := range inputs {
		lens[i], shapes[i] = t.Len(), t.Shape
	}
	if err := e.decline(shapes, lens); err != nil {
		return nil, err
	}
	staged := make([]*graph.Tensor, len(inputs))
	e.b.mu.Lock()
	e.b.counters.Executes++
	for i, t := range inputs {
		staged[i] = t.Clone()
		e.b.counters.Uploads++
		e.b.counters.BytesUploaded += nbytes(t.DType, t.Len())
		e.b.counters.UploadedValues[e.g.Inputs[i].Name]++
	}
	e.b.mu.Unlock()
	var res []*graph.Tensor
	w := &work{kind: "execute", hang: e.b.dopts.FenceNeverSignals}
	w.run = func(ctx context.Context) (err error) {
		res, err = e.compute(ctx, staged, nil, profile, w.prof)
		return err
	}
	f, err := e.q.submit(w)
	if err != nil {
		return nil, err
	}
	if err := f.Wait(ctx); err != nil {
		return nil, err
	}
	e.b.mu.Lock()
	for i, t := range res {
		e.b.counters.Downloads++
		e.b.counters.BytesDownloaded += nbytes(t.DType, t.Len())
		e.b.counters.DownloadedValues[e.g.Outputs[i].Name]++
	}
	e.b.mu.Unlock()
	got := make(map[string]*graph.Tensor, len(res))
	for i, o := range e.g.Outputs {
		got[o.Name] = res[i]
	}
	if err := cpu.FillOutputs(e.g, got, outputs); err != nil {
		return nil, err
	}
	e.b.opts.mutateHost(inputs, outputs)
	if !profile {
		return nil, nil
	}
	p := *w.prof
	p.Kernels = append([]hal.KernelTiming{}, w.prof.Kernels...)
	return &p, nil
}

// now is the device clock: nanoseconds since the backend was made.
func (b *DeviceBackend) now() int64 { return int64(time.Since(b.epoch)) }

// work is one queued operation.
type work struct {
	kind    string
	after   []hal.Fence
	uses    []*stored
	run     func(ctx context.Context) error
	hang    bool
	profile bool
	fence   *devkit.Fence
	prof    *hal.CallProfile
	// early (Mutations.SignalEarly): the fence signals at submission and
	// the work is held back until the next submission.
	early bool
}

// queue is one simulated device's queue: a goroutine that runs operations
// in submission order, each after its fences.
type queue struct {
	b         *DeviceBackend
	index     int
	liveBytes int64 // guarded by b.mu

	mu      sync.Mutex
	items   []*work
	held    []*work // submitted with early fences, not queued yet
	running bool
	stopped bool
	wake    chan struct{}
	exited  chan struct{}
}

func (q *queue) submit(w *work) (hal.Fence, error) {
	w.fence = devkit.NewFence()
	w.prof = &hal.CallProfile{Device: q.index, Queue: fmt.Sprintf("%s-device%d", q.b.opts.Name, q.index)}
	q.mu.Lock()
	if q.stopped {
		q.mu.Unlock()
		return nil, hal.Errorf(hal.CodeFailedPrecondition, "simulated device is closed")
	}
	q.b.use(w.uses)
	q.items = append(q.items, q.held...)
	q.held = nil
	if w.early {
		w.fence.Signal(nil, nil) // MUTATION: success before the work ran
		q.held = append(q.held, w)
	} else {
		q.items = append(q.items, w)
	}
	if !q.running {
		q.running = true
		go q.loop()
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return w.fence, nil
}

func (q *queue) next() *work {
	for {
		q.mu.Lock()
		if q.stopped {
			q.mu.Unlock()
			return nil
		}
		if len(q.items) > 0 {
			w := q.items[0]
			q.items[0] = nil
			q.items = q.items[1:]
			q.mu.Unlock()
			return w
		}
		q.mu.Unlock()
		<-q.wake
	}
}

func (q *queue) loop() {
	defer close(q.exited)
	for {
		w := q.next()
		if w == nil {
			return
		}
		err := q.process(w)
		// the operation's hold on its buffers ends before its fence
		// signals, so a waiter sees the counters settled
		q.b.unuse(w.uses)
		w.fence.Signal(err, w.prof)
	}
}

func (q *queue) process(w *work) error {
	halt := q.b.halt
	for _, f := range w.after {
		if err := f.Wait(halt); err != nil {
			if cause := q.b.haltErr(); cause != nil {
				return cause
			}
			return fmt.Errorf("sim: a fence this %s waited for failed: %w", w.kind, err)
		}
	}
	if w.hang {
		<-halt.Done()
		return q.b.haltErr()
	}
	if d := q.b.dopts.FenceDelay; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-halt.Done():
			t.Stop()
			return q.b.haltErr()
		}
	}
	if err := q.b.haltErr(); err != nil {
		return err
	}
	w.prof.StartNS = q.b.now()
	err := safeRun(w.run, halt)
	w.prof.EndNS = q.b.now()
	if w.kind != "execute" {
		w.prof.Kernels = []hal.KernelTiming{{Name: w.kind, StartNS: w.prof.StartNS, EndNS: w.prof.EndNS}}
	}
	if err != nil && halt.Err() != nil {
		return q.b.haltErr()
	}
	return err
}

// safeRun turns a panic on the device into an Internal error.
func safeRun(run func(context.Context) error, ctx context.Context) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = hal.Errorf(hal.CodeInternal, "simulated device panicked: %v", p)
		}
	}()
	return run(ctx)
}

// shutdown stops the queue (at Close): the goroutine exits, operations
// still queued fail with the halt reason.
func (q *queue) shutdown() {
	q.mu.Lock()
	q.stopped = true
	running := q.running
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	if running {
		<-q.exited
	}
	q.mu.Lock()
	rest := append(q.items, q.held...)
	q.items, q.held = nil, nil
	q.running = false
	q.mu.Unlock()
	for _, w := range rest {
		q.b.unuse(w.uses)
		w.fence.Signal(q.b.haltErr(), nil)
	}
}

var (
	_ hal.DeviceMemory      = (*DeviceBackend)(nil)
	_ hal.AsyncExecutable   = (*devExecutable)(nil)
	_ hal.PrecisionReporter = (*devExecutable)(nil)
	_ hal.InPlaceExecutable = (*devExecutable)(nil)
	_ hal.Buffer            = (*buffer)(nil)
)
