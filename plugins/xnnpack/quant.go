package xnnpack

import (
	"context"
	"fmt"
	"math"
	"os"
	"sync"
	"unsafe"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/hal"
)

// Int8 (switchyard.quant) partitions on XNNPACK's qs8/qc8 operators.
//
// XNNPACK requantises in float32 and rounds to nearest even; the reference
// kernels (core/kernels/quant) are TFLite's fixed-point
// MultiplyByQuantizedMultiplier. The two agree to within one quantisation
// step per op, not bit for bit, so int8 is opt-in (Options.Int8 or
// SWITCHYARD_XNNPACK_INT8=1): by default every int8 node is declined with
// that reason and runs on the reference kernels. An int8 executable reports
// PrecisionInt8 (hal.PrecisionReporter), which the placement report shows.
//
// Mapped: Conv2D and DepthwiseConv2D (per-tensor or per-channel symmetric
// weights, int32 bias; depthwise as a grouped convolution), FullyConnected
// (per-tensor symmetric weights), Add, Mean over H and W of NHWC (global
// average pooling), Logistic (output scale 1/256, zero point -128), and int8 Reshape/Flatten/Squeeze/Unsqueeze; fused
// activations NONE, RELU, RELU6, RELU_N1_TO_1. Int8 partitions need static
// shapes and lower to one XNNPACK runtime at Compile.

// PrecisionInt8 is what an int8 executable of this backend reports: int8
// tensors computed by XNNPACK's fp32-requantising kernels, within one
// quantisation step per op of the TFLite-exact reference.
const PrecisionInt8 hal.Precision = "int8 (XNNPACK fp32 requantisation: within 1 step per op of the reference)"

// Int8EnvVar opts every Backend into int8 when set to 1.
const Int8EnvVar = "SWITCHYARD_XNNPACK_INT8"

const quantDomain = "switchyard.quant"

// XNNPACK datatypes beyond fp32 (xnnpack.h of Debian 12's version).
const (
	xnnDatatypeQInt8   = 3
	xnnDatatypeQInt32  = 5
	xnnDatatypeQCInt8  = 6
	xnnDatatypeQCInt32 = 7
)

func int8OptIn(explicit bool) bool {
	return explicit || os.Getenv(Int8EnvVar) == "1"
}

var int8Reshapes = map[string]bool{"Reshape": true, "Flatten": true, "Squeeze": true, "Unsqueeze": true}

// isQuantNode reports whether n is for the int8 path: a switchyard.quant op
// or a reshape of an int8 value.
func isQuantNode(n *graph.Node, ti typeInfo) bool {
	if n.Domain == quantDomain {
		return true
	}
	return (n.Domain == "" || n.Domain == "ai.onnx") && int8Reshapes[n.OpType] && ti.typeOf(n.Input(0)).DType == graph.Int8
}

// qparam reads the (scale, zero point) constants at inputs i, i+1.
func qparam(n *graph.Node, ti typeInfo, i int, what string) ([]float32, []int32, string) {
	s, z := ti.constant(n.Input(i)), ti.constant(n.Input(i+1))
	if s == nil || z == nil {
		return nil, nil, fmt.Sprintf("the scale and zero point of %s must be constants", what)
	}
	if s.DType != graph.Float32 || (z.DType != graph.Int8 && z.DType != graph.Int32) || s.Len() != z.Len() || s.Len() == 0 {
		return nil, nil, fmt.Sprintf("the quantization of %s must be float32 scales with as many int8 zero points", what)
	}
	sc := graph.Data[float32](s)
	zp := make([]int32, z.Len())
	for k := range zp {
		zp[k] = int32(z.Int64At(k))
		if !(sc[k] > 0) || math.IsInf(float64(sc[k]), 0) {
			return nil, nil, fmt.Sprintf("%s has scale %g; scales must be positive and finite", what, sc[k])
		}
	}
	return sc, zp, ""
}

func perTensor(sc []float32, zp []int32, what string) string {
	if len(sc) != 1 {
		return fmt.Sprintf("%s is quantized per channel (%d scales); XNNPACK takes per-tensor activations", what, len(sc))
	}
	if zp[0] < -128 || zp[0] > 127 {
		return fmt.Sprintf("%s zero point %d is outside int8", what, zp[0])
	}
	return ""
}

// activationBounds maps the fused activation to XNNPACK's real-valued
// output_min/output_max (XNNPACK quantises them with the output's scale).
func activationBounds(act string) (float32, float32, bool) {
	switch act {
	case "", "NONE":
		return float32(math.Inf(-1)), inf, true
	case "RELU":
		return 0, inf, true
	case "RELU6":
		return 0, 6, true
	case "RELU_N1_TO_1":
		return -1, 1, true
	}
	return 0, 0, false
}

