// Package grpcplugin is the host side of out-of-process backends: a
// hal.Backend whose implementation is a plugin process started with
// hashicorp/go-plugin and spoken to over gRPC (switchyard.hal.v1, see
// hal/wire). The runtime and partitioner cannot tell it from a linked-in
// backend.
//
// What it guarantees:
//   - Before every start the binary's sha256 is checked against the
//     manifest (a mismatch names both hashes); go-plugin negotiates the
//     wire protocol version, the connection uses AutoMTLS, and the HAL
//     version is negotiated with hal.Negotiate (an incompatible plugin is
//     refused naming both versions).
//   - Tensors and large subgraphs travel through shared memory (memfd);
//     gRPC carries descriptors only, with message limits raised both ways.
//   - A hostile plugin cannot take the host down or exhaust it: regions
//     are sealed against resizing and the plugin's own regions are refused
//     unless sealed (no SIGBUS); each output descriptor is checked against
//     the inferred type and its exact size before anything is mapped or
//     copied (a mismatch fails that call with Internal, naming the output
//     and both types); descriptors it sends are kept only while a call
//     that may use them is in flight, bounded, and the rest closed on
//     arrival; its error messages and log records are cut at 4 KiB with a
//     note, and its log records rate-limited (2000 at once, then 500/s;
//     the dropped ones are counted in the log).
//   - The plugin dies with the host (Pdeathsig, and the SDK exits when its
//     descriptor channel closes). Its log lines go to the host's slog.
//   - Supervision: a crash is noticed at once (the descriptor channel
//     closes); calls in flight fail with hal Unavailable; the process is
//     restarted with exponential backoff (RestartPolicy); executables
//     recompile their subgraph on the new process at their next call, so
//     the call after a crash succeeds. Every call carries a deadline
//     (the caller's, or Options.CallTimeout).
//   - Close stops the process and releases every goroutine, descriptor,
//     mapping and socket directory; stale socket directories of dead hosts
//     are removed at Open.
//
// Plugins are found through manifests (Manifest, Discover, SearchPath) and
// registered with a hal.Registry by Register or Factory.
package grpcplugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats/onnx"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/hal/wire"
	halv1 "github.com/switchyard-hal/switchyard/hal/wire/switchyard/hal/v1"
)

// RestartPolicy says how a crashed plugin is restarted.
type RestartPolicy struct {
	// Disabled leaves a crashed plugin down: every later call fails with
	// Unavailable (for a runtime policy that re-places on cpu instead).
	Disabled bool
	// MaxRestarts within Window before giving up (default 5 per minute).
	MaxRestarts int
	Window      time.Duration
	// MinBackoff, doubled per consecutive failed start up to MaxBackoff
	// (defaults 50 ms and 5 s). The first restart after a crash waits
	// MinBackoff.
	MinBackoff, MaxBackoff time.Duration
}

// Options configure a plugin backend.
type Options struct {
	// Name is the registry name the plugin must report (empty: accept any).
	Name string
	// Path of the plugin binary, Args and extra Env ("K=V") for it.
	Path string
	Args []string
	Env  []string
	// SHA256 of the binary (hex). Required unless AllowUnverified.
	SHA256          string
	AllowUnverified bool
	// Logger receives go-plugin's and the plugin's log lines (default slog.Default()).
	Logger *slog.Logger
	// StartTimeout bounds starting and handshaking (default 30 s).
	StartTimeout time.Duration
	// CallTimeout is the deadline of a call whose context has none
	// (default 60 s; negative: none).
	CallTimeout time.Duration
	Restart     RestartPolicy
}

// Backend is a hal.Backend served by a plugin process.
type Backend struct {
	opts Options
	name string
	log  *slog.Logger
	info hal.Info
	wg   sync.WaitGroup

	mu       sync.Mutex
	cur      *process      // nil while (re)starting
	ready    chan struct{} // closed when cur is set again, or on fatal/close
	gen      uint64
	fatal    error
	closed   bool
	crashes  []time.Time
	stopping chan struct{}

	pool regionPool
	dev  deviceBufs
	xfer transferCounters // HAL 1.1 uploads and downloads (devmem.go)
}

var _ hal.Backend = (*Backend)(nil)

