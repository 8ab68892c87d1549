package executorch

import (
	"fmt"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// arith is x op (alpha*y) computed in the promoted type, cast to out's.
func arith(l *lowerer, op string, x, y, alpha, out int32) error {
	a, b, dt, err := l.pair(x, y)
	if err != nil {
		return err
	}
	if op == "Sub" && dt == graph.Bool {
		return fmt.Errorf("subtraction of bool tensors is not supported by PyTorch")
	}
	if alpha >= 0 && !l.isNull(alpha) {
		al, err := l.scalarValue(alpha)
		if err != nil {
			return err
		}
		if al != 1 {
			c, err := l.scalarConst(dt, al)
			if err != nil {
				return err
			}
			b = l.op1("Mul", []string{b, c})
		}
	}
	if dt == graph.Bool {
		// bool arithmetic: + is or, × is and
		switch op {
		case "Add":
			return l.def(out, l.op1("Or", []string{a, b}), dt)
		case "Mul":
			return l.def(out, l.op1("And", []string{a, b}), dt)
		}
	}
	return l.def(out, l.op1(op, []string{a, b}), dt)
}

// trueDiv is aten::div without rounding: integers divide as float.
func trueDiv(l *lowerer, a []int32) error {
	if err := need(a, 3); err != nil {
		return err
	}
	ox, err := l.operand(a[0])
	if err != nil {
		return err
	}
	oy, err := l.operand(a[1])
	if err != nil {
		return err
	}
	dt := resultType([]operand{ox, oy})
	if !dt.IsFloat() {
		dt = graph.Float32
	}
	x, err := l.materialize(a[0], ox, dt)
	if err != nil {
		return err
	}
	y, err := l.materialize(a[1], oy, dt)
	if err != nil {
		return err
	}
	return l.def(a[2], l.op1("Div", []string{x, y}), dt)
}

// divMode is aten::div with rounding_mode "trunc" or "floor" (or none).
func divMode(l *lowerer, a []int32) error {
	if err := need(a, 4); err != nil {
		return err
	}
	mode, _ := l.str(a[2])
	if mode == "" {
		return trueDiv(l, []int32{a[0], a[1], a[3]})
	}
	x, y, dt, err := l.pair(a[0], a[1])
	if err != nil {
		return err
	}
	var q string
	switch {
	case dt.IsFloat() && mode == "trunc":
		d := l.op1("Div", []string{x, y})
		// trunc(d) = sign(d) * floor(|d|)
		q = l.op1("Mul", []string{l.op1("Sign", []string{d}), l.op1("Floor", []string{l.op1("Abs", []string{d})})})
	case dt.IsFloat() && mode == "floor":
		q = l.op1("Floor", []string{l.op1("Div", []string{x, y})})
	case dt.IsInteger() && mode == "trunc":
		q = l.op1("Div", []string{x, y})
	case dt.IsInteger() && mode == "floor":
		// (x - mod(x, y)) / y with Python's mod is exact floor division.
		m := l.op1("Mod", []string{x, y}, aInt("fmod", 0))
		q = l.op1("Div", []string{l.op1("Sub", []string{x, m}), y})
	default:
		return fmt.Errorf("division rounding mode %q on %v", mode, dt)
	}
	return l.def(a[3], q, dt)
}

func compare(op string) kernelFunc {
	return func(l *lowerer, a []int32) error {
		if err := need(a, 3); err != nil {
			return err
		}
		x, y, _, err := l.pair(a[0], a[1])
		if err != nil {
			return err
		}
		var r string
		if op == "NotEqual" {
			r = l.op1("Not", []string{l.op1("Equal", []string{x, y})})
		} else {
			r = l.op1(op, []string{x, y})
		}
		return l.def(a[2], r, graph.Bool)
	}
}

func logical(op string) kernelFunc {
	return func(l *lowerer, a []int32) error {
		if err := need(a, 3); err != nil {
			return err
		}
		var ins []string
		for _, v := range a[:2] {
			o, err := l.operand(v)
			if err != nil {
				return err
			}
			x, err := l.materialize(v, o, graph.Bool)
			if err != nil {
				return err
			}
			ins = append(ins, x)
		}
		return l.def(a[2], l.op1(op, ins), graph.Bool)
	}
}

// floatInput returns self in the dtype unary float math computes in: the
// out's dtype when it is floating, else float32.
func (l *lowerer) floatInput(x, out int32) (string, graph.DType, error) {
	o, err := l.operand(x)
	if err != nil {
		return "", 0, err
	}
	dt := o.dt
	if !dt.IsFloat() {
		_, odt, err := l.meta(out)
		if err != nil {
			return "", 0, err
		}
		dt = odt
		if !dt.IsFloat() {
			dt = graph.Float32
		}
	}
	n, err := l.materialize(x, o, dt)
	return n, dt, err
}

func unary(op string) kernelFunc {
	return func(l *lowerer, a []int32) error {
		if err := need(a, 2); err != nil {
			return err
		}
		switch op {
		case "Relu", "Neg", "Abs", "Sign":
			x, err := l.tensor(a[0])
			if err != nil {
				return err
			}
			_, dt, _ := l.meta(a[0])
			return l.def(a[1], l.op1(op, []string{x}), dt)
		case "Round":
			// aten::round rounds half to even, as ONNX Round does.
		}
		x, dt, err := l.floatInput(a[0], a[1])
		if err != nil {
			return err
		}
		return l.def(a[1], l.op1(op, []string{x}), dt)
	}
}

func clamp(l *lowerer, x int32, lo, hi *int32, out int32) error {
	o, err := l.operand(x)
	if err != nil {
		return err
	}
	_, dt, err := l.meta(out)
	if err != nil {
		return err
	}
	in, err := l.materialize(x, o, dt)
	if err != nil {
		return err
	}
	ins := []string{in, "", ""}
	for i, p := range []*int32{lo, hi} {
		if p == nil {
			continue
		}
		v, err := l.scalarValue(*p)
		if err != nil {
			return err
		}
		if ins[i+1], err = l.scalarConst(dt, v); err != nil {
			return err
		}
	}
	for len(ins) > 1 && ins[len(ins)-1] == "" {
		ins = ins[:len(ins)-1]
	}
	return l.def(out, l.op1("Clip", ins), dt)
}

func identity(l *lowerer, a []int32) error {
	if len(a) < 2 {
		return fmt.Errorf("%d arguments", len(a))
	}
	// Inputs first, out then return: the out is the second-last argument.
	out := a[len(a)-2]
	x, err := l.tensor(a[0])
	if err != nil {
		return err
	}
	_, dt, _ := l.meta(a[0])
	return l.def(out, l.op1("Identity", []string{x}), dt)
}

func (l *lowerer) staticOut(v int32) ([]int64, graph.DType, error) {
	t, dt, err := l.meta(v)
	if err != nil {
		return nil, 0, err
	}
	if t.Dynamism != Static {
		return nil, 0, fmt.Errorf("value %d has a %s shape; only static shapes are lowered", v, t.Dynamism)
	}
	s := make([]int64, len(t.Sizes))
	for i, d := range t.Sizes {
		s[i] = int64(d)
	}
	return s, dt, nil
}

// reshapeTo lowers a view/squeeze/unsqueeze/flatten whose out is at
// position outAt to a Reshape to the out's declared sizes.
func reshapeTo(outAt int) kernelFunc {
	return func(l *lowerer, a []int32) error {
		if err := need(a, outAt+1); err != nil {
			return err
		}
		x, err := l.tensor(a[0])
		if err != nil {
			return err
		}
		shape, _, err := l.staticOut(a[outAt])
		if err != nil {
			return err
		}
		_, idt, _ := l.meta(a[0])
		return l.def(a[outAt], l.op1("Reshape", []string{x, l.constI64(shape...)}, aInt("allowzero", 1)), idt)
	}
}

func matmul(l *lowerer, a []int32) error {
	if err := need(a, 3); err != nil {
		return err
	}
	x, y, dt, err := l.pair(a[0], a[1])
	if err != nil {
		return err
	}
	return l.def(a[2], l.op1("MatMul", []string{x, y}), dt)
}

// addmm is beta*self + alpha*(mat1 @ mat2).
func addmm(l *lowerer, a []int32) error {
	if err := need(a, 6); err != nil {
		return err
	}
	m1, m2, dt, err := l.pair(a[1], a[2])
	if err != nil {
		return err
	}
	ob, err := l.operand(a[0])
	if err != nil {
		return err
	}
	bias, err := l.materialize(a[0], ob, dt)
	if err != nil {
		return err
	}
	beta, err := l.scalarValue(a[3])
	if err != nil {
		return err
	}
	alpha, err := l.scalarValue(a[4])
	if err != nil {
		return err
	}
	mm := l.op1("MatMul", []string{m1, m2})
	if alpha != 1 {
		c, err := l.scalarConst(dt, alpha)
		if err != nil {
			return err
		}
		mm = l.op1("Mul", []string{mm, c})
	}
	if beta == 0 {
		return l.def(a[5], mm, dt)
	}
	if beta != 1 {
		c, err := l.scalarConst(dt, beta)
		if err != nil {
			return err
		}
		bias = l.op1("Mul", []string{bias, c})
	}
	return l.def(a[5], l.op1("Add", []string{bias, mm}), dt)
}

// linear is input @ weight^T + bias.
func linear(l *lowerer, a []int32) error {
	if err := need(a, 4); err != nil {
		return err
	}
	x, w, dt, err := l.pair(a[0], a[1])
	if err != nil {
		return err
	}
	y := l.op1("MatMul", []string{x, l.op1("Transpose", []string{w}, aInts("perm", []int64{1, 0}))})
	if !l.isNull(a[2]) {
		b, err := l.tensor(a[2])
		if err != nil {
			return err
		}
		y = l.op1("Add", []string{y, b})
	}
	return l.def(a[3], y, dt)
}

func argReduce(op string) kernelFunc {
	return func(l *lowerer, a []int32) error {
		if err := need(a, 4); err != nil {
			return err
		}
		x, err := l.tensor(a[0])
		if err != nil {
			return err
		}
		keep, err := l.boolean(a[2])
		if err != nil {
			return err
		}
		k := b2i(keep)
		r, _ := l.rank(a[0])
		var dim int64
		if l.isNull(a[1]) {
			// Over the flattened tensor.
			x = l.op1("Reshape", []string{x, l.constI64(-1)})
			dim, k = 0, 0
		} else {
			d, err := l.int(a[1])
			if err != nil {
				return err
			}
			if dim, err = normDim(d, r); err != nil {
				return err
			}
		}
		res := l.op1(op, []string{x}, aInt("axis", dim), aInt("keepdims", k))
		if r == 0 || (l.isNull(a[1]) && keep) {
			shape, _, err := l.staticOut(a[3])
			if err != nil {
				return err
			}
			res = l.op1("Reshape", []string{res, l.constI64(shape...)}, aInt("allowzero", 1))
		}
		return l.def(a[3], res, graph.Int64)
	}
}

// reduce lowers mean/sum(self, dims, keepdim, dtype, out).
func reduce(op string) kernelFunc {
	return func(l *lowerer, a []int32) error {
		if err := need(a, 4); err != nil {
			return err
		}
		out := a[len(a)-2]
		x, err := l.tensor(a[0])
		if err != nil {
			return err
		}
		r, _ := l.rank(a[0])
		var dims []int64
		if !l.isNull(a[1]) {
			if dims, err = l.ints(a[1]); err != nil {
				return err
			}
		}
		if len(dims) == 0 {
			for i := 0; i < r; i++ {
				dims = append(dims, int64(i))
			}
		}
		for i := range dims {
			if dims[i], err = normDim(dims[i], r); err != nil {
				return err
			}
		}
		keep, err := l.boolean(a[2])
		if err != nil {
			return err
		}
		k := b2i(keep)
		_, dt, err := l.meta(out)
		if err != nil {
			return err
		}
		_, idt, _ := l.meta(a[0])
		// Accumulate in the out's dtype (sum of ints gives int64; a dtype
		// argument gives the same): cast first, then reduce.
		if idt != dt {
			x = l.op1("Cast", []string{x}, aInt("to", int64(dt)))
		}
		if r == 0 {
			return l.def(out, l.op1("Identity", []string{x}), dt)
		}
		return l.def(out, l.op1(op, []string{x, l.constI64(dims...)}, aInt("keepdims", k)), dt)
	}
}

// layerNorm is native_layer_norm(input, normalized_shape, weight, bias,
// eps, out, mean, rstd).
func layerNorm(l *lowerer, a []int32) error {
	ar := l.args(a, 8)
	x, shape, eps := ar.tensor(0), ar.ints(1), ar.double(4)
	if ar.err != nil {
		return ar.err
	}
	t, dt, _ := l.meta(a[0])
	r := len(t.Sizes)
	if len(shape) == 0 || len(shape) > r {
		return fmt.Errorf("normalized shape %v for rank %d", shape, r)
	}
	for i, d := range shape {
		if d != int64(t.Sizes[r-len(shape)+i]) {
			return fmt.Errorf("normalized shape %v is not the trailing dims of %v", shape, t.Sizes)
		}
	}
	scale := ""
	if l.isNull(a[2]) {
		ones, err := l.newTensor(dt, intsOf(shape))
		if err != nil {
			return err
		}
		for i := 0; i < ones.Len(); i++ {
			ones.SetFloat64(i, 1)
		}
		scale = l.constT(ones)
	} else if scale = ar.tensor(2); ar.err != nil {
		return ar.err
	}
	ins := []string{x, scale}
	if !l.isNull(a[3]) {
		b, err := l.tensor(a[3])
		if err != nil {
			return err
		}
		ins = append(ins, b)
	}
	y, mean, rstd := l.fresh("ln"), l.fresh("mean"), l.fresh("rstd")
	l.node("LayerNormalization", ins, []string{y, mean, rstd}, aInt("axis", int64(r-len(shape))), aFloat("epsilon", float32(eps)))
	if err := l.def(a[5], y, dt); err != nil {
		return err
	}
	if err := l.def(a[6], mean, dt); err != nil {
		return err
	}
	return l.def(a[7], rstd, dt)
}

func intsOf(v []int64) []int {
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}

// convolution(input, weight, bias, stride, padding, dilation, transposed,
// output_padding, groups, out).
func convolution(l *lowerer, a []int32) error {
	r := l.args(a, 10)
	if r.err != nil {
		return r.err
	}
	x, w, dt, err := l.pair(a[0], a[1])
	if err != nil {
		return err
	}
	ins := []string{x, w}
	if !l.isNull(a[2]) {
		ins = append(ins, r.tensor(2))
	}
	rk, _ := l.rank(a[0])
	sp := rk - 2
	stride, pad, dil := r.spatial(3, sp, 1), r.spatial(4, sp, 0), r.spatial(5, sp, 1)
	transposed, groups := r.boolean(6), r.int(8)
	if r.err != nil {
		return r.err
	}
	attrs := []*graph.Attribute{aInts("strides", stride), aInts("pads", append(append([]int64{}, pad...), pad...)), aInts("dilations", dil), aInt("group", groups)}
	if transposed {
		op := r.spatial(7, sp, 0)
		if r.err != nil {
			return r.err
		}
		attrs = append(attrs, aInts("output_padding", op))
		return l.def(a[9], l.op1("ConvTranspose", ins, attrs...), dt)
	}
	return l.def(a[9], l.op1("Conv", ins, attrs...), dt)
}

// spatial reads a per-spatial-dim int list, broadcasting one value.
func (l *lowerer) spatial(v int32, n int, def int64) ([]int64, error) {
	var vals []int64
	if !l.isNull(v) {
		var err error
		if vals, err = l.ints(v); err != nil {
			return nil, err
		}
	}
	switch len(vals) {
	case n:
		return vals, nil
	case 0:
		vals = []int64{def}
		fallthrough
	case 1:
		out := make([]int64, n)
		for i := range out {
			out[i] = vals[0]
		}
		return out, nil
	}
	return nil, fmt.Errorf("list %v for %d spatial dims", vals, n)
}

// spatial reads argument i as a per-spatial-dim int list of n values
// (lowerer.spatial).
func (r *argReader) spatial(i, n int, def int64) []int64 {
	if r.err != nil {
		return nil
	}
	v, err := r.l.spatial(r.a[i], n, def)
	r.keep(err)
	return v
}

// poolWindow reads a 2-d pool's kernel, stride (empty: the kernel) and
// padding: arguments i, i+1 and i+2.
func (r *argReader) poolWindow(i int) (k, stride, pad []int64) {
	k, stride = r.spatial(i, 2, 1), r.spatial(i+1, 2, 0)
	if r.err == nil && stride[0] == 0 {
		stride = k
	}
	return k, stride, r.spatial(i+2, 2, 0)
}

// maxPool is max_pool2d_with_indices(self, kernel, stride, padding,
// dilation, ceil_mode, out, indices); PyTorch's indices count within each
// (n, c) plane, ONNX's over the whole tensor.
func maxPool(l *lowerer, a []int32) error {
	ar := l.args(a, 8)
	x := ar.tensor(0)
	k, stride, pad := ar.poolWindow(1)
	dil, ceil := ar.spatial(4, 2, 1), ar.boolean(5)
	if ar.err != nil {
		return ar.err
	}
	t, dt, _ := l.meta(a[0])
	c := b2i(ceil)
	y, idx := l.fresh("pool"), l.fresh("idx")
	l.node("MaxPool", []string{x}, []string{y, idx}, aInts("kernel_shape", k), aInts("strides", stride),
		aInts("pads", []int64{pad[0], pad[1], pad[0], pad[1]}), aInts("dilations", dil), aInt("ceil_mode", c))
	if err := l.def(a[6], y, dt); err != nil {
		return err
	}
	r := len(t.Sizes)
	plane := int64(t.Sizes[r-1]) * int64(t.Sizes[r-2])
	if plane == 0 {
		plane = 1
	}
	return l.def(a[7], l.op1("Mod", []string{idx, l.constT(graph.Scalar(plane))}), graph.Int64)
}

// avgPool is avg_pool2d(self, kernel, stride, padding, ceil_mode,
// count_include_pad, divisor_override, out).
func avgPool(l *lowerer, a []int32) error {
	r := l.args(a, 8)
	x := r.tensor(0)
	k, stride, pad := r.poolWindow(1)
	ceil, cip := r.boolean(4), r.boolean(5)
	if r.err != nil {
		return r.err
	}
	if !l.isNull(a[6]) {
		return fmt.Errorf("avg_pool2d divisor_override not supported")
	}
	_, dt, _ := l.meta(a[0])
	return l.def(a[7], l.op1("AveragePool", []string{x}, aInts("kernel_shape", k), aInts("strides", stride),
		aInts("pads", []int64{pad[0], pad[1], pad[0], pad[1]}), aInt("ceil_mode", b2i(ceil)), aInt("count_include_pad", b2i(cip))), dt)
}

// atenPads turns PyTorch's pad list (last dim first, before/after pairs)
// into ONNX pads for rank r.
func atenPads(p []int64, r int) ([]int64, error) {
	if len(p)%2 != 0 || len(p)/2 > r {
		return nil, fmt.Errorf("pad list %v for rank %d", p, r)
	}
	pads := make([]int64, 2*r)
	for i := 0; i < len(p)/2; i++ {
		d := r - 1 - i
		pads[d] = p[2*i]
		pads[r+d] = p[2*i+1]
	}
	return pads, nil
}

func constantPad(l *lowerer, a []int32) error {
	r := l.args(a, 4)
	x, p := r.tensor(0), r.ints(1)
	if r.err != nil {
		return r.err
	}
	t, dt, _ := l.meta(a[0])
	pads, err := atenPads(p, len(t.Sizes))
	if err != nil {
		return err
	}
	c := r.scalarConst(dt, r.scalar(2))
	if r.err != nil {
		return r.err
	}
	return l.def(a[3], l.op1("Pad", []string{x, l.constI64(pads...), c}, aString("mode", "constant")), dt)
}
