package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

// Sessions: state carried from one run to the next.
//
// A StatePair names a model input fed, on every run of a Session, with
// the model output of the previous run (a decoder's past_key.N and
// present_key.N). The session holds the value between runs where its
// consumer computes:
//
//   - on a device (a partition on a slot) that also produces the output,
//     when no host node reads the input and nothing but the caller reads
//     the output: the value lives in a device buffer of that slot for the
//     session's life. It is uploaded once (NewSession, Reset) and never
//     again per run; the producing partition writes it in place when its
//     executable declares the pair (hal.InPlaceExecutable, for Enqueue
//     too), else into a new buffer that replaces the old one. Nothing is
//     downloaded unless the caller asks (State).
//   - otherwise on the host: one tensor per state, bound as the run's
//     input and as the output's caller-allocated tensor (RunOptions.Into),
//     which a kernel declaring the pair updates in place (the host path of
//     RunInto, without a copy of the whole value).
//
// A run that fails leaves the state undefined (a partition may have
// written part of it in place): later runs fail with ErrStateInvalid until
// Reset. A device lost under a session fails the run with ErrStateLost
// when a state lived on it (errors.Is hal.ErrUnavailable too); under
// ReplaceOnCPU its partitions are re-placed as for any run, so a Reset
// continues on the fallback, with the state on the host. A consumer
// re-placed by another run while the device still answers has its state
// downloaded once and continues on the host.

// StatePair names a model input fed, on every run of a session, with the
// given model output of the previous run. Both must have the same dtype
// and the same static shape.
type StatePair struct {
	Input, Output string
}

// Transfers counts copies between host and device memory.
type Transfers struct {
	Uploads, Downloads         int
	UploadBytes, DownloadBytes int64
}

func (t *Transfers) add(u Transfers) {
	t.Uploads += u.Uploads
	t.Downloads += u.Downloads
	t.UploadBytes += u.UploadBytes
	t.DownloadBytes += u.DownloadBytes
}

// Sub is the transfers between prev and t.
func (t Transfers) Sub(prev Transfers) Transfers {
	return Transfers{t.Uploads - prev.Uploads, t.Downloads - prev.Downloads, t.UploadBytes - prev.UploadBytes, t.DownloadBytes - prev.DownloadBytes}
}

var (
	// ErrStateInvalid is returned (wrapped) by a session run after a run
	// of the session failed: the state is undefined until Reset.
	ErrStateInvalid = errors.New("runtime: session state is undefined after a failed run; Reset the session")
	// ErrStateLost is returned (wrapped, with the device's Unavailable
	// error) when the device holding a session's state was lost.
	ErrStateLost = errors.New("runtime: session state was lost with its device; Reset the session")
	// ErrSessionClosed is returned by a closed session.
	ErrSessionClosed = errors.New("runtime: session is closed")
)

// Session runs a model with state carried between runs (see StatePair).
// Its methods may be called from any goroutine; they are serialized, one
// run at a time per session. Sessions of one model run concurrently,
// each with its own state.
type Session struct {
	m *Model

	mu      sync.Mutex
	states  []*stateVal
	byIn    map[string]*stateVal
	byOut   map[string]*stateVal
	feeds   map[string]*graph.Tensor // a run's inputs, reused
	into    map[string]*graph.Tensor // a run's Into, reused
	invalid error                    // why the state is undefined (nil: it is defined)
	closed  bool
	tr      Transfers
}

// stateVal is one state of a session. During a run its device fields are
// guarded by the run state's mutex.
type stateVal struct {
	pair StatePair
	// host is the value in host mode; in device mode, a tensor of its type
	// fed to the executed program in the input's place (never read).
	host *graph.Tensor
	size int64 // bytes
	// fresh: host holds the zeros graph.New gave it and no run has seen
	// it yet (the first reset need not write them: a context-long KV
	// cache's pages stay untouched until used)
	fresh bool

	// device mode (slot != nil)
	slot     *slot
	producer *compiledPartition
	readers  []*compiledPartition
	inPlace  bool
	buf      hal.Buffer // holds the value once fence signalled
	fence    hal.Fence
	// runBuf, runFence: the value at the start of the run (what readers
	// read, even after the producer replaced buf)
	runBuf   hal.Buffer
	runFence hal.Fence
	old      []hal.Buffer // replaced during the run, freed at its end
}

