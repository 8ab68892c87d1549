package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/partitioner"
)

// Residency: where values live between partitions.
//
// The executed program (core/exec) stays the scheduler, with one stand-in
// node per compiled partition. A partition whose backend has device memory
// (HAL 1.1) and whose executable enqueues asynchronously runs on a slot,
// one device of that backend. At Prepare every boundary value of such a
// partition gets a place:
//
//   - produced on a slot and read only by partitions of the same slot (not
//     a model output): it stays on the device. The executed graph carries
//     an empty ordering token instead, so the program's order still holds,
//     and the buffer travels in the run's residency table.
//   - produced on a slot and needed by the host (a host node, a partition
//     on host tensors or on another device, a model output): a download
//     step, right after the producing call.
//   - produced on the host and read by a partition on a slot: an upload
//     step, once per run and slot, before the first reader.
//
// Every transfer is listed in the plan (Plan.Transfers) with its bytes and
// counted per run (Stats). A run's buffers are freed when their last
// reader on the slot has been enqueued (the device keeps them alive until
// that work signalled) and, whatever is left, when the run ends, also on
// error. Fences are waited with the run's context only where the host
// needs a value, so a fence that never signals ends the run with the
// context's error, on time.

// slot is one device of a backend with memory of its own.
type slot struct {
	dev    *hal.Device
	index  int
	name   string         // "backend:index"
	memory hal.MemoryKind // what uploads allocate
}

// boundaryIO says where each boundary value of a partition on a slot
// lives, in the order of the partition's inputs and outputs.
type boundaryIO struct {
	inResident []bool // produced on the same slot: its buffer is read in place
	inToken    []bool // ... and the executed graph carries only a token
	inReaders  []int  // readers of the value on this slot (frees the buffer after the last)
	outHost    []bool // downloaded for the host
	outKeep    []bool // kept on the slot for readers there
	outReaders []int
	outToken   []*graph.Tensor // returned to the executed graph instead of the value

	execInputs, execOutputs []string // the stand-in node's value names
}

type slotKey struct {
	dev   *hal.Device
	index int
}

