package xnnpack

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

// maxIdle bounds the runtime instances an executable keeps (shapes seen,
// concurrent callers).
const maxIdle = 4

// maxUnsupported bounds the input shapes an executable remembers it cannot
// take.
const maxUnsupported = 16

// Shape churn: once an executable has seen churnShapes distinct input
// shapes and more than half of its calls needed a new lowering (a decoder
// whose past length grows every token), it declines every later call:
// lowering again (XNNPACK 2022 has no reshape, so weights are packed anew)
// costs more than the partition saves, and the runtime runs it elsewhere,
// visibly. The decision is kept for the executable's life.
const (
	churnShapes   = 8
	maxShapesSeen = 64
)

// Compile lowers sg. With static input shapes and constant weights the
// XNNPACK runtime is created (weights packed) now; otherwise at the first
// run for each input shape.
func (b *Backend) Compile(ctx context.Context, sg *hal.Subgraph, opts hal.CompileOptions) (hal.Executable, error) {
	if err := b.enter(); err != nil {
		return nil, err
	}
	defer b.leave()
	g := sg.Graph
	if hasQuantNode(sg) {
		if !int8OptIn(b.opts.Int8) {
			return nil, hal.Errorf(hal.CodeUnsupported, "xnnpack: int8 nodes are opt-in (%s=1 or Options.Int8)", Int8EnvVar)
		}
		return b.compileQuant(sg, opts)
	}
	// copy what we keep: the node list, boundary and constants
	cg := &graph.Graph{Name: g.Name, Inputs: append([]graph.ValueInfo{}, g.Inputs...), Outputs: append([]graph.ValueInfo{}, g.Outputs...), Initializers: map[string]*graph.Tensor{}}
	cg.Nodes = append(cg.Nodes, g.Nodes...)
	for k, v := range g.Initializers {
		cg.Initializers[k] = v
	}
	e := &Executable{b: b, g: cg, opsets: append([]graph.Opset{}, sg.Opsets...)}
	threads := b.threads
	if opts.Threads > 0 {
		threads = opts.Threads
	}
	pool, err := b.pool(threads)
	if err != nil {
		return nil, err
	}
	e.pool, e.threads = pool, threads
	// inputs in weight/shape positions are captured at run time
	static := map[string]bool{}
	defined := map[string]bool{}
	for _, in := range g.Inputs {
		defined[in.Name] = true
	}
	for k := range g.Initializers {
		defined[k] = true
	}
	for _, n := range g.Nodes {
		for _, o := range n.Outputs {
			defined[o] = true
		}
	}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			if in != "" && !defined[in] {
				return nil, hal.Errorf(hal.CodeInvalidArgument, "xnnpack: node %s reads %q, which nothing defines", n.Label(), in)
			}
		}
	}
	for _, n := range g.Nodes {
		if !supportedOp(n.OpType) {
			return nil, hal.Errorf(hal.CodeUnsupported, "xnnpack: node %s: op %s is not mapped", n.Label(), n.OpType)
		}
		for _, i := range staticInputs[n.OpType] {
			if name := n.Input(i); name != "" {
				static[name] = true
			}
		}
	}
	allStatic := true
	for i, in := range g.Inputs {
		if _, isInit := g.Initializers[in.Name]; isInit {
			continue
		}
		if static[in.Name] {
			e.deferred = append(e.deferred, i)
			continue
		}
		if in.Type.DType != graph.Undefined && in.Type.DType != graph.Float32 {
			return nil, hal.Errorf(hal.CodeUnsupported, "xnnpack: input %q is %v; only float32 is mapped", in.Name, in.Type.DType)
		}
		if _, ok := in.Type.Shape.Ints(); !ok {
			allStatic = false
		}
	}
	e.isDeferred = map[int]bool{}
	for _, i := range e.deferred {
		e.isDeferred[i] = true
	}
	if allStatic && len(e.deferred) == 0 {
		shapes := make([][]int, len(g.Inputs))
		for i, in := range g.Inputs {
			shapes[i], _ = in.Type.Shape.Ints()
		}
		// lowered now, so that what this XNNPACK cannot take is refused
		// at compile time; the runtimes and buffers are made on the first
		// run (a model only placed, as by explain, holds no C memory)
		inst, err := e.lowerInstance(shapes, nil)
		if err != nil {
			return nil, err
		}
		e.idle = append(e.idle, inst)
	}
	b.track(e)
	return e, nil
}