// quantOutDims is a node's static output shape: the inferred one, or for
// FullyConnected without output_shape [rows, units] from x and w.
func quantOutDims(n *graph.Node, ti typeInfo) ([]int, bool) {
	if d, ok := staticDims(ti, n.Outputs[0]); ok {
		return d, true
	}
	if n.Domain == quantDomain && n.OpType == "FullyConnected" {
		xd, ok := staticDims(ti, n.Input(0))
		w := ti.constant(n.Input(3))
		if ok && w != nil && len(w.Shape) == 2 && w.Shape[1] > 0 && qelems(xd)%w.Shape[1] == 0 {
			return []int{qelems(xd) / w.Shape[1], w.Shape[0]}, true
		}
	}
	return nil, false
}

func staticDims(ti typeInfo, name string) ([]int, bool) {
	return ti.typeOf(name).Shape.Ints()
}

// checkQuant returns "" when the int8 path takes n, else the reason.
func checkQuant(n *graph.Node, ti typeInfo, optIn bool) string {
	if !optIn {
		return "int8 is opt-in on xnnpack (" + Int8EnvVar + "=1 or Options.Int8): XNNPACK's fp32 requantisation rounds to nearest even and differs from the TFLite-exact reference by up to 1 quantisation step per op"
	}
	if n.Domain != quantDomain {
		x := n.Input(0)
		if ti.isConst(x) {
			return "every input is a constant (nothing to accelerate)"
		}
		if _, ok := staticDims(ti, x); !ok {
			return fmt.Sprintf("int8 %s input %q has no static shape (int8 partitions are lowered at compile)", n.OpType, x)
		}
		if d, ok := staticDims(ti, n.Outputs[0]); !ok || len(d) > xnnMaxTensorDims {
			return fmt.Sprintf("int8 %s output has no static shape of rank ≤ %d", n.OpType, xnnMaxTensorDims)
		}
		return ""
	}
	switch n.OpType {
	case "Conv2D", "DepthwiseConv2D", "FullyConnected", "Add", "Mean", "Logistic":
	default:
		return fmt.Sprintf("switchyard.quant %s is not mapped to XNNPACK (mapped: Conv2D, DepthwiseConv2D, FullyConnected, Add, Mean over H,W, Logistic)", n.OpType)
	}
	if len(n.Outputs) != 1 {
		return "exactly one output is mapped"
	}
	od, ok := quantOutDims(n, ti)
	if !ok || (ti.typeOf(n.Outputs[0]).DType != graph.Int8 && ti.typeOf(n.Outputs[0]).DType != graph.Undefined) {
		return "the int8 output needs a static shape (int8 partitions are lowered at compile)"
	}
	x := n.Input(0)
	xd, ok := staticDims(ti, x)
	if !ok || ti.typeOf(x).DType != graph.Int8 {
		return fmt.Sprintf("input %q must be int8 with a static shape", x)
	}
	for _, d := range append(append([]int{}, xd...), od...) {
		if d == 0 {
			return "empty tensors are not mapped"
		}
	}
	if ti.isConst(x) && n.OpType != "Add" {
		return "the int8 input is a constant (nothing to accelerate)"
	}
	xs, xz, r := qparam(n, ti, 1, "x")
	if r != "" {
		return r
	}
	if r := perTensor(xs, xz, "x"); r != "" {
		return r
	}
	if _, _, ok := activationBounds(n.AttrString("activation", "NONE")); !ok {
		return fmt.Sprintf("activation %q is not mapped (NONE, RELU, RELU6, RELU_N1_TO_1)", n.AttrString("activation", ""))
	}
	switch n.OpType {
	case "Logistic":
		ys, yz, r := qparam(n, ti, 3, "y")
		if r != "" {
			return r
		}
		if len(ys) != 1 || ys[0] != 1.0/256 || yz[0] != -128 {
			return fmt.Sprintf("Logistic output quantization %v/%v: XNNPACK's int8 sigmoid takes scale 1/256, zero point -128 only", ys, yz)
		}
		if len(xd) > xnnMaxTensorDims {
			return fmt.Sprintf("Logistic of rank %d is not mapped", len(xd))
		}
		return ""
	case "Mean":
		ys, yz, r := qparam(n, ti, 3, "y")
		if r != "" {
			return r
		}
		if r := perTensor(ys, yz, "y"); r != "" {
			return r
		}
		ax := n.AttrInts("axes", nil)
		if len(xd) != 4 || len(ax) != 2 || !((ax[0] == 1 && ax[1] == 2) || (ax[0] == 2 && ax[1] == 1)) {
			return fmt.Sprintf("Mean over axes %v of a rank-%d input: only H and W of NHWC (global average pooling) is mapped", ax, len(xd))
		}
		if q := float64(xs[0]) / float64(ys[0]); q < 1.0/256 || q >= 256 {
			return fmt.Sprintf("Mean input/output scale ratio %g is outside XNNPACK's [2^-8, 2^8)", q)
		}
		return ""
	case "Add":
		bs, bz, r := qparam(n, ti, 4, "b")
		if r != "" {
			return r
		}
		if r := perTensor(bs, bz, "b"); r != "" {
			return r
		}
		ys, yz, r := qparam(n, ti, 6, "y")
		if r != "" {
			return r
		}
		if r := perTensor(ys, yz, "y"); r != "" {
			return r
		}
		bd, ok := staticDims(ti, n.Input(3))
		if !ok || ti.typeOf(n.Input(3)).DType != graph.Int8 {
			return "input b must be int8 with a static shape"
		}
		if ti.isConst(x) && ti.isConst(n.Input(3)) {
			return "every input is a constant (nothing to accelerate)"
		}
		if len(xd) > 4 || len(bd) > 4 {
			return "Add of rank > 4 is not mapped"
		}
		for _, s := range []float32{xs[0], bs[0]} {
			if q := float64(s) / float64(ys[0]); q < 1.0/1024 || q >= 256 {
				return fmt.Sprintf("Add input/output scale ratio %g is outside XNNPACK's [2^-10, 2^8)", q)
			}
		}
		return ""
	}
	// Conv2D, DepthwiseConv2D, FullyConnected
	switch rd := n.AttrString("rounding", "away"); rd {
	case "away", "half_up":
	default:
		return fmt.Sprintf("rounding %q is not mapped (away, half_up)", rd)
	}
	w := ti.constant(n.Input(3))
	if w == nil || w.DType != graph.Int8 {
		return "weights must be an int8 constant"
	}
	ws, wz, r := qparam(n, ti, 4, "w")
	if r != "" {
		return r
	}
	for _, z := range wz {
		if z != 0 {
			return fmt.Sprintf("weight zero point %d: XNNPACK takes symmetric weights only", z)
		}
	}
	ys, yz, r := qparam(n, ti, 6, "y")
	if r != "" {
		return r
	}
	if r := perTensor(ys, yz, "y"); r != "" {
		return r
	}
	var cout int
	switch n.OpType {
	case "FullyConnected":
		if len(w.Shape) != 2 {
			return "FullyConnected weights must be [units, depth]"
		}
		cout = w.Shape[0]
		if len(ws) != 1 {
			return "per-channel FullyConnected weights are not mapped (this libXNNPACK has no qc8 fully connected)"
		}
		if len(xd) == 0 || xd[len(xd)-1] != w.Shape[1] {
			return fmt.Sprintf("FullyConnected input %v does not end in the weights' depth %d", xd, w.Shape[1])
		}
		if s := n.AttrInts("output_shape", nil); len(s) > 0 && len(od) != 2 {
			return fmt.Sprintf("FullyConnected output_shape %v: only a [rows, units] output is mapped", s)
		}
	default:
		if len(xd) != 4 || len(w.Shape) != 4 {
			return "Conv2D/DepthwiseConv2D take a rank-4 NHWC input and rank-4 weights"
		}
		c := xd[3]
		if n.OpType == "DepthwiseConv2D" {
			cout = w.Shape[3]
			if w.Shape[0] != 1 || cout%c != 0 {
				return fmt.Sprintf("depthwise filter %v does not fit %d input channels", w.Shape, c)
			}
		} else {
			cout = w.Shape[0]
			if w.Shape[3] == 0 || c%w.Shape[3] != 0 || cout%(c/w.Shape[3]) != 0 {
				return fmt.Sprintf("filter %v does not fit %d input channels", w.Shape, c)
			}
		}
		for _, a := range []string{"strides", "dilations"} {
			v := n.AttrInts(a, []int64{1, 1})
			if len(v) != 2 || v[0] < 1 || v[1] < 1 {
				return fmt.Sprintf("%s=%v must be two positive values", a, v)
			}
		}
		p := n.AttrInts("pads", []int64{0, 0, 0, 0})
		if len(p) != 4 || p[0] < 0 || p[1] < 0 || p[2] < 0 || p[3] < 0 {
			return fmt.Sprintf("pads=%v must be four non-negative values", p)
		}
	}
	if len(ws) != 1 && len(ws) != cout {
		return fmt.Sprintf("weights have %d scales for %d output channels", len(ws), cout)
	}
	if bn := n.Input(8); bn != "" {
		b := ti.constant(bn)
		if b == nil || b.DType != graph.Int32 || b.Len() != cout {
			return fmt.Sprintf("bias must be an int32[%d] constant", cout)
		}
	}
	for _, s := range ws {
		if q := float64(xs[0]) * float64(s) / float64(ys[0]); q >= 256 {
			return fmt.Sprintf("requantisation scale %g is ≥ 256, which XNNPACK refuses", q)
		}
	}
	return ""
}

