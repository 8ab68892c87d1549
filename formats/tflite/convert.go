package tflite

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/ops/quant"
)

// QuantDomain is the operator domain of the int8 ops the converter emits
// (schemas in core/ops/quant, kernels in core/kernels/quant).
const QuantDomain = quant.Domain

// onnxOpset is the default-domain opset of the converted graph.
const onnxOpset = 17

// TFLite TensorType values.
const (
	ttFloat32 = 0
	ttFloat16 = 1
	ttInt32   = 2
	ttUint8   = 3
	ttInt64   = 4
	ttString  = 5
	ttBool    = 6
	ttInt16   = 7
	ttInt8    = 9
	ttFloat64 = 10
)

var tensorTypes = map[int8]graph.DType{
	ttFloat32: graph.Float32, ttFloat16: graph.Float16, ttInt32: graph.Int32, ttUint8: graph.Uint8,
	ttInt64: graph.Int64, ttString: graph.String, ttBool: graph.Bool, ttInt16: graph.Int16,
	ttInt8: graph.Int8, ttFloat64: graph.Float64,
}

// ConvertOptions configure Convert.
type ConvertOptions struct {
	// MaxTensorBytes, when > 0, lowers the per-tensor limit for weights.
	MaxTensorBytes int64
	// Subgraph selects the subgraph to convert (0, the main one, by default).
	Subgraph int
	// Rounding is the tie rule of the final rounding right shift of
	// int8 CONV_2D and FULLY_CONNECTED requantisation (the ops TFLite's
	// optimized builds compute with ruy's GEMM): "" or RoundAway, TFLite's
	// reference kernels (ties away from zero), or RoundHalfUp, what
	// TFLite's optimized x86 and Arm builds compute (ties toward +∞).
	// With RoundHalfUp the int8 MobileNetV2 of ../shared is bit-identical
	// to TFLite 2.9's own CPU run (formats/tflite's TestInt8MatchesTFLite).
	Rounding string
	// Dequantize imports a quantized model as the float32 network it
	// approximates: every quantized integer tensor (int8, uint8, int16,
	// int32 with affine parameters) becomes float32; constants hold their
	// real values scale·(q − zero point), per tensor or per channel, and
	// the int32 bias of a CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED or
	// TRANSPOSE_CONV is dequantised with input scale × filter scale, the
	// scale TFLite's kernels give it. QUANTIZE and DEQUANTIZE become
	// identities, and every operator goes through the float import (fused
	// activations as Relu/Clip/Tanh). A quantized input or output is then
	// a float32 tensor of real values: feed scale·(q − zero point) where
	// the int8 model takes q; the metadata entry "dequantized:NAME"
	// records the parameters it had. Results differ from the int8 import
	// by what quantisation costs: no activation is rounded to its int8
	// grid or clamped to the int8 range after each operator, and no
	// fixed-point multiplier or lookup table stands in for a float
	// operation. A model with no quantized tensor converts as without the
	// option. Rounding does not apply (there is no requantisation).
	Dequantize bool
}

// Rounding rules of ConvertOptions.Rounding (the "rounding" attribute of
// the switchyard.quant ops).
const (
	RoundAway   = "away"
	RoundHalfUp = "half_up"
)

// UnsupportedError lists every operator of a model the converter cannot
// turn into the IR; Convert returns it before anything runs.
type UnsupportedError struct {
	// Ops are "NAME ×count: reason" entries, sorted.
	Ops []string
}

func (e *UnsupportedError) Error() string {
	return "tflite: unsupported operators: " + strings.Join(e.Ops, "; ")
}

// converter holds the state of one subgraph's conversion.
type converter struct {
	m      *Model
	sg     *Subgraph
	opts   ConvertOptions
	g      *graph.Graph
	names  []string                // value name per tensor index
	folded map[int32]*graph.Tensor // constants computed at import (dequantised float16)
	inits  map[string]bool
	nchw   map[string]string // NHWC value -> its NCHW transpose
	// produced maps an NHWC value written by fromNCHW to the NCHW value
	// it was transposed from
	produced map[string]string
	// padOf records PAD outputs a convolution may absorb: source tensor
	// and top, left, bottom, right pads; readers counts each tensor's
	// readers (operator inputs and graph outputs)
	padOf   map[int32][5]int
	readers map[int32]int
	qps     map[int32][2]string
	fresh   int
	quant   bool
}