// Open starts the plugin and returns it as a backend. It fails with
// FailedPrecondition for a checksum mismatch or an incompatible HAL
// version (naming both), Unavailable when the process cannot be started.
func Open(ctx context.Context, opts Options) (*Backend, error) {
	if opts.Path == "" {
		return nil, &hal.Error{Code: hal.CodeInvalidArgument, Backend: opts.Name, Op: "open", Msg: "plugin path is empty"}
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 30 * time.Second
	}
	if opts.CallTimeout == 0 {
		opts.CallTimeout = 60 * time.Second
	}
	r := &opts.Restart
	if r.MaxRestarts <= 0 {
		r.MaxRestarts = 5
	}
	if r.Window <= 0 {
		r.Window = time.Minute
	}
	if r.MinBackoff <= 0 {
		r.MinBackoff = 50 * time.Millisecond
	}
	if r.MaxBackoff < r.MinBackoff {
		r.MaxBackoff = 5 * time.Second
	}
	cleanStaleSockets()
	b := &Backend{opts: opts, name: opts.Name, log: opts.Logger, stopping: make(chan struct{})}
	if b.name == "" {
		b.name = filepath.Base(opts.Path) // until the plugin says its name
	}
	b.pool.b = b
	p, err := b.start(ctx, 1)
	if err != nil {
		return nil, err
	}
	b.gen, b.cur, b.info = 1, p, p.info
	if opts.SHA256 != "" {
		b.info.Description += fmt.Sprintf(" [plugin process %s, sha256 %s… verified]", opts.Path, strings.ToLower(opts.SHA256)[:12])
	} else {
		b.info.Description += fmt.Sprintf(" [plugin process %s, NOT verified]", opts.Path)
	}
	b.name = p.info.Name
	b.ready = make(chan struct{})
	close(b.ready)
	return b, nil
}

// PID is the current plugin process id (0 while restarting).
func (b *Backend) PID() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cur == nil {
		return 0
	}
	return b.cur.pid
}

// Generation counts starts of the plugin process (1 = first start).
func (b *Backend) Generation() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.gen
}

// died is called once per process when it goes away.
func (b *Backend) died(p *process) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.cur != p {
		return
	}
	b.cur = nil
	b.ready = make(chan struct{})
	if b.opts.Restart.Disabled {
		b.fatal = fmt.Errorf("plugin process %d died and restarts are disabled", p.pid)
		close(b.ready)
		return
	}
	now := time.Now()
	kept := b.crashes[:0]
	for _, t := range b.crashes {
		if now.Sub(t) < b.opts.Restart.Window {
			kept = append(kept, t)
		}
	}
	b.crashes = append(kept, now)
	if len(b.crashes) > b.opts.Restart.MaxRestarts {
		b.fatal = fmt.Errorf("plugin process crashed %d times within %v; not restarting it again (last: pid %d)", len(b.crashes), b.opts.Restart.Window, p.pid)
		b.log.Error("giving up on plugin", "plugin", b.name, "error", b.fatal)
		close(b.ready)
		return
	}
	b.wg.Add(1)
	go b.restart(p)
}

// restart starts a new process with backoff until it succeeds, the policy
// gives up or the backend is closed.
func (b *Backend) restart(old *process) {
	defer b.wg.Done()
	for attempt := 0; ; attempt++ {
		select {
		case <-time.After(b.opts.Restart.backoff(attempt)):
		case <-b.stopping:
			return
		}
		b.mu.Lock()
		b.gen++
		gen := b.gen
		b.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), b.opts.StartTimeout)
		p, err := b.start(ctx, gen)
		cancel()
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			if p != nil {
				p.stop()
			}
			return
		}
		if err == nil {
			b.cur = p
			close(b.ready)
			b.mu.Unlock()
			b.log.Info("plugin restarted", "plugin", b.name, "pid", p.pid, "generation", gen, "previous_pid", old.pid)
			return
		}
		var he *hal.Error
		permanent := errors.As(err, &he) && he.Code == hal.CodeFailedPrecondition // checksum, version
		if permanent || attempt+1 >= b.opts.Restart.MaxRestarts {
			b.fatal = fmt.Errorf("restarting the plugin failed: %w", err)
			close(b.ready)
			b.mu.Unlock()
			b.log.Error("plugin restart failed; giving up", "plugin", b.name, "error", err)
			return
		}
		b.mu.Unlock()
		b.log.Warn("plugin restart failed; retrying", "plugin", b.name, "attempt", attempt+1, "error", err)
	}
}

