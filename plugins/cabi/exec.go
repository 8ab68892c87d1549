package cabi

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

// executable is a subgraph compiled by the delegate.
type executable struct {
	b         *Backend
	handle    uintptr // 0 once released
	nIn, nOut int
	outDTypes []graph.DType
	outShapes [][]int           // static output shapes; nil where the delegate must infer
	outTypes  []graph.ValueType // the host's types of the outputs (copies)
	inShapes  []graph.Shape     // the host's shapes of the inputs (copies), to bind symbols
	maxOut    int64             // bound on the bytes allocated on the delegate's word
	serial    bool              // SY_INFO_SERIAL_EXECUTE
	serialMu  sync.Mutex

	// HAL 1.1
	device    int           // CompileOptions.Device
	ndev      int           // devices of the library (>= 1)
	precision hal.Precision // what compile reported
	nodes     []string      // node names in the subgraph's order, for profiles
}

// frame holds one call's C-visible state in Go heap memory. Frames are
// pooled, so a call into the library allocates nothing but its outputs.
type frame struct {
	call      cExecuteCall
	status    cStatus
	cancelled int32
	ins, outs []cTensor
	dims      []int64
}

var frames = sync.Pool{New: func() any { return new(frame) }}

func (f *frame) reset(nIn, nOut, dims int, size uintptr) {
	if cap(f.ins) < nIn {
		f.ins = make([]cTensor, nIn)
	}
	if cap(f.outs) < nOut {
		f.outs = make([]cTensor, nOut)
	}
	if cap(f.dims) < dims {
		f.dims = make([]int64, dims)
	}
	f.ins, f.outs, f.dims = f.ins[:nIn], f.outs[:nOut], f.dims[:dims]
	f.status.code, f.status.message[0] = 0, 0
	f.cancelled = 0
	f.call = cExecuteCall{structSize: uint32(size), numInputs: uint32(nIn), numOutputs: uint32(nOut),
		inputs: slicePtr(f.ins), outputs: slicePtr(f.outs), cancelled: unsafe.Pointer(&f.cancelled)}
}

// clear drops the references to caller tensors before the frame is pooled.
func (f *frame) clear() {
	for i := range f.ins {
		f.ins[i] = cTensor{}
	}
	for i := range f.outs {
		f.outs[i] = cTensor{}
	}
	f.call.inputs, f.call.outputs, f.call.profile = nil, nil, nil
}

// callSize is the sy_execute_call size the library is given.
func (b *Backend) callSize() uintptr {
	if b.is11() {
		return unsafe.Sizeof(cExecuteCall{})
	}
	return executeCallSize10
}

// bind describes a caller tensor to C, with its dims in buf.
func describe(t *graph.Tensor, buf []int64) cTensor {
	for i, d := range t.Shape {
		buf[i] = int64(d)
	}
	return cTensor{dtype: int32(t.DType), rank: int32(len(t.Shape)), shape: slicePtr(buf[:len(t.Shape)]), data: dataPointer(t), numBytes: tensorBytes(t)}
}

func checkCrossing(what string, i int, t *graph.Tensor) error {
	if t == nil {
		return hal.Errorf(hal.CodeInvalidArgument, "cabi: %s %d is nil", what, i)
	}
	if err := t.Check(); err != nil {
		return hal.Errorf(hal.CodeInvalidArgument, "cabi: %s %d: %v", what, i, err)
	}
	if t.DType == graph.String {
		return hal.Errorf(hal.CodeInvalidArgument, "cabi: %s %d is a string tensor; strings do not cross the C ABI", what, i)
	}
	return nil
}

// Execute runs the executable on caller-owned tensors, zero copy: the C
// side reads input data and writes output data in place. Outputs with nil
// Data are allocated here.
func (e *executable) Execute(ctx context.Context, inputs, outputs []*graph.Tensor) error {
	return e.run(ctx, inputs, outputs, nil)
}

