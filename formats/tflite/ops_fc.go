package tflite

import (
	"fmt"
	"slices"

	"github.com/switchyard-hal/switchyard/core/graph"
)

func (c *converter) fullyConnected(op *Operator, r *optReader) error {
	if len(op.Inputs) < 2 {
		return fmt.Errorf("needs an input and weights")
	}
	x, w, y := op.Inputs[0], op.Inputs[1], op.Outputs[0]
	b := int32(-1)
	if len(op.Inputs) > 2 {
		b = op.Inputs[2]
	}
	act := r.i8(0)
	if wf := r.u8(1, 0); wf != 0 {
		return fmt.Errorf("weights format %d is not supported (DEFAULT only)", wf)
	}
	ws := c.shapeOf(w)
	if len(ws) != 2 {
		return fmt.Errorf("weights %v must be 2-D", ws)
	}
	ys := c.shapeOf(y)
	if c.isInt8(x) {
		qa, err := quantAct(act)
		if err != nil {
			return err
		}
		if !c.isInt8(w) {
			return fmt.Errorf("int8 input with weights of type %d (int8 only)", c.sg.Tensors[w].Type)
		}
		if err := c.perChannelDim(w, 0); err != nil {
			return err
		}
		ins, err := c.quantInputs([]int32{x, w, y}, b)
		if err != nil {
			return err
		}
		c.node("FullyConnected", QuantDomain, ins, []string{c.names[y]}, c.roundingAttr([]*graph.Attribute{qa, aInts("output_shape", i64s(ys)...)})...)
		return nil
	}
	xv, err := c.value(x)
	if err != nil {
		return err
	}
	var wv string
	if c.isInt8(w) {
		k, err := c.hybridWeights(w)
		if err != nil {
			return err
		}
		wv = c.addConst(c.names[w]+"/dequantized", k)
	} else if wv, err = c.value(w); err != nil {
		return err
	}
	flat := c.freshName(c.names[x] + "/2d")
	c.node("Reshape", "", []string{xv, c.addConst("shape", graph.MustFromSlice([]int{2}, []int64{-1, int64(ws[1])}))}, []string{flat})
	target, err := c.floatAct(act, c.names[y])
	if err != nil {
		return err
	}
	ins := []string{flat, wv}
	if b >= 0 {
		bv, err := c.value(b)
		if err != nil {
			return err
		}
		ins = append(ins, bv)
	}
	if len(ys) == 2 {
		c.node("Gemm", "", ins, []string{target}, aInt("transB", 1))
		return nil
	}
	tmp := c.freshName(c.names[y] + "/2d")
	c.node("Gemm", "", ins, []string{tmp}, aInt("transB", 1))
	c.node("Reshape", "", []string{tmp, c.addConst("shape", graph.MustFromSlice([]int{len(ys)}, i64s(ys)))}, []string{target})
	return nil
}

func (c *converter) binary(op *Operator, code int32, r *optReader) error {
	if len(op.Inputs) != 2 {
		return fmt.Errorf("needs two inputs")
	}
	a, b, y := op.Inputs[0], op.Inputs[1], op.Outputs[0]
	act := r.i8(0)
	names := map[int32]string{opADD: "Add", opSUB: "Sub", opMUL: "Mul", opDIV: "Div"}
	if c.isInt8(a) {
		if code == opDIV {
			return fmt.Errorf("int8 DIV is not supported")
		}
		qa, err := quantAct(act)
		if err != nil {
			return err
		}
		if !c.isInt8(b) {
			return fmt.Errorf("int8 %s with a second input of type %d", names[code], c.sg.Tensors[b].Type)
		}
		ins, err := c.quantInputs([]int32{a, b, y}, -1)
		if err != nil {
			return err
		}
		c.node(names[code], QuantDomain, ins, []string{c.names[y]}, qa)
		return nil
	}
	ta, tb, ok, err := c.nchwPair(a, b, y)
	if err != nil {
		return err
	}
	if ok {
		// an operand came out of an NCHW op: stay in NCHW
		final := c.freshName(c.names[y] + "/nchw")
		target, err := c.floatAct(act, final)
		if err != nil {
			return err
		}
		c.node(names[code], "", []string{ta, tb}, []string{target})
		c.fromNCHW(final, c.names[y])
		return nil
	}
	av, err := c.value(a)
	if err != nil {
		return err
	}
	bv, err := c.value(b)
	if err != nil {
		return err
	}
	target, err := c.floatAct(act, c.names[y])
	if err != nil {
		return err
	}
	c.node(names[code], "", []string{av, bv}, []string{target})
	return nil
}