// qtensor is one value of an int8 partition while it is lowered.
type qtensor struct {
	id    uint32
	dims  []int
	scale float32
	zp    int32
}

// qExecutable is an int8 partition: one XNNPACK runtime, fixed C buffers
// for the partition's inputs and outputs.
type qExecutable struct {
	b       *Backend
	lib     *lib
	inNames []string
	nIn     int
	inIdx   []int // positions of the dynamic inputs in the partition's inputs
	outs    []graph.ValueInfo
	inDims  [][]int
	outDims [][]int
	inBufs  []unsafe.Pointer
	outBufs []unsafe.Pointer

	mu       sync.Mutex // one invoke at a time (buffers are shared)
	rt       uintptr
	cmem     []unsafe.Pointer
	released bool
}

// Precision says the results are XNNPACK's int8, not the reference's.
func (e *qExecutable) Precision() hal.Precision { return PrecisionInt8 }

func (e *qExecutable) alloc(n int) (unsafe.Pointer, error) {
	p := e.lib.calloc(1, uintptr(n))
	if p == nil {
		return nil, hal.Errorf(hal.CodeResourceExhausted, "xnnpack: calloc(%d) failed", n)
	}
	e.cmem = append(e.cmem, p)
	return p, nil
}

// compileQuant lowers an int8 partition to one runtime.
func (b *Backend) compileQuant(sg *hal.Subgraph, opts hal.CompileOptions) (hal.Executable, error) {
	g := sg.Graph
	ti := newGraphInfo(sg)
	for _, n := range g.Nodes {
		if !isQuantNode(n, ti) {
			return nil, hal.Errorf(hal.CodeUnsupported, "xnnpack: node %s: float and int8 nodes in one partition are not mapped", n.Label())
		}
		if r := checkQuant(n, ti, true); r != "" {
			return nil, hal.Errorf(hal.CodeUnsupported, "xnnpack: node %s: %s", n.Label(), r)
		}
	}
	order, err := g.TopoSort()
	if err != nil {
		return nil, hal.Errorf(hal.CodeInvalidArgument, "xnnpack: %v", err)
	}
	threads := b.threads
	if opts.Threads > 0 {
		threads = opts.Threads
	}
	pool, err := b.pool(threads)
	if err != nil {
		return nil, err
	}
	e := &qExecutable{b: b, lib: b.lib, nIn: len(g.Inputs)}
	ok := false
	defer func() {
		if !ok {
			e.free()
		}
	}()
	if err := e.lower(g, ti, order, pool); err != nil {
		return nil, err
	}
	ok = true
	b.mu.Lock()
	b.qexes[e] = struct{}{}
	b.mu.Unlock()
	return e, nil
}