// run is Execute, filling prof (host memory) when it is not nil.
func (e *executable) run(ctx context.Context, inputs, outputs []*graph.Tensor, prof *cCallProfile) error {
	if len(inputs) != e.nIn || len(outputs) != e.nOut {
		return hal.Errorf(hal.CodeInvalidArgument, "cabi: got %d inputs and %d outputs, the executable has %d and %d", len(inputs), len(outputs), e.nIn, e.nOut)
	}
	ndims := 0
	for i, t := range inputs {
		if err := checkCrossing("input", i, t); err != nil {
			return err
		}
		ndims += len(t.Shape)
	}
	infer := false
	for i, t := range outputs {
		if t == nil {
			return hal.Errorf(hal.CodeInvalidArgument, "cabi: output %d is nil", i)
		}
		if t.Data != nil {
			if err := checkCrossing("output", i, t); err != nil {
				return err
			}
		} else if e.outShapes[i] == nil {
			infer = true
		}
		if len(t.Shape) > maxRank || len(e.outShapes[i]) > maxRank {
			return hal.Errorf(hal.CodeUnsupported, "cabi: output %d has rank over %d", i, maxRank)
		}
	}
	ndims += len(outputs) * maxRank
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := e.b.enter(); err != nil {
		return err
	}
	defer e.b.mu.RUnlock()
	h := e.handle
	if h == 0 {
		return hal.Errorf(hal.CodeFailedPrecondition, "cabi: %s: executable was released", e.b.info.Name)
	}
	if e.serial {
		e.serialMu.Lock()
		defer e.serialMu.Unlock()
	}
	f := frames.Get().(*frame)
	f.reset(len(inputs), len(outputs), ndims, e.b.callSize())
	reuse := true
	defer func() {
		if reuse {
			f.clear()
			frames.Put(f)
		}
	}()
	dims := f.dims
	for i, t := range inputs {
		f.ins[i] = describe(t, dims)
		dims = dims[len(t.Shape):]
	}
	outBufs := dims
	if infer {
		for i := range outputs {
			f.outs[i] = cTensor{rank: -1, shape: slicePtr(outBufs[i*maxRank : (i+1)*maxRank])}
		}
		if code := int32(call(e.b.table.inferOutputs, h, uintptr(unsafe.Pointer(&f.call)), uintptr(unsafe.Pointer(&f.status)))); code != 0 {
			return cErr(code, &f.status)
		}
	}
	fresh := make([]*graph.Tensor, len(outputs))
	var bound map[string]int64
	if infer {
		bound = bindSymbols(e.inShapes, inputs)
	}
	var claimed int64 // bytes allocated on the delegate's word so far
	for i, t := range outputs {
		if t.Data == nil {
			dt, shape := e.outDTypes[i], e.outShapes[i]
			if shape == nil {
				var err error
				var n int64
				o := &f.outs[i]
				if dt, shape, n, err = checkInferred(i, o.dtype, o.rank, outBufs[i*maxRank:(i+1)*maxRank], e.outTypes[i], bound, e.maxOut-claimed); err != nil {
					return err
				}
				claimed += n
			}
			nt, err := graph.New(dt, shape)
			if err != nil {
				return hal.Errorf(hal.CodeResourceExhausted, "cabi: output %d: %v", i, err)
			}
			fresh[i], t = nt, nt
		}
		f.outs[i] = describe(t, outBufs[i*maxRank:(i+1)*maxRank])
	}
	var stop func() bool
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, func() { atomic.StoreInt32(&f.cancelled, 1) })
	}
	if prof != nil {
		f.call.profile = unsafe.Pointer(prof)
	}
	code := int32(call(e.b.table.execute, h, uintptr(unsafe.Pointer(&f.call)), uintptr(unsafe.Pointer(&f.status))))
	f.call.profile = nil
	if stop != nil && !stop() {
		reuse = false // the cancel func ran or is running: never hand the frame out again
	}
	if code != 0 {
		err := cErr(code, &f.status)
		if c := hal.Code(code); (c == hal.CodeCancelled || c == hal.CodeDeadlineExceeded) && ctx.Err() != nil {
			var he *hal.Error
			if errors.As(err, &he) {
				he.Code = hal.CodeOf(ctx.Err())
				he.Err = ctx.Err()
			}
		}
		return e.b.declined(code, err)
	}
	for i, nt := range fresh {
		if nt != nil {
			*outputs[i] = *nt
		}
	}
	return nil
}