// NewSession starts a session for pairs. init gives the initial value of
// state inputs (by input name; copied), zeros for those it omits.
func (m *Model) NewSession(ctx context.Context, pairs []StatePair, init map[string]*graph.Tensor) (*Session, error) {
	if m == nil || m.life == nil {
		return nil, ErrClosed
	}
	if ctx == nil {
		ctx = context.Background()
	}
	m.life.mu.Lock()
	closed := m.life.closed
	m.life.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if len(pairs) == 0 {
		return nil, fmt.Errorf("runtime: %w: a session needs at least one state pair", errInvalid)
	}
	s := &Session{m: m, byIn: map[string]*stateVal{}, byOut: map[string]*stateVal{}, feeds: map[string]*graph.Tensor{}, into: map[string]*graph.Tensor{}}
	for _, p := range pairs {
		in := slices.IndexFunc(m.inputs, func(v graph.ValueInfo) bool { return v.Name == p.Input })
		out := slices.IndexFunc(m.outputs, func(v graph.ValueInfo) bool { return v.Name == p.Output })
		switch {
		case in < 0:
			return nil, fmt.Errorf("runtime: %w: state input %q is not a model input", errInvalid, p.Input)
		case out < 0:
			return nil, fmt.Errorf("runtime: %w: state output %q is not a model output", errInvalid, p.Output)
		case s.byIn[p.Input] != nil:
			return nil, fmt.Errorf("runtime: %w: state input %q is paired twice", errInvalid, p.Input)
		case s.byOut[p.Output] != nil:
			return nil, fmt.Errorf("runtime: %w: state output %q is paired twice", errInvalid, p.Output)
		}
		it, ot := m.inputs[in].Type, m.outputs[out].Type
		if _, static := ot.Shape.Ints(); !static || ot.DType == graph.Undefined {
			ot = m.types[p.Output]
		}
		dims, ok := it.Shape.Ints()
		odims, ook := ot.Shape.Ints()
		if !ok || !ook || it.DType != ot.DType || !slices.Equal(dims, odims) || !it.DType.Supported() || it.DType == graph.String {
			return nil, fmt.Errorf("runtime: %w: state %q → %q: output %v%v and input %v%v must have one dtype and one static shape", errInvalid, p.Output, p.Input, ot.DType, ot.Shape, it.DType, it.Shape)
		}
		host, err := graph.New(it.DType, dims)
		if err != nil {
			return nil, fmt.Errorf("runtime: state %q: %w", p.Input, err)
		}
		sv := &stateVal{pair: p, host: host, size: int64(host.Len() * host.DType.Size()), fresh: true}
		s.states = append(s.states, sv)
		s.byIn[p.Input], s.byOut[p.Output] = sv, sv
	}
	for name := range init {
		if s.byIn[name] == nil {
			return nil, fmt.Errorf("runtime: %w: initial value for %q, which is not a state input", errInvalid, name)
		}
	}
	if err := s.reset(ctx, init); err != nil {
		s.release()
		return nil, err
	}
	return s, nil
}

var errInvalid = fmt.Errorf("invalid session")

// Reset gives every state its value from init (by input name; zeros for
// those it omits) and makes the session usable again after a failed run
// or a lost device. Each state is placed anew: on its consumer's device
// if it can stay there (one upload), else on the host.
func (s *Session) Reset(ctx context.Context, init map[string]*graph.Tensor) error {
	if ctx == nil {
		ctx = context.Background()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrSessionClosed
	}
	for name := range init {
		if s.byIn[name] == nil {
			return fmt.Errorf("runtime: %w: initial value for %q, which is not a state input", errInvalid, name)
		}
	}
	return s.reset(ctx, init)
}