// Executable is a compiled partition.
type Executable struct {
	b          *Backend
	g          *graph.Graph
	opsets     []graph.Opset
	pool       uintptr
	threads    int
	deferred   []int // input indices used as constants (captured per instance)
	isDeferred map[int]bool

	mu          sync.Mutex
	idle        []*instance
	unsupported map[string]error // input shapes lowering refused, by fmt.Sprint(shapes)
	released    bool

	calls     int                 // calls to get
	newShapes int                 // calls that lowered for a shape not seen before
	seen      map[string]struct{} // input shapes lowered, at most maxShapesSeen
	churn     error               // set once shape churn is detected: every call declines
}

// instance is one lowered, runnable copy of the partition.
type instance struct {
	lib    *lib
	plan   *plan
	shapes [][]int
	consts []*graph.Tensor // captured deferred inputs, by e.deferred order
	rts    []uintptr       // per stage; 0 for Go steps
	bufs   []unsafe.Pointer
	cmem   []unsafe.Pointer
	// per stage: the external value array given to xnn_setup_runtime (C
	// memory) and the partition outputs that stage writes straight into
	// the caller's tensor (re-setup per run)
	ev     []unsafe.Pointer
	nev    []int
	direct [][]directOut
	// emitted: the XNNPACK runtimes and buffers exist (instances lowered
	// at compile time are emitted on their first run)
	emitted bool
}

// directOut is a partition output written by XNNPACK into the output
// tensor's own memory: no buffer, no copy out.
type directOut struct {
	out int // index in plan.outputs
	ext int // entry in the stage's external value array
}

// cheapSetup lists the op kinds whose xnn_setup is cheap (no indirection
// buffers to rebuild), so a stage made only of them may be set up again
// per run with the caller's output pointer.
var cheapSetup = map[string]bool{"fc": true, "binary": true, "unary": true, "clamp": true, "leaky": true, "elu": true, "prelu": true, "gap": true, "reshape": true, "pad": true, "d2s": true}

// directOutputs decides, for stage si, which partition outputs it may write
// into the caller's memory: identity layout, written by this stage, read by
// no op, Go step or view, bound to one output only, and a stage whose setup
// is cheap.
func (p *plan) directOutputs(si int) []int {
	st := p.stages[si]
	if st.goRun != nil {
		return nil
	}
	for _, x := range st.ops {
		kind, _, _ := strings.Cut(x.kind, ":")
		if !cheapSetup[kind] {
			return nil
		}
	}
	read := map[*tensor]bool{}
	for _, s := range p.stages {
		for _, x := range s.ops {
			for _, t := range x.in {
				read[t] = true
			}
		}
		for _, t := range s.goIn {
			read[t] = true
		}
	}
	for _, t := range p.tensors {
		if t.view != nil {
			read[t.view] = true
		}
	}
	for _, bnd := range p.inputs {
		read[bnd.t] = true
	}
	bound := map[*tensor]int{}
	for _, bnd := range p.outputs {
		bound[bnd.t]++
	}
	var res []int
	for i, bnd := range p.outputs {
		t := bnd.t
		if t == nil || t.stage != si || t.static != nil || t.view != nil || t.slot < 0 || read[t] || bound[t] != 1 ||
			!isIdentity(bnd.perm) || !graph.SameShape(t.dims, bnd.shape) || t.elems() == 0 {
			continue
		}
		res = append(res, i)
	}
	return res
}

func (e *Executable) instantiate(shapes [][]int, captured []*graph.Tensor) (*instance, error) {
	inst, err := e.lowerInstance(shapes, captured)
	if err != nil {
		return nil, err
	}
	if err := inst.emitOnce(e.pool); err != nil {
		return nil, err
	}
	return inst, nil
}

