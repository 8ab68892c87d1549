package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

// ErrClosed is returned (wrapped) by Run on a closed model, and by a Run
// that Close interrupted. errors.Is(err, hal.ErrFailedPrecondition) holds
// too.
var ErrClosed error = &hal.Error{Code: hal.CodeFailedPrecondition, Msg: "runtime: model is closed"}

// life tracks a model's open/closed state and its Runs in flight.
type life struct {
	mu     sync.Mutex
	closed bool // set under mu (close), read by NewSession
	// state counts the Runs admitted and not yet ended, with
	// closedBit set once close begins: a Run is admitted (begin) and
	// ended (end) with one atomic add each, no lock; the Run that ends
	// last after close began closes drained
	state     atomic.Int64
	drained   chan struct{}
	drainOnce sync.Once
	closing   context.Context // done once Close begins
	cancel    context.CancelFunc
}

// closedBit marks life.state closed.
const closedBit = int64(1) << 62

func newLife() *life {
	l := &life{drained: make(chan struct{})}
	l.closing, l.cancel = context.WithCancel(context.Background())
	return l
}

// endRun ends one admitted Run (or a refused admission).
func (l *life) endRun() {
	if l.state.Add(-1) == closedBit {
		l.drainOnce.Do(func() { close(l.drained) })
	}
}

// begin admits one Run: it fails on a closed model, and returns the Run's
// context, which Close cancels (with cause ErrClosed), and the function
// ending the Run (end calls it). A caller context
// that cannot be cancelled (Done is nil: Background, TODO and values on
// them) needs nothing derived: the run's own context (runCtx) takes its
// cancellation from closing, and begin returns a nil context and
// allocates nothing.
func (l *life) begin(ctx context.Context) (context.Context, func(), error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if l.state.Add(1)&closedBit != 0 {
		l.endRun()
		return nil, nil, ErrClosed
	}
	if ctx.Done() == nil {
		return nil, nil, nil
	}
	rctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(l.closing, func() { cancel(ErrClosed) })
	return rctx, func() {
		stop()
		cancel(nil)
		l.endRun()
	}, nil
}

// end ends a Run begun by begin (stop is what begin returned).
func (l *life) end(stop func()) {
	if stop != nil {
		stop()
		return
	}
	l.endRun()
}

// runCtx is the context of a run whose caller's context cannot be
// cancelled: the caller's values, the run's residency table under runKey,
// and done when the model is closed. It lives in the run's (reused)
// runState, so a run makes no context of its own.
type runCtx struct {
	context.Context // the caller's
	rs              *runState
	closing         context.Context // life.closing
}

// Value finds the caller's values first, then closing's: a context
// derived from the run's (context.WithCancel in a kernel or backend)
// finds closing's cancellation there and is registered as its child, as
// it would be under a cancelCtx, instead of a goroutine watching Done.
func (c *runCtx) Value(k any) any {
	if _, ok := k.(runKey); ok {
		return c.rs
	}
	if v := c.Context.Value(k); v != nil {
		return v
	}
	return c.closing.Value(k)
}

func (c *runCtx) Done() <-chan struct{} { return c.closing.Done() }

func (c *runCtx) Err() error {
	if c.closing.Err() != nil {
		return context.Canceled
	}
	return nil
}

// close marks the model closed, interrupts the Runs in flight and waits
// for them; it reports whether this call closed it.
func (l *life) close() bool {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return false
	}
	l.closed = true
	// from here on begin refuses; the Runs in flight are counted below
	// the bit
	inFlight := l.state.Add(closedBit) != closedBit
	l.mu.Unlock()
	l.cancel()
	if inFlight {
		<-l.drained
	}
	return true
}

// Run executes the model. inputs maps input names to tensors (an input with
// an initializer default may be omitted). It returns every model output.
// On a closed model it fails with ErrClosed.
func (m *Model) Run(ctx context.Context, inputs map[string]*graph.Tensor) (map[string]*graph.Tensor, error) {
	out, _, err := m.RunWithStats(ctx, inputs, RunOptions{})
	return out, err
}