// Convert turns one subgraph of a decoded model into a Switchyard IR model.
// Tensors keep the model's own NHWC layout; float convolutions and pools
// run on the NCHW ONNX ops between two Transposes (exact: a transpose only
// moves values), int8 ones on the NHWC ops of QuantDomain. Constant
// DEQUANTIZE of float16 weights is folded into float32 initializers. Every
// operator that cannot be converted is named in one *UnsupportedError.
func Convert(m *Model, opts ConvertOptions) (*graph.Model, error) {
	if opts.Rounding != "" && opts.Rounding != RoundAway && opts.Rounding != RoundHalfUp {
		return nil, fmt.Errorf("tflite: rounding %q: want %q or %q", opts.Rounding, RoundAway, RoundHalfUp)
	}
	if opts.Subgraph < 0 || opts.Subgraph >= len(m.Subgraphs) {
		return nil, fmt.Errorf("tflite: subgraph %d of %d", opts.Subgraph, len(m.Subgraphs))
	}
	sg := &m.Subgraphs[opts.Subgraph]
	c := &converter{m: m, sg: sg, opts: opts, folded: map[int32]*graph.Tensor{}, inits: map[string]bool{},
		nchw: map[string]string{}, produced: map[string]string{}, padOf: map[int32][5]int{}, readers: map[int32]int{}, qps: map[int32][2]string{}}
	c.g = &graph.Graph{Name: sg.Name, Initializers: map[string]*graph.Tensor{}}
	if c.g.Name == "" {
		c.g.Name = "main"
	}
	c.nameTensors()
	deq := 0
	if opts.Dequantize {
		n, err := c.dequantizeTensors()
		if err != nil {
			return nil, err
		}
		deq = n
	}
	for _, i := range sg.Inputs {
		vt, err := c.valueType(i)
		if err != nil {
			return nil, fmt.Errorf("tflite: input %d: %w", i, err)
		}
		c.g.Inputs = append(c.g.Inputs, graph.ValueInfo{Name: c.names[i], Type: vt})
	}
	for _, op := range sg.Operators {
		for _, i := range op.Inputs {
			c.readers[i]++
		}
	}
	for _, i := range sg.Outputs {
		c.readers[i]++
	}
	problems := map[string]int{}
	for oi := range sg.Operators {
		op := &sg.Operators[oi]
		if err := c.convertOp(op); err != nil {
			problems[fmt.Sprintf("%s: %v", c.m.Opcodes[op.Opcode].Name(), err)]++
		}
	}
	if len(problems) > 0 {
		ue := &UnsupportedError{}
		for k, n := range problems {
			name, reason, _ := strings.Cut(k, ": ")
			ue.Ops = append(ue.Ops, fmt.Sprintf("%s ×%d: %s", name, n, reason))
		}
		sort.Strings(ue.Ops)
		return nil, ue
	}
	for _, i := range sg.Outputs {
		vt, err := c.valueType(i)
		if err != nil {
			return nil, fmt.Errorf("tflite: output %d: %w", i, err)
		}
		if _, err := c.value(i); err != nil {
			return nil, fmt.Errorf("tflite: output %d: %w", i, err)
		}
		c.g.Outputs = append(c.g.Outputs, graph.ValueInfo{Name: c.names[i], Type: vt})
	}
	c.pruneDead()
	gm := &graph.Model{IRVersion: 8, ProducerName: "tflite", ProducerVersion: fmt.Sprint(m.Version),
		DocString: m.Description, Graph: c.g, Opsets: []graph.Opset{{Domain: "", Version: onnxOpset}},
		Metadata: map[string]string{}}
	if c.quant {
		gm.Opsets = append(gm.Opsets, graph.Opset{Domain: QuantDomain, Version: 1})
	}
	key := "quantization:"
	if opts.Dequantize {
		key = "dequantized:"
		gm.Metadata["tflite.dequantized_tensors"] = fmt.Sprint(deq)
	}
	for _, i := range append(append([]int32{}, sg.Inputs...), sg.Outputs...) {
		// sg is the model's own subgraph: with Dequantize, c.sg is a copy
		// whose tensors no longer carry quantization
		if q := sg.Tensors[i].Quant; q != nil && len(q.Scale) == 1 && (!opts.Dequantize || quantizable(sg.Tensors[i].Type, q)) {
			v := fmt.Sprintf("scale=%g zero_point=%d", q.Scale[0], zp0(q))
			if opts.Dequantize {
				v = typeName(sg.Tensors[i].Type) + " " + v
			}
			gm.Metadata[key+c.names[i]] = v
		}
	}
	return gm, nil
}