// reshape writes x into the declared shape of y (RESHAPE, SQUEEZE and
// EXPAND_DIMS all say their result's shape).
func (c *converter) reshape(x, y int32) error {
	xv, err := c.value(x)
	if err != nil {
		return err
	}
	ys := c.shapeOf(y)
	for _, d := range c.sg.Tensors[y].Signature {
		if d < 0 {
			return fmt.Errorf("reshape to a dynamic shape is not supported")
		}
	}
	c.node("Reshape", "", []string{xv, c.addConst("shape", graph.MustFromSlice([]int{len(ys)}, i64s(ys)))}, []string{c.names[y]})
	return nil
}

func (c *converter) concat(op *Operator, r *optReader) error {
	axis := r.i32(0, 0)
	act := r.i8(1)
	y := op.Outputs[0]
	var ins []string
	for _, i := range op.Inputs {
		if c.isInt8(i) {
			if err := c.sameQuant(i, y); err != nil {
				return err
			}
		}
		v, err := c.value(i)
		if err != nil {
			return err
		}
		ins = append(ins, v)
	}
	if c.isInt8(y) && act != actNone {
		return fmt.Errorf("int8 concatenation with a fused activation is not supported")
	}
	target, err := c.floatAct(act, c.names[y])
	if err != nil {
		return err
	}
	c.node("Concat", "", ins, []string{target}, aInt("axis", int64(axis)))
	return nil
}

func (c *converter) pad(op *Operator) error {
	if len(op.Inputs) < 2 {
		return fmt.Errorf("needs paddings")
	}
	x, y := op.Inputs[0], op.Outputs[0]
	pk, err := c.constant(op.Inputs[1])
	if err != nil {
		return err
	}
	if pk == nil || len(pk.Shape) != 2 || pk.Shape[1] != 2 {
		return fmt.Errorf("paddings must be a constant [rank,2] tensor")
	}
	pv := pk.Int64s()
	rank := pk.Shape[0]
	pads := make([]int64, 2*rank)
	for i := 0; i < rank; i++ {
		pads[i], pads[rank+i] = pv[2*i], pv[2*i+1]
	}
	xv, err := c.value(x)
	if err != nil {
		return err
	}
	ins := []string{xv, c.addConst("pads", graph.MustFromSlice([]int{2 * rank}, pads))}
	switch {
	case len(op.Inputs) > 2 && op.Inputs[2] >= 0:
		v, err := c.value(op.Inputs[2])
		if err != nil {
			return err
		}
		// PADV2's value may be [1]; ONNX wants a scalar
		sv := c.freshName(v + "/scalar")
		c.node("Reshape", "", []string{v, c.addConst("shape", graph.MustFromSlice([]int{0}, []int64{}))}, []string{sv})
		ins = append(ins, sv)
	case c.isInt8(x):
		// TFLite pads a quantized tensor with its zero point (real 0)
		if err := c.sameQuant(x, y); err != nil {
			return err
		}
		ins = append(ins, c.addConst("pad_value", graph.Scalar(int8(zp0(c.sg.Tensors[x].Quant)))))
	}
	if rank == 4 && pads[0] == 0 && pads[3] == 0 && pads[4] == 0 && pads[7] == 0 && (len(op.Inputs) < 3 || op.Inputs[2] < 0) &&
		min(pads[1], pads[2], pads[5], pads[6]) >= 0 {
		// a spatial zero (or zero-point) pad a convolution can absorb
		c.padOf[y] = [5]int{int(x), int(pads[1]), int(pads[2]), int(pads[5]), int(pads[6])}
	}
	if t, ok := c.produced[xv]; ok && rank == 4 && !c.isInt8(x) {
		// pad the NCHW form: pads reordered n,h,w,c -> n,c,h,w
		perm := []int{0, 3, 1, 2}
		np := make([]int64, 8)
		for i, p := range perm {
			np[i], np[4+i] = pads[p], pads[4+p]
		}
		ins[0], ins[1] = t, c.addConst("pads", graph.MustFromSlice([]int{8}, np))
		f := c.freshName(c.names[y] + "/nchw")
		c.node("Pad", "", ins, []string{f})
		c.fromNCHW(f, c.names[y])
		return nil
	}
	c.node("Pad", "", ins, []string{c.names[y]})
	return nil
}