// emitOnce creates the instance's runtimes and buffers unless it has them;
// on failure it releases what it made.
func (in *instance) emitOnce(pool uintptr) error {
	if in.emitted {
		return nil
	}
	if err := in.emit(pool); err != nil {
		in.release()
		return err
	}
	in.emitted = true
	return nil
}

// lowerInstance lowers the partition for these input shapes and checks
// every buffer's size, without touching XNNPACK.
func (e *Executable) lowerInstance(shapes [][]int, captured []*graph.Tensor) (*instance, error) {
	consts := map[string]*graph.Tensor{}
	for k, v := range e.g.Initializers {
		consts[k] = v
	}
	for j, i := range e.deferred {
		consts[e.g.Inputs[i].Name] = captured[j]
	}
	p, err := lower(e.g, e.opsets, shapes, consts)
	if err != nil {
		return nil, hal.Errorf(hal.CodeUnsupported, "%v", err)
	}
	p.threads = e.threads
	// every buffer is bounded before XNNPACK or malloc sees its size
	if err := p.checkSizes(); err != nil {
		return nil, err
	}
	return &instance{lib: e.b.lib, plan: p, shapes: shapes, consts: captured}, nil
}

// alloc returns n zeroed bytes of C memory, released with the instance.
func (in *instance) alloc(n int) (unsafe.Pointer, error) {
	p := in.lib.calloc(1, uintptr(n))
	if p == nil {
		return nil, hal.Errorf(hal.CodeResourceExhausted, "xnnpack: calloc(%d) failed", n)
	}
	in.cmem = append(in.cmem, p)
	return p, nil
}

func (in *instance) buf(t *tensor) []float32 {
	if t.static != nil {
		// a constant operand of a Go step (e.g. a folded Concat input)
		return t.static
	}
	return unsafe.Slice((*float32)(in.bufs[t.slot]), t.elems())
}