func (s *Session) reset(ctx context.Context, init map[string]*graph.Tensor) error {
	for _, sv := range s.states {
		src := init[sv.pair.Input]
		if src != nil {
			if err := src.Check(); err != nil {
				return fmt.Errorf("runtime: %w: initial value for %q: %v", errInvalid, sv.pair.Input, err)
			}
			if src.DType != sv.host.DType || !graph.SameShape(src.Shape, sv.host.Shape) {
				return fmt.Errorf("runtime: %w: initial value for %q is %v%v, the state is %v%v", errInvalid, sv.pair.Input, src.DType, src.Shape, sv.host.DType, sv.host.Shape)
			}
		}
	}
	s.invalid = errors.New("reset did not complete")
	for _, sv := range s.states {
		s.dropDevice(sv)
		if src := init[sv.pair.Input]; src != nil {
			graph.CopyData(sv.host.Data, src.Data)
		} else if !sv.fresh {
			zero(sv.host)
		}
		sv.fresh = false
		s.m.placeState(sv)
		if sv.slot == nil {
			continue
		}
		if err := s.upload(ctx, sv); err != nil {
			s.invalid = err
			return fmt.Errorf("runtime: state %q on %s: %w", sv.pair.Input, sv.slot.name, err)
		}
	}
	s.invalid = nil
	return nil
}

// upload allocates sv's buffer on its slot and uploads the host value.
func (s *Session) upload(ctx context.Context, sv *stateVal) error {
	b, err := sv.slot.dev.Allocate(ctx, hal.BufferRequest{DType: sv.host.DType, Shape: sv.host.Shape, Memory: sv.slot.memory, Device: sv.slot.index})
	if err != nil {
		return err
	}
	f, err := sv.slot.dev.Upload(ctx, b, sv.host, nil)
	if err == nil {
		err = f.Wait(ctx) // the host copy is the session's, but stays the same only until the next Reset
	}
	if err != nil {
		_ = sv.slot.dev.Free(b)
		return err
	}
	sv.buf, sv.fence = b, f
	s.tr.Uploads++
	s.tr.UploadBytes += sv.size
	return nil
}

// dropDevice frees sv's device buffers and puts it in host mode (its host
// tensor is not updated).
func (s *Session) dropDevice(sv *stateVal) {
	if sv.slot != nil {
		for _, b := range append(sv.old, sv.buf) {
			if b != nil {
				_ = sv.slot.dev.Free(b)
			}
		}
	}
	sv.slot, sv.producer, sv.readers, sv.inPlace = nil, nil, nil, false
	sv.buf, sv.fence, sv.runBuf, sv.runFence, sv.old = nil, nil, nil, nil, nil
}

func zero(t *graph.Tensor) {
	if b, ok := graph.RawBytes(t); ok {
		clear(b) // in place (a new zero tensor and a copy: twice the memory)
		return
	}
	z, _ := graph.New(t.DType, t.Shape)
	graph.CopyData(t.Data, z.Data)
}

// placeState decides where sv lives: on a slot when the partition
// producing its output runs there (not re-placed), every reader of its
// input is a partition of that slot, no host node or model output reads
// the input, and nothing but the caller reads the output; else on the
// host. The producer updates the buffer in place when it reads the input
// itself, is its only reader and its executable declares the pair.
func (m *Model) placeState(sv *stateVal) {
	var producer *compiledPartition
	var readers []*compiledPartition
	for _, cp := range m.parts {
		if slices.Contains(cp.part.Outputs, sv.pair.Output) {
			producer = cp
		}
		if slices.Contains(cp.part.Inputs, sv.pair.Input) {
			readers = append(readers, cp)
		}
		if slices.Contains(cp.part.Inputs, sv.pair.Output) {
			return // another partition reads the output
		}
	}
	if producer == nil || producer.slot == nil || producer.io == nil || producer.onCPU.Load() != nil {
		return
	}
	for _, r := range readers {
		if r.slot != producer.slot || r.io == nil || r.onCPU.Load() != nil {
			return
		}
	}
	inPart := map[int]bool{}
	for _, cp := range m.parts {
		for _, i := range cp.part.Nodes {
			inPart[i] = true
		}
	}
	g := m.ir.Graph
	for i, n := range g.Nodes {
		if inPart[i] {
			continue
		}
		if reads := nodeReads(n); slices.Contains(reads, sv.pair.Input) || slices.Contains(reads, sv.pair.Output) {
			return
		}
	}
	for _, o := range g.Outputs {
		if o.Name == sv.pair.Input {
			return
		}
	}
	sv.slot, sv.producer, sv.readers = producer.slot, producer, readers
	if len(readers) == 1 && readers[0] == producer {
		j := slices.Index(producer.part.Outputs, sv.pair.Output)
		i := slices.Index(producer.part.Inputs, sv.pair.Input)
		for _, p := range producer.inPlace() {
			if p.Output == j && p.Input == i {
				sv.inPlace = true
			}
		}
	}
}