func (c *converter) mean(op *Operator, r *optReader) error {
	if len(op.Inputs) < 2 {
		return fmt.Errorf("needs axes")
	}
	x, y := op.Inputs[0], op.Outputs[0]
	keep := r.boolean(0)
	ak, err := c.constant(op.Inputs[1])
	if err != nil {
		return err
	}
	if ak == nil {
		return fmt.Errorf("axes must be constant")
	}
	axes := ak.Int64s()
	keepI := int64(0)
	if keep {
		keepI = 1
	}
	if c.isInt8(x) {
		ins, err := c.quantInputs([]int32{x, y}, -1)
		if err != nil {
			return err
		}
		c.node("Mean", QuantDomain, ins, []string{c.names[y]}, aInts("axes", axes...), aInt("keepdims", keepI))
		return nil
	}
	xv, err := c.value(x)
	if err != nil {
		return err
	}
	if t, ok := c.produced[xv]; ok && len(c.shapeOf(x)) == 4 && spatialAxes(axes) {
		// a spatial mean of a value that came out of an NCHW op is a
		// GlobalAveragePool of that NCHW value (one op fewer, and one
		// more backends take): [N,C,1,1], then NHWC [N,1,1,C] or [N,C]
		g := c.freshName(c.names[y] + "/nchw")
		c.node("GlobalAveragePool", "", []string{t}, []string{g})
		if keep {
			c.fromNCHW(g, c.names[y])
			return nil
		}
		ys := c.shapeOf(y)
		c.node("Reshape", "", []string{g, c.addConst("shape", graph.MustFromSlice([]int{len(ys)}, i64s(ys)))}, []string{c.names[y]})
		return nil
	}
	c.node("ReduceMean", "", []string{xv}, []string{c.names[y]}, aInts("axes", axes...), aInt("keepdims", keepI))
	return nil
}

// spatialAxes reports whether axes are H and W of a rank-4 NHWC value
// (1 and 2, or −3 and −2, in either order).
func spatialAxes(axes []int64) bool {
	if len(axes) != 2 {
		return false
	}
	h, w := false, false
	for _, a := range axes {
		if a < 0 {
			a += 4
		}
		h, w = h || a == 1, w || a == 2
	}
	return h && w
}

func (c *converter) softmax(op *Operator, r *optReader) error {
	x, y := op.Inputs[0], op.Outputs[0]
	beta := r.f32(0, 1)
	if c.isInt8(x) {
		ins, err := c.quantInputs([]int32{x, y}, -1)
		if err != nil {
			return err
		}
		c.node("Softmax", QuantDomain, ins, []string{c.names[y]}, aFloat("beta", beta))
		return nil
	}
	xv, err := c.value(x)
	if err != nil {
		return err
	}
	if beta != 1 {
		scaled := c.freshName(xv + "/beta")
		c.node("Mul", "", []string{xv, c.addConst("beta", graph.Scalar(beta))}, []string{scaled})
		xv = scaled
	}
	c.node("Softmax", "", []string{xv}, []string{c.names[y]}, aInt("axis", -1))
	return nil
}

func (c *converter) unary(op *Operator, code int32, r *optReader) error {
	x, y := op.Inputs[0], op.Outputs[0]
	if c.isInt8(x) {
		if code == opLOGISTIC || code == opTANH {
			ins, err := c.quantInputs([]int32{x, y}, -1)
			if err != nil {
				return err
			}
			op := "Logistic"
			if code == opTANH {
				op = "Tanh"
			}
			c.node(op, QuantDomain, ins, []string{c.names[y]})
			return nil
		}
		return fmt.Errorf("int8 %s is not supported", builtinName(code))
	}
	xv, err := c.value(x)
	if err != nil {
		return err
	}
	out := []string{c.names[y]}
	// an elementwise op on a value that came out of an NCHW op runs on
	// that NCHW value (layout does not matter to it), keeping the chain
	// free of Transpose pairs
	var finish func()
	if t, ok := c.produced[xv]; ok {
		xv = t
		f := c.freshName(out[0] + "/nchw")
		out = []string{f}
		finish = func() { c.fromNCHW(f, c.names[y]) }
	}
	defer func() {
		if finish != nil {
			finish()
		}
	}()
	switch code {
	case opLOGISTIC:
		c.node("Sigmoid", "", []string{xv}, out)
	case opTANH:
		c.node("Tanh", "", []string{xv}, out)
	case opRELU:
		c.node("Relu", "", []string{xv}, out)
	case opRELU6, opRELU_N1_TO_1:
		lo, hi := float32(0), float32(6)
		if code == opRELU_N1_TO_1 {
			lo, hi = -1, 1
		}
		c.node("Clip", "", []string{xv, c.addConst("min", graph.Scalar(lo)), c.addConst("max", graph.Scalar(hi))}, out)
	case opHARD_SWISH:
		c.node("HardSwish", "", []string{xv}, out)
	case opLEAKY_RELU:
		c.node("LeakyRelu", "", []string{xv}, out, aFloat("alpha", r.f32(0, 0)))
	}
	return nil
}