// emit creates the buffers and one XNNPACK runtime per stage.
func (in *instance) emit(pool uintptr) error {
	l := in.lib
	p := in.plan
	for _, sz := range p.slots {
		m, err := in.alloc(sz)
		if err != nil {
			return err
		}
		in.bufs = append(in.bufs, m)
	}
	scratch, err := in.alloc(8 * 64)
	if err != nil {
		return err
	}
	staticMem := map[*tensor]unsafe.Pointer{}
	in.rts = make([]uintptr, len(p.stages))
	in.ev = make([]unsafe.Pointer, len(p.stages))
	in.nev = make([]int, len(p.stages))
	in.direct = make([][]directOut, len(p.stages))
	for si, st := range p.stages {
		if st.goRun != nil {
			continue
		}
		var list []*tensor
		seen := map[*tensor]bool{}
		for _, x := range st.ops {
			for _, t := range append(append([]*tensor{}, x.in...), x.out) {
				if t != nil && !seen[t] {
					seen[t] = true
					list = append(list, t)
				}
			}
		}
		ext := 0
		for _, t := range list {
			if t.static == nil && t.slot >= 0 {
				ext++
			}
		}
		if st := l.createSubgraph(uint32(ext), 0, scratch); st != xnnStatusSuccess {
			return hal.Errorf(hal.CodeInternal, "xnnpack: xnn_create_subgraph: %s", statusString(st))
		}
		sg := *(*uintptr)(scratch)
		ids := map[*tensor]uint32{}
		var externals []xnnExternalValue
		fail := func(what string, st int32) error {
			l.deleteSubgraph(sg)
			return hal.Errorf(hal.CodeInternal, "xnnpack: %s: %s", what, statusString(st))
		}
		nextExt := uint32(0)
		for _, t := range list {
			dims := unsafe.Slice((*uintptr)(unsafe.Add(scratch, 8)), xnnMaxTensorDims)
			if len(t.dims) > xnnMaxTensorDims {
				l.deleteSubgraph(sg)
				return hal.Errorf(hal.CodeUnsupported, "xnnpack: rank %d exceeds %d", len(t.dims), xnnMaxTensorDims)
			}
			for i, d := range t.dims {
				dims[i] = uintptr(d)
			}
			nd := len(t.dims)
			if nd == 0 { // XNNPACK asserts rank >= 1: a scalar is [1]
				dims[0], nd = 1, 1
			}
			var data unsafe.Pointer
			extID, flags := uint32(xnnInvalidValueID), uint32(0)
			if t.static != nil {
				data = staticMem[t]
				if data == nil {
					n := 4*len(t.static) + xnnExtraBytes
					m, err := in.alloc(n)
					if err != nil {
						l.deleteSubgraph(sg)
						return err
					}
					copy(unsafe.Slice((*float32)(m), len(t.static)), t.static)
					staticMem[t] = m
					data = m
				}
			} else if t.slot >= 0 {
				extID = nextExt
				nextExt++
				if t.stage == si {
					flags = xnnValueFlagExternalOut
				} else {
					flags = xnnValueFlagExternalIn
				}
			}
			idOut := unsafe.Add(scratch, 8+8*xnnMaxTensorDims)
			if st := l.defineTensor(sg, xnnDatatypeFP32, uintptr(nd), unsafe.Add(scratch, 8), data, extID, flags, idOut); st != xnnStatusSuccess {
				return fail(fmt.Sprintf("xnn_define_tensor_value %v", t.dims), st)
			}
			ids[t] = *(*uint32)(idOut)
			if extID != xnnInvalidValueID {
				externals = append(externals, xnnExternalValue{ID: ids[t], Data: in.bufs[t.slot]})
			}
		}
		for _, x := range st.ops {
			if st := in.define(sg, scratch, x, ids); st != xnnStatusSuccess {
				return fail("defining "+x.kind+" "+fmt.Sprint(x.out.dims), st)
			}
		}
		if st := l.createRuntime(sg, pool, 0, scratch); st != xnnStatusSuccess {
			return fail("xnn_create_runtime_v2", st)
		}
		rt := *(*uintptr)(scratch)
		l.deleteSubgraph(sg)
		in.rts[si] = rt
		if len(externals) > 0 {
			ev, err := in.alloc(16 * len(externals))
			if err != nil {
				return err
			}
			copy(unsafe.Slice((*xnnExternalValue)(ev), len(externals)), externals)
			if st := l.setupRuntime(rt, uintptr(len(externals)), ev); st != xnnStatusSuccess {
				return hal.Errorf(hal.CodeInternal, "xnnpack: xnn_setup_runtime: %s", statusString(st))
			}
			in.ev[si], in.nev[si] = ev, len(externals)
			for _, oi := range p.directOutputs(si) {
				for k, x := range externals {
					if x.ID == ids[p.outputs[oi].t] {
						in.direct[si] = append(in.direct[si], directOut{out: oi, ext: k})
					}
				}
			}
		}
	}
	return nil
}

