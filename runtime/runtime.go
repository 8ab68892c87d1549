// Package runtime loads models and runs them: import → validate → check
// every op is supported → infer shapes → place on backends → compile the
// partitions → execute.
//
// Placement (package partitioner) splits the graph among the opened
// backends (Options.Backends, in priority order) using their Supports
// verdicts and cost estimates; each delegated partition is compiled by its
// backend at load and becomes one node of the executed program
// (core/exec). Whatever no backend takes runs on the fallback: for the
// default "cpu" the runtime runs those nodes itself on the reference
// kernels (core/kernels), with no HAL call per node; any other fallback is
// called like any backend. Partitions of HAL 1.1 backends with device
// memory keep their values on the device between partitions of the same
// device; every upload and download is a step of the plan (Plan.Transfers)
// and counted per run (Stats). A partition declined at run time or whose
// device is lost runs on the fallback, visibly (see OnUnavailable). A
// Session carries state pairs (an output fed back as an input on the next
// run) and keeps them in device buffers across runs where their
// partition computes on a device (session.go).
//
// Contracts:
//   - A *Model is immutable after Load and safe for concurrent Run calls.
//   - Run checks its inputs (names, dtypes, ranks, static and symbolic dims)
//     before executing anything, checks ctx between nodes (and long kernels
//     inside), and never panics: a kernel panic becomes an error naming the
//     node.
//   - Memory is bounded: every buffer a run allocates is checked against the
//     model's budget (Options.MemoryBudget) before it is allocated; sizes
//     that can be known at load are checked before anything is compiled.
//   - After Close, Run fails with ErrClosed.
//   - Intermediate buffers are recycled by lifetime (a buffer is reused once
//     its value's last consumer has run); returned outputs belong to the
//     caller and never alias model weights or inputs. RunOptions.Into
//     names caller-allocated outputs, written in place by the kernel or
//     backend computing them where it can.
package runtime

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard-hal/switchyard/core/exec"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	_ "github.com/switchyard-hal/switchyard/core/kernels/all" // the reference kernels
	"github.com/switchyard-hal/switchyard/formats"
	_ "github.com/switchyard-hal/switchyard/formats/all" // every importer
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/partitioner"
)

// Options configures Load. The zero value is valid.
type Options struct {
	// Backends are opened devices in priority order. Partitions they take
	// are compiled at load and called at run; everything else runs on the
	// fallback backend, unless Policy.Strict. The fallback's device, when
	// listed, marks its place in the priority order.
	Backends []*hal.Device
	// Fallback is the backend that takes what no other does, and the
	// partitions moved off their backend at run time (device loss,
	// run-time declines). Default: the device of Backends named
	// Policy.Fallback (default "cpu"), else the backend of that name
	// registered with hal.Default (import plugins/cpu for "cpu"). The
	// runtime runs what is placed on "cpu" itself, on the same reference
	// kernels, without a HAL call per node.
	Fallback *hal.Device
	// Policy steers the partitioner (allow/deny lists, minimum partition
	// size, strict mode).
	Policy partitioner.Policy
	// Compile options passed to every backend.
	Compile hal.CompileOptions
	// OnUnavailable says what a Run does when a backend reports itself
	// unavailable (its plugin process died and could not be restarted, its
	// device went away): fail the Run (the default), or re-place that
	// partition on the fallback backend for this and every later Run,
	// recorded in Plan().
	OnUnavailable OnUnavailable
	// CompileCache, when set, stores compiled partitions of backends that
	// export blobs (hal.BlobExporter/BlobImporter) and reuses them on the
	// next Load under an equal key (backend, device cache key, compile
	// options, subgraph content): e.g. &hal.DirCache{Dir: ...}.
	CompileCache hal.BlobCache
	// MemoryBudget bounds, in bytes, the buffers the model's runs hold at
	// once (intermediates, outputs not yet returned and buffers kept for
	// the next run), across all its concurrent Runs. Each buffer is checked
	// against it before it is allocated; a Run that would exceed it fails
	// with a *exec.BudgetError (errors.Is kernels.ErrResourceExhausted,
	// hal code ResourceExhausted) naming the node. 0 means
	// DefaultMemoryBudget(); a negative value means no budget. Weights are
	// not counted (they are loaded already), nor are the buffers delegated
	// partitions' backends allocate themselves.
	MemoryBudget int64
	// MaxTensorBytes, when > 0, lowers the per-tensor size limit
	// (graph.MaxTensorBytes) for this model: its weights, declared and
	// inferred sizes and every buffer its runs allocate.
	MaxTensorBytes int64
}

