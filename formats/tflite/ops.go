package tflite

import (
	"fmt"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/internal/flatbuf"
)

// Padding values of the schema's Padding enum.
const (
	padSame  = 0
	padValid = 1
)

// windowPads computes TFLite's padding along one spatial axis: SAME pads
// (out-1)*stride + effective filter - in in total, the smaller half before;
// VALID pads nothing.
func windowPads(padding uint8, in, k, stride, dil int) (before, after int, err error) {
	if stride < 1 || dil < 1 || k < 1 {
		return 0, 0, fmt.Errorf("stride %d, dilation %d and filter %d must be positive", stride, dil, k)
	}
	eff := (k-1)*dil + 1
	switch padding {
	case padValid:
		return 0, 0, nil
	case padSame:
		out := (in + stride - 1) / stride
		total := max((out-1)*stride+eff-in, 0)
		return total / 2, total - total/2, nil
	}
	return 0, 0, fmt.Errorf("padding %d is not SAME or VALID", padding)
}

// opts reads the options of an operator; missing options take the
// schema's defaults.
type optReader struct {
	t   flatbuf.Table
	err error
}

func (r *optReader) u8(i int, def uint8) uint8 {
	v, err := r.t.U8(i, def)
	if r.err == nil {
		r.err = err
	}
	return v
}
func (r *optReader) i8(i int) int8 { return int8(r.u8(i, 0)) }
func (r *optReader) i32(i int, def int32) int {
	v, err := r.t.I32(i, def)
	if r.err == nil {
		r.err = err
	}
	return int(v)
}
func (r *optReader) f32(i int, def float32) float32 {
	v, err := r.t.F32(i, def)
	if r.err == nil {
		r.err = err
	}
	return v
}
func (r *optReader) boolean(i int) bool {
	v, err := r.t.Bool(i, false)
	if r.err == nil {
		r.err = err
	}
	return v
}

func (c *converter) convertOp(op *Operator) error {
	oc := c.m.Opcodes[op.Opcode]
	if oc.Builtin == opCUSTOM {
		if oc.Custom == "Convolution2DTransposeBias" {
			return c.mediapipeTransposeConv(op)
		}
		return fmt.Errorf("custom operator %q has no Switchyard implementation", oc.Custom)
	}
	var r optReader
	if op.HasOptions {
		r.t = op.Options
	}
	in := func(k int) int32 {
		if k < len(op.Inputs) {
			return op.Inputs[k]
		}
		return -1
	}
	if len(op.Outputs) == 0 {
		return fmt.Errorf("operator has no output")
	}
	if len(op.Inputs) == 0 && oc.Builtin != opCUSTOM {
		return fmt.Errorf("operator has no input")
	}
	for _, i := range op.Outputs {
		if i < 0 {
			return fmt.Errorf("operator output is omitted")
		}
	}
	out := op.Outputs[0]
	var err error
	switch oc.Builtin {
	case opCONV_2D:
		err = c.conv(op, false, &r)
	case opDEPTHWISE_CONV_2D:
		err = c.conv(op, true, &r)
	case opAVERAGE_POOL_2D, opMAX_POOL_2D:
		err = c.pool(op, oc.Builtin == opMAX_POOL_2D, &r)
	case opFULLY_CONNECTED:
		err = c.fullyConnected(op, &r)
	case opADD, opSUB, opMUL, opDIV:
		err = c.binary(op, oc.Builtin, &r)
	case opRESHAPE, opSQUEEZE, opEXPAND_DIMS:
		err = c.reshape(in(0), out)
	case opCONCATENATION:
		err = c.concat(op, &r)
	case opPAD, opPADV2:
		err = c.pad(op)
	case opMEAN:
		err = c.mean(op, &r)
	case opSOFTMAX:
		err = c.softmax(op, &r)
	case opLOGISTIC, opTANH, opRELU, opRELU6, opRELU_N1_TO_1, opHARD_SWISH, opLEAKY_RELU:
		err = c.unary(op, oc.Builtin, &r)
	case opTRANSPOSE:
		err = c.transpose(op)
	case opDEQUANTIZE:
		err = c.dequantize(op)
	case opDENSIFY:
		err = c.densifyOp(op)
	case opDEPTH_TO_SPACE, opSPACE_TO_DEPTH:
		err = c.depthSpace(op, oc.Builtin == opDEPTH_TO_SPACE, r.i32(0, 0))
	case opQUANTIZE:
		err = c.quantize(op)
	case opRESIZE_BILINEAR:
		err = c.resizeBilinear(op, &r)
	case opEXP, opLOG, opSQRT, opRSQRT, opABS, opNEG:
		err = c.floatUnary(op, oc.Builtin)
	case opMAXIMUM, opMINIMUM, opSQUARED_DIFFERENCE:
		err = c.floatBinary(op, oc.Builtin)
	case opSUM, opREDUCE_MAX:
		err = c.reduce(op, oc.Builtin, &r)
	case opCAST:
		err = c.cast(op)
	case opGATHER:
		err = c.gather(op, &r)
	case opSLICE:
		err = c.slice(op)
	case opSTRIDED_SLICE:
		err = c.stridedSlice(op, &r)
	case opSPLIT, opSPLIT_V:
		err = c.split(op, oc.Builtin)
	case opPACK:
		err = c.pack(op, &r)
	case opARG_MAX:
		err = c.argMax(op)
	case opPRELU:
		err = c.floatBinary(op, oc.Builtin)
	case opBATCH_MATMUL:
		err = c.batchMatMul(op, &r)
	case opRESIZE_NEAREST_NEIGHBOR:
		err = c.resizeNearest(op, &r)
	case opUNIDIRECTIONAL_SEQUENCE_LSTM:
		err = c.lstm(op, &r)
	case opTRANSPOSE_CONV:
		if len(op.Inputs) < 3 {
			return fmt.Errorf("needs an output shape, weights and an input")
		}
		b := int32(-1)
		if len(op.Inputs) > 3 {
			b = op.Inputs[3]
		}
		err = c.transposeConv(op.Inputs[2], op.Inputs[1], b, op.Outputs[0], r.u8(0, 0) == padSame, r.i32(2, 1), r.i32(1, 1), r.i8(3))
	default:
		return fmt.Errorf("builtin operator is not converted")
	}
	if err == nil && r.err != nil {
		err = fmt.Errorf("options: %w", r.err)
	}
	return err
}