func (in *instance) define(sg uintptr, scratch unsafe.Pointer, x *xop, ids map[*tensor]uint32) int32 {
	l := in.lib
	id := func(i int) uint32 {
		if i >= len(x.in) || x.in[i] == nil {
			return xnnInvalidValueID
		}
		return ids[x.in[i]]
	}
	out := ids[x.out]
	kind, sub, _ := strings.Cut(x.kind, ":")
	switch kind {
	case "conv":
		args := []ffiArg{argP(sg)}
		for _, u := range x.u {
			args = append(args, argU(u))
		}
		args = append(args, argQ(uint64(x.sz[0])), argQ(uint64(x.sz[1])), argF(x.f[0]), argF(x.f[1]), argU(id(0)), argU(id(1)), argU(id(2)), argU(out), argU(0))
		return l.callFFI(l.convCIF, l.defineConv, args)
	case "deconv":
		args := []ffiArg{argP(sg)}
		for _, u := range x.u {
			args = append(args, argU(u))
		}
		args = append(args, argQ(uint64(x.sz[0])), argQ(uint64(x.sz[1])), argF(x.f[0]), argF(x.f[1]), argU(id(0)), argU(id(1)), argU(id(2)), argU(out), argU(0))
		return l.callFFI(l.deconvCIF, l.defineDeconv, args)
	case "resize":
		return l.defineResize(sg, uintptr(x.sz[0]), uintptr(x.sz[1]), id(0), out, x.u[0])
	case "clamp":
		return l.defineClamp(sg, x.f[0], x.f[1], id(0), out, 0)
	case "leaky":
		return l.defineLeakyRelu(sg, x.f[0], id(0), out, 0)
	case "elu":
		return l.defineElu(sg, x.f[0], id(0), out, 0)
	case "unary":
		return l.defineUnary[sub](sg, id(0), out, 0)
	case "binary":
		if f, ok := l.defineBinaryMinMax[sub]; ok {
			return f(sg, x.f[0], x.f[1], id(0), id(1), out, 0)
		}
		return l.defineBinary[sub](sg, id(0), id(1), out, 0)
	case "prelu":
		return l.definePRelu(sg, id(0), id(1), out, 0)
	case "fc":
		return l.defineFC(sg, x.f[0], x.f[1], id(0), id(1), id(2), out, 0)
	case "gap":
		return l.defineGAP(sg, x.f[0], x.f[1], id(0), out, 0)
	case "avgpool":
		u := x.u
		return l.defineAvgPool(sg, u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], x.f[0], x.f[1], id(0), out, 0)
	case "maxpool":
		u := x.u
		return l.defineMaxPool(sg, u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], x.f[0], x.f[1], id(0), out, 0)
	case "pad":
		r := len(x.sz) / 2
		pre := unsafe.Slice((*uintptr)(unsafe.Add(scratch, 8*16)), r)
		post := unsafe.Slice((*uintptr)(unsafe.Add(scratch, 8*32)), r)
		for i := 0; i < r; i++ {
			pre[i], post[i] = uintptr(x.sz[i]), uintptr(x.sz[r+i])
		}
		return l.definePad(sg, unsafe.Add(scratch, 8*16), unsafe.Add(scratch, 8*32), x.f[0], id(0), out, 0)
	case "reshape":
		dims := unsafe.Slice((*uintptr)(unsafe.Add(scratch, 8*16)), len(x.sz))
		for i, d := range x.sz {
			dims[i] = uintptr(d)
		}
		return l.defineReshape(sg, uintptr(len(x.sz)), unsafe.Add(scratch, 8*16), id(0), out, 0)
	case "d2s":
		return l.defineDepthToSpace(sg, id(0), out, x.u[0], 0)
	}
	return 2 // invalid parameter
}

func (in *instance) release() {
	for _, rt := range in.rts {
		if rt != 0 {
			in.lib.deleteRuntime(rt)
		}
	}
	in.rts = nil
	for _, m := range in.cmem {
		in.lib.free(m)
	}
	in.cmem, in.bufs = nil, nil
	in.ev, in.nev, in.direct = nil, nil, nil
	in.emitted = false
}