// process returns the live process, waiting for a restart in progress.
func (b *Backend) process(ctx context.Context, op string) (*process, error) {
	for {
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return nil, &hal.Error{Code: hal.CodeFailedPrecondition, Backend: b.name, Op: op, Msg: "plugin backend is closed"}
		}
		if b.fatal != nil {
			err := b.fatal
			b.mu.Unlock()
			return nil, &hal.Error{Code: hal.CodeUnavailable, Backend: b.name, Op: op, Err: err}
		}
		if p := b.cur; p != nil && p.alive() {
			b.mu.Unlock()
			return p, nil
		}
		ready := b.ready
		b.mu.Unlock()
		select {
		case <-ready:
		case <-ctx.Done():
			return nil, &hal.Error{Code: hal.CodeOf(ctx.Err()), Backend: b.name, Op: op, Msg: "waiting for the plugin process to restart", Err: ctx.Err()}
		}
	}
}

// callErr maps a failed RPC: a dead process is Unavailable naming it.
func (b *Backend) callErr(ctx context.Context, p *process, op string, err error) error {
	if ctx.Err() == nil {
		// a transport failure is usually the process dying: give the
		// descriptor channel a moment to confirm it
		select {
		case <-p.fds.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	if !p.alive() {
		return &hal.Error{Code: hal.CodeUnavailable, Backend: b.name, Op: op, Msg: fmt.Sprintf("plugin process %d died during the call", p.pid), Err: wire.Bounded(err)}
	}
	he := wire.TransportError(ctx, err).(*hal.Error)
	he.Backend, he.Op = b.name, op
	return he
}

// rpc runs one call on the live process with the per-call deadline; the
// call fails as soon as the process dies.
func rpc[R any](b *Backend, ctx context.Context, op string, f func(ctx context.Context, p *process) (R, error)) (R, *process, error) {
	var zero R
	ctx, cancel := b.callCtx(ctx)
	defer cancel()
	p, err := b.process(ctx, op)
	if err != nil {
		return zero, nil, err
	}
	r, err := f(ctx, p)
	if err != nil {
		return zero, p, b.callErr(ctx, p, op, err)
	}
	return r, p, nil
}

// Info is the plugin's static description (from its first start).
func (b *Backend) Info() hal.Info { return b.info }

func (b *Backend) Capabilities(ctx context.Context) (hal.Capabilities, error) {
	r, _, err := rpc(b, ctx, "capabilities", func(ctx context.Context, p *process) (*halv1.CapabilitiesResponse, error) {
		return p.rpc.Capabilities(ctx, &halv1.CapabilitiesRequest{})
	})
	if err != nil {
		return hal.Capabilities{}, err
	}
	if err := wire.ErrorOf(r.Status); err != nil {
		return hal.Capabilities{}, err
	}
	return wire.CapabilitiesFrom(r), nil
}

// encode serialises a subgraph (with its constants) as ONNX.
func encode(sg *hal.Subgraph) ([]byte, error) {
	if sg == nil || sg.Graph == nil {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "nil subgraph")
	}
	return onnx.Encode(&graph.Model{IRVersion: 8, Opsets: sg.Opsets, Graph: sg.Graph}), nil
}

// withSubgraph puts model bytes inline or, when large, in a shared region
// mapped in p, and calls f with the wire form.
func (b *Backend) withSubgraph(ctx context.Context, p *process, model []byte, f func(*halv1.Subgraph) error) error {
	if len(model) <= wire.InlineLimit {
		return f(&halv1.Subgraph{Model: &halv1.Blob{Where: &halv1.Blob_Inline{Inline: model}}})
	}
	r, err := b.pool.get(ctx, p, len(model))
	if err != nil {
		return err
	}
	copy(r.r.Mem, model)
	err = f(&halv1.Subgraph{Model: &halv1.Blob{Where: &halv1.Blob_Shared{Shared: &halv1.RegionSlice{Region: r.r.ID, Length: uint64(len(model))}}}})
	b.pool.put(ctx, r, err == nil)
	return err
}

func (b *Backend) Supports(ctx context.Context, sg *hal.Subgraph) ([]hal.Verdict, error) {
	model, err := encode(sg)
	if err != nil {
		return nil, err
	}
	r, _, err := rpc(b, ctx, "supports", func(ctx context.Context, p *process) (resp *halv1.SupportsResponse, err error) {
		err = b.withSubgraph(ctx, p, model, func(w *halv1.Subgraph) (err error) {
			resp, err = p.rpc.Supports(ctx, &halv1.SupportsRequest{Subgraph: w})
			return
		})
		return
	})
	if err != nil {
		return nil, err
	}
	if err := wire.ErrorOf(r.Status); err != nil {
		return nil, err
	}
	vs := make([]hal.Verdict, len(r.Verdicts))
	for i, v := range r.Verdicts {
		vs[i] = hal.Verdict{Supported: v.Supported, Reason: wire.TruncateMessage(v.Reason)}
	}
	return vs, nil
}

// compiled is what a plugin answered a compile with.
type compiled struct {
	id        uint64
	precision hal.Precision // checked against the options
	profiles  bool          // single calls can be profiled
}

// compileOn compiles model on p.
func (b *Backend) compileOn(ctx context.Context, p *process, model []byte, opts hal.CompileOptions) (compiled, error) {
	var resp *halv1.CompileResponse
	err := b.withSubgraph(ctx, p, model, func(w *halv1.Subgraph) (err error) {
		resp, err = p.rpc.Compile(ctx, &halv1.CompileRequest{Subgraph: w, Threads: int32(opts.Threads), Profile: opts.Profile, Device: int32(opts.Device), Precision: string(opts.Precision), ShapeBounds: wire.ShapeBoundsTo(opts.ShapeBounds)})
		return
	})
	if err != nil {
		var he *hal.Error
		if errors.As(err, &he) {
			return compiled{}, err
		}
		return compiled{}, b.callErr(ctx, p, "compile", err)
	}
	if err := wire.ErrorOf(resp.Status); err != nil {
		return compiled{}, err
	}
	c := compiled{id: resp.Executable, profiles: resp.Profiles}
	if c.precision, err = hal.CheckPrecision(hal.Precision(resp.Precision), opts.Precision); err != nil {
		b.releaseRemote(ctx, p, c.id)
		return compiled{}, &hal.Error{Code: hal.CodeInternal, Backend: b.name, Op: "compile", Err: err}
	}
	return c, nil
}

func (b *Backend) Compile(ctx context.Context, sg *hal.Subgraph, opts hal.CompileOptions) (hal.Executable, error) {
	model, err := encode(sg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := b.callCtx(ctx)
	defer cancel()
	p, err := b.process(ctx, "compile")
	if err != nil {
		return nil, err
	}
	c, err := b.compileOn(ctx, p, model, opts)
	if err != nil {
		return nil, err
	}
	e := &executable{b: b, model: model, opts: opts, p: p, id: c.id, precision: c.precision, profiles: c.profiles,
		outputs: append([]graph.ValueInfo{}, sg.Graph.Outputs...), lastOut: make([]int, len(sg.Graph.Outputs))}
	if p.devmem {
		return &asyncExecutable{e}, nil
	}
	return e, nil
}

// Health asks the live plugin process whether it is serving.
func (b *Backend) Health(ctx context.Context) error {
	r, _, err := rpc(b, ctx, "health", func(ctx context.Context, p *process) (*halv1.HealthResponse, error) {
		return p.rpc.Health(ctx, &halv1.HealthRequest{})
	})
	if err != nil {
		return err
	}
	return wire.ErrorOf(r.Status)
}

// Kill kills the current plugin process with SIGKILL, as a crash would
// (for tests and operators); supervision restarts it.
func (b *Backend) Kill() error {
	b.mu.Lock()
	p := b.cur
	b.mu.Unlock()
	if p == nil || p.cmd.Process == nil {
		return errors.New("grpcplugin: no plugin process is running")
	}
	return p.cmd.Process.Kill()
}

// Close stops the plugin process and releases everything. Safe to call twice.
func (b *Backend) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	close(b.stopping)
	p := b.cur
	b.cur = nil
	select {
	case <-b.ready:
	default:
		close(b.ready)
	}
	b.mu.Unlock()
	if p != nil {
		p.stop()
	}
	b.wg.Wait()
	b.pool.closeAll()
	return nil
}

// releaseRemote releases an executable the host will not use (its
// compile answer was refused); errors are logged, not returned.
func (b *Backend) releaseRemote(ctx context.Context, p *process, id uint64) {
	if r, err := p.rpc.Release(ctx, &halv1.ReleaseRequest{Executable: id}); err != nil || wire.ErrorOf(r.Status) != nil {
		b.log.Warn("releasing a refused executable failed", "plugin", b.name, "executable", id, "err", err)
	}
}
