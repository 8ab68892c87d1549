package switchyard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/apiaccess"
	"github.com/switchyard-hal/switchyard/runtime"
)

// OpenOptions configures opening a model: the engine (which backends,
// placement, memory, compile cache; fields read by NewEngine and the
// package-level Open) and the model (how its file is imported and how its
// runs are observed). The zero value does the right thing: every backend
// discovered at startup that is available here, in priority order (vendor
// backends, then the portable native kernels, then the reference cpu for
// whatever they decline), the default memory budget, no compile cache,
// each format's defaults.
//
// Engine.Open and Engine.OpenBytes take the model's fields only (the
// engine is already open): an engine field set there is refused
// (ErrInvalid); nil takes the model fields given to NewEngine.
type OpenOptions struct {
	// The engine.

	// Backends names the backends to use, in priority order. Each must
	// open, or NewEngine fails with a *BackendError (ErrUnknownBackend,
	// ErrUnavailable, or the backend's refusal). Nil means every
	// discovered non-simulated backend that opens (Backends.DefaultOrder),
	// skipping, and saying in Engine.Skipped, the ones that do not.
	Backends []string
	// Strict fails a load, naming the nodes (ErrUnsupported), instead of
	// running on cpu the nodes the chosen backends decline; the same as
	// Policy.Strict.
	Strict bool
	// Policy steers placement: allow and deny lists per op type, the
	// minimum partition size, whether to weigh cost estimates.
	Policy Policy
	// OnUnavailable: FailRun (default) or ReplaceOnCPU.
	OnUnavailable OnUnavailable
	// Threads for the backends' compiled partitions (0: each backend's
	// default, GOMAXPROCS or less). The reference kernels use GOMAXPROCS.
	Threads int
	// Precision is the lowest precision the backends may compute float32
	// values in: e.g. PrecisionInt8 lets native quantize the activations
	// of BlockQuantMatMul to int8 for integer dot products. "" is the
	// model's own default: float32 (exact), except for a GGUF decoder with
	// quantized weights, which takes int8 as llama.cpp does by default
	// (about twice as fast; PrecisionFloat32 keeps it exact). A partition
	// that computes below float32 says so in the plan
	// (Partition.Precision). The cpu fallback always computes in float32.
	Precision Precision
	// MemoryBudget bounds, in bytes, the buffers a model's concurrent runs
	// hold at once; a Run that would need more fails naming the node. 0:
	// three quarters of the available memory; negative: no bound.
	MemoryBudget int64
	// MaxTensorBytes, when > 0, lowers the size limit of any one tensor
	// (weights included).
	MaxTensorBytes int64
	// CompileCache, when set, keeps compiled partitions between loads.
	CompileCache CompileCache
	// Logger receives what the engine has to say: the backends the
	// default selection skipped and why (Warn when Notable, else Debug).
	// Default slog.Default().
	Logger *slog.Logger
	// OnSkipped, when set, is called for every backend the default
	// selection skips, as it is skipped.
	OnSkipped func(Skipped)
	// Discovered is the set of backends to choose from (default
	// DefaultBackends(): hal.Default after plugin and C-library
	// discovery).
	Discovered *Backends
	// ProbeLibraries probes each C library of the default selection in a
	// child process before loading it here, so one whose constructor exits
	// or crashes is skipped instead of ending the program. The program
	// must then call ServeProbe first thing in main. Libraries named in
	// Backends are always loaded directly.
	ProbeLibraries bool

	// The model.

	// Name is what reports and traces call the model (default: the file's
	// or directory's name; "model" for bytes). For bytes, its extension,
	// if any, helps recognise formats without magic bytes (ONNX is
	// assumed otherwise).
	Name string
	// Method is the entry point of a program with several (an ExecuTorch
	// program's methods); "" is the format's default.
	Method string
	// DataFiles are extra weight files (ExecuTorch .ptd) beside those the
	// format finds next to the model itself.
	DataFiles []string
	// ContextLength, when > 0, caps the context of a Llama decoder built
	// from a .gguf or llama2.c file (the positions its KV-cache buffers,
	// allocated whole, hold); 0 is the model's own.
	ContextLength int
	// KVCache is the element type of such a decoder's key/value cache:
	// "f16" (the default for .gguf, as llama.cpp), "f32" (the default
	// for llama2.c files) or "q8_0" (ggml's 8-bit blocks; head sizes that
	// are multiples of 32).
	KVCache string
	// Dequantize imports a quantized TFLite model as the float32 network
	// on its dequantised weights (a quantized input then takes real
	// values); other formats ignore it.
	Dequantize bool
	// Profile records per-node and per-device timings on every Run, for
	// OnRun (a run's Stats can be written with Model.WriteTrace).
	Profile bool
	// OnRun, when set, receives the Stats of every Run, RunInto and
	// RunWithStats that succeeds (the model's name, then the Stats), on
	// the Run's goroutine: a sink for traces and metrics.
	OnRun func(model string, st *Stats)
}