// lower defines the subgraph, creates the runtime and sets it up once on
// the executable's own buffers.
func (e *qExecutable) lower(g *graph.Graph, ti *graphInfo, order []*graph.Node, pool uintptr) error {
	l := e.lib
	scratch, err := e.alloc(8 * 64)
	if err != nil {
		return err
	}
	var inputs []graph.ValueInfo
	for _, in := range g.Inputs {
		if !ti.isConst(in.Name) {
			inputs = append(inputs, in)
		}
	}
	nExt := len(inputs) + len(g.Outputs)
	if st := l.createSubgraph(uint32(nExt), 0, scratch); st != xnnStatusSuccess {
		return hal.Errorf(hal.CodeInternal, "xnnpack: xnn_create_subgraph: %s", statusString(st))
	}
	sg := *(*uintptr)(scratch)
	defer l.deleteSubgraph(sg)
	fail := func(what string, st int32) error {
		return hal.Errorf(hal.CodeUnsupported, "xnnpack: int8 %s: %s", what, statusString(st))
	}
	dimsPtr := unsafe.Add(scratch, 8)
	idOut := unsafe.Add(scratch, 8+8*xnnMaxTensorDims)
	setDims := func(d []int) uintptr {
		ds := unsafe.Slice((*uintptr)(dimsPtr), xnnMaxTensorDims)
		for i, v := range d {
			ds[i] = uintptr(v)
		}
		if len(d) == 0 {
			ds[0] = 1
			return 1
		}
		return uintptr(len(d))
	}
	// define makes a per-tensor quantized value (data nil: dynamic)
	define := func(dt int32, zp int32, scale float32, dims []int, data unsafe.Pointer, ext uint32, flags uint32) (uint32, int32) {
		nd := setDims(dims)
		st := l.defineQuantTensor(sg, dt, zp, scale, nd, dimsPtr, data, ext, flags, idOut)
		return *(*uint32)(idOut), st
	}
	defineCW := func(dt int32, scales []float32, dims []int, data unsafe.Pointer) (uint32, int32, error) {
		sm, err := e.alloc(4*len(scales) + xnnExtraBytes)
		if err != nil {
			return 0, 0, err
		}
		copy(unsafe.Slice((*float32)(sm), len(scales)), scales)
		nd := setDims(dims)
		st := l.defineChannelwiseTensor(sg, dt, sm, nd, 0, dimsPtr, data, xnnInvalidValueID, 0, idOut)
		return *(*uint32)(idOut), st, nil
	}
	staticBytes := func(src []byte) (unsafe.Pointer, error) {
		m, err := e.alloc(len(src) + xnnExtraBytes)
		if err != nil {
			return nil, err
		}
		copy(unsafe.Slice((*byte)(m), len(src)), src)
		return m, nil
	}
	// quantization of every value: from its producer (y) or, for
	// partition inputs, its first consumer (x)
	vals := map[string]*qtensor{}
	params := func(n *graph.Node, i int) (float32, int32) {
		s, z, _ := qparam(n, ti, i, "")
		return s[0], z[0]
	}
	// consumers before producers, so a reshape passes on what its
	// output's consumers read; a value only reshaped (never read by an
	// arithmetic op here) is a plain copy and takes scale 1, zero point 0
	inputQuant := map[string][2]float64{}
	for k := len(order) - 1; k >= 0; k-- {
		n := order[k]
		for _, pos := range quantInputs(n) {
			name := n.Input(pos[0])
			if _, seen := inputQuant[name]; seen {
				continue
			}
			if pos[1] < 0 {
				if q, ok := inputQuant[n.Outputs[0]]; ok {
					inputQuant[name] = q
				}
				continue
			}
			s, z := params(n, pos[1])
			inputQuant[name] = [2]float64{float64(s), float64(z)}
		}
	}
	outIndex := map[string]int{}
	for i, o := range g.Outputs {
		outIndex[o.Name] = i
	}
	var externals []xnnExternalValue
	for i, in := range inputs {
		for k := range g.Inputs {
			if g.Inputs[k].Name == in.Name {
				e.inIdx = append(e.inIdx, k)
			}
		}
		d, ok := in.Type.Shape.Ints()
		if !ok || in.Type.DType != graph.Int8 {
			return hal.Errorf(hal.CodeUnsupported, "xnnpack: int8 partition input %q is %v%v; want int8 with a static shape", in.Name, in.Type.DType, in.Type.Shape)
		}
		q, seen := inputQuant[in.Name]
		if !seen {
			q = [2]float64{1, 0}
		}
		if _, isOut := outIndex[in.Name]; isOut {
			return hal.Errorf(hal.CodeUnsupported, "xnnpack: partition input %q is also an output", in.Name)
		}
		id, st := define(xnnDatatypeQInt8, int32(q[1]), float32(q[0]), d, nil, uint32(i), xnnValueFlagExternalIn)
		if st != xnnStatusSuccess {
			return fail("input tensor", st)
		}
		buf, err := e.alloc(qelems(d) + xnnExtraBytes)
		if err != nil {
			return err
		}
		vals[in.Name] = &qtensor{id: id, dims: d, scale: float32(q[0]), zp: int32(q[1])}
		e.inNames = append(e.inNames, in.Name)
		e.inDims = append(e.inDims, d)
		e.inBufs = append(e.inBufs, buf)
		externals = append(externals, xnnExternalValue{ID: id, Data: buf})
	}
	e.outs = append(e.outs, g.Outputs...)
	e.outDims = make([][]int, len(g.Outputs))
	e.outBufs = make([]unsafe.Pointer, len(g.Outputs))
	// out defines a node's output value (external when a partition output)
	out := func(n *graph.Node, scale float32, zp int32) (*qtensor, error) {
		name := n.Outputs[0]
		d, ok := quantOutDims(n, ti)
		if !ok {
			return nil, hal.Errorf(hal.CodeUnsupported, "xnnpack: node %s: output has no static shape", n.Label())
		}
		ext, flags := uint32(xnnInvalidValueID), uint32(0)
		oi, isOut := outIndex[name]
		if isOut {
			ext, flags = uint32(len(inputs)+oi), xnnValueFlagExternalOut
		}
		id, st := define(xnnDatatypeQInt8, zp, scale, d, nil, ext, flags)
		if st != xnnStatusSuccess {
			return nil, fail("tensor of "+n.Label(), st)
		}
		t := &qtensor{id: id, dims: d, scale: scale, zp: zp}
		vals[name] = t
		if isOut {
			buf, err := e.alloc(qelems(d) + xnnExtraBytes)
			if err != nil {
				return nil, err
			}
			e.outDims[oi], e.outBufs[oi] = d, buf
			externals = append(externals, xnnExternalValue{ID: id, Data: buf})
		}
		return t, nil
	}
	// operand returns the value at input i with quantization (s, z): a
	// dynamic value must already carry exactly that quantization; a
	// constant is defined now.
	operand := func(n *graph.Node, i int, s float32, z int32) (*qtensor, error) {
		name := n.Input(i)
		if k := ti.constant(name); k != nil {
			if k.DType != graph.Int8 {
				return nil, hal.Errorf(hal.CodeUnsupported, "xnnpack: node %s: constant %q is %v", n.Label(), name, k.DType)
			}
			m, err := staticBytes(int8Bytes(graph.Data[int8](k)))
			if err != nil {
				return nil, err
			}
			id, st := define(xnnDatatypeQInt8, z, s, k.Shape, m, xnnInvalidValueID, 0)
			if st != xnnStatusSuccess {
				return nil, fail("constant of "+n.Label(), st)
			}
			return &qtensor{id: id, dims: k.Shape, scale: s, zp: z}, nil
		}
		v := vals[name]
		if v == nil {
			return nil, hal.Errorf(hal.CodeInvalidArgument, "xnnpack: node %s reads %q, which nothing defines", n.Label(), name)
		}
		if v.scale != s || v.zp != z {
			return nil, hal.Errorf(hal.CodeUnsupported, "xnnpack: node %s reads %q as scale %g zero point %d, but it was produced with scale %g zero point %d", n.Label(), name, s, z, v.scale, v.zp)
		}
		return v, nil
	}
	for _, n := range order {
		if n.Domain != quantDomain { // int8 reshape
			v := vals[n.Input(0)]
			if v == nil {
				return hal.Errorf(hal.CodeUnsupported, "xnnpack: node %s: int8 input %q is not produced in this partition", n.Label(), n.Input(0))
			}
			y, err := out(n, v.scale, v.zp)
			if err != nil {
				return err
			}
			nd := setDims(y.dims)
			if st := l.defineReshape(sg, nd, dimsPtr, v.id, y.id, 0); st != xnnStatusSuccess {
				return fail("reshape "+n.Label(), st)
			}
			continue
		}
		xs, xz := params(n, 1)
		x, err := operand(n, 0, xs, xz)
		if err != nil {
			return err
		}
		lo, hi, _ := activationBounds(n.AttrString("activation", "NONE"))
		switch n.OpType {
		case "Logistic":
			ys, yz := params(n, 3)
			y, err := out(n, ys, yz)
			if err != nil {
				return err
			}
			if st := l.defineUnary["Sigmoid"](sg, x.id, y.id, 0); st != xnnStatusSuccess {
				return fail("sigmoid "+n.Label(), st)
			}
		case "Mean":
			ys, yz := params(n, 3)
			y, err := out(n, ys, yz)
			if err != nil {
				return err
			}
			gd := []int{x.dims[0], 1, 1, x.dims[3]}
			target := y.id
			if len(y.dims) != 4 {
				gid, st := define(xnnDatatypeQInt8, yz, ys, gd, nil, xnnInvalidValueID, 0)
				if st != xnnStatusSuccess {
					return fail("tensor of "+n.Label(), st)
				}
				target = gid
			}
			if st := l.defineGAP(sg, lo, hi, x.id, target, 0); st != xnnStatusSuccess {
				return fail("global average pooling "+n.Label(), st)
			}
			if target != y.id {
				nd := setDims(y.dims)
				if st := l.defineReshape(sg, nd, dimsPtr, target, y.id, 0); st != xnnStatusSuccess {
					return fail("reshape after "+n.Label(), st)
				}
			}
		case "Add":
			bs, bz := params(n, 4)
			bv, err := operand(n, 3, bs, bz)
			if err != nil {
				return err
			}
			ys, yz := params(n, 6)
			y, err := out(n, ys, yz)
			if err != nil {
				return err
			}
			if st := l.defineBinaryMinMax["Add"](sg, lo, hi, x.id, bv.id, y.id, 0); st != xnnStatusSuccess {
				return fail("add "+n.Label(), st)
			}
		default:
			if err := e.lowerConvFC(n, ti, x, out, define, defineCW, staticBytes, lo, hi, sg); err != nil {
				return err
			}
		}
	}
	for i, b := range e.outBufs {
		if b == nil {
			return hal.Errorf(hal.CodeUnsupported, "xnnpack: output %q is not produced by an int8 node", g.Outputs[i].Name)
		}
	}
	if st := l.createRuntime(sg, pool, 0, scratch); st != xnnStatusSuccess {
		return fail("xnn_create_runtime_v2", st)
	}
	e.rt = *(*uintptr)(scratch)
	ev, err := e.alloc(16 * len(externals))
	if err != nil {
		return err
	}
	copy(unsafe.Slice((*xnnExternalValue)(ev), len(externals)), externals)
	if st := l.setupRuntime(e.rt, uintptr(len(externals)), ev); st != xnnStatusSuccess {
		return hal.Errorf(hal.CodeInternal, "xnnpack: xnn_setup_runtime: %s", statusString(st))
	}
	return nil
}