func (c *converter) nameTensors() {
	c.names = make([]string, len(c.sg.Tensors))
	used := map[string]bool{}
	for i, t := range c.sg.Tensors {
		n := t.Name
		if n == "" || used[n] {
			n = fmt.Sprintf("%s#%d", t.Name, i)
		}
		used[n] = true
		c.names[i] = n
	}
}

func (c *converter) valueType(i int32) (graph.ValueType, error) {
	t := &c.sg.Tensors[i]
	dt, ok := tensorTypes[t.Type]
	if !ok {
		return graph.ValueType{}, fmt.Errorf("tensor %q has TFLite type %d, which Switchyard does not hold", t.Name, t.Type)
	}
	sh := make(graph.Shape, len(t.Shape))
	for k, d := range t.Shape {
		sh[k] = graph.Dim{Value: int64(d)}
		if k < len(t.Signature) && t.Signature[k] < 0 {
			sh[k] = graph.Dim{Param: fmt.Sprintf("%s_dim%d", c.names[i], k)}
		}
	}
	return graph.ValueType{Kind: "tensor", DType: dt, Shape: sh}, nil
}

// constant returns the tensor's value when it is known at import: a
// buffer or a folded DEQUANTIZE; nil otherwise.
func (c *converter) constant(i int32) (*graph.Tensor, error) {
	if i < 0 {
		return nil, nil
	}
	if t, ok := c.folded[i]; ok {
		return t, nil
	}
	t := &c.sg.Tensors[i]
	if t.Buffer == 0 || int(t.Buffer) >= len(c.m.Buffers) || len(c.m.Buffers[t.Buffer]) == 0 {
		return nil, nil
	}
	dt, ok := tensorTypes[t.Type]
	if !ok || dt == graph.String {
		return nil, fmt.Errorf("constant %q of TFLite type %d is not supported", t.Name, t.Type)
	}
	shape := make([]int, len(t.Shape))
	for k, d := range t.Shape {
		if d < 0 {
			return nil, fmt.Errorf("constant %q has a negative dim", t.Name)
		}
		shape[k] = int(d)
	}
	n, err := graph.CheckAllocLimit(dt, shape, c.opts.MaxTensorBytes)
	if err != nil {
		return nil, fmt.Errorf("constant %q: %w", t.Name, err)
	}
	b := c.m.Buffers[t.Buffer]
	if t.Sparse {
		// a sparse constant (behind DENSIFY, or read directly) is
		// expanded at import; its dense size passed the limit above
		if t.Sparsity == nil {
			return nil, fmt.Errorf("sparse constant %q has no sparsity parameters", t.Name)
		}
		if b, err = densify(t.Sparsity, shape, dt.Size(), b); err != nil {
			return nil, fmt.Errorf("sparse constant %q: %w", t.Name, err)
		}
	}
	if len(b) != n*dt.Size() {
		return nil, fmt.Errorf("constant %q of shape %v needs %d bytes, its buffer has %d", t.Name, shape, n*dt.Size(), len(b))
	}
	out, err := graph.New(dt, shape)
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	switch d := out.Data.(type) {
	case []float32:
		for k := range d {
			d[k] = math.Float32frombits(le.Uint32(b[4*k:]))
		}
	case []float64:
		for k := range d {
			d[k] = math.Float64frombits(le.Uint64(b[8*k:]))
		}
	case []graph.F16:
		for k := range d {
			d[k] = graph.F16(le.Uint16(b[2*k:]))
		}
	case []int32:
		for k := range d {
			d[k] = int32(le.Uint32(b[4*k:]))
		}
	case []int64:
		for k := range d {
			d[k] = int64(le.Uint64(b[8*k:]))
		}
	case []int16:
		for k := range d {
			d[k] = int16(le.Uint16(b[2*k:]))
		}
	case []int8:
		for k := range d {
			d[k] = int8(b[k])
		}
	case []uint8:
		copy(d, b)
	case []bool:
		for k := range d {
			d[k] = b[k] != 0
		}
	default:
		return nil, fmt.Errorf("constant %q: dtype %v not supported", t.Name, dt)
	}
	c.folded[i] = out
	return out, nil
}

