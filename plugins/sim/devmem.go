package sim

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard-hal/switchyard/core/exec"
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/hal/halkit"
	"github.com/switchyard-hal/switchyard/plugins/cpu"
)

// DeviceOptions turn the simulation backend into a SIMULATED device with
// memory of its own (HAL 1.1): NewDeviceMemory. They are plain data, like
// Faults, so the double is configured the same way in and out of process.
type DeviceOptions struct {
	// DeviceMemory selects the device-memory double (Open, Factory).
	DeviceMemory bool `json:"device_memory,omitempty"`
	// Devices is the number of simulated devices (default 1), each with
	// its own queue, listed in Capabilities.Devices.
	Devices int `json:"devices,omitempty"`
	// MemoryBytes, when > 0, is each device's memory; allocations beyond
	// it fail with ResourceExhausted.
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	// Precisions are the reduced precisions a caller may opt into
	// (CompileOptions.Precision); an executable compiled with one rounds
	// its float32 outputs through it and reports it (PrecisionReporter).
	Precisions []hal.Precision `json:"precisions,omitempty"`

	// FenceDelay is how long each queued operation (upload, execute,
	// download) takes on the device.
	FenceDelay time.Duration `json:"fence_delay,omitempty"`
	// FenceNeverSignals makes every enqueued execution hang on the device:
	// its fence never signals and the queue behind it stalls, until the
	// device is lost or the backend is closed.
	FenceNeverSignals bool `json:"fence_never_signals,omitempty"`
	// DeviceLostAfter loses the device after this many device calls
	// (uploads, downloads, enqueues, executes; 0 = never): every later
	// call and every pending fence fails with Unavailable.
	DeviceLostAfter int64 `json:"device_lost_after,omitempty"`
	// DeclineShapesOver, when > 0, makes Enqueue and Execute decline
	// (hal.ErrDeclined) inputs with more elements than this.
	DeclineShapesOver int `json:"decline_shapes_over,omitempty"`
	// DeclineEvery, when > 0, makes every DeclineEvery-th Enqueue decline
	// (hal.ErrDeclined), whatever its inputs.
	DeclineEvery int64 `json:"decline_every,omitempty"`
}

// Counters are what the device-memory double has seen, for tests. Traffic
// counts are cumulative; use Since for the traffic of an interval.
type Counters struct {
	Uploads         int64 `json:"uploads"`
	BytesUploaded   int64 `json:"bytes_uploaded"`
	Downloads       int64 `json:"downloads"`
	BytesDownloaded int64 `json:"bytes_downloaded"`
	Enqueues        int64 `json:"enqueues"`
	Executes        int64 `json:"executes"` // synchronous calls on host tensors
	Declines        int64 `json:"declines"`
	// UploadedValues counts, per value name, host copies that reached an
	// executable as that input; DownloadedValues, per value name, copies
	// of that output brought to the host (synchronous Executes count both).
	UploadedValues   map[string]int64 `json:"uploaded_values,omitempty"`
	DownloadedValues map[string]int64 `json:"downloaded_values,omitempty"`

	// Not traffic: the state now.
	WeightUploads    int64 `json:"weight_uploads"` // constants uploaded at Compile
	WeightBytes      int64 `json:"weight_bytes"`
	BuffersAllocated int64 `json:"buffers_allocated"`
	BuffersFreed     int64 `json:"buffers_freed"`    // Free calls
	LiveBuffers      int64 `json:"live_buffers"`     // allocated, not yet released (Free defers release past pending work)
	LiveBytes        int64 `json:"live_bytes"`       // bytes of live buffers and weights
	PendingOps       int64 `json:"pending_ops"`      // queued or running, fence not signalled
	Lost             bool  `json:"lost,omitempty"`   // the device was lost
	CallsSoFar       int64 `json:"calls_so_far"`     // device calls counted for DeviceLostAfter
	LiveWeights      int64 `json:"live_weights"`     // weight buffers of unreleased executables
	Queues           int   `json:"queues,omitempty"` // queue goroutines running
}