// IsState says whether input is one of the session's state inputs. The
// set is fixed by NewSession, so it is read without the session's lock
// (a decoder's step asks for each of its fifty inputs).
func (s *Session) IsState(input string) bool { return s.byIn[input] != nil }

// StateDevice says where the state of input lives between runs: a slot
// ("backend:index") or "host"; "" for a name that is not a state input.
func (s *Session) StateDevice(input string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv := s.byIn[input]
	switch {
	case sv == nil:
		return ""
	case sv.slot != nil:
		return sv.slot.name
	}
	return "host"
}

// InPlace reports whether the state of input is updated in place by the
// partition producing it (on a device: the buffer is the call's input and
// output); false on the host, where the kernel decides.
func (s *Session) InPlace(input string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	sv := s.byIn[input]
	return sv != nil && sv.slot != nil && sv.inPlace
}

// Transfers are the session's host↔device copies so far: the uploads of
// NewSession and Reset, the runs' transfers (the state's own and every
// other value's) and State's downloads.
func (s *Session) Transfers() Transfers {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tr
}

// State returns a copy of the current value of the state fed to input
// (downloaded from the device where it lives there).
func (s *Session) State(ctx context.Context, input string) (*graph.Tensor, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrSessionClosed
	}
	sv := s.byIn[input]
	if sv == nil {
		return nil, fmt.Errorf("runtime: %w: %q is not a state input of the session", errInvalid, input)
	}
	if s.invalid != nil {
		return nil, fmt.Errorf("%w (%v)", ErrStateInvalid, s.invalid)
	}
	if sv.slot == nil {
		return sv.host.Clone(), nil
	}
	dst, err := graph.New(sv.host.DType, sv.host.Shape)
	if err != nil {
		return nil, err
	}
	f, err := sv.slot.dev.Download(ctx, dst, sv.buf, []hal.Fence{sv.fence})
	if err == nil {
		err = f.Wait(ctx)
	}
	if err != nil {
		if errors.Is(err, hal.ErrUnavailable) {
			s.invalid = err
			return nil, fmt.Errorf("runtime: state %q on %s: %w: %w", input, sv.slot.name, ErrStateLost, err)
		}
		return nil, fmt.Errorf("runtime: state %q on %s: %w", input, sv.slot.name, err)
	}
	s.tr.Downloads++
	s.tr.DownloadBytes += sv.size
	return dst, nil
}

// Close frees the session's device buffers; later calls fail with
// ErrSessionClosed. Close a session before its model. It is safe to call
// more than once.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.release()
	return nil
}

func (s *Session) release() {
	for _, sv := range s.states {
		s.dropDevice(sv)
	}
}

// Run executes the model once with the session's state: inputs are the
// model's other inputs (a state input among them is refused), and the
// outputs returned are all but the state outputs. opts.Into and
// opts.Drop work as for Model.RunOpts (a state output in Into is
// refused).
func (s *Session) Run(ctx context.Context, inputs map[string]*graph.Tensor, opts RunOptions) (map[string]*graph.Tensor, error) {
	return s.run(ctx, inputs, opts, nil)
}

// RunWithStats is Run with the run's statistics.
func (s *Session) RunWithStats(ctx context.Context, inputs map[string]*graph.Tensor, opts RunOptions) (map[string]*graph.Tensor, *Stats, error) {
	st := &Stats{}
	out, err := s.run(ctx, inputs, opts, st)
	if err != nil {
		return nil, nil, err
	}
	return out, st, nil
}