// get returns an idle instance for these inputs, or lowers a new one.
func (e *Executable) get(inputs []*graph.Tensor) (*instance, error) {
	e.mu.Lock()
	if e.released {
		e.mu.Unlock()
		return nil, hal.Errorf(hal.CodeFailedPrecondition, "xnnpack: executable was released")
	}
	if e.churn != nil {
		e.mu.Unlock()
		return nil, e.churn
	}
	e.calls++
	for k, inst := range e.idle {
		if inst.matches(e, inputs) {
			e.idle = append(e.idle[:k], e.idle[k+1:]...)
			e.mu.Unlock()
			if err := inst.emitOnce(e.pool); err != nil {
				return nil, err
			}
			return inst, nil
		}
	}
	shapes := make([][]int, len(inputs)) // a new lowering: not the steady state
	for i, t := range inputs {
		shapes[i] = t.Shape
	}
	shapeKey := fmt.Sprint(shapes)
	// shapes this XNNPACK cannot take are remembered (when no captured
	// input shapes the lowering), not lowered again on every call
	key := ""
	if len(e.deferred) == 0 {
		key = shapeKey
		if err, ok := e.unsupported[key]; ok {
			e.mu.Unlock()
			return nil, err
		}
	}
	if _, ok := e.seen[shapeKey]; !ok {
		if e.seen == nil {
			e.seen = map[string]struct{}{}
		}
		if len(e.seen) < maxShapesSeen {
			e.seen[shapeKey] = struct{}{}
		}
		e.newShapes++
		if e.newShapes >= churnShapes && 2*e.newShapes > e.calls {
			e.churn = &hal.Error{Code: hal.CodeDeclined, Msg: fmt.Sprintf("xnnpack: input shapes change on most calls (%d new shapes in %d calls); lowering the partition again for each costs more than it saves, so it runs elsewhere from now on", e.newShapes, e.calls)}
			e.mu.Unlock()
			return nil, e.churn
		}
	}
	e.mu.Unlock()
	var captured []*graph.Tensor
	for _, i := range e.deferred {
		captured = append(captured, inputs[i].Clone())
	}
	inst, err := e.instantiate(shapes, captured)
	if err != nil && key != "" && hal.CodeOf(err) == hal.CodeUnsupported {
		e.mu.Lock()
		if e.unsupported == nil {
			e.unsupported = map[string]error{}
		}
		if len(e.unsupported) < maxUnsupported {
			e.unsupported[key] = err
		}
		e.mu.Unlock()
	}
	return inst, err
}

func (inst *instance) matches(e *Executable, inputs []*graph.Tensor) bool {
	for i, t := range inputs {
		if !graph.SameShape(inst.shapes[i], t.Shape) {
			return false
		}
	}
	for j, i := range e.deferred {
		if !sameData(inst.consts[j], inputs[i]) {
			return false
		}
	}
	return true
}

func sameData(a, b *graph.Tensor) bool {
	if a.DType != b.DType || !graph.SameShape(a.Shape, b.Shape) {
		return false
	}
	switch x := a.Data.(type) {
	case []float32:
		y := b.Data.([]float32)
		if len(x) > 0 && &x[0] == &y[0] {
			return true
		}
		xb := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(x))), 4*len(x))
		yb := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(y))), 4*len(y))
		return string(xb) == string(yb)
	case []int64:
		y := b.Data.([]int64)
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	}
	for i := 0; i < a.Len(); i++ {
		if a.Float64At(i) != b.Float64At(i) {
			return false
		}
	}
	return true
}

func (e *Executable) put(inst *instance) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.released || len(e.idle) >= maxIdle {
		if len(e.idle) >= maxIdle && !e.released {
			old := e.idle[0]
			e.idle = append(e.idle[1:], inst)
			old.release()
			return
		}
		inst.release()
		return
	}
	e.idle = append(e.idle, inst)
}

// Execute converts the inputs to their physical layout, runs the stages and
// converts the outputs back.
func (e *Executable) Execute(ctx context.Context, inputs, outputs []*graph.Tensor) error {
	return e.execute(ctx, inputs, outputs, nil)
}

// ExecuteProfiled is Execute timing each stage (hal.ProfilingExecutable):
// an XNNPACK runtime (this XNNPACK has no per-operator profiling: a
// runtime is one kernel, listing the graph nodes it computes), a Go step,
// and the layout conversions of the partition's inputs and outputs.
func (e *Executable) ExecuteProfiled(ctx context.Context, inputs, outputs []*graph.Tensor) (*hal.CallProfile, error) {
	p := &hal.CallProfile{StartNS: time.Now().UnixNano()}
	if err := e.execute(ctx, inputs, outputs, p); err != nil {
		return nil, err
	}
	p.EndNS = time.Now().UnixNano()
	return p, nil
}

// stageKernel names a stage in a profile.
func stageKernel(st *stage) string {
	name := "xnnpack runtime"
	if st.goRun != nil {
		name = "go step"
	}
	if len(st.opTypes) == 0 {
		return name
	}
	count := map[string]int{}
	var order []string
	for _, op := range st.opTypes {
		if count[op] == 0 {
			order = append(order, op)
		}
		count[op]++
	}
	parts := make([]string, len(order))
	for i, op := range order {
		parts[i] = op
		if count[op] > 1 {
			parts[i] = fmt.Sprintf("%s×%d", op, count[op])
		}
	}
	return name + " " + strings.Join(parts, ",")
}