// RoundTrips is how often value went device → host → device: the smaller
// of its download and upload counts.
func (c Counters) RoundTrips(value string) int64 {
	return min(c.UploadedValues[value], c.DownloadedValues[value])
}

// HostRoundTrips sums RoundTrips over every value.
func (c Counters) HostRoundTrips() int64 {
	var n int64
	for v := range c.DownloadedValues {
		n += c.RoundTrips(v)
	}
	return n
}

// Since returns the traffic between prev and c (state fields are c's).
func (c Counters) Since(prev Counters) Counters {
	d := c
	d.Uploads -= prev.Uploads
	d.BytesUploaded -= prev.BytesUploaded
	d.Downloads -= prev.Downloads
	d.BytesDownloaded -= prev.BytesDownloaded
	d.Enqueues -= prev.Enqueues
	d.Executes -= prev.Executes
	d.Declines -= prev.Declines
	d.UploadedValues = diffCounts(c.UploadedValues, prev.UploadedValues)
	d.DownloadedValues = diffCounts(c.DownloadedValues, prev.DownloadedValues)
	return d
}

func diffCounts(a, b map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range a {
		if d := v - b[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// DeviceBackend is the device-memory double: buffers live in a private
// store the host never sees (no Mappable; the runtime holds opaque
// handles), every upload, execution and download runs on a simulated
// queue per device in submission order after the fences it is given, and
// fences signal asynchronously. It computes with the reference kernels,
// reports DeviceSimulated and is never presented as hardware.
type DeviceBackend struct {
	*Backend
	dopts DeviceOptions
	epoch time.Time // the device clock's origin

	halt     context.Context // done when the device is lost or the backend closed
	stop     context.CancelCauseFunc
	closed   atomic.Bool
	lost     atomic.Bool
	ops      atomic.Int64
	nextID   atomic.Uint64
	queues   []*queue
	enqueues atomic.Int64 // Enqueue calls, for DeclineEvery
	mu       sync.Mutex   // guards store, counters and stored fields
	store    map[uint64]*stored
	counters Counters
}

// NewDeviceMemory makes the device-memory double (DeviceMemory is implied).
func NewDeviceMemory(opts Options) *DeviceBackend {
	opts.DeviceMemory = true
	if opts.Devices <= 0 {
		opts.Devices = 1
	}
	b := &DeviceBackend{Backend: New(opts), dopts: opts.DeviceOptions, epoch: time.Now(), store: map[uint64]*stored{}}
	b.halt, b.stop = context.WithCancelCause(context.Background())
	for i := 0; i < opts.Devices; i++ {
		b.queues = append(b.queues, &queue{b: b, index: i, wake: make(chan struct{}, 1), exited: make(chan struct{})})
	}
	b.counters.UploadedValues = map[string]int64{}
	b.counters.DownloadedValues = map[string]int64{}
	return b
}

// Counters returns a snapshot of the double's counters.
func (b *DeviceBackend) Counters() Counters {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.counters
	c.UploadedValues = make(map[string]int64, len(b.counters.UploadedValues))
	for k, v := range b.counters.UploadedValues {
		c.UploadedValues[k] = v
	}
	c.DownloadedValues = make(map[string]int64, len(b.counters.DownloadedValues))
	for k, v := range b.counters.DownloadedValues {
		c.DownloadedValues[k] = v
	}
	c.Lost = b.lost.Load()
	c.CallsSoFar = b.ops.Load()
	for _, q := range b.queues {
		q.mu.Lock()
		if q.running {
			c.Queues++
		}
		q.mu.Unlock()
	}
	return c
}

// Info describes the double; its HAL range reaches 1.1.
func (b *DeviceBackend) Info() hal.Info {
	info := b.Backend.Info()
	info.Version = "1.1.0"
	info.Description = fmt.Sprintf("SIMULATION backend for tests: %d simulated device(s) with device-local memory and asynchronous queues, reference kernels behind the HAL, claims %s",
		len(b.queues), strings.Join(sortedOps(b.opts.Ops), ","))
	return info
}

func sortedOps(ops []string) []string {
	out := append([]string{}, ops...)
	sort.Strings(out)
	return out
}

// Capabilities adds the simulated devices.
func (b *DeviceBackend) Capabilities(ctx context.Context) (hal.Capabilities, error) {
	caps, err := b.Backend.Capabilities(ctx)
	if err != nil {
		return caps, err
	}
	precisions := []hal.Precision{hal.PrecisionFloat32}
	for _, p := range b.dopts.Precisions {
		if p != hal.PrecisionFloat32 {
			precisions = append(precisions, p)
		}
	}
	for _, q := range b.queues {
		name := fmt.Sprintf("%s-device%d", b.opts.Name, q.index)
		caps.Devices = append(caps.Devices, hal.DeviceDesc{
			Index: q.index, Name: name, Kind: hal.DeviceSimulated,
			MemoryBytes: b.dopts.MemoryBytes, MaxBufferBytes: b.opts.MaxTensorBytes,
			MemoryKinds: []hal.MemoryKind{hal.MemoryDeviceLocal}, Precisions: precisions,
			CacheKey: hal.CacheKey{Vendor: "Switchyard (simulation)", Device: name, Driver: "sim-1.1.0"},
		})
	}
	return caps, nil
}

// Close loses every pending operation (its fence fails with
// Unavailable), stops the queues and releases all memory.
func (b *DeviceBackend) Close() error {
	if b.closed.Swap(true) {
		return nil
	}
	b.stop(hal.Errorf(hal.CodeUnavailable, "simulated device closed"))
	for _, q := range b.queues {
		q.shutdown()
	}
	b.mu.Lock()
	for id, st := range b.store {
		b.releaseLocked(id, st)
	}
	b.mu.Unlock()
	return b.Backend.Close()
}

// call counts one device call and refuses it when the backend is closed
// or the device lost (DeviceLostAfter is reached by this call).
func (b *DeviceBackend) call() error {
	if b.closed.Load() {
		return hal.Errorf(hal.CodeFailedPrecondition, "simulated device is closed")
	}
	n := b.ops.Add(1)
	if lim := b.dopts.DeviceLostAfter; lim > 0 && n > lim && !b.lost.Swap(true) {
		b.stop(hal.Errorf(hal.CodeUnavailable, "simulated fault: device lost after %d calls", lim))
	}
	if b.lost.Load() {
		return hal.Errorf(hal.CodeUnavailable, "simulated fault: device lost (call %d)", n)
	}
	return nil
}

// haltErr is why the device stopped.
func (b *DeviceBackend) haltErr() error {
	if err := context.Cause(b.halt); err != nil {
		return err
	}
	return nil
}

// buffer is the opaque handle the host holds: no data, no host view.
type buffer struct {
	id     uint64
	owner  *DeviceBackend
	dtype  graph.DType
	shape  []int
	device int
}

func (h *buffer) DType() graph.DType     { return h.dtype }
func (h *buffer) Shape() []int           { return h.shape }
func (h *buffer) Memory() hal.MemoryKind { return hal.MemoryDeviceLocal }
func (h *buffer) Device() int            { return h.device }

// stored is a buffer's device-side state.
type stored struct {
	id     uint64
	t      *graph.Tensor
	bytes  int64
	q      *queue
	uses   int  // queued or running operations that use it
	freed  bool // Free was called; released once uses reaches 0
	weight bool
	// producer is the output value that last wrote it (for per-value counts).
	producer string
	// uploaded marks a buffer filled from the host; counted names it
	// reached an executable as.
	uploaded bool
	counted  map[string]bool
}

func nbytes(dt graph.DType, n int) int64 {
	s := dt.Size()
	if dt == graph.String {
		s = 16
	}
	return int64(n) * int64(s)
}

// alloc makes a device-side buffer on q.
func (b *DeviceBackend) alloc(q *queue, dt graph.DType, shape []int, weight bool) (*buffer, *stored, error) {
	n, err := graph.CheckAlloc(dt, shape)
	if err != nil {
		return nil, nil, hal.Errorf(hal.CodeResourceExhausted, "%v", err)
	}
	sz := nbytes(dt, n)
	if lim := b.opts.MaxTensorBytes; lim > 0 && sz > lim && !weight {
		return nil, nil, hal.Errorf(hal.CodeResourceExhausted, "buffer of %v%v needs %d bytes, over the largest buffer of %d", dt, shape, sz, lim)
	}
	b.mu.Lock()
	if lim := b.dopts.MemoryBytes; lim > 0 && q.liveBytes+sz > lim {
		used := q.liveBytes
		b.mu.Unlock()
		return nil, nil, hal.Errorf(hal.CodeResourceExhausted, "device %d: %d bytes in use, %d more do not fit in %d", q.index, used, sz, lim)
	}
	q.liveBytes += sz
	b.mu.Unlock()
	t, err := graph.New(dt, shape)
	if err != nil {
		b.mu.Lock()
		q.liveBytes -= sz
		b.mu.Unlock()
		return nil, nil, hal.Errorf(hal.CodeResourceExhausted, "%v", err)
	}
	h := &buffer{id: b.nextID.Add(1), owner: b, dtype: dt, shape: append([]int{}, shape...), device: q.index}
	st := &stored{id: h.id, t: t, bytes: sz, q: q, weight: weight}
	b.mu.Lock()
	b.store[h.id] = st
	if weight {
		b.counters.LiveWeights++
	} else {
		b.counters.BuffersAllocated++
		b.counters.LiveBuffers++
	}
	b.counters.LiveBytes += sz
	b.mu.Unlock()
	return h, st, nil
}

// resolve finds the device-side state of one of this backend's live buffers.
func (b *DeviceBackend) resolve(hb hal.Buffer, what string) (*buffer, *stored, error) {
	h, ok := hb.(*buffer)
	if !ok || h == nil || h.owner != b {
		return nil, nil, hal.Errorf(hal.CodeInvalidArgument, "%s is not a buffer of this backend (%T)", what, hb)
	}
	b.mu.Lock()
	st := b.store[h.id]
	freed := st != nil && st.freed
	b.mu.Unlock()
	if st == nil || freed {
		return nil, nil, hal.Errorf(hal.CodeInvalidArgument, "%s (buffer %d) was freed", what, h.id)
	}
	return h, st, nil
}

func (b *DeviceBackend) queueOf(device int) (*queue, error) {
	if device < 0 || device >= len(b.queues) {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "device %d does not exist (the backend has %d)", device, len(b.queues))
	}
	return b.queues[device], nil
}

// Allocate makes a device-local buffer; other memory kinds are Unsupported.
func (b *DeviceBackend) Allocate(ctx context.Context, req hal.BufferRequest) (hal.Buffer, error) {
	if b.closed.Load() {
		return nil, hal.Errorf(hal.CodeFailedPrecondition, "simulated device is closed")
	}
	if b.lost.Load() {
		return nil, hal.Errorf(hal.CodeUnavailable, "simulated fault: device lost")
	}
	if req.Memory != hal.MemoryDeviceLocal {
		return nil, hal.Errorf(hal.CodeUnsupported, "the simulated device has %v memory only, not %v", hal.MemoryDeviceLocal, req.Memory)
	}
	q, err := b.queueOf(req.Device)
	if err != nil {
		return nil, err
	}
	h, _, err := b.alloc(q, req.DType, req.Shape, false)
	if err != nil {
		return nil, err
	}
	return h, nil
}

// Free gives a buffer back; the memory is released once every queued
// operation using it has signalled. It never blocks.
func (b *DeviceBackend) Free(hb hal.Buffer) error {
	h, ok := hb.(*buffer)
	if !ok || h == nil || h.owner != b {
		return hal.Errorf(hal.CodeInvalidArgument, "not a buffer of this backend (%T)", hb)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.store[h.id]
	if st == nil || st.freed {
		if b.closed.Load() {
			return nil // everything was released at Close
		}
		return hal.Errorf(hal.CodeInvalidArgument, "buffer %d freed twice", h.id)
	}
	st.freed = true
	b.counters.BuffersFreed++
	if st.uses == 0 && !b.opts.LeakBuffers {
		b.releaseLocked(h.id, st)
	}
	return nil
}

func (b *DeviceBackend) releaseLocked(id uint64, st *stored) {
	delete(b.store, id)
	st.q.liveBytes -= st.bytes
	b.counters.LiveBytes -= st.bytes
	if st.weight {
		b.counters.LiveWeights--
	} else {
		b.counters.LiveBuffers--
	}
	st.t = nil
}

func (b *DeviceBackend) use(sts []*stored) {
	b.mu.Lock()
	for _, st := range sts {
		st.uses++
	}
	b.counters.PendingOps++
	b.mu.Unlock()
}

func (b *DeviceBackend) unuse(sts []*stored) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.counters.PendingOps--
	for _, st := range sts {
		st.uses--
		if st.freed && st.uses == 0 && b.store[st.id] == st && !b.opts.LeakBuffers {
			b.releaseLocked(st.id, st)
		}
	}
}

// Upload copies src into dst on dst's queue after the fences. src is read
// when the operation runs, so the caller keeps it unchanged until the
// fence signals (the contract says so; the double holds the caller to it).
func (b *DeviceBackend) Upload(ctx context.Context, dst hal.Buffer, src *graph.Tensor, after []hal.Fence) (hal.Fence, error) {
	if err := b.call(); err != nil {
		return nil, err
	}
	h, st, err := b.resolve(dst, "upload destination")
	if err != nil {
		return nil, err
	}
	if src == nil || src.DType != h.dtype || !graph.SameShape(src.Shape, h.shape) {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "upload of %v into a buffer of %v%v", src, h.dtype, h.shape)
	}
	b.mu.Lock()
	st.uploaded, st.counted, st.producer = true, nil, ""
	b.counters.Uploads++
	b.counters.BytesUploaded += st.bytes
	b.mu.Unlock()
	return st.q.submit(&work{kind: "upload", after: after, uses: []*stored{st}, early: b.opts.SignalEarly, run: func(ctx context.Context) error {
		if !b.opts.DropUpload {
			graph.CopyData(st.t.Data, src.Data)
		}
		return nil
	}})
}

// Download copies src into the caller's dst on src's queue after the fences.
func (b *DeviceBackend) Download(ctx context.Context, dst *graph.Tensor, src hal.Buffer, after []hal.Fence) (hal.Fence, error) {
	if err := b.call(); err != nil {
		return nil, err
	}
	h, st, err := b.resolve(src, "download source")
	if err != nil {
		return nil, err
	}
	if dst == nil || dst.DType != h.dtype || !graph.SameShape(dst.Shape, h.shape) || dst.Data == nil {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "download of a buffer of %v%v into %v", h.dtype, h.shape, dst)
	}
	b.mu.Lock()
	b.counters.Downloads++
	b.counters.BytesDownloaded += st.bytes
	if st.producer != "" {
		b.counters.DownloadedValues[st.producer]++
	}
	b.mu.Unlock()
	return st.q.submit(&work{kind: "download", after: after, uses: []*stored{st}, early: b.opts.SignalEarly, run: func(ctx context.Context) error {
		graph.CopyData(dst.Data, st.t.Data)
		return nil
	}})
}