func (s *Session) run(ctx context.Context, inputs map[string]*graph.Tensor, opts RunOptions, st *Stats) (map[string]*graph.Tensor, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrSessionClosed
	}
	if s.invalid != nil {
		return nil, fmt.Errorf("%w (%v)", ErrStateInvalid, s.invalid)
	}
	if err := s.follow(ctx); err != nil {
		return nil, err
	}
	clear(s.feeds)
	for name, t := range inputs {
		if s.byIn[name] != nil {
			return nil, fmt.Errorf("runtime: %w: input %q is the session's state, not the caller's", errInvalid, name)
		}
		s.feeds[name] = t
	}
	clear(s.into)
	for name, t := range opts.Into {
		if s.byOut[name] != nil {
			return nil, fmt.Errorf("runtime: %w: output %q is the session's state, not the caller's", errInvalid, name)
		}
		s.into[name] = t
	}
	for _, sv := range s.states {
		s.feeds[sv.pair.Input] = sv.host
		if sv.slot == nil {
			s.into[sv.pair.Output] = sv.host
		}
		sv.runBuf, sv.runFence = sv.buf, sv.fence
	}
	opts.Into = s.into
	out, err := s.m.runLife(ctx, s.feeds, nil, opts, st, s)
	for _, sv := range s.states {
		if sv.slot == nil {
			continue
		}
		for _, b := range sv.old {
			_ = sv.slot.dev.Free(b)
		}
		sv.old = sv.old[:0]
		sv.runBuf, sv.runFence = nil, nil
	}
	clear(s.feeds)
	clear(s.into)
	if err != nil {
		s.invalid = err
		return nil, err
	}
	for _, sv := range s.states {
		delete(out, sv.pair.Output)
	}
	return out, nil
}

// follow moves to the host the states whose partitions were re-placed
// since they were placed (by this session's runs or any other): each is
// downloaded once, or, when its device cannot give it back, the session
// fails with ErrStateLost.
func (s *Session) follow(ctx context.Context) error {
	for _, sv := range s.states {
		if sv.slot == nil {
			continue
		}
		moved := sv.producer.onCPU.Load() != nil
		for _, r := range sv.readers {
			moved = moved || r.onCPU.Load() != nil
		}
		if !moved {
			continue
		}
		f, err := sv.slot.dev.Download(ctx, sv.host, sv.buf, []hal.Fence{sv.fence})
		if err == nil {
			err = f.Wait(ctx)
		}
		name := sv.slot.name
		s.dropDevice(sv)
		if err != nil {
			s.invalid = err
			return fmt.Errorf("runtime: state %q lived on %s, whose partitions were re-placed, and cannot be recovered: %w: %w", sv.pair.Input, name, ErrStateLost, err)
		}
		s.tr.Downloads++
		s.tr.DownloadBytes += sv.size
	}
	return nil
}

// stateIn is the session state read as input name on slot sl in this run
// (nil: none, or not on that slot).
func (rs *runState) stateIn(name string, sl *slot) *stateVal {
	if rs.sess == nil {
		return nil
	}
	if sv := rs.sess.byIn[name]; sv != nil && sv.slot == sl && sv.runBuf != nil {
		return sv
	}
	return nil
}

// stateOut is the session state written as output name on slot sl.
func (rs *runState) stateOut(name string, sl *slot) *stateVal {
	if rs.sess == nil {
		return nil
	}
	if sv := rs.sess.byOut[name]; sv != nil && sv.slot == sl && sv.buf != nil {
		return sv
	}
	return nil
}

// onLostSlot says whether a state of the session lived on sl.
func (s *Session) onLostSlot(sl *slot) *stateVal {
	for _, sv := range s.states {
		if sv.slot == sl {
			return sv
		}
	}
	return nil
}

// stateToken is what the executed graph carries for a state output kept
// on its device.
var stateToken = &graph.Tensor{DType: graph.Float32, Shape: []int{0}, Data: []float32{}}
