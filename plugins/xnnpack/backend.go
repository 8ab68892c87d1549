// Package xnnpack is a HAL backend named "xnnpack" that runs float32
// partitions on Google's XNNPACK (libXNNPACK.so.0, as Debian 12 ships it),
// reached at run time through purego — no cgo. Importing the package
// registers it with hal.Default; Open reports Unavailable, naming every
// missing library and its Debian package, where XNNPACK, pthreadpool or
// libffi are not installed.
//
// Contracts:
//   - Supports claims a node only when it is mapped exactly (op, attribute
//     values, dtype, rank, constant weights); every decline names why.
//   - Compile lowers a partition to one XNNPACK runtime (subgraph API),
//     packing weights then; a partition whose input shapes are symbolic, or
//     whose weights arrive as inputs (from Constant nodes left on cpu), is
//     lowered at its first run for those shapes, and such captured weights
//     are compared on every run (a change re-lowers). Shapes known only at
//     run time that XNNPACK cannot take (an empty dimension, say) are
//     declined with hal.ErrDeclined naming them: the runtime runs that call
//     elsewhere, visibly. No tensor larger than graph.MaxTensorBytes reaches
//     malloc or XNNPACK (ResourceExhausted wrapping graph.ErrTooLarge).
//   - The graph is NCHW; XNNPACK works in NHWC. Layouts change only at the
//     partition boundary (and in weights, at compile), never per op:
//     Transpose inside a partition is a relabelling.
//   - Execute is safe for concurrent use: each concurrent caller gets its own
//     runtime instance.
//   - Close may come while executables are live or running: it refuses new
//     calls (FailedPrecondition "xnnpack: device closed"), waits for calls
//     inside C, then frees every runtime and thread pool.
//   - Threads: CompileOptions.Threads, else Options.Threads, else
//     SWITCHYARD_XNNPACK_THREADS, else GOMAXPROCS less the cores other
//     processes run on at creation (at least 1).
//   - Int8 (switchyard.quant, NHWC) is opt-in: Options.Int8 or
//     SWITCHYARD_XNNPACK_INT8=1. XNNPACK requantises in float32 (round to
//     nearest even), so its int8 results are within one quantisation step
//     per op of the TFLite-exact reference kernels, not bit-identical; an
//     int8 executable reports PrecisionInt8, which the placement report
//     shows. Without the opt-in every int8 node is declined with that
//     reason and runs on the reference kernels. See quant.go.
package xnnpack

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/switchyard-hal/switchyard/core/graph"
	_ "github.com/switchyard-hal/switchyard/core/ops/all" // operator schemas and shape inference
	shapeops "github.com/switchyard-hal/switchyard/core/ops/shape"
	"github.com/switchyard-hal/switchyard/hal"
)

// Name is the backend's registry name.
const Name = "xnnpack"

// Version is the backend's own version.
const Version = "0.1.0"

// Options locate the libraries and set the thread count. Empty fields take
// the defaults.
type Options struct {
	Library           string // default "libXNNPACK.so.0"
	ThreadPoolLibrary string // default "libpthreadpool.so.0"
	FFILibrary        string // default "libffi.so.8"
	CLibrary          string // default "libc.so.6"
	// Threads for every executable (0: SWITCHYARD_XNNPACK_THREADS, else the
	// idle cores).
	Threads int
	// Int8 takes switchyard.quant (int8) nodes on XNNPACK's qs8 kernels
	// (also SWITCHYARD_XNNPACK_INT8=1). Off by default: XNNPACK's fp32
	// requantisation differs from the TFLite-exact reference by up to one
	// quantisation step per op; see quant.go and PrecisionInt8.
	Int8 bool
}

// The default library names (variables only so that the package's tests
// can make the vendor libraries unfindable; see export_test.go).
var (
	defaultLibrary           = "libXNNPACK.so.0"
	defaultThreadPoolLibrary = "libpthreadpool.so.0"
	defaultFFILibrary        = "libffi.so.8"
)