// RunWithStats is Run with per-run statistics and optional profiling.
func (m *Model) RunWithStats(ctx context.Context, inputs map[string]*graph.Tensor, opts RunOptions) (map[string]*graph.Tensor, *Stats, error) {
	st := &Stats{}
	out, err := m.runLife(ctx, inputs, nil, opts, st, nil)
	if err != nil {
		return nil, nil, err
	}
	return out, st, nil
}

// RunOpts is Run with options (RunOptions.Into, RunOptions.Drop) and no
// statistics: with caller-allocated outputs for every output (Into, Drop)
// and a context that cannot be cancelled, a steady-state run of a model
// of static shapes allocates nothing.
func (m *Model) RunOpts(ctx context.Context, inputs map[string]*graph.Tensor, opts RunOptions) (map[string]*graph.Tensor, error) {
	return m.runLife(ctx, inputs, nil, opts, nil, nil)
}

// RunBound is RunOpts with inputs and outputs bound by position instead
// of by name: inputs[i] is Inputs()[i] (nil: omitted, for an input with
// an initializer default), outputs[i] receives Outputs()[i] as in
// exec.Program.RunBound (a tensor with data is written into, in place
// where the producing kernel allocates its dtype and shape; nil drops the
// result). Nothing is looked up by name: with a tensor for every output
// and a context that cannot be cancelled, a steady-state run of a model
// of static shapes allocates nothing. The caller has checked the inputs'
// names; the executor still checks their dtypes and shapes.
func (m *Model) RunBound(ctx context.Context, inputs, outputs []*graph.Tensor) error {
	_, err := m.runLife(ctx, nil, &boundIO{inputs, outputs}, RunOptions{}, nil, nil)
	return err
}

// boundIO are a run's inputs and outputs by position (RunBound).
type boundIO struct{ ins, outs []*graph.Tensor }

func (m *Model) runLife(ctx context.Context, inputs map[string]*graph.Tensor, pos *boundIO, opts RunOptions, st *Stats, sess *Session) (map[string]*graph.Tensor, error) {
	if m == nil || m.life == nil {
		return nil, ErrClosed
	}
	if ctx == nil {
		ctx = context.Background()
	}
	rctx, stop, err := m.life.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer m.life.end(stop)
	own := rctx == nil
	if !own {
		ctx = rctx
	}
	out, err := m.run(ctx, own, inputs, pos, opts, st, sess)
	if err != nil && (own && m.life.closing.Err() != nil || !own && errors.Is(context.Cause(rctx), ErrClosed)) {
		return nil, fmt.Errorf("runtime: the model was closed during the run (%v): %w", err, ErrClosed)
	}
	return out, err
}

// Close interrupts the Runs in flight (they fail with ErrClosed), waits for
// them, and releases the compiled partitions and the buffers kept for later
// runs (not the devices, which the caller opened). Every later Run fails
// with ErrClosed. It is safe to call more than once, and concurrently with
// Run.
func (m *Model) Close() error {
	if m == nil || m.life == nil || !m.life.close() {
		return nil
	}
	err := m.releaseParts()
	if m.prog != nil {
		m.prog.Trim()
	}
	return err
}

// MemoryStats is what the model's memory budget accounts.
type MemoryStats struct {
	Held   int64 // bytes buffers hold now (runs in flight, buffers kept for later runs)
	Peak   int64 // the most they ever held at once
	Budget int64 // the limit (0: none)
}

// Memory reports the model's memory accounting (see Options.MemoryBudget).
func (m *Model) Memory() MemoryStats {
	return MemoryStats{Held: m.budget.Held(), Peak: m.budget.Peak(), Budget: m.budget.Limit()}
}

// HoldMemory accounts n bytes the caller keeps for this model outside its
// runs' buffers (a decoder's key/value caches) against its memory budget,
// dropping idle run buffers to make room; false when they do not fit.
// ReleaseMemory gives them back.
func (m *Model) HoldMemory(n int64) bool { return m.budget.Hold(n) }

// ReleaseMemory gives back n bytes accounted by HoldMemory.
func (m *Model) ReleaseMemory(n int64) { m.budget.Release(n) }