func (c *converter) conv(op *Operator, depthwise bool, r *optReader) error {
	if len(op.Inputs) < 2 {
		return fmt.Errorf("needs an input and a filter")
	}
	x, w := op.Inputs[0], op.Inputs[1]
	b := int32(-1)
	if len(op.Inputs) > 2 {
		b = op.Inputs[2]
	}
	y := op.Outputs[0]
	padding := r.u8(0, 0)
	sw, sh := r.i32(1, 1), r.i32(2, 1)
	var act int8
	var dw, dh, mult int
	if depthwise {
		mult = r.i32(3, 1)
		act = r.i8(4)
		dw, dh = r.i32(5, 1), r.i32(6, 1)
	} else {
		act = r.i8(3)
		dw, dh = r.i32(4, 1), r.i32(5, 1)
	}
	xs, ws := c.shapeOf(x), c.shapeOf(w)
	if len(xs) != 4 || len(ws) != 4 {
		return fmt.Errorf("input %v and filter %v must be 4-D", xs, ws)
	}
	cin := xs[3]
	var cout int
	if depthwise {
		if ws[0] != 1 {
			return fmt.Errorf("depthwise filter %v must be [1,H,W,C]", ws)
		}
		cout = ws[3]
		if cin == 0 || cout%cin != 0 {
			return fmt.Errorf("depthwise filter has %d channels for %d input channels", cout, cin)
		}
		_ = mult // the multiplier is cout/cin; the option is informative
	} else {
		cout = ws[0]
		if ws[3] == 0 || cin%ws[3] != 0 {
			return fmt.Errorf("filter %v does not divide the %d input channels", ws, cin)
		}
	}
	if ys := c.shapeOf(y); len(ys) != 4 || ys[3] != cout {
		return fmt.Errorf("output %v does not have the filter's %d channels", ys, cout)
	}
	pt, pb, err := windowPads(padding, xs[1], ws[1], sh, dh)
	if err != nil {
		return err
	}
	pl, pr, err := windowPads(padding, xs[2], ws[2], sw, dw)
	if err != nil {
		return err
	}
	if p, ok := c.padOf[x]; ok && c.readers[x] == 1 {
		// the input is a spatial PAD with zero (the zero point) read only
		// here: padding the window instead is exact (padded positions
		// contribute (zp − zp)·w = 0, or 0·w), and the Pad node is pruned
		x = int32(p[0])
		pt, pl, pb, pr = pt+p[1], pl+p[2], pb+p[3], pr+p[4]
	}
	attrs := []*graph.Attribute{aInts("strides", int64(sh), int64(sw)), aInts("dilations", int64(dh), int64(dw)),
		aInts("pads", int64(pt), int64(pl), int64(pb), int64(pr))}
	if c.isInt8(x) {
		qa, err := quantAct(act)
		if err != nil {
			return err
		}
		dim := int32(0)
		opType := "Conv2D"
		if depthwise {
			dim, opType = 3, "DepthwiseConv2D"
		}
		if err := c.perChannelDim(w, dim); err != nil {
			return err
		}
		if !c.isInt8(w) {
			return fmt.Errorf("int8 input with a filter of type %d (only int8 filters)", c.sg.Tensors[w].Type)
		}
		ins, err := c.quantInputs([]int32{x, w, y}, b)
		if err != nil {
			return err
		}
		attrs = append(attrs, qa)
		if !depthwise {
			attrs = c.roundingAttr(attrs)
		} else if cin == 1 {
			// one input channel: the depthwise convolution is an ordinary
			// one with the multiplier's channels as outputs (filter
			// [1,H,W,M] -> [M,H,W,1], the per-channel scales the same, the
			// depthwise rounding kept), which the fast kernels take
			wk, err := c.constant(w)
			if err != nil {
				return err
			}
			if wk != nil && wk.DType == graph.Int8 {
				ins[3] = c.addConst(c.names[w]+"/ohwi", transposeI8(wk, []int{3, 1, 2, 0}))
				opType = "Conv2D"
			}
		}
		c.node(opType, QuantDomain, ins, []string{c.names[y]}, attrs...)
		return nil
	}
	wk, err := c.constant(w)
	if err != nil {
		return err
	}
	if wk != nil && c.isInt8(w) {
		if wk, err = c.hybridWeights(w); err != nil {
			return err
		}
	}
	if wk == nil || wk.DType != graph.Float32 {
		return fmt.Errorf("float convolution needs a constant float32 filter")
	}
	// OHWI (or 1HWC for depthwise) -> OIHW
	var perm []int
	group := 1
	if depthwise {
		perm = []int{3, 0, 1, 2} // [1,H,W,C] -> [C,1,H,W]
		group = cin
	} else {
		perm = []int{0, 3, 1, 2}
		group = cin / ws[3]
	}
	wt := transposeF32(wk, perm)
	xv, err := c.value(x)
	if err != nil {
		return err
	}
	ins := []string{c.toNCHW(xv), c.addConst(c.names[w]+"/oihw", wt)}
	if b >= 0 {
		bv, err := c.value(b)
		if err != nil {
			return err
		}
		ins = append(ins, bv)
	}
	// the fused activation runs in NCHW, before the Transpose back, so a
	// following NCHW op reads its result directly
	final := c.freshName(c.names[y] + "/nchw")
	tmp, err := c.floatAct(act, final)
	if err != nil {
		return err
	}
	c.node("Conv", "", ins, []string{tmp}, append(attrs, aInt("group", int64(group)),
		aInts("kernel_shape", int64(ws[1]), int64(ws[2])))...)
	c.fromNCHW(final, c.names[y])
	return nil
}