func (o Options) withDefaults() Options {
	if o.Library == "" {
		o.Library = defaultLibrary
	}
	if o.ThreadPoolLibrary == "" {
		o.ThreadPoolLibrary = defaultThreadPoolLibrary
	}
	if o.FFILibrary == "" {
		o.FFILibrary = defaultFFILibrary
	}
	if o.CLibrary == "" {
		o.CLibrary = "libc.so.6"
	}
	return o
}

// Info describes the backend.
func Info() hal.Info {
	return hal.Info{
		Name: Name, Vendor: "Google XNNPACK (via Switchyard)", Version: Version,
		HAL:         hal.VersionRange{Min: hal.Version{Major: 1}, Max: hal.Current},
		Device:      hal.DeviceCPU,
		Description: fmt.Sprintf("XNNPACK float32 (and, opted in, int8 qs8/qc8) CPU kernels through purego, %s/%s", runtime.GOOS, runtime.GOARCH),
	}
}

// Factory returns a registry entry opening the backend with opts.
func Factory(opts Options) hal.Factory {
	return hal.Factory{Info: Info(), Kind: hal.LoadLibrary, Open: func(ctx context.Context) (hal.Backend, error) { return New(ctx, opts) }}
}

func init() {
	if err := hal.Register(Factory(Options{})); err != nil {
		panic(err)
	}
}

// Backend runs partitions on XNNPACK.
type Backend struct {
	lib     *lib
	opts    Options
	threads int

	mu      sync.Mutex
	closed  bool
	pools   map[int]uintptr           // pthreadpools by thread count
	exes    map[*Executable]struct{}  // live (not released) executables
	qexes   map[*qExecutable]struct{} // live int8 executables
	calls   sync.WaitGroup            // calls that may be inside C (see enter)
	closing atomic.Bool               // set first by Close: running stages stop
}

// New opens the libraries (once per process) and initialises XNNPACK.
func New(ctx context.Context, opts Options) (*Backend, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	l, err := loadLib(opts)
	if err != nil {
		return nil, hal.Errorf(hal.CodeUnavailable, "%v", err)
	}
	return &Backend{lib: l, opts: opts, threads: defaultThreads(opts.Threads), pools: map[int]uintptr{}, exes: map[*Executable]struct{}{}, qexes: map[*qExecutable]struct{}{}}, nil
}

// defaultThreads: explicit, then the environment, then GOMAXPROCS (as
// native: a process held to one core gets one thread from every backend,
// and placement compares backends at the same thread count), less the
// cores other processes are running on right now. XNNPACK's thread pool
// waits at every operator for each worker, so a worker that a busy core
// deschedules stalls the whole run: yolox_nano at 2 threads measured
// 48–470 ms with the machine loaded (native, whose pool lets the caller
// take the work a worker has not started, 17 ms). The cores are counted
// from the processes running at this moment (/proc/loadavg), not the
// load average: a benchmark's own earlier runs kept the 1-minute average
// at 1 on a two-core machine, so XNNPACK ran one thread where native and
// ONNX Runtime ran two, and placement priced it so.
func defaultThreads(explicit int) int {
	if explicit > 0 {
		return explicit
	}
	if s := os.Getenv("SWITCHYARD_XNNPACK_THREADS"); s != "" {
		if v, err := strconv.Atoi(s); err == nil && v > 0 {
			return v
		}
	}
	n := runtime.GOMAXPROCS(0)
	if busy, ok := busyCores(); ok {
		n = min(n, runtime.NumCPU()-busy)
	}
	return max(n, 1)
}

// busyCores counts the processes running now besides this one: the
// fewest of a few samples of /proc/loadavg's running count (which counts
// the reader itself) a millisecond apart.
func busyCores() (int, bool) {
	best, ok := 0, false
	for i := 0; i < 3; i++ {
		if i > 0 {
			time.Sleep(time.Millisecond)
		}
		b, err := os.ReadFile("/proc/loadavg")
		if err != nil {
			return 0, false
		}
		f := strings.Fields(string(b))
		if len(f) < 4 {
			return 0, false
		}
		run, _, found := strings.Cut(f[3], "/")
		v, err := strconv.Atoi(run)
		if !found || err != nil || v < 1 {
			return 0, false
		}
		if !ok || v-1 < best {
			best, ok = v-1, true
		}
	}
	return best, ok
}

func (b *Backend) Info() hal.Info { return Info() }