// planResidency finds the slot of every compiled partition, decides where
// each boundary value lives and lists the transfers in the plan.
func (m *Model) planResidency(ctx context.Context, opts *Options) error {
	slots := map[slotKey]*slot{}
	for _, cp := range m.parts {
		if !cp.dev.HasDeviceMemory() || !cp.compiled.CanEnqueue() {
			continue
		}
		idx := opts.Compile.Device
		if cp.dev == m.fallback.resolved() {
			idx = 0 // the fallback is compiled with default options
		}
		k := slotKey{cp.dev, idx}
		s := slots[k]
		if s == nil {
			s = newSlot(ctx, cp.dev, idx)
			slots[k] = s
			m.slots = append(m.slots, s)
		}
		cp.slot = s
	}
	if len(m.slots) == 0 {
		return nil
	}
	g := m.ir.Graph
	producer := map[string]*compiledPartition{}
	outIndex := map[string]int{}
	readers := map[string][]*compiledPartition{}
	inPart := map[int]bool{}
	for _, cp := range m.parts {
		for j, o := range cp.part.Outputs {
			producer[o], outIndex[o] = cp, j
		}
		for _, in := range cp.part.Inputs {
			readers[in] = append(readers[in], cp)
		}
		for _, i := range cp.part.Nodes {
			inPart[i] = true
		}
	}
	hostReads := map[string]bool{}
	names := map[string]bool{}
	for i, n := range g.Nodes {
		for _, o := range n.Outputs {
			names[o] = true
		}
		if inPart[i] {
			continue
		}
		for _, r := range nodeReads(n) {
			hostReads[r] = true
		}
	}
	for _, o := range g.Outputs {
		hostReads[o.Name] = true
	}
	for _, in := range g.Inputs {
		names[in.Name] = true
	}
	sameSlot := func(v string, s *slot) int {
		k := 0
		for _, r := range readers[v] {
			if r.slot == s {
				k++
			}
		}
		return k
	}
	tokens := map[string]string{}
	var transfers []partitioner.Transfer
	var resident []partitioner.ResidentValue
	for _, cp := range m.parts {
		if cp.slot == nil {
			continue
		}
		n := len(cp.part.Outputs)
		io := &boundaryIO{outHost: make([]bool, n), outKeep: make([]bool, n), outReaders: make([]int, n), outToken: make([]*graph.Tensor, n), execOutputs: make([]string, n)}
		for j, v := range cp.part.Outputs {
			host := hostReads[v]
			for _, r := range readers[v] {
				if r.slot != cp.slot {
					host = true
				}
			}
			same := sameSlot(v, cp.slot)
			io.outHost[j], io.outKeep[j], io.outReaders[j] = host, same > 0, same
			io.execOutputs[j] = v
			if host {
				transfers = append(transfers, partitioner.Transfer{Value: v, Direction: "download", From: cp.slot.name, To: "host", Bytes: m.staticBytes(v), Partition: cp.part.ID})
			} else {
				tok := v + "@" + cp.slot.name
				for names[tok] {
					tok += "'"
				}
				names[tok] = true
				tokens[v] = tok
				io.execOutputs[j] = tok
				io.outToken[j] = &graph.Tensor{DType: graph.Float32, Shape: []int{0}, Data: []float32{}}
			}
			if same > 0 {
				resident = append(resident, partitioner.ResidentValue{Value: v, Device: cp.slot.name, Bytes: m.staticBytes(v)})
			}
		}
		cp.io = io
	}
	uploaded := map[resKey]bool{}
	for _, cp := range m.parts {
		if cp.slot == nil {
			continue
		}
		io := cp.io
		n := len(cp.part.Inputs)
		io.inResident, io.inToken, io.inReaders, io.execInputs = make([]bool, n), make([]bool, n), make([]int, n), make([]string, n)
		for i, u := range cp.part.Inputs {
			pc := producer[u]
			io.inReaders[i] = sameSlot(u, cp.slot)
			io.execInputs[i] = u
			if pc != nil && pc.slot == cp.slot {
				io.inResident[i] = true
				if tok, ok := tokens[u]; ok {
					io.inToken[i], io.execInputs[i] = true, tok
				}
				_ = outIndex
				continue
			}
			if k := (resKey{u, cp.slot}); !uploaded[k] {
				uploaded[k] = true
				transfers = append(transfers, partitioner.Transfer{Value: u, Direction: "upload", From: "host", To: cp.slot.name, Bytes: m.staticBytes(u), Partition: cp.part.ID})
			}
		}
		m.setPartition(cp.part.ID, func(p *partitioner.Partition) { p.Device = cp.slot.name })
	}
	m.plan.Transfers, m.plan.Resident = transfers, resident
	return nil
}

func newSlot(ctx context.Context, dev *hal.Device, index int) *slot {
	s := &slot{dev: dev, index: index, name: fmt.Sprintf("%s:%d", dev.Name(), index), memory: hal.MemoryDeviceLocal}
	if descs, err := dev.Devices(ctx); err == nil {
		for _, d := range descs {
			if d.Index != index || len(d.MemoryKinds) == 0 {
				continue
			}
			s.memory = d.MemoryKinds[0]
			for _, k := range d.MemoryKinds {
				if k == hal.MemoryDeviceLocal {
					s.memory = k
				}
			}
		}
	}
	return s
}

// staticBytes is a value's size from its inferred type, -1 when unknown.
func (m *Model) staticBytes(v string) int64 {
	t := m.types[v]
	dims, ok := t.Shape.Ints()
	if !ok || t.DType == graph.Undefined {
		return -1
	}
	n := int64(1)
	for _, d := range dims {
		n *= int64(d)
	}
	return n * int64(t.DType.Size())
}

// nodeReads lists the values a node reads, including those its nested
// graphs capture from the enclosing scope.
func nodeReads(n *graph.Node) []string {
	reads := append([]string{}, n.Inputs...)
	for _, sg := range n.Subgraphs() {
		reads = append(reads, sg.FreeVariables()...)
	}
	return reads
}

// runKey finds a run's residency table in the context its kernels get.
type runKey struct{}

func runStateOf(ctx context.Context) *runState {
	rs, _ := ctx.Value(runKey{}).(*runState)
	return rs
}

type resKey struct {
	value string
	slot  *slot
}