func (e *Executable) execute(ctx context.Context, inputs, outputs []*graph.Tensor, prof *hal.CallProfile) error {
	if len(inputs) != len(e.g.Inputs) || len(outputs) != len(e.g.Outputs) {
		return hal.Errorf(hal.CodeInvalidArgument, "xnnpack: got %d inputs and %d outputs, partition has %d and %d", len(inputs), len(outputs), len(e.g.Inputs), len(e.g.Outputs))
	}
	for i, t := range inputs {
		if t == nil {
			return hal.Errorf(hal.CodeInvalidArgument, "xnnpack: input %q is nil", e.g.Inputs[i].Name)
		}
		if !e.isDeferred[i] && t.DType != graph.Float32 {
			return hal.Errorf(hal.CodeInvalidArgument, "xnnpack: input %q is %v, want float32", e.g.Inputs[i].Name, t.DType)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := e.b.enter(); err != nil {
		return err
	}
	defer e.b.leave()
	inst, err := e.get(inputs)
	if err != nil {
		if errors.Is(err, hal.ErrDeclined) {
			return err
		}
		if hal.CodeOf(err) == hal.CodeUnsupported {
			// shapes known only now that XNNPACK cannot take (an empty
			// dimension, a degenerate window): declined, so the runtime
			// runs this call elsewhere and says so
			return &hal.Error{Code: hal.CodeDeclined, Msg: fmt.Sprintf("xnnpack: declines input shapes %s: %s", shapeList(e.g.Inputs, inputs), strings.TrimPrefix(stripCode(err), "xnnpack: "))}
		}
		return err
	}
	defer e.put(inst)
	p := inst.plan
	// outputs first: those XNNPACK writes directly need their memory now
	var dbuf [8][]float32
	dsts := dbuf[:0]
	if len(p.outputs) > len(dbuf) {
		dsts = make([][]float32, 0, len(p.outputs))
	}
	dsts = dsts[:len(p.outputs)]
	for i, bnd := range p.outputs {
		dst := outputs[i]
		if dst.Data == nil {
			t, err := graph.New(graph.Float32, bnd.shape)
			if err != nil {
				return hal.Errorf(hal.CodeResourceExhausted, "xnnpack: output %q: %v", e.g.Outputs[i].Name, err)
			}
			*dst = *t
		} else if dst.DType != graph.Float32 || !graph.SameShape(dst.Shape, bnd.shape) {
			return hal.Errorf(hal.CodeInvalidArgument, "xnnpack: output %q is float32%v, caller allocated %v%v", e.g.Outputs[i].Name, bnd.shape, dst.DType, dst.Shape)
		}
		dsts[i] = graph.Data[float32](dst)
		if want := bnd.t.elems(); len(dsts[i]) < want {
			return hal.Errorf(hal.CodeInvalidArgument, "xnnpack: output %q holds %d values, want %d", e.g.Outputs[i].Name, len(dsts[i]), want)
		}
	}
	var t0 time.Time
	mark := func(name string, nodes []string) {
		if prof == nil {
			return
		}
		t1 := time.Now()
		prof.Kernels = append(prof.Kernels, hal.KernelTiming{Name: name, Nodes: nodes, StartNS: t0.UnixNano(), EndNS: t1.UnixNano()})
		t0 = t1
	}
	if prof != nil {
		t0 = time.Now()
	}
	for i, bnd := range p.inputs {
		if bnd.t == nil {
			continue
		}
		if bnd.fill != nil {
			bnd.fill(inst.buf(bnd.t), graph.Data[float32](inputs[i]))
		} else {
			transposeInto(inst.buf(bnd.t), graph.Data[float32](inputs[i]), bnd.shape, nil, bnd.perm)
		}
		if bnd.fill != nil || !isIdentity(bnd.perm) {
			mark("input layout", []string{e.g.Inputs[i].Name})
		}
	}
	if prof != nil {
		t0 = time.Now()
	}
	written := make([]bool, len(p.outputs))
	for si, st := range p.stages {
		if err := ctx.Err(); err != nil {
			return err
		}
		if e.b.closing.Load() {
			return errClosed()
		}
		if st.goRun != nil {
			st.goRun(inst.buf)
		} else if err := inst.invoke(si, dsts, written); err != nil {
			return err
		}
		if prof != nil {
			mark(stageKernel(st), st.nodes)
		}
	}
	for i, bnd := range p.outputs {
		if !written[i] {
			transposeInto(dsts[i], inst.buf(bnd.t), bnd.shape, bnd.perm, nil)
			if !isIdentity(bnd.perm) {
				mark("output layout", []string{e.g.Outputs[i].Name})
			}
		}
	}
	return nil
}

// invoke runs stage si. Partition outputs the stage may write directly are
// pointed at the caller's memory (pinned) for this run: the runtime is set
// up again with them and, after the invoke, the external value array is
// pointed back at the instance's buffers (XNNPACK keeps no pointer it uses
// after invoke; every later invoke of this stage is preceded by a setup).
func (inst *instance) invoke(si int, dsts [][]float32, written []bool) error {
	l := inst.lib
	direct := inst.direct[si]
	if len(direct) == 0 {
		if s := l.invokeRuntime(inst.rts[si]); s != xnnStatusSuccess {
			return hal.Errorf(hal.CodeInternal, "xnnpack: xnn_invoke_runtime: %s", statusString(s))
		}
		return nil
	}
	evs := unsafe.Slice((*xnnExternalValue)(inst.ev[si]), inst.nev[si])
	var pin runtime.Pinner
	defer pin.Unpin()
	var sbuf [8]unsafe.Pointer
	saved := sbuf[:0]
	if len(direct) > len(sbuf) {
		saved = make([]unsafe.Pointer, 0, len(direct))
	}
	saved = saved[:len(direct)]
	for k, d := range direct {
		ptr := unsafe.Pointer(unsafe.SliceData(dsts[d.out]))
		pin.Pin(ptr)
		saved[k] = evs[d.ext].Data
		evs[d.ext].Data = ptr
	}
	s := l.setupRuntime(inst.rts[si], uintptr(len(evs)), inst.ev[si])
	if s == xnnStatusSuccess {
		s = l.invokeRuntime(inst.rts[si])
	}
	for k, d := range direct {
		evs[d.ext].Data = saved[k]
	}
	if s != xnnStatusSuccess {
		// leave the runtime set up on its own buffers again
		l.setupRuntime(inst.rts[si], uintptr(len(evs)), inst.ev[si])
		return hal.Errorf(hal.CodeInternal, "xnnpack: running stage %d: %s", si, statusString(s))
	}
	for _, d := range direct {
		written[d.out] = true
	}
	return nil
}

// Release frees the runtimes; safe to call more than once, and after the
// backend's Close (which freed them already).
func (e *Executable) Release() error {
	if err := e.b.enter(); err != nil {
		e.mu.Lock()
		e.released = true
		e.mu.Unlock()
		return nil
	}
	defer e.b.leave()
	e.releaseInstances()
	e.b.untrack(e)
	return nil
}

// releaseInstances frees the idle instances and marks e released: an
// instance in use is freed when its Execute puts it back.
func (e *Executable) releaseInstances() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.released = true
	for _, inst := range e.idle {
		inst.release()
	}
	e.idle = nil
}

// shapeList names each input with its shape, for a decline.
func shapeList(vis []graph.ValueInfo, ts []*graph.Tensor) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = fmt.Sprintf("%s%v", vis[i].Name, t.Shape)
	}
	return strings.Join(parts, ", ")
}

// stripCode is err's message without the HAL code prefix.
func stripCode(err error) string {
	var he *hal.Error
	if errors.As(err, &he) && he.Err == nil {
		return he.Msg
	}
	return err.Error()
}