// lowerConvFC defines Conv2D, DepthwiseConv2D (as a grouped convolution,
// filter [C·m, kh, kw, 1]) or FullyConnected.
func (e *qExecutable) lowerConvFC(n *graph.Node, ti *graphInfo, x *qtensor,
	out func(*graph.Node, float32, int32) (*qtensor, error),
	define func(dt int32, zp int32, scale float32, dims []int, data unsafe.Pointer, ext uint32, flags uint32) (uint32, int32),
	defineCW func(dt int32, scales []float32, dims []int, data unsafe.Pointer) (uint32, int32, error),
	staticBytes func([]byte) (unsafe.Pointer, error), lo, hi float32, sg uintptr) error {
	l := e.lib
	wk := ti.constant(n.Input(3))
	ws, _, _ := qparam(n, ti, 4, "w")
	ys, yz, _ := qparam(n, ti, 6, "y")
	y, err := out(n, ys[0], yz[0])
	if err != nil {
		return err
	}
	wdata := graph.Data[int8](wk)
	wdims := append([]int{}, wk.Shape...)
	var cout, groups, gic, goc int
	switch n.OpType {
	case "FullyConnected":
		cout = wk.Shape[0]
	case "Conv2D":
		cout, gic = wk.Shape[0], wk.Shape[3]
		groups = x.dims[3] / gic
		goc = cout / groups
	case "DepthwiseConv2D":
		kh, kw := wk.Shape[1], wk.Shape[2]
		cout = wk.Shape[3]
		groups, gic, goc = x.dims[3], 1, cout/x.dims[3]
		t := make([]int8, len(wdata)) // [1,kh,kw,cout] → [cout,kh,kw,1]
		for i := 0; i < kh*kw; i++ {
			for c := 0; c < cout; c++ {
				t[c*kh*kw+i] = wdata[i*cout+c]
			}
		}
		wdata, wdims = t, []int{cout, kh, kw, 1}
	}
	wm, err := staticBytes(int8Bytes(wdata))
	if err != nil {
		return err
	}
	var wid uint32
	var st int32
	if len(ws) == 1 {
		wid, st = define(xnnDatatypeQInt8, 0, ws[0], wdims, wm, xnnInvalidValueID, 0)
	} else if wid, st, err = defineCW(xnnDatatypeQCInt8, ws, wdims, wm); err != nil {
		return err
	}
	if st != xnnStatusSuccess {
		return fmt.Errorf("xnnpack: int8 weights of %s: %s", n.Label(), statusString(st))
	}
	bid := uint32(xnnInvalidValueID)
	if bn := n.Input(8); bn != "" {
		bk := ti.constant(bn)
		bd := graph.Data[int32](bk)
		raw := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(bd))), 4*len(bd))
		bm, err := staticBytes(raw)
		if err != nil {
			return err
		}
		if len(ws) == 1 {
			bid, st = define(xnnDatatypeQInt32, 0, x.scale*ws[0], []int{cout}, bm, xnnInvalidValueID, 0)
		} else {
			bsc := make([]float32, cout)
			for c := range bsc {
				bsc[c] = x.scale * ws[c]
			}
			if bid, st, err = defineCW(xnnDatatypeQCInt32, bsc, []int{cout}, bm); err != nil {
				return err
			}
		}
		if st != xnnStatusSuccess {
			return hal.Errorf(hal.CodeUnsupported, "xnnpack: int8 bias of %s: %s", n.Label(), statusString(st))
		}
	}
	if n.OpType == "FullyConnected" {
		if st := l.defineFC(sg, lo, hi, x.id, wid, bid, y.id, 0); st != xnnStatusSuccess {
			return hal.Errorf(hal.CodeUnsupported, "xnnpack: int8 fully connected %s: %s", n.Label(), statusString(st))
		}
		return nil
	}
	s := n.AttrInts("strides", []int64{1, 1})
	d := n.AttrInts("dilations", []int64{1, 1})
	p := n.AttrInts("pads", []int64{0, 0, 0, 0}) // t, l, b, r
	args := []ffiArg{argP(sg), argU(uint32(p[0])), argU(uint32(p[3])), argU(uint32(p[2])), argU(uint32(p[1])),
		argU(uint32(wdims[1])), argU(uint32(wdims[2])), argU(uint32(s[0])), argU(uint32(s[1])), argU(uint32(d[0])), argU(uint32(d[1])), argU(uint32(groups)),
		argQ(uint64(gic)), argQ(uint64(goc)), argF(lo), argF(hi), argU(x.id), argU(wid), argU(bid), argU(y.id), argU(0)}
	if st := l.callFFI(l.convCIF, l.defineConv, args); st != xnnStatusSuccess {
		return hal.Errorf(hal.CodeUnsupported, "xnnpack: int8 convolution %s: %s", n.Label(), statusString(st))
	}
	return nil
}

