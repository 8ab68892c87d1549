package tflite

import (
	"fmt"
	"math"
	"slices"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// floatOnly refuses an int8 use of an op converted for float only.
func (c *converter) floatOnly(op *Operator) error {
	for _, i := range append(append([]int32{}, op.Inputs...), op.Outputs...) {
		if c.isInt8(i) {
			return fmt.Errorf("int8 %s is not supported", c.m.Opcodes[op.Opcode].Name())
		}
	}
	return nil
}

func (c *converter) values(ids []int32) ([]string, error) {
	out := make([]string, len(ids))
	for k, i := range ids {
		v, err := c.value(i)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

func (c *converter) floatUnary(op *Operator, code int32) error {
	if err := c.floatOnly(op); err != nil {
		return err
	}
	xv, err := c.value(op.Inputs[0])
	if err != nil {
		return err
	}
	out := []string{c.names[op.Outputs[0]]}
	switch code {
	case opRSQRT:
		s := c.freshName(xv + "/sqrt")
		c.node("Sqrt", "", []string{xv}, []string{s})
		c.node("Reciprocal", "", []string{s}, out)
		return nil
	}
	names := map[int32]string{opEXP: "Exp", opLOG: "Log", opSQRT: "Sqrt", opABS: "Abs", opNEG: "Neg"}
	c.node(names[code], "", []string{xv}, out)
	return nil
}

func (c *converter) floatBinary(op *Operator, code int32) error {
	if err := c.floatOnly(op); err != nil {
		return err
	}
	if len(op.Inputs) != 2 {
		return fmt.Errorf("needs two inputs")
	}
	ins, err := c.values(op.Inputs)
	if err != nil {
		return err
	}
	y := op.Outputs[0]
	out := []string{c.names[y]}
	ta, tb, nchw, err := c.nchwPair(op.Inputs[0], op.Inputs[1], y)
	if err != nil {
		return err
	}
	if nchw {
		// an operand came out of an NCHW op: stay in NCHW
		ins = []string{ta, tb}
		f := c.freshName(out[0] + "/nchw")
		out = []string{f}
		defer c.fromNCHW(f, c.names[y])
	}
	switch code {
	case opSQUARED_DIFFERENCE:
		d := c.freshName(out[0] + "/diff")
		c.node("Sub", "", ins, []string{d})
		c.node("Mul", "", []string{d, d}, out)
	case opMAXIMUM:
		c.node("Max", "", ins, out)
	case opMINIMUM:
		c.node("Min", "", ins, out)
	case opPRELU:
		c.node("PRelu", "", ins, out)
	}
	return nil
}

func (c *converter) constInts(i int32, what string) ([]int64, error) {
	k, err := c.constant(i)
	if err != nil {
		return nil, err
	}
	if k == nil || !k.DType.IsInteger() {
		return nil, fmt.Errorf("%s must be a constant integer tensor", what)
	}
	return k.Int64s(), nil
}

func (c *converter) reduce(op *Operator, code int32, r *optReader) error {
	if err := c.floatOnly(op); err != nil {
		return err
	}
	if len(op.Inputs) < 2 {
		return fmt.Errorf("needs axes")
	}
	axes, err := c.constInts(op.Inputs[1], "axes")
	if err != nil {
		return err
	}
	keep := int64(0)
	if r.boolean(0) {
		keep = 1
	}
	xv, err := c.value(op.Inputs[0])
	if err != nil {
		return err
	}
	out := []string{c.names[op.Outputs[0]]}
	if code == opSUM { // ReduceSum takes its axes as an input since opset 13
		c.node("ReduceSum", "", []string{xv, c.addConst("axes", graph.MustFromSlice([]int{len(axes)}, axes))}, out, aInt("keepdims", keep))
		return nil
	}
	c.node("ReduceMax", "", []string{xv}, out, aInts("axes", axes...), aInt("keepdims", keep))
	return nil
}

func (c *converter) cast(op *Operator) error {
	y := op.Outputs[0]
	dt, ok := tensorTypes[c.sg.Tensors[y].Type]
	if !ok || dt == graph.String {
		return fmt.Errorf("CAST to TFLite type %d is not supported", c.sg.Tensors[y].Type)
	}
	if c.sg.Tensors[y].Quant != nil || c.sg.Tensors[op.Inputs[0]].Quant != nil {
		return fmt.Errorf("CAST of quantized tensors is not supported")
	}
	xv, err := c.value(op.Inputs[0])
	if err != nil {
		return err
	}
	c.node("Cast", "", []string{xv}, []string{c.names[y]}, aInt("to", int64(dt)))
	return nil
}

func (c *converter) gather(op *Operator, r *optReader) error {
	if len(op.Inputs) != 2 {
		return fmt.Errorf("needs params and indices")
	}
	if r.i32(1, 0) != 0 {
		return fmt.Errorf("GATHER with batch_dims is not supported")
	}
	ins, err := c.values(op.Inputs)
	if err != nil {
		return err
	}
	c.node("Gather", "", ins, []string{c.names[op.Outputs[0]]}, aInt("axis", int64(r.i32(0, 0))))
	return nil
}

// sliceNode writes ONNX Slice(x, starts, ends, axes, steps) into y, then a
// Reshape to y's declared shape (dropping shrunk axes).
func (c *converter) sliceNode(x, y int32, starts, ends, steps []int64) error {
	xv, err := c.value(x)
	if err != nil {
		return err
	}
	axes := make([]int64, len(starts))
	for i := range axes {
		axes[i] = int64(i)
	}
	vec := func(hint string, v []int64) string { return c.addConst(hint, graph.MustFromSlice([]int{len(v)}, v)) }
	tmp := c.freshName(c.names[y] + "/slice")
	c.node("Slice", "", []string{xv, vec("starts", starts), vec("ends", ends), vec("axes", axes), vec("steps", steps)}, []string{tmp})
	ys := c.shapeOf(y)
	c.node("Reshape", "", []string{tmp, vec("shape", i64s(ys))}, []string{c.names[y]})
	return nil
}

func (c *converter) slice(op *Operator) error {
	if len(op.Inputs) != 3 {
		return fmt.Errorf("needs begin and size")
	}
	begin, err := c.constInts(op.Inputs[1], "begin")
	if err != nil {
		return err
	}
	size, err := c.constInts(op.Inputs[2], "size")
	if err != nil {
		return err
	}
	if len(begin) != len(size) {
		return fmt.Errorf("begin and size differ in length")
	}
	ends := make([]int64, len(begin))
	steps := make([]int64, len(begin))
	for i := range begin {
		steps[i] = 1
		ends[i] = begin[i] + size[i]
		if size[i] < 0 {
			ends[i] = math.MaxInt64
		}
	}
	return c.sliceNode(op.Inputs[0], op.Outputs[0], begin, ends, steps)
}

func (c *converter) stridedSlice(op *Operator, r *optReader) error {
	if len(op.Inputs) != 4 {
		return fmt.Errorf("needs begin, end and strides")
	}
	beginMask, endMask, ellipsis, newAxis, shrink := r.i32(0, 0), r.i32(1, 0), r.i32(2, 0), r.i32(3, 0), r.i32(4, 0)
	if ellipsis != 0 || newAxis != 0 || r.boolean(5) {
		return fmt.Errorf("STRIDED_SLICE with ellipsis, new-axis masks or offset is not supported")
	}
	begin, err := c.constInts(op.Inputs[1], "begin")
	if err != nil {
		return err
	}
	end, err := c.constInts(op.Inputs[2], "end")
	if err != nil {
		return err
	}
	strides, err := c.constInts(op.Inputs[3], "strides")
	if err != nil {
		return err
	}
	if len(begin) != len(end) || len(begin) != len(strides) {
		return fmt.Errorf("begin, end and strides differ in length")
	}
	for i := range begin {
		if strides[i] == 0 {
			return fmt.Errorf("stride 0")
		}
		if beginMask>>i&1 != 0 {
			begin[i] = 0
			if strides[i] < 0 {
				begin[i] = math.MaxInt64
			}
		}
		if endMask>>i&1 != 0 {
			end[i] = math.MaxInt64
			if strides[i] < 0 {
				end[i] = math.MinInt64
			}
		}
		if shrink>>i&1 != 0 {
			end[i] = begin[i] + 1
			if begin[i] == -1 {
				end[i] = math.MaxInt64
			}
			strides[i] = 1
		}
	}
	return c.sliceNode(op.Inputs[0], op.Outputs[0], begin, end, strides)
}

func (c *converter) split(op *Operator, code int32) error {
	var x, axisT int32
	var sizes []int64
	if code == opSPLIT {
		if len(op.Inputs) != 2 {
			return fmt.Errorf("needs axis and input")
		}
		axisT, x = op.Inputs[0], op.Inputs[1]
	} else {
		if len(op.Inputs) != 3 {
			return fmt.Errorf("needs input, sizes and axis")
		}
		x, axisT = op.Inputs[0], op.Inputs[2]
	}
	ax, err := c.constInts(axisT, "axis")
	if err != nil {
		return err
	}
	if len(ax) != 1 {
		return fmt.Errorf("axis must be a single value")
	}
	axis := int(ax[0])
	xs := c.shapeOf(x)
	if axis < 0 {
		axis += len(xs)
	}
	if axis < 0 || axis >= len(xs) {
		return fmt.Errorf("axis %d of a rank-%d input", ax[0], len(xs))
	}
	for _, o := range op.Outputs { // every output says its size
		os := c.shapeOf(o)
		if len(os) != len(xs) {
			return fmt.Errorf("split output of rank %d", len(os))
		}
		sizes = append(sizes, int64(os[axis]))
	}
	xv, err := c.value(x)
	if err != nil {
		return err
	}
	outs := make([]string, len(op.Outputs))
	for k, o := range op.Outputs {
		outs[k] = c.names[o]
	}
	c.node("Split", "", []string{xv, c.addConst("split", graph.MustFromSlice([]int{len(sizes)}, sizes))}, outs, aInt("axis", int64(axis)))
	return nil
}

func (c *converter) pack(op *Operator, r *optReader) error {
	axis := r.i32(1, 0)
	y := op.Outputs[0]
	ys := c.shapeOf(y)
	if axis < 0 {
		axis += len(ys)
	}
	if axis < 0 || axis >= len(ys) {
		return fmt.Errorf("axis %d of a rank-%d output", axis, len(ys))
	}
	if c.isInt8(y) {
		for _, i := range op.Inputs {
			if err := c.sameQuant(i, y); err != nil {
				return err
			}
		}
	}
	var ins []string
	for _, i := range op.Inputs {
		v, err := c.value(i)
		if err != nil {
			return err
		}
		s := append(append(c.shapeOf(i)[:axis:axis], 1), c.shapeOf(i)[axis:]...)
		u := c.freshName(v + "/unsqueezed")
		c.node("Reshape", "", []string{v, c.addConst("shape", graph.MustFromSlice([]int{len(s)}, i64s(s)))}, []string{u})
		ins = append(ins, u)
	}
	c.node("Concat", "", ins, []string{c.names[y]}, aInt("axis", int64(axis)))
	return nil
}

func (c *converter) argMax(op *Operator) error {
	if len(op.Inputs) != 2 {
		return fmt.Errorf("needs an axis")
	}
	ax, err := c.constInts(op.Inputs[1], "axis")
	if err != nil || len(ax) != 1 {
		return fmt.Errorf("axis must be one constant value")
	}
	xv, err := c.value(op.Inputs[0])
	if err != nil {
		return err
	}
	y := op.Outputs[0]
	out := c.names[y]
	if c.sg.Tensors[y].Type == ttInt32 {
		out = c.freshName(out + "/int64")
	}
	c.node("ArgMax", "", []string{xv}, []string{out}, aInt("axis", ax[0]), aInt("keepdims", 0))
	if out != c.names[y] {
		c.node("Cast", "", []string{out}, []string{c.names[y]}, aInt("to", int64(graph.Int32)))
	}
	return nil
}

func (c *converter) batchMatMul(op *Operator, r *optReader) error {
	if err := c.floatOnly(op); err != nil {
		return err
	}
	if len(op.Inputs) != 2 {
		return fmt.Errorf("needs two inputs")
	}
	ins, err := c.values(op.Inputs)
	if err != nil {
		return err
	}
	for k, adj := range []bool{r.boolean(0), r.boolean(1)} {
		if !adj {
			continue
		}
		rank := len(c.shapeOf(op.Inputs[k]))
		if rank < 2 {
			return fmt.Errorf("adjoint of a rank-%d input", rank)
		}
		perm := make([]int64, rank)
		for i := range perm {
			perm[i] = int64(i)
		}
		perm[rank-1], perm[rank-2] = perm[rank-2], perm[rank-1]
		t := c.freshName(ins[k] + "/adj")
		c.node("Transpose", "", []string{ins[k]}, []string{t}, aInts("perm", perm...))
		ins[k] = t
	}
	c.node("MatMul", "", ins, []string{c.names[op.Outputs[0]]})
	return nil
}

func (c *converter) resizeNearest(op *Operator, r *optReader) error {
	if err := c.floatOnly(op); err != nil {
		return err
	}
	x, y := op.Inputs[0], op.Outputs[0]
	align, half := r.boolean(0), r.boolean(1)
	ys := c.shapeOf(y)
	if len(ys) != 4 {
		return fmt.Errorf("output %v must be 4-D", ys)
	}
	mode, nearest := "asymmetric", "floor"
	switch {
	case align && half:
		return fmt.Errorf("align_corners and half_pixel_centers together")
	case align:
		mode, nearest = "align_corners", "round_prefer_ceil"
	case half:
		mode = "tf_half_pixel_for_nn"
	}
	xv, err := c.value(x)
	if err != nil {
		return err
	}
	sizes := c.addConst("sizes", graph.MustFromSlice([]int{4}, []int64{int64(ys[0]), int64(ys[3]), int64(ys[1]), int64(ys[2])}))
	tmp := c.freshName(c.names[y] + "/nchw")
	c.node("Resize", "", []string{c.toNCHW(xv), "", "", sizes}, []string{tmp}, aStr("mode", "nearest"),
		aStr("coordinate_transformation_mode", mode), aStr("nearest_mode", nearest))
	c.fromNCHW(tmp, c.names[y])
	return nil
}

// densifyOp folds DENSIFY of a sparse constant into a dense initializer
// (constant expands the sparsity parameters).
func (c *converter) densifyOp(op *Operator) error {
	x, y := op.Inputs[0], op.Outputs[0]
	if !c.sg.Tensors[x].Sparse {
		return fmt.Errorf("input %q is not a sparse constant", c.sg.Tensors[x].Name)
	}
	if c.sg.Tensors[x].Type != c.sg.Tensors[y].Type {
		return fmt.Errorf("input type %d and output type %d differ", c.sg.Tensors[x].Type, c.sg.Tensors[y].Type)
	}
	k, err := c.constant(x)
	if err != nil {
		return err
	}
	if k == nil {
		return fmt.Errorf("input %q has no data", c.sg.Tensors[x].Name)
	}
	if !slices.Equal(c.shapeOf(x), c.shapeOf(y)) {
		return fmt.Errorf("input shape %v and output shape %v differ", c.shapeOf(x), c.shapeOf(y))
	}
	c.folded[y] = k
	return nil
}

// depthSpace converts DEPTH_TO_SPACE and SPACE_TO_DEPTH. TFLite's NHWC
// channel order is (block row, block column, channel), which in NCHW is
// ONNX DepthToSpace in DCR mode (and SpaceToDepth, which has only that
// order): the ops run between Transposes like the convolutions.
func (c *converter) depthSpace(op *Operator, toSpace bool, bs int) error {
	x, y := op.Inputs[0], op.Outputs[0]
	if bs < 1 {
		return fmt.Errorf("block size %d must be positive", bs)
	}
	if c.sg.Tensors[x].Type != ttFloat32 {
		return fmt.Errorf("TFLite type %d (float32 only)", c.sg.Tensors[x].Type)
	}
	xs, ys := c.shapeOf(x), c.shapeOf(y)
	if len(xs) != 4 || len(ys) != 4 {
		return fmt.Errorf("input %v and output %v must be 4-D", xs, ys)
	}
	want := []int{xs[0], xs[1] * bs, xs[2] * bs, xs[3] / (bs * bs)}
	if !toSpace {
		want = []int{xs[0], xs[1] / bs, xs[2] / bs, xs[3] * bs * bs}
	}
	if (toSpace && xs[3]%(bs*bs) != 0) || (!toSpace && (xs[1]%bs != 0 || xs[2]%bs != 0)) || !slices.Equal(want, ys) {
		return fmt.Errorf("block size %d maps input %v to %v, not the declared %v", bs, xs, want, ys)
	}
	xv, err := c.value(x)
	if err != nil {
		return err
	}
	tmp := c.freshName(c.names[y] + "/nchw")
	if toSpace {
		c.node("DepthToSpace", "", []string{c.toNCHW(xv)}, []string{tmp}, aInt("blocksize", int64(bs)), aStr("mode", "DCR"))
	} else {
		c.node("SpaceToDepth", "", []string{c.toNCHW(xv)}, []string{tmp}, aInt("blocksize", int64(bs)))
	}
	c.fromNCHW(tmp, c.names[y])
	return nil
}
