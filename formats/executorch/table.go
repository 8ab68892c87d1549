package executorch

import (
	"fmt"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// kernelSpec is a kernel whose lowering is one IR node: the node's inputs
// and attributes are the call's arguments, read as args lists them. The
// kernels that need more (promotion, decomposition, checks) are code.
type kernelSpec struct {
	op     string // IR op type
	domain string // "" for the default domain, else a custom domain (declared out type as attributes)
	need   int    // the call has at least this many arguments
	out    int    // position of the out argument; -2 is the second-last (inputs, out, returned value)
	dtype  dtRule // the dtype the node computes in
	args   []argSpec
}

// dtRule says which dtype a spec's node computes in; def casts the result
// to the out's declared dtype when they differ.
type dtRule uint8

const (
	selfType  dtRule = iota // argument 0's dtype
	outType                 // the out's dtype, argument 0 cast to it first
	floatSelf               // a floating dtype: argument 0 read with floatInput
)

// argKind says what one argument of a call becomes.
type argKind uint8

const (
	tensorIn    argKind = iota // input: a tensor
	optTensorIn                // input: a tensor, or "" when the argument is null
	floatIn                    // input: argument at (0) read with floatInput
	intIn                      // input: an int as a 0-d int64 constant
	dimIn                      // input: a dimension of argument 0 as a 0-d int64 constant
	intAttr                    // attribute name: an int
	intsAttr                   // attribute name: an int list
	dimAttr                    // attribute name: a dimension of argument 0
	floatAttr                  // attribute name: a number as float32
	fixedAttr                  // attribute: the constant attr (reads no argument)
)

// argSpec is one argument of a spec: what it becomes and where it is.
type argSpec struct {
	kind argKind
	at   int
	name string           // the attribute's name
	attr *graph.Attribute // fixedAttr
}

func input(at int) argSpec                { return argSpec{kind: tensorIn, at: at} }
func optInput(at int) argSpec             { return argSpec{kind: optTensorIn, at: at} }
func intArg(name string, at int) argSpec  { return argSpec{kind: intAttr, at: at, name: name} }
func intsArg(name string, at int) argSpec { return argSpec{kind: intsAttr, at: at, name: name} }
func dimArg(name string, at int) argSpec  { return argSpec{kind: dimAttr, at: at, name: name} }
func fixedArg(a *graph.Attribute) argSpec { return argSpec{kind: fixedAttr, attr: a} }

// kernelTable holds the kernels that lower to one node, by
// "namespace::op.overload".
var kernelTable = map[string]kernelSpec{
	// indexing: (self, dim, index[, src], out)
	"aten::index_select.out":    {op: "Gather", need: 4, out: 3, args: []argSpec{input(0), dimArg("axis", 1), input(2)}},
	"aten::select_copy.int_out": {op: "Gather", need: 4, out: 3, args: []argSpec{input(0), dimArg("axis", 1), {kind: intIn, at: 2}}},
	"aten::gather.out":          {op: "GatherElements", need: 5, out: 4, args: []argSpec{input(0), dimArg("axis", 1), input(2)}},
	"aten::scatter.src_out":     {op: "ScatterElements", need: 5, out: 4, args: []argSpec{input(0), dimArg("axis", 1), input(2), input(3)}},
	// embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse, out)
	"aten::embedding.out": {op: "Gather", need: 6, out: 5, args: []argSpec{input(0), input(1), fixedArg(aInt("axis", 0))}},
	// pixel_shuffle(self, upscale_factor, out)
	"aten::pixel_shuffle.out": {op: "DepthToSpace", need: 3, out: 2, args: []argSpec{input(0), intArg("blocksize", 1), fixedArg(aString("mode", "CRD"))}},
	// (self, dim, half_to_float / dtype, out): computed in the out's dtype
	"aten::_softmax.out":     {op: "Softmax", need: 4, out: 3, dtype: outType, args: []argSpec{input(0), dimArg("axis", 1)}},
	"aten::_log_softmax.out": {op: "LogSoftmax", need: 4, out: 3, dtype: outType, args: []argSpec{input(0), dimArg("axis", 1)}},
	"aten::cumsum.out":       {op: "CumSum", need: 4, out: 3, dtype: outType, args: []argSpec{input(0), {kind: dimIn, at: 1}}},
	// leaky_relu(self, negative_slope, out)
	"aten::leaky_relu.out": {op: "LeakyRelu", need: 3, out: 2, dtype: floatSelf, args: []argSpec{{kind: floatIn}, {kind: floatAttr, at: 1, name: "alpha"}}},

	// quantized_decomposed per channel: (input, scales, zero_points, axis,
	// quant_min, quant_max, dtype, [out_dtype,] out)
	"quantized_decomposed::quantize_per_channel.out":   perChannel("QuantizePerChannel"),
	"quantized_decomposed::dequantize_per_channel.out": perChannel("DequantizePerChannel"),

	// cortex_m::quantized_conv2d: (input, weight, bias, stride, padding,
	// dilation, input_offset, output_offset, multipliers, shifts, act_min,
	// act_max, scratch, out); the depthwise form has depth_multiplier
	// after dilation.
	"cortex_m::quantized_conv2d.out": {op: "Conv2D", domain: CortexMDomain, need: 14, out: 13, args: []argSpec{
		input(0), input(1), optInput(2), intsArg("strides", 3), intsArg("pads", 4), intsArg("dilations", 5),
		intArg("input_offset", 6), intArg("output_offset", 7), input(8), input(9),
		intArg("activation_min", 10), intArg("activation_max", 11)}},
	"cortex_m::quantized_depthwise_conv2d.out": {op: "Conv2D", domain: CortexMDomain, need: 15, out: 14, args: []argSpec{
		input(0), input(1), optInput(2), intsArg("strides", 3), intsArg("pads", 4), intsArg("dilations", 5),
		fixedArg(aInt("depthwise", 1)), intArg("ch_mult", 6),
		intArg("input_offset", 7), intArg("output_offset", 8), input(9), input(10),
		intArg("activation_min", 11), intArg("activation_max", 12)}},
	// quantized_linear: (input, weights, bias, kernel_sum, input_offset,
	// filter_offset, output_offset, multipliers, shifts, act_max, act_min,
	// out). kernel_sum only caches sums of the weights; it is recomputed.
	"cortex_m::quantized_linear.out": {op: "Linear", domain: CortexMDomain, need: 12, out: 11, args: []argSpec{
		input(0), input(1), optInput(2), intArg("input_offset", 4), intArg("filter_offset", 5), intArg("output_offset", 6),
		intsArg("multipliers", 7), intsArg("shifts", 8), intArg("activation_max", 9), intArg("activation_min", 10)}},
	// quantized_avg_pool2d: (input, kernel, stride, padding, ceil_mode,
	// zero_point, multiplier, shift, scratch, out); CMSIS-NN's average
	// pool takes no requantization, so the last three numbers are unused,
	// as in ExecuTorch's kernel.
	"cortex_m::quantized_avg_pool2d.out": {op: "AvgPool2D", domain: CortexMDomain, need: 10, out: 9, args: []argSpec{
		input(0), intsArg("kernel_shape", 1), intsArg("strides", 2), intsArg("pads", 3)}},
}

func perChannel(op string) kernelSpec {
	return kernelSpec{op: op, domain: QuantDomain, need: 8, out: -2, args: []argSpec{
		input(0), input(1), optInput(2), intArg("axis", 3), intArg("quant_min", 4), intArg("quant_max", 5)}}
}

func init() {
	for name, s := range kernelTable {
		lowerings[name] = s.lower
	}
}

// lower reads the call's arguments as s lists them, then adds the node.
func (s kernelSpec) lower(l *lowerer, a []int32) error {
	if err := need(a, s.need); err != nil {
		return err
	}
	at := s.out
	if at < 0 {
		at += len(a)
	}
	out := a[at]
	// read every argument, in order, before building anything
	type read struct {
		name string
		i    int64
		is   []int64
		f    float64
	}
	r := make([]read, len(s.args))
	var dt graph.DType
	for k, g := range s.args {
		var err error
		switch g.kind {
		case tensorIn:
			r[k].name, err = l.tensor(a[g.at])
		case optTensorIn:
			if !l.isNull(a[g.at]) {
				r[k].name, err = l.tensor(a[g.at])
			}
		case floatIn:
			r[k].name, dt, err = l.floatInput(a[g.at], out)
		case intIn:
			r[k].i, err = l.int(a[g.at])
		case dimIn, dimAttr:
			r[k].i, err = l.dimOf(a[g.at], a[0])
		case intAttr:
			if r[k].i, err = l.int(a[g.at]); err != nil {
				err = fmt.Errorf("%s: %w", g.name, err)
			}
		case intsAttr:
			r[k].is, err = l.ints(a[g.at])
		case floatAttr:
			r[k].f, err = l.double(a[g.at])
		}
		if err != nil {
			return err
		}
	}
	switch s.dtype {
	case selfType:
		_, dt, _ = l.meta(a[0])
	case outType:
		var err error
		if _, dt, err = l.meta(out); err != nil {
			return err
		}
	}
	var ins []string
	var attrs []*graph.Attribute
	for k, g := range s.args {
		switch g.kind {
		case tensorIn, optTensorIn, floatIn:
			x := r[k].name
			if s.dtype == outType && g.at == 0 {
				if _, idt, _ := l.meta(a[0]); idt != dt {
					x = l.op1("Cast", []string{x}, aInt("to", int64(dt)))
				}
			}
			ins = append(ins, x)
		case intIn, dimIn:
			ins = append(ins, l.constT(graph.Scalar(r[k].i)))
		case intAttr, dimAttr:
			attrs = append(attrs, aInt(g.name, r[k].i))
		case intsAttr:
			attrs = append(attrs, aInts(g.name, r[k].is))
		case floatAttr:
			attrs = append(attrs, aFloat(g.name, float32(r[k].f)))
		case fixedAttr:
			attrs = append(attrs, g.attr)
		}
	}
	if s.domain != "" {
		return l.custom(s.domain, s.op, ins, out, attrs...)
	}
	return l.def(out, l.op1(s.op, ins, attrs...), dt)
}
