package switchyard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/switchyard-hal/switchyard/core/exec"
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/formats"
	_ "github.com/switchyard-hal/switchyard/formats/all" // every importer
	"github.com/switchyard-hal/switchyard/hal"
	"github.com/switchyard-hal/switchyard/internal/onnxtest"
	"github.com/switchyard-hal/switchyard/partitioner"
	"github.com/switchyard-hal/switchyard/partitioner/htmlreport"
	"github.com/switchyard-hal/switchyard/runtime"
)

// ValueInfo describes a model input or output.
type ValueInfo struct {
	Name  string
	DType DType // Undefined (0) when the model does not say
	// Shape is the declared shape, -1 for a symbolic or unknown dimension
	// (Dims names the symbolic ones); nil when the rank is unknown.
	Shape []int
	Dims  []string
	// Optional: the input has a default (an initializer) and may be
	// omitted.
	Optional bool
}

func (v ValueInfo) String() string { return v.Name + ": " + v.typeString() }

// typeString is "float32[1 3 N 224]".
func (v ValueInfo) typeString() string {
	if v.Shape == nil {
		return fmt.Sprintf("%v[?]", v.DType)
	}
	ds := make([]string, len(v.Shape))
	for i, d := range v.Shape {
		switch {
		case d >= 0:
			ds[i] = fmt.Sprint(d)
		case v.Dims[i] != "":
			ds[i] = v.Dims[i]
		default:
			ds[i] = "?"
		}
	}
	return fmt.Sprintf("%v[%s]", v.DType, strings.Join(ds, " "))
}

// Model is a loaded model. Run is safe for concurrent use by any number of
// goroutines.
type Model struct {
	rt         *runtime.Model
	eng        *Engine
	ownsEngine bool
	name       string
	inputs     []ValueInfo
	byName     map[string]int
	outputs    []ValueInfo
	outByName  map[string]int
	examples   Tensors
	profile    bool
	onRun      func(string, *Stats)
}

// Open loads a model on the engine's backends. path is a model file in any
// format the module reads (formats.Names: .onnx and the others), or a
// directory in the ONNX test layout (its model.onnx; the inputs of its
// test_data_set_0 become ExampleInputs). opts gives the model's fields of
// OpenOptions (import, name, profiling); nil takes those given to
// NewEngine, and an engine field set in opts is refused (ErrInvalid).
func (e *Engine) Open(ctx context.Context, path string, opts *OpenOptions) (*Model, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	mo, err := e.modelOptions("Engine.Open", opts)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("switchyard: %w", err)
	}
	file, name := path, filepath.Base(filepath.Clean(path))
	if st.IsDir() {
		file = filepath.Join(path, "model.onnx")
	}
	if mo.Name != "" {
		name = mo.Name
	}
	if err := e.check(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("switchyard: %w", err)
	}
	ir, err := formats.LoadFile(file, e.formatOptions(mo))
	if err != nil {
		return nil, fmt.Errorf("switchyard: %s: %w", file, err)
	}
	m, err := e.prepare(ctx, ir, name, mo)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		if ins, err := onnxtest.ReadSet(filepath.Join(path, "test_data_set_0"), "input"); err == nil {
			m.examples = Tensors{}
			for i, t := range ins {
				if i < len(m.inputs) {
					m.examples[m.inputs[i].Name] = wrap(t)
				}
			}
		}
	}
	return m, nil
}

// OpenBytes loads a serialized model on the engine's backends, as Open
// does a file (opts.Name names it, default "model"; its extension, if
// any, helps recognise formats without magic bytes, ONNX being assumed
// otherwise). The model's weights refer to data, which must not be
// modified while it is open.
func (e *Engine) OpenBytes(ctx context.Context, data []byte, opts *OpenOptions) (*Model, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	mo, err := e.modelOptions("Engine.OpenBytes", opts)
	if err != nil {
		return nil, err
	}
	if err := e.check(); err != nil {
		return nil, err
	}
	ir, err := formats.Decode(data, mo.Name, e.formatOptions(mo))
	if err != nil {
		return nil, fmt.Errorf("switchyard: %w", err)
	}
	name := mo.Name
	if name == "" {
		name = "model"
	}
	return e.prepare(ctx, ir, name, mo)
}