// engineField names the first engine field of o that is set ("" when
// none is), for Engine.Open's refusal.
func (o *OpenOptions) engineField() string {
	switch {
	case o.Backends != nil:
		return "Backends"
	case o.Strict:
		return "Strict"
	case o.Policy.Allow != nil || o.Policy.Deny != nil || o.Policy.MinPartitionSize != 0 || o.Policy.Strict || o.Policy.Fallback != "" || o.Policy.IgnoreCosts:
		return "Policy"
	case o.OnUnavailable != FailRun:
		return "OnUnavailable"
	case o.Threads != 0:
		return "Threads"
	case o.Precision != "":
		return "Precision"
	case o.MemoryBudget != 0:
		return "MemoryBudget"
	case o.MaxTensorBytes != 0:
		return "MaxTensorBytes"
	case o.CompileCache != nil:
		return "CompileCache"
	case o.Logger != nil:
		return "Logger"
	case o.OnSkipped != nil:
		return "OnSkipped"
	case o.Discovered != nil:
		return "Discovered"
	case o.ProbeLibraries:
		return "ProbeLibraries"
	}
	return ""
}

// RunOptions configures one run (Model.RunWithStats,
// Session.RunWithStats); nil is the zero value.
type RunOptions struct {
	// Profile records per-node and per-device timings in the run's Stats
	// (see Model.WriteTrace), besides those of OpenOptions.Profile.
	Profile bool
}

// Skipped is a backend the default selection left out, and why.
type Skipped struct {
	Backend string
	Err     error // wraps ErrUnavailable when the backend is merely absent here
	// Notable marks a skip worth telling a person: the backend was
	// refused (checksum mismatch, incompatible HAL version, insecure
	// path) or its library failed its probe, rather than being absent.
	Notable bool
}

// Engine holds the opened backends that models are loaded onto. Load as
// many models as needed; they share the backends (one plugin process, one
// device context each). An Engine is safe for concurrent use. Close it
// when done: it closes its models, then its backends.
type Engine struct {
	opts    OpenOptions
	found   *Backends
	devs    []*hal.Device
	names   []string
	skipped []Skipped
	logger  *slog.Logger
	ropts   runtime.Options // what models are loaded with

	mu     sync.Mutex
	closed bool
	models map[*Model]struct{}
}

// NewEngine opens the backends opts chooses; opts's model fields are
// the defaults of the models opened on the engine. A nil opts is the zero
// OpenOptions.
func NewEngine(ctx context.Context, opts *OpenOptions) (*Engine, error) {
	var o OpenOptions
	if opts != nil {
		o = *opts
	}
	if ctx == nil {
		return nil, errNilContext
	}
	if o.Discovered == nil {
		o.Discovered = DefaultBackends()
	}
	switch o.OnUnavailable {
	case FailRun, ReplaceOnCPU:
	default:
		return nil, fmt.Errorf("switchyard: OpenOptions.OnUnavailable %d: want FailRun or ReplaceOnCPU", o.OnUnavailable)
	}
	if o.Threads < 0 {
		return nil, fmt.Errorf("switchyard: OpenOptions.Threads %d: want 0 (default) or more", o.Threads)
	}
	if o.Precision != "" {
		p, err := hal.ParsePrecision(string(o.Precision))
		if err != nil {
			return nil, fmt.Errorf("switchyard: OpenOptions.Precision: %w", err)
		}
		o.Precision = Precision(p)
	}
	e := &Engine{opts: o, found: o.Discovered, logger: o.Logger, models: map[*Model]struct{}{}}
	if e.logger == nil {
		e.logger = slog.Default()
	}
	if err := e.open(ctx); err != nil {
		return nil, err
	}
	pol := o.Policy.runtime()
	pol.Strict = pol.Strict || o.Strict
	e.ropts = runtime.Options{
		Backends:       e.devs,
		Policy:         pol,
		Compile:        hal.CompileOptions{Threads: o.Threads, Precision: hal.Precision(o.Precision)},
		OnUnavailable:  runtime.OnUnavailable(o.OnUnavailable),
		CompileCache:   o.CompileCache,
		MemoryBudget:   o.MemoryBudget,
		MaxTensorBytes: o.MaxTensorBytes,
	}
	return e, nil
}

