package sim

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
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