// Compile uploads the subgraph's constants to the device once, then
// compiles it onto the reference kernels reading those device copies.
func (b *DeviceBackend) Compile(ctx context.Context, sg *hal.Subgraph, opts hal.CompileOptions) (hal.Executable, error) {
	q, err := b.queueOf(opts.Device)
	if err != nil {
		return nil, err
	}
	precision := hal.PrecisionFloat32
	if opts.Precision != "" && opts.Precision != hal.PrecisionFloat32 {
		for _, p := range b.dopts.Precisions {
			if p == opts.Precision {
				precision = p
			}
		}
	}
	// the device's copy of the weights: the executable never reads the
	// caller's tensors after Compile returns
	g := *sg.Graph
	g.Initializers = make(map[string]*graph.Tensor, len(sg.Graph.Initializers))
	var weights []*buffer
	names := make([]string, 0, len(sg.Graph.Initializers))
	for name := range sg.Graph.Initializers {
		names = append(names, name)
	}
	sort.Strings(names)
	fail := func(err error) (hal.Executable, error) {
		for _, w := range weights {
			_ = b.Free(w)
		}
		return nil, err
	}
	for _, name := range names {
		t := sg.Graph.Initializers[name]
		h, st, err := b.alloc(q, t.DType, t.Shape, true)
		if err != nil {
			return fail(err)
		}
		weights = append(weights, h)
		graph.CopyData(st.t.Data, t.Data)
		g.Initializers[name] = st.t
		b.mu.Lock()
		b.counters.WeightUploads++
		b.counters.WeightBytes += st.bytes
		b.mu.Unlock()
	}
	exe, err := b.Backend.compile(&hal.Subgraph{Graph: &g, Opsets: sg.Opsets})
	if err != nil {
		return fail(err)
	}
	if b.opts.ReportFloat16 {
		precision = hal.PrecisionFloat16
	}
	order, err := g.TopoSort()
	if err != nil {
		_ = exe.Release()
		return fail(hal.Errorf(hal.CodeInvalidArgument, "%v", err))
	}
	var bounds map[string][]hal.DimRange
	for name, dims := range opts.ShapeBounds {
		if bounds == nil {
			bounds = map[string][]hal.DimRange{}
		}
		bounds[name] = append([]hal.DimRange(nil), dims...)
	}
	e := &devExecutable{executable: exe, b: b, q: q, g: &g, opsets: sg.Opsets, weights: weights, precision: precision, shapes: map[string][]outType{}, order: order, bounds: bounds}
	return e, nil
}

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
	fence   *fence
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
	w.fence = &fence{done: make(chan struct{})}
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
		w.fence.signal(nil, nil) // MUTATION: success before the work ran
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
		w.fence.signal(err, w.prof)
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
		w.fence.signal(q.b.haltErr(), nil)
	}
}