// devValue is a value's copy on a slot.
type devValue struct {
	buf     hal.Buffer
	fence   hal.Fence // signals when buf holds the value
	readers int       // readers on the slot; freed after the last
}

// runState is one run's residency table and transfer account.
type runState struct {
	start   time.Time
	profile bool
	sess    *Session // the session whose state the run carries, if any

	mu    sync.Mutex
	bufs  map[resKey]*devValue
	reads map[resKey]int
	host  map[string]*graph.Tensor // token values computed on the host (re-placed or declined producers)
	owned map[hal.Buffer]*slot     // buffers of this run not yet freed

	lost    *slot
	lostErr error

	uploads, downloads     int
	uploadBytes, downBytes int64
	declined               int
	spans                  []*opSpan

	ctx runCtx // the run's context when the caller's cannot be cancelled
}

// runState returns a run state for a new run: an idle one kept from an
// earlier run, else a new one.
func (m *Model) runState(profile bool) *runState {
	rs := m.idleOne.Swap(nil)
	if rs == nil {
		m.idleMu.Lock()
		if n := len(m.idle); n > 0 {
			rs = m.idle[n-1]
			m.idle = m.idle[:n-1]
		}
		m.idleMu.Unlock()
	}
	if rs == nil {
		rs = &runState{bufs: map[resKey]*devValue{}, reads: map[resKey]int{}, host: map[string]*graph.Tensor{}, owned: map[hal.Buffer]*slot{}}
	}
	rs.start, rs.profile = time.Time{}, profile
	if profile {
		rs.start = time.Now() // spans are timed from it (span, finished): profiled runs only
	}
	return rs
}

// maxIdleRunStates bounds the run states kept (one per concurrent Run).
const maxIdleRunStates = 8

// putRunState keeps rs (released) for a later run, its maps emptied and
// its account zeroed.
func (m *Model) putRunState(rs *runState) {
	// (clearing an empty map is not free: most runs leave all empty)
	if len(rs.bufs) > 0 {
		clear(rs.bufs)
	}
	if len(rs.reads) > 0 {
		clear(rs.reads)
	}
	if len(rs.host) > 0 {
		clear(rs.host)
	}
	if len(rs.owned) > 0 {
		clear(rs.owned)
	}
	clear(rs.spans)
	*rs = runState{bufs: rs.bufs, reads: rs.reads, host: rs.host, owned: rs.owned, spans: rs.spans[:0]}
	if m.idleOne.CompareAndSwap(nil, rs) {
		return
	}
	m.idleMu.Lock()
	if len(m.idle) < maxIdleRunStates {
		m.idle = append(m.idle, rs)
	}
	m.idleMu.Unlock()
}

func (rs *runState) own(b hal.Buffer, s *slot) {
	if b == nil {
		return
	}
	rs.mu.Lock()
	rs.owned[b] = s
	rs.mu.Unlock()
}

// free gives a buffer back (the device defers the release past pending work).
func (rs *runState) free(b hal.Buffer) {
	rs.mu.Lock()
	s, ok := rs.owned[b]
	delete(rs.owned, b)
	rs.mu.Unlock()
	if ok {
		_ = s.dev.Free(b)
	}
}

// release frees every buffer the run still holds (end of run, also on error).
func (rs *runState) release() {
	// the run has ended (its partitions ran on the caller's goroutine):
	// nothing writes rs now, and a run that used no device (every run
	// on host backends) has nothing to free, so it takes no lock
	if len(rs.owned) == 0 && len(rs.bufs) == 0 {
		return
	}
	rs.mu.Lock()
	if len(rs.owned) == 0 {
		if len(rs.bufs) > 0 {
			clear(rs.bufs)
		}
		rs.mu.Unlock()
		return
	}
	owned := rs.owned
	rs.owned = map[hal.Buffer]*slot{}
	rs.bufs = map[resKey]*devValue{}
	rs.mu.Unlock()
	for b, s := range owned {
		_ = s.dev.Free(b)
	}
}

func (rs *runState) markLost(s *slot, err error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.lost == nil {
		rs.lost, rs.lostErr = s, err
	}
}