// OnUnavailable is the policy for a backend that becomes unavailable at run time.
type OnUnavailable int

const (
	// FailRun returns the backend's Unavailable error from Run.
	FailRun OnUnavailable = iota
	// ReplaceOnCPU moves the partition to the fallback backend (the
	// reference kernels by default).
	ReplaceOnCPU
)

// UnsupportedError lists everything in a model Switchyard cannot run.
type UnsupportedError struct {
	Ops    []string // "ai.onnx:Foo(opset 13)", sorted, each once
	Others []string // unsupported dtypes or value kinds
}

func (e *UnsupportedError) Error() string {
	var parts []string
	if len(e.Ops) > 0 {
		parts = append(parts, fmt.Sprintf("unsupported ops: %s", strings.Join(e.Ops, ", ")))
	}
	if len(e.Others) > 0 {
		parts = append(parts, strings.Join(e.Others, "; "))
	}
	return "runtime: model cannot run: " + strings.Join(parts, "; ")
}

// Unwrap makes errors.Is(err, kernels.ErrUnsupported) true.
func (e *UnsupportedError) Unwrap() error { return kernels.ErrUnsupported }

// Model is a loaded, validated model ready to Run.
type Model struct {
	ir    *graph.Model
	prog  *exec.Program
	plan  *partitioner.Plan
	parts []*compiledPartition
	// bodyParts are the partitions compiled inside control-flow bodies,
	// bodyNodes the control-flow nodes the executed graph runs instead of
	// the model's (their bodies placed per node), bodyOver the kernels of
	// the bodies' stand-ins (bodies.go)
	bodyParts []*compiledPartition
	bodyNodes map[*graph.Node]*graph.Node
	bodyOver  map[*graph.Node]kernels.Func
	inputs    []graph.ValueInfo
	outputs   []graph.ValueInfo
	types     map[string]graph.ValueType // inferred types of all values of the main graph

	cacheHits     atomic.Int64 // partitions imported from Options.CompileCache
	budget        *exec.Budget
	limit         int64 // per-tensor byte limit
	life          *life
	fallback      *fallback
	slots         []*slot // devices whose memory values stay in between partitions
	onUnavailable OnUnavailable

	// idle are run states kept for later runs (their maps cleared)
	idleMu sync.Mutex
	idle   []*runState
	// idleOne is one more idle run state, taken and put back without
	// idleMu (one atomic swap a run instead of two lock pairs)
	idleOne atomic.Pointer[runState]
}

// RunOptions and NodeTiming are those of the executor.
type (
	RunOptions = exec.RunOptions
	NodeTiming = exec.NodeTiming
)

// Stats describes one run: the executor's account (time, per-node
// timings, buffers) and the transfers between host and device memory.
type Stats struct {
	exec.Stats
	// Uploads and Downloads count the host↔device copies of the run,
	// UploadBytes and DownloadBytes their bytes.
	Uploads, Downloads         int
	UploadBytes, DownloadBytes int64
	// Declined counts partition calls declined at run time (run on the
	// fallback instead).
	Declined int
	// Reruns counts restarts of the run after a device was lost and its
	// partitions were re-placed (OnUnavailable: ReplaceOnCPU).
	Reruns int
	// DeviceOps are the uploads, executions and downloads of a profiled
	// run, one track per device (see WriteChromeTrace).
	DeviceOps []DeviceOp
}

// DeviceOp is one operation on a device in a profiled run.
type DeviceOp struct {
	Kind   string // "upload", "execute", "download"; "declined": a call run on the fallback instead
	Device string // "backend:index" (the fallback's name for "declined")
	Name   string // the value moved or the partition run
	Bytes  int64
	// Start (since the run began) and Duration come from the device's
	// timestamps when DeviceClock, else from the host: from the call until
	// the host saw its fence signalled.
	Start, Duration time.Duration
	DeviceClock     bool
	Kernels         []DeviceKernel // per internal kernel, from the device's profile
}

// DeviceKernel is one internal kernel of a device call.
type DeviceKernel struct {
	Name            string
	Nodes           []string // the graph nodes it computes
	Start, Duration time.Duration
}