// value returns the IR name of tensor i as a node input, adding its
// initializer when it is a constant.
func (c *converter) value(i int32) (string, error) {
	if i < 0 {
		return "", nil
	}
	name := c.names[i]
	k, err := c.constant(i)
	if err != nil {
		return "", err
	}
	if k != nil && !c.inits[name] {
		c.g.Initializers[name] = k
		c.inits[name] = true
	}
	return name, nil
}

// addConst adds an initializer under a fresh name.
func (c *converter) addConst(hint string, t *graph.Tensor) string {
	name := c.freshName(hint)
	c.g.Initializers[name] = t
	c.inits[name] = true
	return name
}

func (c *converter) freshName(hint string) string {
	c.fresh++
	return fmt.Sprintf("%s/%d", hint, c.fresh)
}

func (c *converter) node(op, domain string, in, out []string, attrs ...*graph.Attribute) *graph.Node {
	n := &graph.Node{Name: out[0], OpType: op, Domain: domain, Inputs: in, Outputs: out}
	if len(attrs) > 0 {
		n.Attrs = map[string]*graph.Attribute{}
		for _, a := range attrs {
			n.Attrs[a.Name] = a
		}
	}
	if domain == QuantDomain {
		c.quant = true
	}
	c.g.Nodes = append(c.g.Nodes, n)
	return n
}

func aInts(name string, v ...int64) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrInts, Ints: v}
}
func aInt(name string, v int64) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrInt, I: v}
}
func aFloat(name string, v float32) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrFloat, F: v}
}
func aStr(name, v string) *graph.Attribute {
	return &graph.Attribute{Name: name, Type: graph.AttrString, S: v}
}

func i64s(v []int) []int64 {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}

// shapeOf is tensor i's declared shape.
func (c *converter) shapeOf(i int32) []int {
	s := c.sg.Tensors[i].Shape
	out := make([]int, len(s))
	for k, d := range s {
		out[k] = int(d)
	}
	return out
}

func (c *converter) isInt8(i int32) bool { return i >= 0 && c.sg.Tensors[i].Type == ttInt8 }

// toNCHW returns an NCHW transpose of an NHWC value (cached: several
// consumers share one).
func (c *converter) toNCHW(v string) string {
	if t, ok := c.nchw[v]; ok {
		return t
	}
	t := c.freshName(v + "/nchw")
	c.node("Transpose", "", []string{v}, []string{t}, aInts("perm", 0, 3, 1, 2))
	c.nchw[v] = t
	return t
}

// fromNCHW writes the NHWC transpose of an NCHW value to out, and
// remembers v as out's NCHW form so that a following NCHW op reads v
// directly (the Transpose pair then disappears in pruneDead when out has
// no other reader).
func (c *converter) fromNCHW(v, out string) {
	c.node("Transpose", "", []string{v}, []string{out}, aInts("perm", 0, 2, 3, 1))
	c.nchw[out] = v
	c.produced[out] = v
}

// pruneDead removes nodes none of whose outputs is read or is a graph
// output (Transposes left behind by fromNCHW's shortcut), and the
// initializers no node reads any more.
func (c *converter) pruneDead() {
	for {
		used := map[string]bool{}
		for _, o := range c.g.Outputs {
			used[o.Name] = true
		}
		for _, n := range c.g.Nodes {
			for _, i := range n.Inputs {
				used[i] = true
			}
		}
		kept := c.g.Nodes[:0]
		for _, n := range c.g.Nodes {
			live := false
			for _, o := range n.Outputs {
				live = live || used[o]
			}
			if live {
				kept = append(kept, n)
			}
		}
		removed := len(kept) != len(c.g.Nodes)
		c.g.Nodes = kept
		if !removed {
			for name := range c.g.Initializers {
				if !used[name] {
					delete(c.g.Initializers, name)
				}
			}
			return
		}
	}
}