// doneReading counts that cp has read its inputs on its slot and frees the
// copies whose last reader it was.
func (rs *runState) doneReading(cp *compiledPartition) {
	var done []hal.Buffer
	rs.mu.Lock()
	for i, u := range cp.part.Inputs {
		k := resKey{u, cp.slot}
		rs.reads[k]++
		if dv := rs.bufs[k]; dv != nil && rs.reads[k] >= cp.io.inReaders[i] {
			delete(rs.bufs, k)
			done = append(done, dv.buf)
		}
	}
	rs.mu.Unlock()
	for _, b := range done {
		rs.free(b)
	}
}

// opSpan is one device operation of a profiled run.
type opSpan struct {
	op    DeviceOp
	slot  *slot
	fence hal.Fence
	done  bool
	prof  *hal.CallProfile
	// ownClock: prof is aligned by itself (a call on host tensors, no
	// fence), its start put at the host's start of the call
	ownClock bool
}

func (rs *runState) span(kind string, s *slot, name string, bytes int64, start time.Time, f hal.Fence) *opSpan {
	if !rs.profile {
		return nil
	}
	sp := &opSpan{op: DeviceOp{Kind: kind, Name: name, Bytes: bytes, Start: start.Sub(rs.start)}, slot: s, fence: f}
	if s != nil {
		sp.op.Device = s.name
	}
	rs.mu.Lock()
	rs.spans = append(rs.spans, sp)
	rs.mu.Unlock()
	return sp
}

// finished marks a span complete as seen by the host now.
func (rs *runState) finished(sp *opSpan) {
	if sp == nil {
		return
	}
	rs.mu.Lock()
	if !sp.done {
		sp.done = true
		sp.op.Duration = time.Since(rs.start) - sp.op.Start
	}
	rs.mu.Unlock()
}

// hostCall records a profiled call on host tensors with the backend's own
// profile of it (its clock aligned so that the call starts when the host
// made it).
func (rs *runState) hostCall(cp *compiledPartition, start time.Time, p *hal.CallProfile) {
	sp := rs.span("execute", nil, fmt.Sprintf("partition%d:%s", cp.part.ID, cp.part.Backend), 0, start, nil)
	if sp == nil {
		return
	}
	sp.op.Device = fmt.Sprintf("%s:%d", cp.dev.Name(), p.Device)
	rs.finished(sp)
	if p.EndNS >= p.StartNS {
		rs.mu.Lock()
		sp.prof, sp.ownClock = p, true
		rs.mu.Unlock()
	}
}

// declinedCall records a call declined at run time and run on the fallback.
func (rs *runState) declinedCall(cp *compiledPartition, start time.Time) {
	rs.mu.Lock()
	rs.declined++
	rs.mu.Unlock()
	sp := rs.span("declined", nil, fmt.Sprintf("partition%d:%s", cp.part.ID, cp.part.Backend), 0, start, nil)
	if sp != nil {
		sp.op.Device = cp.fallback.name
		rs.finished(sp)
	}
}

// collect completes the spans of a profiled run: device timestamps where
// the fence carries a profile (aligned to the host clock per device so
// that no operation starts before it was submitted), host time otherwise.
func (rs *runState) collect(ctx context.Context) []DeviceOp {
	rs.mu.Lock()
	spans := append([]*opSpan{}, rs.spans...)
	rs.mu.Unlock()
	offset := map[*slot]int64{}
	has := map[*slot]bool{}
	for _, sp := range spans {
		if sp.fence == nil {
			continue
		}
		if done, _ := sp.fence.Poll(); !done {
			_ = sp.fence.Wait(ctx)
		}
		rs.finished(sp)
		pf, ok := sp.fence.(hal.ProfiledFence)
		if !ok {
			continue
		}
		p, err := pf.Profile()
		if err != nil || p == nil || p.EndNS < p.StartNS {
			continue
		}
		sp.prof = p
		if d := int64(sp.op.Start) - p.StartNS; !has[sp.slot] || d > offset[sp.slot] {
			offset[sp.slot], has[sp.slot] = d, true
		}
	}
	out := make([]DeviceOp, 0, len(spans))
	for _, sp := range spans {
		op := sp.op
		if p := sp.prof; p != nil {
			off := offset[sp.slot]
			if sp.ownClock {
				off = int64(sp.op.Start) - p.StartNS
			}
			op.DeviceClock = true
			op.Start, op.Duration = time.Duration(p.StartNS+off), time.Duration(p.EndNS-p.StartNS)
			for _, k := range p.Kernels {
				if k.EndNS < k.StartNS {
					continue
				}
				op.Kernels = append(op.Kernels, DeviceKernel{Name: k.Name, Nodes: k.Nodes, Start: time.Duration(k.StartNS + off), Duration: time.Duration(k.EndNS - k.StartNS)})
			}
		}
		out = append(out, op)
	}
	return out
}