// quantInputs lists, for the tensors of an int8 op, each value followed by
// its scale and zero point (the output's value itself omitted), then the
// optional int32 bias.
func (c *converter) quantInputs(ts []int32, bias int32) ([]string, error) {
	var ins []string
	for k, t := range ts {
		if k < len(ts)-1 {
			v, err := c.value(t)
			if err != nil {
				return nil, err
			}
			ins = append(ins, v)
		}
		s, z, err := c.qparams(t)
		if err != nil {
			return nil, err
		}
		ins = append(ins, s, z)
	}
	if bias >= 0 {
		if c.sg.Tensors[bias].Type != ttInt32 {
			return nil, fmt.Errorf("int8 op with a bias of TFLite type %d (int32 only)", c.sg.Tensors[bias].Type)
		}
		v, err := c.value(bias)
		if err != nil {
			return nil, err
		}
		ins = append(ins, v)
	}
	return ins, nil
}

func transposeF32(t *graph.Tensor, perm []int) *graph.Tensor { return transposeOf[float32](t, perm) }
func transposeI8(t *graph.Tensor, perm []int) *graph.Tensor  { return transposeOf[int8](t, perm) }

func transposeOf[T graph.Elem](t *graph.Tensor, perm []int) *graph.Tensor {
	src := t.Data.([]T)
	shape := make([]int, len(perm))
	for i, p := range perm {
		shape[i] = t.Shape[p]
	}
	inStr := make([]int, len(t.Shape))
	s := 1
	for i := len(t.Shape) - 1; i >= 0; i-- {
		inStr[i] = s
		s *= t.Shape[i]
	}
	dst := make([]T, len(src))
	idx := make([]int, len(shape))
	for o := range dst {
		off := 0
		for i, p := range perm {
			off += idx[i] * inStr[p]
		}
		dst[o] = src[off]
		for i := len(idx) - 1; i >= 0; i-- {
			idx[i]++
			if idx[i] < shape[i] {
				break
			}
			idx[i] = 0
		}
	}
	out, _ := graph.FromSlice(shape, dst)
	return out
}