func (c *converter) transpose(op *Operator) error {
	if len(op.Inputs) < 2 {
		return fmt.Errorf("needs a permutation")
	}
	pk, err := c.constant(op.Inputs[1])
	if err != nil {
		return err
	}
	if pk == nil {
		return fmt.Errorf("permutation must be constant")
	}
	xv, err := c.value(op.Inputs[0])
	if err != nil {
		return err
	}
	if perm := pk.Int64s(); slices.Equal(perm, []int64{0, 2, 3, 1}) && len(c.shapeOf(op.Inputs[0])) == 4 {
		// NCHW to NHWC (a model with an NCHW input, MobileNetV2 from
		// PyTorch): the following float NCHW op reads xv itself
		c.fromNCHW(xv, c.names[op.Outputs[0]])
		return nil
	}
	if perm := pk.Int64s(); slices.Equal(perm, []int64{0, 3, 1, 2}) && len(c.shapeOf(op.Inputs[0])) == 4 {
		if t, ok := c.produced[xv]; ok && !slices.Contains(c.sg.Outputs, op.Outputs[0]) {
			// NHWC to NCHW of a value that came out of an NCHW op (models
			// converted from ONNX wrap each op so): the result is that
			// NCHW value itself, and the Transpose pair disappears
			c.names[op.Outputs[0]] = t
			return nil
		}
	}
	c.node("Transpose", "", []string{xv}, []string{c.names[op.Outputs[0]]}, aInts("perm", pk.Int64s()...))
	return nil
}

func (c *converter) dequantize(op *Operator) error {
	x, y := op.Inputs[0], op.Outputs[0]
	k, err := c.constant(x)
	if err != nil {
		return err
	}
	if k != nil && k.DType == graph.Float16 {
		// MediaPipe stores float16 weights behind DEQUANTIZE: fold them
		src := k.Data.([]graph.F16)
		dst := make([]float32, len(src))
		for i, h := range src {
			dst[i] = h.Float32()
		}
		c.folded[y], _ = graph.FromSlice(k.Shape, dst)
		return nil
	}
	if c.opts.Dequantize && c.sg.Tensors[x].Type == ttFloat32 && c.sg.Tensors[y].Type == ttFloat32 {
		return c.identity(x, y)
	}
	if !c.isInt8(x) {
		return fmt.Errorf("DEQUANTIZE of TFLite type %d is not supported", c.sg.Tensors[x].Type)
	}
	if q := c.sg.Tensors[x].Quant; q != nil && len(q.Scale) > 1 {
		return fmt.Errorf("per-channel DEQUANTIZE is not supported")
	}
	s, z, err := c.qparams(x)
	if err != nil {
		return err
	}
	xv, err := c.value(x)
	if err != nil {
		return err
	}
	c.node("Dequantize", QuantDomain, []string{xv, s, z}, []string{c.names[y]})
	return nil
}

func (c *converter) quantize(op *Operator) error {
	x, y := op.Inputs[0], op.Outputs[0]
	if c.opts.Dequantize && c.sg.Tensors[x].Type == ttFloat32 && c.sg.Tensors[y].Type == ttFloat32 {
		return c.identity(x, y)
	}
	if c.sg.Tensors[x].Type != ttFloat32 || !c.isInt8(y) {
		return fmt.Errorf("QUANTIZE from TFLite type %d to %d is not supported (float32 to int8 only)", c.sg.Tensors[x].Type, c.sg.Tensors[y].Type)
	}
	xv, err := c.value(x)
	if err != nil {
		return err
	}
	s, z, err := c.qparams(y)
	if err != nil {
		return err
	}
	c.node("Quantize", QuantDomain, []string{xv, s, z}, []string{c.names[y]})
	return nil
}