// Threads is the default thread count of the backend's executables.
func (b *Backend) Threads() int { return b.threads }

// Capabilities lists the mapped ops (float32; int8 ones when opted in).
func (b *Backend) Capabilities(ctx context.Context) (hal.Capabilities, error) {
	var caps hal.Capabilities
	f32 := []graph.DType{graph.Float32}
	ops := make([]string, 0, len(mappedOps))
	for op := range mappedOps {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	for _, op := range ops {
		caps.Ops = append(caps.Ops, hal.OpCapability{OpType: op, DTypes: f32, MaxRank: mappedOps[op]})
	}
	if int8OptIn(b.opts.Int8) {
		for _, op := range []string{"Conv2D", "DepthwiseConv2D", "FullyConnected", "Add", "Mean", "Logistic"} {
			caps.Ops = append(caps.Ops, hal.OpCapability{Domain: quantDomain, OpType: op, DTypes: []graph.DType{graph.Int8}, MaxRank: 4})
		}
	}
	caps.Layouts = []string{"NCHW (converted to NHWC at partition boundaries)", "NHWC int8 (switchyard.quant, opt-in: fp32 requantisation, within 1 step per op of the reference)"}
	return caps, nil
}

// Supports gives a verdict for every node.
func (b *Backend) Supports(ctx context.Context, sg *hal.Subgraph) ([]hal.Verdict, error) {
	ti := newGraphInfo(sg)
	out := make([]hal.Verdict, len(sg.Graph.Nodes))
	for i, n := range sg.Graph.Nodes {
		r := ""
		if isQuantNode(n, ti) {
			r = checkQuant(n, ti, int8OptIn(b.opts.Int8))
		} else {
			r = check(n, sg.OpsetVersion(n.Domain), ti)
		}
		if r != "" {
			out[i] = hal.Verdict{Reason: r}
		} else {
			out[i] = hal.Verdict{Supported: true}
		}
	}
	return out, nil
}

// pool returns the shared pthreadpool for a thread count (0 = none: run on
// the calling thread).
func (b *Backend) pool(threads int) (uintptr, error) {
	if threads <= 1 {
		return 0, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, errClosed()
	}
	if p, ok := b.pools[threads]; ok {
		return p, nil
	}
	p := b.lib.poolCreate(uintptr(threads))
	if p == 0 {
		return 0, hal.Errorf(hal.CodeResourceExhausted, "xnnpack: pthreadpool_create(%d) failed", threads)
	}
	b.pools[threads] = p
	return p, nil
}

// graphInfo is what Supports knows: inferred types and constants.
type graphInfo struct {
	types  map[string]graph.ValueType
	consts map[string]*graph.Tensor
}

func newGraphInfo(sg *hal.Subgraph) *graphInfo {
	g := sg.Graph
	gi := &graphInfo{types: map[string]graph.ValueType{}, consts: map[string]*graph.Tensor{}}
	for _, vi := range g.Inputs {
		gi.types[vi.Name] = vi.Type
	}
	for _, vi := range g.ValueInfo {
		gi.types[vi.Name] = vi.Type
	}
	for _, vi := range g.Outputs {
		if vi.Type.DType != graph.Undefined {
			gi.types[vi.Name] = vi.Type
		}
	}
	for name, t := range g.Initializers {
		gi.types[name] = graph.ValueType{Kind: "tensor", DType: t.DType, Shape: graph.StaticShape(t.Shape...)}
		gi.consts[name] = t
	}
	// Constant nodes are constants too; every other type comes from the
	// runtime (hal.Subgraph's ValueInfo), never re-inferred here.
	for _, n := range g.Nodes {
		if n.OpType == "Constant" && n.Domain == "" && len(n.Outputs) == 1 {
			if t, err := shapeops.ConstantValue(n); err == nil {
				gi.consts[n.Outputs[0]] = t
			}
		}
	}
	return gi
}

func (gi *graphInfo) typeOf(name string) graph.ValueType { return gi.types[name] }
func (gi *graphInfo) constant(name string) *graph.Tensor { return gi.consts[name] }
func (gi *graphInfo) isConst(name string) bool           { return gi.consts[name] != nil }