// deviceKernel runs a partition on its slot as one node of the executed
// graph: inputs already on the slot are read in place, host inputs are
// uploaded, the call is enqueued after their fences, outputs for the host
// are downloaded (and waited for), the others stay and the node returns
// their tokens.
func (cp *compiledPartition) deviceKernel(kc *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	rs := runStateOf(kc)
	if rs == nil {
		return nil, fmt.Errorf("runtime: partition %d on %s: called outside a model run", cp.part.ID, cp.slot.name)
	}
	t0 := time.Now()
	defer func() {
		cp.calls.Add(1)
		cp.nanos.Add(int64(time.Since(t0)))
	}()
	if exe := cp.onCPU.Load(); exe != nil {
		return cp.onHost(kc, rs, in, exe)
	}
	bufs := make([]hal.Buffer, len(in))
	var after []hal.Fence
	for i := range in {
		b, f, err := cp.input(kc, rs, i, in[i])
		if err != nil {
			return nil, cp.failed(rs, err)
		}
		bufs[i] = b
		if f != nil {
			after = append(after, f)
		}
	}
	outs := make([]hal.Buffer, len(cp.part.Outputs))
	var states []*stateVal // by output: the session state it writes on the slot
	if rs.sess != nil {
		rs.mu.Lock()
		for j, name := range cp.part.Outputs {
			if sv := rs.stateOut(name, cp.slot); sv != nil {
				if states == nil {
					states = make([]*stateVal, len(outs))
				}
				states[j] = sv
				if sv.inPlace {
					outs[j] = sv.buf // the input's buffer: updated in place
				}
			}
		}
		rs.mu.Unlock()
	}
	te := time.Now()
	f, err := cp.compiled.Enqueue(kc, bufs, outs, after, &hal.EnqueueOptions{Profile: rs.profile})
	if err != nil {
		if errors.Is(err, hal.ErrDeclined) {
			exe, derr := cp.declined(kc, err)
			if derr != nil {
				return nil, derr
			}
			rs.declinedCall(cp, te)
			return cp.onHost(kc, rs, in, exe)
		}
		return nil, cp.failed(rs, err)
	}
	for j, b := range outs {
		if states != nil && states[j] != nil {
			sv := states[j]
			rs.mu.Lock()
			if sv.buf != b {
				sv.old = append(sv.old, sv.buf)
				sv.buf = b
			}
			sv.fence = f
			rs.mu.Unlock()
			continue // the session's, not the run's
		}
		rs.own(b, cp.slot)
	}
	rs.span("execute", cp.slot, fmt.Sprintf("partition%d", cp.part.ID), 0, te, f)
	rs.doneReading(cp)
	results := make([]*graph.Tensor, len(outs))
	type pending struct {
		f  hal.Fence
		sp *opSpan
	}
	var waits []pending
	for j, b := range outs {
		name := cp.part.Outputs[j]
		if states != nil && states[j] != nil {
			results[j] = stateToken // stays on the device for the next run
			continue
		}
		if cp.io.outKeep[j] {
			rs.mu.Lock()
			rs.bufs[resKey{name, cp.slot}] = &devValue{buf: b, fence: f, readers: cp.io.outReaders[j]}
			rs.mu.Unlock()
		}
		if !cp.io.outHost[j] {
			results[j] = cp.io.outToken[j]
			continue
		}
		// downloaded into memory the run owns outright: if the wait ends
		// early, the device may still write it, and nothing else uses it
		dst, err := graph.New(b.DType(), b.Shape())
		if err != nil {
			return nil, cp.failed(rs, err)
		}
		td := time.Now()
		df, err := cp.slot.dev.Download(kc, dst, b, []hal.Fence{f})
		if err != nil {
			return nil, cp.failed(rs, err)
		}
		bytes := int64(dst.Len() * dst.DType.Size())
		rs.mu.Lock()
		rs.downloads++
		rs.downBytes += bytes
		rs.mu.Unlock()
		waits = append(waits, pending{df, rs.span("download", cp.slot, name, bytes, td, df)})
		if !cp.io.outKeep[j] {
			rs.free(b)
		}
		results[j] = dst
	}
	for _, w := range waits {
		if err := w.f.Wait(kc); err != nil {
			return nil, cp.failed(rs, err)
		}
		rs.finished(w.sp)
	}
	return results, nil
}