func (c *converter) pool(op *Operator, isMax bool, r *optReader) error {
	x, y := op.Inputs[0], op.Outputs[0]
	padding := r.u8(0, 0)
	sw, sh, fw, fh := r.i32(1, 1), r.i32(2, 1), r.i32(3, 1), r.i32(4, 1)
	act := r.i8(5)
	xs := c.shapeOf(x)
	if len(xs) != 4 {
		return fmt.Errorf("pool input %v must be 4-D", xs)
	}
	pt, pb, err := windowPads(padding, xs[1], fh, sh, 1)
	if err != nil {
		return err
	}
	pl, pr, err := windowPads(padding, xs[2], fw, sw, 1)
	if err != nil {
		return err
	}
	attrs := []*graph.Attribute{aInts("kernel_shape", int64(fh), int64(fw)), aInts("strides", int64(sh), int64(sw)),
		aInts("pads", int64(pt), int64(pl), int64(pb), int64(pr))}
	if c.isInt8(x) {
		qa, err := quantAct(act)
		if err != nil {
			return err
		}
		if err := c.sameQuant(x, y); err != nil {
			return err
		}
		ins, err := c.quantInputs([]int32{x, y}, -1)
		if err != nil {
			return err
		}
		opType := "AveragePool2D"
		if isMax {
			opType = "MaxPool2D"
		}
		c.node(opType, QuantDomain, ins, []string{c.names[y]}, append(attrs, qa)...)
		return nil
	}
	// the fused activation runs in NCHW, before the Transpose back, so a
	// following NCHW op reads its result directly
	final := c.freshName(c.names[y] + "/nchw")
	tmp, err := c.floatAct(act, final)
	if err != nil {
		return err
	}
	opType := "AveragePool" // count_include_pad = 0, as TFLite
	if isMax {
		opType = "MaxPool"
	}
	xv, err := c.value(x)
	if err != nil {
		return err
	}
	c.node(opType, "", []string{c.toNCHW(xv)}, []string{tmp}, attrs...)
	c.fromNCHW(final, c.names[y])
	return nil
}

// sameQuant checks that an int8 op that does not requantise (pools,
// reshapes) has the same parameters on its input and output.
func (c *converter) sameQuant(a, b int32) error {
	qa, qb := c.sg.Tensors[a].Quant, c.sg.Tensors[b].Quant
	if qa == nil || qb == nil || len(qa.Scale) != 1 || len(qb.Scale) != 1 || qa.Scale[0] != qb.Scale[0] || zp0(qa) != zp0(qb) {
		return fmt.Errorf("int8 input and output quantization differ (TFLite requires them equal here)")
	}
	return nil
}

func zp0(q *Quant) int64 {
	if len(q.ZeroPoint) == 0 {
		return 0
	}
	return q.ZeroPoint[0]
}