// modelOptions are the options a model is opened with: opts, or the
// engine's when nil. opts may not set engine fields (the engine is open).
func (e *Engine) modelOptions(op string, opts *OpenOptions) (*OpenOptions, error) {
	if opts == nil {
		return &e.opts, nil
	}
	if f := opts.engineField(); f != "" {
		return nil, fmt.Errorf("switchyard: %s: OpenOptions.%s configures the engine; give it to NewEngine: %w", op, f, ErrInvalid)
	}
	return opts, nil
}

// formatOptions are the importers' options for a model opened with mo.
func (e *Engine) formatOptions(mo *OpenOptions) formats.Options {
	return formats.Options{MaxTensorBytes: e.loadLimit(), Method: mo.Method, DataFiles: mo.DataFiles, ContextLength: mo.ContextLength, KVCache: mo.KVCache, Precision: string(e.opts.Precision), Dequantize: mo.Dequantize}
}

func (e *Engine) prepare(ctx context.Context, ir *graph.Model, name string, mo *OpenOptions) (*Model, error) {
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("switchyard: engine: %w", ErrClosed)
	}
	ro := e.runtimeOptions()
	if e.opts.Precision == "" {
		// the format's default when the caller chose none: a quantized
		// GGUF decoder computes its products on int8 activations (as
		// llama.cpp does); the plan's partitions say so
		if p, ok := ir.Metadata[formats.MetaPrecision]; ok {
			ro.Compile.Precision = hal.Precision(p)
		}
	}
	rt, err := runtime.Prepare(ctx, ir, ro)
	if err != nil {
		return nil, loadError(ir, err)
	}
	m := &Model{rt: rt, eng: e, name: name, byName: map[string]int{}, outByName: map[string]int{}, profile: mo.Profile, onRun: mo.OnRun}
	for _, in := range rt.Inputs() {
		vi := valueInfo(in)
		_, vi.Optional = ir.Graph.Initializers[in.Name]
		m.byName[in.Name] = len(m.inputs)
		m.inputs = append(m.inputs, vi)
	}
	for _, out := range rt.Outputs() {
		m.outByName[out.Name] = len(m.outputs)
		m.outputs = append(m.outputs, valueInfo(out))
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		_ = rt.Close()
		return nil, fmt.Errorf("switchyard: engine: %w", ErrClosed)
	}
	e.models[m] = struct{}{}
	e.mu.Unlock()
	return m, nil
}

// loadError names the nodes of every unsupported op.
func loadError(ir *graph.Model, err error) error {
	var ue *runtime.UnsupportedError
	if !errors.As(err, &ue) {
		var pe *partitioner.UnplacedError
		if errors.As(err, &pe) {
			return &unplacedError{err}
		}
		return fmt.Errorf("switchyard: %w", err)
	}
	out := &UnsupportedError{Others: ue.Others, err: err}
	for _, op := range ue.Ops {
		u := UnsupportedOp{Op: op}
		// "domain:Type(opset N)": match the node's op type and domain
		dom, rest, _ := strings.Cut(op, ":")
		typ, _, _ := strings.Cut(rest, "(")
		for i, n := range ir.Graph.Nodes {
			d := n.Domain
			if d == "" {
				d = "ai.onnx"
			}
			if n.OpType == typ && (d == dom || n.Domain == dom) {
				nm := n.Name
				if nm == "" {
					nm = fmt.Sprintf("#%d", i)
				}
				u.Nodes = append(u.Nodes, nm)
			}
		}
		out.Ops = append(out.Ops, u)
	}
	return out
}

// unplacedError is strict mode's refusal: errors.Is ErrUnsupported, and
// errors.As a *partitioner.UnplacedError listing the nodes and every
// backend's reason.
type unplacedError struct{ err error }

func (e *unplacedError) Error() string   { return "switchyard: " + e.err.Error() }
func (e *unplacedError) Unwrap() []error { return []error{e.err, ErrUnsupported} }

func valueInfo(in graph.ValueInfo) ValueInfo {
	vi := ValueInfo{Name: in.Name, DType: DType(in.Type.DType)}
	if in.Type.Shape != nil {
		vi.Shape = make([]int, len(in.Type.Shape))
		vi.Dims = make([]string, len(in.Type.Shape))
		for i, d := range in.Type.Shape {
			vi.Shape[i] = -1
			if d.Static() {
				vi.Shape[i] = int(d.Value)
			}
			vi.Dims[i] = d.Param
		}
	}
	return vi
}