// quantInputs lists, for an int8 node, (input position, position of its
// scale) pairs; -1: the quantization passes through (reshape).
func quantInputs(n *graph.Node) [][2]int {
	if n.Domain != quantDomain {
		return [][2]int{{0, -1}}
	}
	if n.OpType == "Add" {
		return [][2]int{{0, 1}, {3, 4}}
	}
	return [][2]int{{0, 1}}
}

func qelems(d []int) int {
	n := 1
	for _, v := range d {
		n *= v
	}
	return n
}

func int8Bytes(v []int8) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), len(v))
}

// Execute copies the inputs in, runs the runtime and copies the outputs out.
func (e *qExecutable) Execute(ctx context.Context, inputs, outputs []*graph.Tensor) error {
	if len(inputs) != e.nIn || len(outputs) != len(e.outs) {
		return hal.Errorf(hal.CodeInvalidArgument, "xnnpack: got %d inputs and %d outputs, int8 partition has %d and %d", len(inputs), len(outputs), e.nIn, len(e.outs))
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for i, k := range e.inIdx {
		t := inputs[k]
		if t == nil || t.DType != graph.Int8 || !graph.SameShape(t.Shape, e.inDims[i]) {
			return hal.Errorf(hal.CodeInvalidArgument, "xnnpack: input %q must be int8%v", e.inNames[i], e.inDims[i])
		}
		if t.Check() != nil {
			return hal.Errorf(hal.CodeInvalidArgument, "xnnpack: input %q: %v", e.inNames[i], t.Check())
		}
	}
	for i, dst := range outputs {
		if dst != nil && dst.Data != nil && (dst.DType != graph.Int8 || !graph.SameShape(dst.Shape, e.outDims[i])) {
			return hal.Errorf(hal.CodeInvalidArgument, "xnnpack: output %q is int8%v, caller allocated %v%v", e.outs[i].Name, e.outDims[i], dst.DType, dst.Shape)
		}
		if dst == nil {
			return hal.Errorf(hal.CodeInvalidArgument, "xnnpack: output %q is nil", e.outs[i].Name)
		}
	}
	if err := e.b.enter(); err != nil {
		return err
	}
	defer e.b.leave()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.released || e.rt == 0 {
		return hal.Errorf(hal.CodeFailedPrecondition, "xnnpack: executable released")
	}
	for i, k := range e.inIdx {
		t := inputs[k]
		copy(unsafe.Slice((*int8)(e.inBufs[i]), qelems(e.inDims[i])), graph.Data[int8](t))
	}
	if st := e.lib.invokeRuntime(e.rt); st != xnnStatusSuccess {
		return hal.Errorf(hal.CodeInternal, "xnnpack: xnn_invoke_runtime: %s", statusString(st))
	}
	for i, dst := range outputs {
		if dst.Data == nil {
			t, err := graph.New(graph.Int8, e.outDims[i])
			if err != nil {
				return hal.Errorf(hal.CodeResourceExhausted, "xnnpack: output %q: %v", e.outs[i].Name, err)
			}
			*dst = *t
		}
		copy(graph.Data[int8](dst), unsafe.Slice((*int8)(e.outBufs[i]), qelems(e.outDims[i])))
	}
	return nil
}

// Release frees the runtime and buffers; safe to call more than once.
func (e *qExecutable) Release() error {
	if err := e.b.enter(); err != nil {
		return nil // Close frees it
	}
	defer e.b.leave()
	e.free()
	e.b.mu.Lock()
	delete(e.b.qexes, e)
	e.b.mu.Unlock()
	return nil
}

func (e *qExecutable) free() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.released = true
	if e.rt != 0 {
		e.lib.deleteRuntime(e.rt)
		e.rt = 0
	}
	for _, m := range e.cmem {
		e.lib.free(m)
	}
	e.cmem = nil
}

// hasQuantNode reports whether a partition is for the int8 path.
func hasQuantNode(sg *hal.Subgraph) bool {
	ti := newGraphInfo(sg)
	for _, n := range sg.Graph.Nodes {
		if isQuantNode(n, ti) {
			return true
		}
	}
	return false
}

// OptedInPrecisions: with the int8 option (Options.Int8 or
// SWITCHYARD_XNNPACK_INT8=1) the user accepted XNNPACK's int8 arithmetic
// for the switchyard.quant ops when configuring the backend
// (hal.PrecisionOptIn); the plan still discloses it per partition.
func (b *Backend) OptedInPrecisions() []hal.Precision {
	if int8OptIn(b.opts.Int8) {
		return []hal.Precision{PrecisionInt8}
	}
	return nil
}