// Fused activation functions (ActivationFunctionType).
const (
	actNone  = 0
	actRelu  = 1
	actN1To1 = 2
	actRelu6 = 3
	actTanh  = 4
)

var actNames = map[int8]string{actNone: "NONE", actRelu: "RELU", actN1To1: "RELU_N1_TO_1", actRelu6: "RELU6", actTanh: "TANH"}

// floatAct makes the node writing out apply activation act: it returns
// the name the producing node must write to.
func (c *converter) floatAct(act int8, out string) (string, error) {
	if act == actNone {
		return out, nil
	}
	tmp := c.freshName(out + "/preact")
	switch act {
	case actRelu:
		c.node("Relu", "", []string{tmp}, []string{out})
	case actRelu6, actN1To1:
		lo, hi := float32(0), float32(6)
		if act == actN1To1 {
			lo, hi = -1, 1
		}
		c.node("Clip", "", []string{tmp, c.addConst("min", graph.Scalar(lo)), c.addConst("max", graph.Scalar(hi))}, []string{out})
	case actTanh:
		c.node("Tanh", "", []string{tmp}, []string{out})
	default:
		return "", fmt.Errorf("fused activation %d is not supported", act)
	}
	return tmp, nil
}

// quantAct names a fused activation for a QuantDomain op.
func quantAct(act int8) (*graph.Attribute, error) {
	switch act {
	case actNone, actRelu, actN1To1, actRelu6:
		return aStr("activation", actNames[act]), nil
	}
	return nil, fmt.Errorf("fused activation %d is not supported on int8", act)
}

// qparams returns initializer names of tensor i's scale and zero point
// (scalars when per tensor, 1-D when per channel).
// roundingAttr adds the "rounding" attribute when the options ask for a
// rule other than the reference one.
func (c *converter) roundingAttr(attrs []*graph.Attribute) []*graph.Attribute {
	if c.opts.Rounding == RoundHalfUp {
		return append(attrs, aStr("rounding", RoundHalfUp))
	}
	return attrs
}

func (c *converter) qparams(i int32) (string, string, error) {
	if p, ok := c.qps[i]; ok {
		return p[0], p[1], nil
	}
	t := &c.sg.Tensors[i]
	q := t.Quant
	if q == nil || len(q.Scale) == 0 {
		return "", "", fmt.Errorf("tensor %q has no quantization parameters", t.Name)
	}
	if q.Custom {
		return "", "", fmt.Errorf("tensor %q has custom quantization", t.Name)
	}
	n := len(q.Scale)
	shape := []int{}
	if n > 1 {
		shape = []int{n}
	}
	scale, _ := graph.FromSlice(shape, append([]float32{}, q.Scale...))
	var zp *graph.Tensor
	switch t.Type {
	case ttInt8:
		z := make([]int8, n)
		for k := range z {
			if k < len(q.ZeroPoint) {
				if q.ZeroPoint[k] < -128 || q.ZeroPoint[k] > 127 {
					return "", "", fmt.Errorf("tensor %q: zero point %d is outside int8", t.Name, q.ZeroPoint[k])
				}
				z[k] = int8(q.ZeroPoint[k])
			}
		}
		zp, _ = graph.FromSlice(shape, z)
	case ttInt32:
		z := make([]int32, n)
		for k := range z {
			if k < len(q.ZeroPoint) {
				z[k] = int32(q.ZeroPoint[k])
			}
		}
		zp, _ = graph.FromSlice(shape, z)
	default:
		return "", "", fmt.Errorf("tensor %q: quantized type %d is not supported (int8 only)", t.Name, t.Type)
	}
	s := c.addConst(c.names[i]+"/scale", scale)
	z := c.addConst(c.names[i]+"/zero_point", zp)
	c.qps[i] = [2]string{s, z}
	return s, z, nil
}

// perChannelDim checks a weight's quantization axis is the one the op
// expects (or that it is per tensor).
func (c *converter) perChannelDim(i int32, dim int32) error {
	q := c.sg.Tensors[i].Quant
	if q != nil && len(q.Scale) > 1 && q.Dim != dim {
		return fmt.Errorf("filter %q is quantized per channel along dim %d, expected %d", c.sg.Tensors[i].Name, q.Dim, dim)
	}
	return nil
}