// input finds input i on cp's slot: the copy already there (produced by a
// partition of the slot, or uploaded earlier in this run), else an upload
// of the host value.
func (cp *compiledPartition) input(ctx context.Context, rs *runState, i int, t *graph.Tensor) (hal.Buffer, hal.Fence, error) {
	name := cp.part.Inputs[i]
	k := resKey{name, cp.slot}
	rs.mu.Lock()
	if sv := rs.stateIn(name, cp.slot); sv != nil {
		b, f := sv.runBuf, sv.runFence
		rs.mu.Unlock()
		return b, f, nil
	}
	dv := rs.bufs[k]
	src := t
	if cp.io.inToken[i] {
		src = rs.host[name]
	}
	rs.mu.Unlock()
	if dv != nil {
		return dv.buf, dv.fence, nil
	}
	if src == nil {
		return nil, nil, fmt.Errorf("runtime: internal error: value %q is neither on %s nor on the host", name, cp.slot.name)
	}
	b, err := cp.slot.dev.Allocate(ctx, hal.BufferRequest{DType: src.DType, Shape: src.Shape, Memory: cp.slot.memory, Device: cp.slot.index})
	if err != nil {
		return nil, nil, err
	}
	rs.own(b, cp.slot)
	// the device reads the source until the upload signals: give it a
	// copy the run owns, not the caller's tensor or a recycled buffer
	staged := src.Clone()
	tu := time.Now()
	f, err := cp.slot.dev.Upload(ctx, b, staged, nil)
	if err != nil {
		return nil, nil, err
	}
	bytes := int64(src.Len() * src.DType.Size())
	rs.mu.Lock()
	rs.uploads++
	rs.uploadBytes += bytes
	rs.bufs[k] = &devValue{buf: b, fence: f, readers: cp.io.inReaders[i]}
	rs.mu.Unlock()
	rs.span("upload", cp.slot, name, bytes, tu, f)
	return b, f, nil
}

// onHost runs a slot's partition on host tensors through exe (the
// fallback's): resident inputs are downloaded, outputs that stay for the
// slot's readers are kept on the host, and those readers upload them.
func (cp *compiledPartition) onHost(ctx context.Context, rs *runState, in []*graph.Tensor, exe *hal.Compiled) ([]*graph.Tensor, error) {
	hostIn := make([]*graph.Tensor, len(in))
	for i, name := range cp.part.Inputs {
		rs.mu.Lock()
		sv := rs.stateIn(name, cp.slot)
		var sb hal.Buffer
		var sf hal.Fence
		if sv != nil {
			sb, sf = sv.runBuf, sv.runFence
		}
		rs.mu.Unlock()
		if sv != nil {
			// a session's state on the slot: brought to the host for this call
			t, err := cp.fetch(ctx, rs, name, sb, sf)
			if err != nil {
				return nil, err
			}
			hostIn[i] = t
			continue
		}
		if !cp.io.inToken[i] {
			hostIn[i] = in[i]
			continue
		}
		k := resKey{name, cp.slot}
		rs.mu.Lock()
		t, dv := rs.host[name], rs.bufs[k]
		rs.mu.Unlock()
		if t == nil && dv == nil {
			return nil, fmt.Errorf("runtime: internal error: value %q is neither on %s nor on the host", name, cp.slot.name)
		}
		if t == nil {
			dst, err := graph.New(dv.buf.DType(), dv.buf.Shape())
			if err != nil {
				return nil, cp.failed(rs, err)
			}
			td := time.Now()
			f, err := cp.slot.dev.Download(ctx, dst, dv.buf, []hal.Fence{dv.fence})
			if err != nil {
				return nil, cp.failed(rs, err)
			}
			sp := rs.span("download", cp.slot, name, int64(dst.Len()*dst.DType.Size()), td, f)
			if err := f.Wait(ctx); err != nil {
				return nil, cp.failed(rs, err)
			}
			rs.finished(sp)
			rs.mu.Lock()
			rs.downloads++
			rs.downBytes += int64(dst.Len() * dst.DType.Size())
			rs.mu.Unlock()
			t = dst
		}
		hostIn[i] = t
	}
	rs.doneReading(cp)
	outs, err := cp.executeOn(ctx, exe, hostIn, nil)
	if err != nil {
		return nil, err
	}
	results := make([]*graph.Tensor, len(outs))
	for j, t := range outs {
		rs.mu.Lock()
		sv := rs.stateOut(cp.part.Outputs[j], cp.slot)
		rs.mu.Unlock()
		if sv != nil {
			// a session's state on the slot: the new value goes back there
			if err := cp.store(ctx, rs, sv, t); err != nil {
				return nil, err
			}
			results[j] = stateToken
			continue
		}
		if cp.io.outHost[j] {
			results[j] = t
			continue
		}
		rs.mu.Lock()
		rs.host[cp.part.Outputs[j]] = t
		rs.mu.Unlock()
		results[j] = cp.io.outToken[j]
	}
	return results, nil
}