// Name is what reports and traces call the model (its file or directory
// name, or OpenBytes's name).
func (m *Model) Name() string { return m.name }

// Inputs describes the inputs, in the model's order.
func (m *Model) Inputs() []ValueInfo { return append([]ValueInfo(nil), m.inputs...) }

// Outputs describes the outputs, in the model's order.
func (m *Model) Outputs() []ValueInfo { return append([]ValueInfo(nil), m.outputs...) }

// ExampleInputs are the inputs of the test_data_set_0 of a model opened
// from a directory in the ONNX test layout (nil otherwise).
func (m *Model) ExampleInputs() Tensors { return m.examples }

// HoldMemory accounts n bytes the caller keeps for this model outside its
// runs' buffers — a decoder's key/value caches, say — against the model's
// memory budget (OpenOptions.MemoryBudget), which its runs share; idle
// run buffers are dropped to make room. When they do not fit it returns
// an error that is ErrResourceExhausted and accounts nothing. Give them
// back with ReleaseMemory.
func (m *Model) HoldMemory(n int64) error {
	if n < 0 {
		return fmt.Errorf("switchyard: HoldMemory(%d): %w", n, ErrInvalid)
	}
	if !m.rt.HoldMemory(n) {
		st := m.rt.Memory()
		return fmt.Errorf("switchyard: %s more would exceed the model's memory budget of %s (%s held): %w",
			exec.FormatBytes(n), exec.FormatBytes(st.Budget), exec.FormatBytes(st.Held), ErrResourceExhausted)
	}
	return nil
}

// ReleaseMemory gives back n bytes accounted by HoldMemory.
func (m *Model) ReleaseMemory(n int64) { m.rt.ReleaseMemory(n) }

// Plan is the placement report: where every node runs and why, including
// partitions re-placed at run time.
func (m *Model) Plan() *Plan { return newPlan(m.rt.Plan()) }

// Engine is the engine the model was opened on.
func (m *Model) Engine() *Engine { return m.eng }

// Metadata is the model file's key/value metadata (ONNX metadata_props,
// GGUF keys such as llama.context_length, TFLite metadata), a copy.
func (m *Model) Metadata() map[string]string {
	ir := m.rt.IR()
	if ir == nil {
		return nil
	}
	out := make(map[string]string, len(ir.Metadata))
	for k, v := range ir.Metadata {
		out[k] = v
	}
	return out
}

// PlanHTML renders the placement plan as a self-contained HTML page: the
// graph with each node coloured by the backend it runs on, and the
// reasons of every decision (what `switchyard explain --html` writes).
func (m *Model) PlanHTML(title string) ([]byte, error) {
	ir := m.rt.IR()
	if ir == nil {
		return nil, fmt.Errorf("switchyard: model %s has no graph to draw", m.name)
	}
	return htmlreport.Render(ir.Graph, m.rt.Plan(), title)
}

// Run executes the model on inputs (by name; an Optional input may be
// omitted) and returns every output by name. Inputs are checked before
// anything runs: an unknown name, a missing input, a wrong dtype or shape
// fails with a *TensorError wrapping ErrUnknownInput, ErrMissingInput,
// ErrDType or ErrShape. Run honours ctx between nodes. After Close it
// fails with ErrClosed.
func (m *Model) Run(ctx context.Context, inputs Tensors) (Tensors, error) {
	if ctx == nil {
		return nil, errNilContext
	}
	if m.profile || m.onRun != nil {
		outs, _, err := m.RunWithStats(ctx, inputs, nil)
		return outs, err
	}
	if err := m.check(inputs); err != nil {
		return nil, err
	}
	inF := feeds(inputs)
	in := inF.tensors()
	outs, err := m.rt.Run(ctx, in)
	inF.release()
	if err != nil {
		return nil, runError(err)
	}
	return wrapAll(outs), nil
}