// run executes the model with a residency table: each attempt has its
// own residency table, freed when it ends. A device lost during the run
// (Unavailable) under ReplaceOnCPU re-places every partition of that
// device on the fallback and runs again from the start (the inputs are
// the caller's host tensors). own says ctx cannot be cancelled: the run
// gets the runState's own context (runCtx) instead of a derived one. The
// inputs are by name, or by position when pos is set (RunBound: the
// outputs too, and run returns no map). st, when set, receives the run's
// statistics.
func (m *Model) run(ctx context.Context, own bool, inputs map[string]*graph.Tensor, pos *boundIO, opts RunOptions, st *Stats, sess *Session) (map[string]*graph.Tensor, error) {
	for attempt := 0; ; attempt++ {
		rs := m.runState(opts.Profile)
		rs.sess = sess
		var rctx context.Context
		if own {
			rs.ctx = runCtx{Context: ctx, rs: rs, closing: m.life.closing}
			rctx = &rs.ctx
		} else {
			rctx = context.WithValue(ctx, runKey{}, rs)
		}
		var est *exec.Stats
		if st != nil {
			est = &st.Stats
		}
		var out map[string]*graph.Tensor
		var err error
		if pos != nil {
			err = m.prog.RunBoundWith(rctx, pos.ins, pos.outs, opts, est)
		} else {
			out, err = m.prog.RunWith(rctx, inputs, opts, est)
		}
		var ops []DeviceOp
		if err == nil && opts.Profile {
			ops = rs.collect(ctx)
		}
		rs.release()
		if sess != nil {
			sess.tr.add(Transfers{rs.uploads, rs.downloads, rs.uploadBytes, rs.downBytes})
		}
		if err != nil {
			lost, lostErr := rs.lost, rs.lostErr
			m.putRunState(rs)
			if lost != nil && m.onUnavailable == ReplaceOnCPU && attempt < len(m.slots) && ctx.Err() == nil {
				if rerr := m.replaceSlot(ctx, lost, lostErr); rerr != nil {
					return nil, fmt.Errorf("%w (re-placing the partitions of %s on %s failed: %v)", err, lost.name, m.fallback.name, rerr)
				}
				if sess == nil {
					continue
				}
				// a session's run is not repeated: its state may have
				// been written in part (or lived on the lost device)
			}
			if sess != nil && lost != nil {
				if sv := sess.onLostSlot(lost); sv != nil {
					return nil, fmt.Errorf("runtime: session state %q lived on %s: %w: %w", sv.pair.Input, lost.name, ErrStateLost, err)
				}
				return nil, fmt.Errorf("%w (the session's state may have been written in part: %w)", err, ErrStateInvalid)
			}
			return nil, err
		}
		if st != nil {
			st.Uploads, st.Downloads, st.UploadBytes, st.DownloadBytes = rs.uploads, rs.downloads, rs.uploadBytes, rs.downBytes
			st.Declined, st.Reruns, st.DeviceOps = rs.declined, attempt, ops
		}
		m.putRunState(rs)
		return out, nil
	}
}

// Load reads a model file in any registered format (formats) and
// prepares it.
func Load(ctx context.Context, path string, opts *Options) (*Model, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ir, err := formats.LoadFile(path, formats.Options{MaxTensorBytes: opts.maxTensorBytes()})
	if err != nil {
		return nil, err
	}
	return Prepare(ctx, ir, opts)
}

// LoadBytes decodes a serialized model and prepares it. The bytes are
// referenced by the model's weights and must not be modified afterwards.
func LoadBytes(ctx context.Context, data []byte, opts *Options) (*Model, error) {
	ir, err := formats.Decode(data, "", formats.Options{MaxTensorBytes: opts.maxTensorBytes()})
	if err != nil {
		return nil, err
	}
	return Prepare(ctx, ir, opts)
}

func (o *Options) maxTensorBytes() int64 {
	if o == nil {
		return 0
	}
	return o.MaxTensorBytes
}

// LoadDir loads DIR/model.onnx (the ONNX test layout).
func LoadDir(ctx context.Context, dir string, opts *Options) (*Model, error) {
	return Load(ctx, filepath.Join(dir, "model.onnx"), opts)
}