// open opens the chosen backends in priority order.
func (e *Engine) open(ctx context.Context) error {
	reg := e.found.Registry()
	explicit := e.opts.Backends != nil
	names := e.opts.Backends
	if !explicit {
		names = e.found.DefaultOrder()
	}
	known := map[string]bool{}
	for _, n := range reg.Names() {
		known[n] = true
	}
	fail := func(err error) error {
		e.closeDevices()
		return err
	}
	seen := map[string]bool{}
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if seen[n] {
			return fail(&BackendError{Backend: n, Err: errors.New("named twice in OpenOptions.Backends")})
		}
		seen[n] = true
		if !known[n] {
			return fail(&BackendError{Backend: n, Err: fmt.Errorf("%w %q (forgotten import or plugin manifest?); known: %s", ErrUnknownBackend, n, strings.Join(reg.Names(), ", "))})
		}
		if !explicit && e.opts.ProbeLibraries && e.found.IsLibrary(n) {
			if a := e.found.probeOne(ctx, n); !a.Available {
				e.skip(Skipped{Backend: n, Err: errors.New(a.Reason), Notable: true})
				continue
			}
		}
		d, err := reg.Open(ctx, n)
		if err != nil {
			if explicit {
				return fail(&BackendError{Backend: n, Err: err})
			}
			e.skip(Skipped{Backend: n, Err: err, Notable: !errors.Is(err, ErrUnavailable)})
			continue
		}
		e.devs = append(e.devs, d)
		e.names = append(e.names, n)
	}
	return nil
}

func (e *Engine) skip(s Skipped) {
	e.skipped = append(e.skipped, s)
	level := slog.LevelDebug
	if s.Notable {
		level = slog.LevelWarn
	}
	e.logger.Log(context.Background(), level, "switchyard: backend skipped", "backend", s.Backend, "reason", s.Err.Error())
	if e.opts.OnSkipped != nil {
		e.opts.OnSkipped(s)
	}
}

// Backends lists the backends the engine opened, in priority order (the
// fallback, cpu, is used for what they decline even when not listed,
// unless Policy.Strict).
func (e *Engine) Backends() []string { return append([]string(nil), e.names...) }

// Skipped lists the backends the default selection left out, and why.
func (e *Engine) Skipped() []Skipped { return append([]Skipped(nil), e.skipped...) }

// Discovered is the set of backends the engine chose from.
func (e *Engine) Discovered() *Backends { return e.found }

func init() {
	apiaccess.EngineRuntimeOptions = func(e any) *runtime.Options { return e.(*Engine).runtimeOptions() }
	apiaccess.Tensor = func(t *graph.Tensor) any { return wrap(t) }
	apiaccess.GraphTensor = func(t any) *graph.Tensor { return unwrap(t.(*Tensor)) }
}

// runtimeOptions are the runtime options the engine loads with (a new
// value each call; the devices are the engine's own, closed with it), for
// the module's own tools (internal/apiaccess).
func (e *Engine) runtimeOptions() *runtime.Options {
	o := e.ropts
	o.Backends = append([]*hal.Device(nil), e.ropts.Backends...)
	return &o
}

func (e *Engine) check() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return fmt.Errorf("switchyard: engine: %w", ErrClosed)
	}
	return nil
}

// Close closes every model loaded from the engine (their Runs in flight
// fail with ErrClosed), then the backends. Later Loads fail with
// ErrClosed. It is safe to call more than once.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	models := make([]*Model, 0, len(e.models))
	for m := range e.models {
		models = append(models, m)
	}
	e.mu.Unlock()
	var errs []error
	for _, m := range models {
		errs = append(errs, m.closeModel())
	}
	errs = append(errs, e.closeDevices())
	return errors.Join(errs...)
}

func (e *Engine) closeDevices() error {
	var errs []error
	for _, d := range e.devs {
		errs = append(errs, d.Close())
	}
	e.devs = nil
	return errors.Join(errs...)
}

// Open opens an engine with opts and loads the model at path onto it (see
// Engine.Open). The engine belongs to the model: Model.Close closes both.
// Use NewEngine and Engine.Open to load several models onto the same
// backends.
func Open(ctx context.Context, path string, opts *OpenOptions) (*Model, error) {
	return openWith(ctx, opts, func(e *Engine) (*Model, error) { return e.Open(ctx, path, nil) })
}

// OpenBytes is Open for a serialized model (see Engine.OpenBytes).
func OpenBytes(ctx context.Context, data []byte, opts *OpenOptions) (*Model, error) {
	return openWith(ctx, opts, func(e *Engine) (*Model, error) { return e.OpenBytes(ctx, data, nil) })
}

func openWith(ctx context.Context, opts *OpenOptions, load func(*Engine) (*Model, error)) (*Model, error) {
	e, err := NewEngine(ctx, opts)
	if err != nil {
		return nil, err
	}
	m, err := load(e)
	if err != nil {
		_ = e.Close()
		return nil, err
	}
	m.ownsEngine = true
	return m, nil
}