func (c *converter) resizeBilinear(op *Operator, r *optReader) error {
	x, y := op.Inputs[0], op.Outputs[0]
	align, half := r.boolean(2), r.boolean(3)
	if c.isInt8(x) {
		return fmt.Errorf("int8 RESIZE_BILINEAR is not supported")
	}
	ys := c.shapeOf(y)
	if len(ys) != 4 {
		return fmt.Errorf("output %v must be 4-D", ys)
	}
	mode := "asymmetric"
	switch {
	case align && half:
		return fmt.Errorf("align_corners and half_pixel_centers together")
	case align:
		mode = "align_corners"
	case half:
		mode = "half_pixel"
	}
	xv, err := c.value(x)
	if err != nil {
		return err
	}
	sizes := c.addConst("sizes", graph.MustFromSlice([]int{4}, []int64{int64(ys[0]), int64(ys[3]), int64(ys[1]), int64(ys[2])}))
	tmp := c.freshName(c.names[y] + "/nchw")
	c.node("Resize", "", []string{c.toNCHW(xv), "", "", sizes}, []string{tmp}, aStr("mode", "linear"), aStr("coordinate_transformation_mode", mode))
	c.fromNCHW(tmp, c.names[y])
	return nil
}

// mediapipeTransposeConv converts MediaPipe's Convolution2DTransposeBias
// custom op: inputs (x, weights OHWI, bias), custom options a raw
// TfLiteTransposeConvParams {padding (1 SAME, 2 VALID), stride_w,
// stride_h} of three little-endian int32.
func (c *converter) mediapipeTransposeConv(op *Operator) error {
	if len(op.Inputs) != 3 {
		return fmt.Errorf("Convolution2DTransposeBias needs input, weights and bias")
	}
	o := op.CustomOptions
	if len(o) < 12 {
		return fmt.Errorf("Convolution2DTransposeBias options are %d bytes, want 12", len(o))
	}
	le := func(k int) int {
		return int(int32(uint32(o[k]) | uint32(o[k+1])<<8 | uint32(o[k+2])<<16 | uint32(o[k+3])<<24))
	}
	pad, sw, sh := le(0), le(4), le(8)
	if pad != 1 && pad != 2 {
		return fmt.Errorf("Convolution2DTransposeBias padding %d is not SAME (1) or VALID (2)", pad)
	}
	return c.transposeConv(op.Inputs[0], op.Inputs[1], op.Inputs[2], op.Outputs[0], pad == 1, sh, sw, actNone)
}

// transposeConv is a float transposed convolution (weights OHWI, NHWC
// values) on ONNX ConvTranspose between Transposes. The padding is
// TFLite's: SAME pads (in−1)·stride + k − out in total, the smaller half
// before; the output size is the declared one.
func (c *converter) transposeConv(x, w, b, y int32, same bool, sh, sw int, act int8) error {
	if c.isInt8(x) {
		return fmt.Errorf("int8 transposed convolution is not supported")
	}
	xs, ws, ys := c.shapeOf(x), c.shapeOf(w), c.shapeOf(y)
	if len(xs) != 4 || len(ws) != 4 || len(ys) != 4 {
		return fmt.Errorf("input %v, weights %v and output %v must be 4-D", xs, ws, ys)
	}
	if sh < 1 || sw < 1 {
		return fmt.Errorf("strides %d,%d must be positive", sh, sw)
	}
	if ws[3] != xs[3] || ws[0] != ys[3] {
		return fmt.Errorf("weights %v do not map %d to %d channels", ws, xs[3], ys[3])
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
		return fmt.Errorf("transposed convolution needs constant float32 weights")
	}
	pads := [2][2]int{}
	for k, d := range []struct{ in, k, s, out int }{{xs[1], ws[1], sh, ys[1]}, {xs[2], ws[2], sw, ys[2]}} {
		total := (d.in-1)*d.s + d.k - d.out
		if !same && total != 0 || total < 0 {
			return fmt.Errorf("output size %d does not follow from input %d, filter %d, stride %d", d.out, d.in, d.k, d.s)
		}
		pads[k] = [2]int{total / 2, total - total/2}
	}
	xv, err := c.value(x)
	if err != nil {
		return err
	}
	ins := []string{c.toNCHW(xv), c.addConst(c.names[w]+"/iohw", transposeF32(wk, []int{3, 0, 1, 2}))}
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
	c.node("ConvTranspose", "", ins, []string{tmp}, aInts("strides", int64(sh), int64(sw)),
		aInts("kernel_shape", int64(ws[1]), int64(ws[2])),
		aInts("pads", int64(pads[0][0]), int64(pads[1][0]), int64(pads[0][1]), int64(pads[1][1])))
	c.fromNCHW(final, c.names[y])
	return nil
}