// fence signals once its operation completed.
type fence struct {
	done chan struct{}
	err  error
	prof *hal.CallProfile
	once sync.Once
}

// signal signals the fence once; later calls (a work item whose fence a
// mutation signalled early) are ignored.
func (f *fence) signal(err error, prof *hal.CallProfile) {
	f.once.Do(func() {
		f.err, f.prof = err, prof
		close(f.done)
	})
}

// Wait blocks until the operation completed or ctx ends.
func (f *fence) Wait(ctx context.Context) error {
	select {
	case <-f.done:
		return f.err
	default:
	}
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Poll reports without blocking.
func (f *fence) Poll() (bool, error) {
	select {
	case <-f.done:
		return true, f.err
	default:
		return false, nil
	}
}

// Profile is the operation's device timing (every operation has one;
// per-node kernels for executions enqueued with Profile).
func (f *fence) Profile() (*hal.CallProfile, error) {
	select {
	case <-f.done:
	default:
		return nil, hal.Errorf(hal.CodeFailedPrecondition, "the fence has not signalled")
	}
	if f.prof == nil || f.err != nil {
		return nil, hal.Errorf(hal.CodeUnavailable, "the operation did not complete")
	}
	p := *f.prof
	p.Kernels = append([]hal.KernelTiming{}, f.prof.Kernels...)
	return &p, nil
}

var (
	_ hal.DeviceMemory      = (*DeviceBackend)(nil)
	_ hal.AsyncExecutable   = (*devExecutable)(nil)
	_ hal.PrecisionReporter = (*devExecutable)(nil)
	_ hal.InPlaceExecutable = (*devExecutable)(nil)
	_ hal.ProfiledFence     = (*fence)(nil)
	_ hal.Buffer            = (*buffer)(nil)
)