// fetch downloads a buffer of cp's slot (after f) for a call on the host.
func (cp *compiledPartition) fetch(ctx context.Context, rs *runState, name string, b hal.Buffer, f hal.Fence) (*graph.Tensor, error) {
	dst, err := graph.New(b.DType(), b.Shape())
	if err != nil {
		return nil, cp.failed(rs, err)
	}
	td := time.Now()
	df, err := cp.slot.dev.Download(ctx, dst, b, []hal.Fence{f})
	if err != nil {
		return nil, cp.failed(rs, err)
	}
	bytes := int64(dst.Len() * dst.DType.Size())
	sp := rs.span("download", cp.slot, name, bytes, td, df)
	if err := df.Wait(ctx); err != nil {
		return nil, cp.failed(rs, err)
	}
	rs.finished(sp)
	rs.mu.Lock()
	rs.downloads++
	rs.downBytes += bytes
	rs.mu.Unlock()
	return dst, nil
}

// store uploads t, computed on the host, as the new value of a session
// state kept on cp's slot (into a new buffer: the old one may still be
// read in this run).
func (cp *compiledPartition) store(ctx context.Context, rs *runState, sv *stateVal, t *graph.Tensor) error {
	b, err := cp.slot.dev.Allocate(ctx, hal.BufferRequest{DType: t.DType, Shape: t.Shape, Memory: cp.slot.memory, Device: cp.slot.index})
	if err != nil {
		return cp.failed(rs, err)
	}
	tu := time.Now()
	f, err := cp.slot.dev.Upload(ctx, b, t, nil) // t is this call's own result
	if err != nil {
		_ = cp.slot.dev.Free(b)
		return cp.failed(rs, err)
	}
	bytes := int64(t.Len() * t.DType.Size())
	rs.span("upload", cp.slot, sv.pair.Output, bytes, tu, f)
	rs.mu.Lock()
	rs.uploads++
	rs.uploadBytes += bytes
	sv.old = append(sv.old, sv.buf)
	sv.buf, sv.fence = b, f
	rs.mu.Unlock()
	return nil
}

// failed names the partition in err and notes a lost device.
func (cp *compiledPartition) failed(rs *runState, err error) error {
	if errors.Is(err, hal.ErrUnavailable) {
		rs.markLost(cp.slot, err)
	}
	return fmt.Errorf("runtime: partition %d on %s: %w", cp.part.ID, cp.slot.name, err)
}

// replaceSlot re-places every partition of a lost device on the fallback.
func (m *Model) replaceSlot(ctx context.Context, s *slot, cause error) error {
	for _, cp := range m.parts {
		if cp.slot != s {
			continue
		}
		if _, err := cp.replaceOnCPU(ctx, cause); err != nil {
			return err
		}
	}
	return nil
}