// RunWithStats is Run with the run's statistics; opts.Profile records
// per-node and per-device timings (see WriteTrace). A nil opts is the zero
// RunOptions.
func (m *Model) RunWithStats(ctx context.Context, inputs Tensors, opts *RunOptions) (Tensors, *Stats, error) {
	if ctx == nil {
		return nil, nil, errNilContext
	}
	if err := m.check(inputs); err != nil {
		return nil, nil, err
	}
	inF := feeds(inputs)
	in := inF.tensors()
	outs, st, err := m.rt.RunWithStats(ctx, in, runtime.RunOptions{Profile: m.profile || (opts != nil && opts.Profile)})
	inF.release()
	if err != nil {
		return nil, nil, runError(err)
	}
	stats := newStats(st)
	if m.onRun != nil {
		m.onRun(m.name, stats)
	}
	return wrapAll(outs), stats, nil
}

// RunInto runs the model writing the outputs named in outputs into the
// tensors given there, which must have the output's dtype and shape
// (ErrDType, ErrShape otherwise; ErrUnknownOutput for a name the model
// does not have; ErrInvalidTensor for a tensor whose Data does not fit).
// Outputs not named are dropped. An output of static declared shape is
// written in place by whatever computes it (a kernel of the engine, or a
// backend, which the HAL requires to write caller-allocated outputs in
// place); one computed on a device, or of a dynamic shape, is copied into
// the caller's tensor at the end of the run. Either way steady-state calls
// allocate nothing for the outputs. An output tensor must not share memory
// with an input, except an output the model updates in place of that
// input (a KV cache: formats/llama's SharedCache, GroupQueryAttention's
// present outputs), bound to the input's very tensor: its kernel then
// writes the new positions into it and nothing else is copied. Stats of
// the run go to OpenOptions.OnRun as for Run.
func (m *Model) RunInto(ctx context.Context, inputs, outputs Tensors) error {
	if ctx == nil {
		return errNilContext
	}
	var symBuf [8]symDim
	// the inputs and outputs by position, for a run that binds them all
	// (runBound): filled by the checks, which look every name up anyway
	var inBuf, outBuf [8]*graph.Tensor
	posIn, posOut := inBuf[:], outBuf[:]
	if len(m.inputs) > len(inBuf) {
		posIn = make([]*graph.Tensor, len(m.inputs))
	}
	if len(m.outputs) > len(outBuf) {
		posOut = make([]*graph.Tensor, len(m.outputs))
	}
	posIn, posOut = posIn[:len(m.inputs)], posOut[:len(m.outputs)]
	syms, err := m.checkSymsSkip(inputs, symBuf[:0], nil, posIn)
	if err != nil {
		return err
	}
	all := true // every tensor in outputs has data
	found := 0
	// by the model's outputs, looked up (ranging over a map draws a
	// random start each time)
	for i := range m.outputs {
		name := m.outputs[i].Name
		dst, ok := outputs[name]
		if !ok {
			continue
		}
		found++
		posOut[i] = unwrap(dst)
		if dst == nil {
			return &TensorError{Name: name, Err: ErrInvalidTensor, Got: "nil tensor"}
		}
		if err := dst.check(); err != nil {
			return &TensorError{Name: name, Err: ErrInvalidTensor, Got: err.Error()}
		}
		o := m.outputs[i]
		if o.DType != Undefined && dst.DType() != o.DType {
			return &TensorError{Name: name, Err: ErrDType, Want: o.DType.String(), Got: dst.DType().String()}
		}
		match, known := o.fits(syms, dst.t.Shape)
		if !known {
			if dst.t.Data == nil {
				all = false
			}
			continue // found out by the run: copied into dst after it, or bound on trust
		}
		if !match {
			want, _ := o.concrete(syms)
			return &TensorError{Name: name, Err: ErrShape, Want: fmt.Sprintf("%v%v", o.DType, want), Got: fmt.Sprintf("%v%v", dst.DType(), dst.t.Shape)}
		}
		all = all && dst.t.Data != nil
	}
	if found != len(outputs) {
		for name := range outputs {
			if _, ok := m.outByName[name]; !ok {
				return &TensorError{Name: name, Err: ErrUnknownOutput, Want: "one of " + m.outputNames()}
			}
		}
	}
	// The model runs once, whatever happens (a run can have effects: a
	// session's state, a cache updated in place). A tensor whose shape the
	// inputs do not determine is bound on trust when the caller allocated
	// it (a decoder's growing cache: the caller knows the size); if the
	// run computes another shape, the executor refuses it and the error
	// names the output (ErrShape).
	if all && !m.profile && m.onRun == nil {
		// every result goes into the caller's tensors: no map, no stats,
		// nothing looked up by name again
		return intoError(m.rt.RunBound(ctx, posIn, posOut))
	}
	var into map[string]*graph.Tensor
	for name, dst := range outputs {
		if _, known := m.outputs[m.outByName[name]].fits(syms, dst.t.Shape); !known && dst.t.Data == nil {
			continue
		}
		if into == nil {
			into = map[string]*graph.Tensor{}
		}
		into[name] = unwrap(dst)
	}
	inF := feeds(inputs)
	in := inF.tensors()
	outs, st, err := m.rt.RunWithStats(ctx, in, runtime.RunOptions{Profile: m.profile, Into: into})
	inF.release()
	if err != nil {
		return intoError(err)
	}
	for name, dst := range outputs {
		if into[name] != nil && outs[name] == unwrap(dst) {
			continue // written in place or copied by the executor
		}
		if err := copyInto(name, dst, outs[name]); err != nil {
			return err
		}
	}
	if m.onRun != nil {
		m.onRun(m.name, newStats(st))
	}
	return nil
}