// bindSymbols maps each symbolic dim of the inputs' declared shapes to the
// size the call's input has there; a symbol bound to two sizes is left
// out (the portable layer judges inputs).
func bindSymbols(shapes []graph.Shape, inputs []*graph.Tensor) map[string]int64 {
	bound := map[string]int64{}
	conflict := map[string]bool{}
	for i, s := range shapes {
		if i >= len(inputs) || len(s) != len(inputs[i].Shape) {
			continue
		}
		for k, d := range s {
			if d.Param == "" {
				continue
			}
			v := int64(inputs[i].Shape[k])
			if old, ok := bound[d.Param]; ok && old != v {
				conflict[d.Param] = true
			}
			bound[d.Param] = v
		}
	}
	for p := range conflict {
		delete(bound, p)
	}
	return bound
}

// checkInferred checks what infer_outputs claimed for output i (dtype,
// rank, the first rank entries of dims) before anything is allocated: the
// dtype must be a numeric one and the host's where the host knows it; the
// rank and every static dim, and every dim named by a symbol the inputs
// bind, must be the host's; no dim may be negative; and the byte size must
// fit in limit. It returns the shape and its byte size.
func checkInferred(i int, dtype, rank int32, dims []int64, want graph.ValueType, bound map[string]int64, limit int64) (graph.DType, []int, int64, error) {
	dt := graph.DType(dtype)
	if !dt.Supported() || dt == graph.String || dt.Size() <= 0 {
		return 0, nil, 0, hal.Errorf(hal.CodeInternal, "cabi: infer_outputs gave output %d dtype %d, not a numeric dtype", i, dtype)
	}
	if want.DType != graph.Undefined && dt != want.DType {
		return 0, nil, 0, hal.Errorf(hal.CodeInternal, "cabi: infer_outputs gave output %d dtype %v, the host inferred %v", i, dt, want.DType)
	}
	if rank < 0 || int(rank) > maxRank || int(rank) > len(dims) {
		return 0, nil, 0, hal.Errorf(hal.CodeInternal, "cabi: infer_outputs gave output %d rank %d (0..%d)", i, rank, maxRank)
	}
	claim := dims[:rank]
	if want.Shape != nil && len(want.Shape) != int(rank) {
		return 0, nil, 0, hal.Errorf(hal.CodeInternal, "cabi: infer_outputs gave output %d shape %v, the host inferred %v", i, claim, want.Shape)
	}
	zero := false
	for k, d := range claim {
		if d < 0 {
			return 0, nil, 0, hal.Errorf(hal.CodeInternal, "cabi: infer_outputs gave output %d dim %d = %d", i, k, d)
		}
		if want.Shape != nil {
			w := want.Shape[k]
			v, known := w.Value, w.Static()
			if w.Param != "" {
				v, known = bound[w.Param]
			}
			if known && d != v {
				return 0, nil, 0, hal.Errorf(hal.CodeInternal, "cabi: infer_outputs gave output %d shape %v, the host inferred %v (dim %d must be %d)", i, claim, want.Shape, k, v)
			}
		}
		zero = zero || d == 0
	}
	es := int64(dt.Size())
	bytes := es
	if zero {
		bytes = 0
	}
	for _, d := range claim {
		if zero {
			break
		}
		if bytes > limit/d {
			return 0, nil, 0, hal.Errorf(hal.CodeResourceExhausted, "cabi: infer_outputs gave output %d %v shape %v, over the %d bytes the host allocates on a delegate's word (Options.MaxOutputBytes, for all outputs of a call)", i, dt, claim, max(limit, 0))
		}
		bytes *= d
	}
	if bytes > limit {
		return 0, nil, 0, hal.Errorf(hal.CodeResourceExhausted, "cabi: infer_outputs gave output %d %v shape %v (%d bytes), over the %d bytes the host allocates on a delegate's word (Options.MaxOutputBytes, for all outputs of a call)", i, dt, claim, bytes, max(limit, 0))
	}
	shape := make([]int, rank)
	for k, d := range claim {
		shape[k] = int(d)
	}
	return dt, shape, bytes, nil
}

// Release frees the executable in the delegate; later calls are no-ops.
func (e *executable) Release() error {
	b := e.b
	b.mu.Lock() // waits for running calls
	defer b.mu.Unlock()
	if b.closed || e.handle == 0 {
		return nil
	}
	call(b.table.release, e.handle)
	e.handle = 0
	b.liveMu.Lock()
	delete(b.live, e)
	b.liveMu.Unlock()
	return nil
}