// Prepare validates an imported model and plans its execution. On any
// error it returns a nil model, having released everything it compiled.
func Prepare(ctx context.Context, ir *graph.Model, opts *Options) (*Model, error) {
	if opts == nil {
		opts = &Options{}
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if ir == nil {
		return nil, fmt.Errorf("runtime: %w: no model", kernels.ErrInvalid)
	}
	if err := checkOpsets(ir); err != nil {
		return nil, err
	}
	if err := ir.Validate(); err != nil {
		return nil, err
	}
	ir = constantInitializerInputs(ir)
	// fold constants and drop dead nodes before placement, so backends see
	// weights as constants and are never handed dead partitions
	// (Shape and Size of values of static inferred shape are constants too)
	simple, err := exec.SimplifyTyped(ir.Graph, ir.Opsets, inferTypes(ir))
	if err != nil {
		return nil, err
	}
	folded := *ir
	folded.Graph = simple
	ir = &folded
	m := &Model{ir: ir, onUnavailable: opts.OnUnavailable, life: newLife(), limit: graph.EffectiveLimit(opts.MaxTensorBytes)}
	budget := opts.MemoryBudget
	if budget == 0 {
		budget = DefaultMemoryBudget()
	}
	m.budget = exec.NewBudget(budget) // negative: accounted, unlimited
	if err := m.prepare(ctx, opts); err != nil {
		_ = m.Close()
		return nil, err
	}
	return m, nil
}

func (m *Model) prepare(ctx context.Context, opts *Options) error {
	ir := m.ir
	m.types = inferTypes(ir)
	// sizes first: no backend is asked to compile (and allocate for) a
	// model whose declared or inferred sizes could never run
	if err := m.checkSizes(); err != nil {
		return err
	}
	if err := m.place(ctx, opts); err != nil {
		return err
	}
	g := ir.Graph
	// an input with an initializer is an input with a default value (ONNX
	// IR >= 4; constantInitializerInputs made older models' constants)
	m.inputs = append(m.inputs, g.Inputs...)
	m.outputs = append(m.outputs, g.Outputs...)
	for i, o := range m.outputs {
		if o.Type.DType == graph.Undefined {
			m.outputs[i].Type = m.types[o.Name]
		}
	}
	return ctx.Err()
}

// maxPlausibleOpset: an opset version above this, in any domain, is not a
// real ONNX release (the newest default-domain opset Switchyard knows is
// kernels.MaxKnownOpset; ONNX adds one or two a year).
const maxPlausibleOpset = kernels.MaxKnownOpset + 100

// checkOpsets refuses opset imports no ONNX release ever had.
func checkOpsets(ir *graph.Model) error {
	for _, o := range ir.Opsets {
		if o.Version < 0 || o.Version > maxPlausibleOpset {
			d := o.Domain
			if d == "" {
				d = "ai.onnx"
			}
			return fmt.Errorf("runtime: %w: the model imports opset %d of domain %q, which no ONNX release has (the newest ai.onnx opset known is %d; versions above %d are refused)",
				kernels.ErrInvalid, o.Version, d, kernels.MaxKnownOpset, maxPlausibleOpset)
		}
	}
	return nil
}

// checkSizes refuses, before anything is compiled or allocated, weights,
// declared inputs and inferred values whose static size exceeds the
// per-tensor limit, and (with a budget) any single value larger than the
// whole budget.
func (m *Model) checkSizes() error {
	g := m.ir.Graph
	for _, name := range sortedTensorNames(g.Initializers) {
		t := g.Initializers[name]
		if _, err := graph.CheckAllocLimit(t.DType, t.Shape, m.limit); err != nil {
			return fmt.Errorf("runtime: weight %q: %w", name, err)
		}
	}
	for _, in := range g.Inputs {
		if _, isInit := g.Initializers[in.Name]; isInit {
			continue
		}
		if err := m.checkStatic(in.Type, func() string { return fmt.Sprintf("input %q declares", in.Name) }); err != nil {
			return err
		}
	}
	for _, n := range g.Nodes {
		for _, o := range n.Outputs {
			if o == "" {
				continue
			}
			t, ok := m.types[o]
			if !ok {
				continue
			}
			if err := m.checkStatic(t, func() string { return fmt.Sprintf("value %q (output of %s) would be", o, n.Label()) }); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *Model) checkStatic(t graph.ValueType, what func() string) error {
	dims, ok := t.Shape.Ints()
	if !ok || !t.DType.Supported() {
		return nil
	}
	n, err := graph.CheckAllocLimit(t.DType, dims, m.limit)
	if err != nil {
		return fmt.Errorf("runtime: %s %v%v: %w", what(), t.DType, t.Shape, err)
	}
	es := int64(t.DType.Size())
	if t.DType == graph.String {
		es = 16
	}
	if lim := m.budget.Limit(); lim > 0 && int64(n)*es > lim {
		return fmt.Errorf("runtime: %s %v%v (%s), more than the model's whole memory budget of %s: %w",
			what(), t.DType, t.Shape, exec.FormatBytes(int64(n)*es), exec.FormatBytes(lim), kernels.ErrResourceExhausted)
	}
	return nil
}

func sortedTensorNames(m map[string]*graph.Tensor) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// CheckSupported walks every graph and lists all unsupported ops and types
// in one *UnsupportedError (nil when everything is supported).
func CheckSupported(ir *graph.Model) error {
	ops := map[string]bool{}
	others := map[string]bool{}
	var invalid []string
	var walk func(g *graph.Graph)
	walk = func(g *graph.Graph) {
		for _, vi := range append(append([]graph.ValueInfo{}, g.Inputs...), g.Outputs...) {
			if vi.Type.Kind != "" && vi.Type.Kind != "tensor" {
				others[fmt.Sprintf("value %q has %s type", vi.Name, vi.Type.Kind)] = true
			} else if vi.Type.DType != graph.Undefined && !vi.Type.DType.Supported() {
				others[fmt.Sprintf("value %q has dtype %v", vi.Name, vi.Type.DType)] = true
			}
		}
		for _, n := range g.Nodes {
			opset := ir.OpsetVersion(n.Domain)
			if err := kernels.CheckNode(n, opset); err != nil {
				if errors.Is(err, kernels.ErrUnsupported) {
					d := n.Domain
					if d == "" {
						d = "ai.onnx"
					}
					ops[fmt.Sprintf("%s:%s(opset %d)", d, n.OpType, opset)] = true
				} else {
					invalid = append(invalid, err.Error())
				}
			}
			for _, sg := range n.Subgraphs() {
				walk(sg)
			}
		}
	}
	walk(ir.Graph)
	if len(ops) > 0 || len(others) > 0 {
		e := &UnsupportedError{Ops: sortedKeys(ops), Others: sortedKeys(others)}
		return e
	}
	if len(invalid) > 0 {
		return fmt.Errorf("runtime: %w: %s", kernels.ErrInvalid, strings.Join(invalid, "; "))
	}
	return nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// IR returns the imported model (read-only).
func (m *Model) IR() *graph.Model { return m.ir }

// Inputs lists the inputs a caller must (or, with an initializer default,
// may) provide; HasDefault says which have a default.
func (m *Model) Inputs() []graph.ValueInfo { return append([]graph.ValueInfo{}, m.inputs...) }

// HasDefault reports whether input name has a default value (an
// initializer of the same name): a run may omit it, and one that feeds it
// overrides the default.
func (m *Model) HasDefault(name string) bool {
	_, ok := m.ir.Graph.Initializers[name]
	return ok && slices.ContainsFunc(m.inputs, func(v graph.ValueInfo) bool { return v.Name == name })
}

// constantInitializerInputs returns ir with the graph inputs that have an
// initializer removed from its inputs when ir's IR version is 1 to 3:
// those versions list every weight among the inputs, and an initializer
// there is the weight, not an overridable default (ONNX Runtime reads them
// so too). From IR version 4 (and for models built in Go, version 0) such
// an input keeps its initializer as its default value.
func constantInitializerInputs(ir *graph.Model) *graph.Model {
	g := ir.Graph
	if ir.IRVersion <= 0 || ir.IRVersion >= 4 {
		return ir
	}
	var ins []graph.ValueInfo
	for _, in := range g.Inputs {
		if _, isInit := g.Initializers[in.Name]; !isInit {
			ins = append(ins, in)
		}
	}
	if len(ins) == len(g.Inputs) {
		return ir
	}
	cg, cm := *g, *ir
	cg.Inputs, cm.Graph = ins, &cg
	return &cm
}

// Outputs lists the model outputs in order.
func (m *Model) Outputs() []graph.ValueInfo { return append([]graph.ValueInfo{}, m.outputs...) }