// intoError turns a run's error into the API's: an output computed with
// another dtype or shape than the caller's tensor bound on trust is a
// *TensorError (ErrDType or ErrShape) naming it.
func intoError(err error) error {
	if err == nil {
		return nil
	}
	var om *exec.OutputMismatchError
	if errors.As(err, &om) {
		kind := ErrShape
		if om.DType != om.CallerDType {
			kind = ErrDType
		}
		return &TensorError{Name: om.Output, Err: kind, Want: fmt.Sprintf("%v%v", om.DType, om.Shape), Got: fmt.Sprintf("%v%v", om.CallerDType, om.CallerShape)}
	}
	return runError(err)
}

// concrete is the output's shape in a run whose inputs gave its symbolic
// dims the sizes in syms; known is false when a dim is unknown or its
// symbol appears in no input.
func (v ValueInfo) concrete(syms []symDim) (shape []int, known bool) {
	if v.Shape == nil {
		return nil, false
	}
	shape = make([]int, len(v.Shape))
	for i, d := range v.Shape {
		if d >= 0 {
			shape[i] = d
			continue
		}
		s, ok := lookupSym(syms, v.Dims[i])
		if v.Dims[i] == "" || !ok {
			return nil, false
		}
		shape[i] = s.size
	}
	return shape, true
}

// fits is concrete compared with dims, without allocating: known as for
// concrete, match whether dims is that shape.
func (v ValueInfo) fits(syms []symDim, dims []int) (match, known bool) {
	if v.Shape == nil {
		return false, false
	}
	match = len(dims) == len(v.Shape)
	for i, d := range v.Shape {
		if d < 0 {
			s, ok := lookupSym(syms, v.Dims[i])
			if v.Dims[i] == "" || !ok {
				return false, false
			}
			d = s.size
		}
		match = match && dims[i] == d
	}
	return match, true
}

// symDim is the size a symbolic dim took, and the input it came from.
type symDim struct {
	name, input string
	size        int
}

func lookupSym(syms []symDim, name string) (symDim, bool) {
	for _, s := range syms {
		if s.name == name {
			return s, true
		}
	}
	return symDim{}, false
}

// check validates inputs against the declared inputs.
func (m *Model) check(inputs Tensors) error {
	_, err := m.checkSyms(inputs, nil)
	return err
}

// checkSyms is check, returning the sizes the symbolic dims took,
// appended to syms.
func (m *Model) checkSyms(inputs Tensors, syms []symDim) ([]symDim, error) {
	return m.checkSymsSkip(inputs, syms, nil, nil)
}

// checkSymsSkip is checkSyms where inputs for which given says true are
// supplied by someone else (a session's state) when missing. pos, when
// not nil, receives the inputs by position (len(m.inputs); nil where
// omitted).
func (m *Model) checkSymsSkip(inputs Tensors, syms []symDim, given func(string) bool, pos []*graph.Tensor) ([]symDim, error) {
	// by the model's inputs, looked up (ranging over a map draws a random
	// start each time: this runs on every run)
	found := 0
	var missing *ValueInfo
	for i := range m.inputs {
		in := &m.inputs[i]
		name := in.Name
		t, ok := inputs[name]
		if !ok {
			if missing == nil && !in.Optional && (given == nil || !given(name)) {
				missing = in
			}
			continue
		}
		found++
		if t == nil {
			return nil, &TensorError{Name: name, Err: ErrInvalidTensor, Got: "nil tensor"}
		}
		if pos != nil {
			pos[i] = &t.t
		}
		if err := t.check(); err != nil {
			return nil, &TensorError{Name: name, Err: ErrInvalidTensor, Got: err.Error()}
		}
		if in.DType != Undefined && t.DType() != in.DType {
			return nil, &TensorError{Name: name, Err: ErrDType, Want: in.DType.String(), Got: t.DType().String()}
		}
		shape := t.t.Shape
		if in.Shape != nil {
			bad := len(shape) != len(in.Shape)
			for j := 0; !bad && j < len(in.Shape); j++ {
				bad = in.Shape[j] >= 0 && shape[j] != in.Shape[j]
			}
			if bad {
				return nil, &TensorError{Name: name, Err: ErrShape, Want: in.typeString(), Got: fmt.Sprintf("%v%v", t.DType(), shape)}
			}
			// a symbolic dim takes one size across all inputs of a run
			for j, p := range in.Dims {
				if p == "" || in.Shape[j] >= 0 {
					continue
				}
				prev, ok := lookupSym(syms, p)
				if ok && prev.size != shape[j] {
					return nil, &TensorError{Name: name, Err: ErrShape,
						Want: fmt.Sprintf("%s (dim %d, %q, is %d in input %q)", in.typeString(), j, p, prev.size, prev.input),
						Got:  fmt.Sprintf("%v%v", t.DType(), shape)}
				}
				if !ok {
					syms = append(syms, symDim{p, name, shape[j]})
				}
			}
		}
	}
	if found != len(inputs) {
		for name := range inputs {
			if _, ok := m.byName[name]; !ok {
				return nil, &TensorError{Name: name, Err: ErrUnknownInput, Want: "one of " + m.inputNames()}
			}
		}
	}
	if missing != nil {
		return nil, &TensorError{Name: missing.Name, Err: ErrMissingInput, Want: missing.typeString()}
	}
	return syms, nil
}

func (m *Model) inputNames() string {
	var s []string
	for _, in := range m.inputs {
		s = append(s, fmt.Sprintf("%q", in.Name))
	}
	return strings.Join(s, ", ")
}

func (m *Model) outputNames() string {
	var s []string
	for _, o := range m.outputs {
		s = append(s, fmt.Sprintf("%q", o.Name))
	}
	sort.Strings(s)
	return strings.Join(s, ", ")
}

// runError marks an error of the runtime as the API's (the runtime's
// errors already wrap ErrClosed, ErrUnavailable, … where they apply).
func runError(err error) error { return fmt.Errorf("switchyard: %w", err) }

// WriteTrace writes a profiled run's Stats as a Chrome trace (load it in
// chrome://tracing or Perfetto): per-node timings on the cpu track, and
// per device a track of its uploads, executions and downloads.
func (m *Model) WriteTrace(w io.Writer, st *Stats) error {
	if st == nil {
		return errors.New("switchyard: WriteTrace: nil stats")
	}
	return runtime.WriteChromeTrace(w, st.runtimeStats(), m.name)
}

// Close interrupts the Runs in flight (they fail with ErrClosed), waits
// for them and releases the model; a model from the package-level Open
// also closes its engine's backends. Every later Run fails with
// ErrClosed. It is safe to call more than once and concurrently with
// Run.
func (m *Model) Close() error {
	err := m.closeModel()
	if m.ownsEngine {
		err = errors.Join(err, m.eng.Close())
	}
	return err
}

func (m *Model) closeModel() error {
	err := m.rt.Close()
	m.eng.mu.Lock()
	delete(m.eng.models, m)
	m.eng.mu.Unlock()
	return err
}

// loadLimit is the size limit of any one tensor a file declares: the
// engine's MaxTensorBytes, lowered to the memory budget, so a tiny file
// declaring a huge tensor (a sparse initializer's dense shape, a
// constant) is refused before it is allocated, not after.
func (e *Engine) loadLimit() int64 {
	limit := e.opts.MaxTensorBytes
	budget := e.opts.MemoryBudget
	if budget == 0 {
		budget = runtime.DefaultMemoryBudget()
	}
	if budget > 0 && (limit <= 0 || limit > budget) {
		limit = budget
	}
	return limit
}
