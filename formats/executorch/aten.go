package executorch

import (
	"fmt"
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// kernelFunc lowers one kernel call; args are the call's value indices
// (the out-variant's inputs, its out tensors, then the returned values,
// which alias the outs).
type kernelFunc func(l *lowerer, args []int32) error

// lowerings maps "namespace::op.overload" to its lowering.
var lowerings = map[string]kernelFunc{}

func init() {
	for _, k := range []string{"aten::add", "aten::sub"} {
		op := "Add"
		if k == "aten::sub" {
			op = "Sub"
		}
		lowerings[k+".out"] = binaryOp(op, 3, true)
		lowerings[k+".Scalar_out"] = binaryOp(op, 3, true)
	}
	lowerings["aten::rsub.Scalar_out"] = func(l *lowerer, a []int32) error {
		// other - alpha*self
		if err := need(a, 4); err != nil {
			return err
		}
		return arith(l, "Sub", a[1], a[0], a[2], a[3])
	}
	lowerings["aten::mul.out"] = binaryOp("Mul", 2, false)
	lowerings["aten::mul.Scalar_out"] = binaryOp("Mul", 2, false)
	lowerings["aten::div.out"] = trueDiv
	lowerings["aten::div.Scalar_out"] = trueDiv
	lowerings["aten::div.out_mode"] = divMode
	lowerings["aten::div.Scalar_mode_out"] = divMode
	lowerings["aten::pow.Tensor_Scalar_out"] = binaryOp("Pow", 2, false)
	lowerings["aten::pow.Tensor_Tensor_out"] = binaryOp("Pow", 2, false)
	lowerings["aten::maximum.out"] = binaryOp("Max", 2, false)
	lowerings["aten::minimum.out"] = binaryOp("Min", 2, false)
	for k, op := range map[string]string{"eq": "Equal", "ne": "NotEqual", "lt": "Less", "le": "LessOrEqual", "gt": "Greater", "ge": "GreaterOrEqual"} {
		lowerings["aten::"+k+".Scalar_out"] = compare(op)
		lowerings["aten::"+k+".Tensor_out"] = compare(op)
	}
	for k, op := range map[string]string{"logical_and": "And", "logical_or": "Or", "logical_xor": "Xor"} {
		lowerings["aten::"+k+".out"] = logical(op)
	}
	for k, op := range map[string]string{
		"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "exp": "Exp", "log": "Log", "sqrt": "Sqrt",
		"neg": "Neg", "abs": "Abs", "sin": "Sin", "cos": "Cos", "floor": "Floor", "ceil": "Ceil",
		"erf": "Erf", "reciprocal": "Reciprocal", "sign": "Sign", "round": "Round",
	} {
		lowerings["aten::"+k+".out"] = unary(op)
	}
	lowerings["aten::rsqrt.out"] = func(l *lowerer, a []int32) error {
		if err := need(a, 2); err != nil {
			return err
		}
		x, dt, err := l.floatInput(a[0], a[1])
		if err != nil {
			return err
		}
		return l.def(a[1], l.op1("Reciprocal", []string{l.op1("Sqrt", []string{x})}), dt)
	}
	lowerings["aten::logical_not.out"] = func(l *lowerer, a []int32) error {
		if err := need(a, 2); err != nil {
			return err
		}
		o, err := l.operand(a[0])
		if err != nil {
			return err
		}
		x, err := l.materialize(a[0], o, graph.Bool)
		if err != nil {
			return err
		}
		return l.def(a[1], l.op1("Not", []string{x}), graph.Bool)
	}
	lowerings["aten::gelu.out"] = func(l *lowerer, a []int32) error {
		if err := need(a, 3); err != nil {
			return err
		}
		x, dt, err := l.floatInput(a[0], a[2])
		if err != nil {
			return err
		}
		approx, _ := l.str(a[1])
		if approx == "" {
			approx = "none"
		}
		return l.def(a[2], l.op1("Gelu", []string{x}, aString("approximate", approx)), dt)
	}
	lowerings["aten::hardtanh.out"] = func(l *lowerer, a []int32) error {
		if err := need(a, 4); err != nil {
			return err
		}
		return clamp(l, a[0], &a[1], &a[2], a[3])
	}
	lowerings["aten::clamp.out"] = func(l *lowerer, a []int32) error {
		if err := need(a, 4); err != nil {
			return err
		}
		var lo, hi *int32
		if !l.isNull(a[1]) {
			lo = &a[1]
		}
		if !l.isNull(a[2]) {
			hi = &a[2]
		}
		return clamp(l, a[0], lo, hi, a[3])
	}
	for _, k := range []string{"aten::clone.out", "aten::alias_copy.out", "aten::detach_copy.out", "aten::lift_fresh_copy.out"} {
		lowerings[k] = identity
	}
	lowerings["dim_order_ops::_clone_dim_order.out"] = identity
	lowerings["dim_order_ops::_to_dim_order_copy.out"] = identity
	lowerings["aten::_to_copy.out"] = identity
	lowerings["aten::scalar_tensor.out"] = func(l *lowerer, a []int32) error {
		r := l.args(a, 2)
		x, dt := r.scalar(0), r.dtype(1)
		c := r.scalarConst(dt, x)
		if r.err != nil {
			return r.err
		}
		return l.def(a[1], c, dt)
	}
	lowerings["aten::full_like.out"] = func(l *lowerer, a []int32) error {
		r := l.args(a, 4)
		x, self, dt := r.scalar(1), r.tensor(0), r.dtype(3)
		c := r.scalarConst(dt, x)
		if r.err != nil {
			return r.err
		}
		return l.def(a[3], l.op1("Expand", []string{c, l.op1("Shape", []string{self})}), dt)
	}
	lowerings["aten::full.out"] = func(l *lowerer, a []int32) error {
		r := l.args(a, 3)
		x, size, dt := r.scalar(1), r.ints(0), r.dtype(2)
		c := r.scalarConst(dt, x)
		if r.err != nil {
			return r.err
		}
		return l.def(a[2], l.op1("Expand", []string{c, l.constI64(size...)}), dt)
	}
	lowerings["aten::where.self_out"] = func(l *lowerer, a []int32) error {
		if err := need(a, 4); err != nil {
			return err
		}
		cond, err := l.tensor(a[0])
		if err != nil {
			return err
		}
		if _, cdt, _ := l.meta(a[0]); cdt != graph.Bool {
			cond = l.op1("Cast", []string{cond}, aInt("to", int64(graph.Bool)))
		}
		x, y, dt, err := l.pair(a[1], a[2])
		if err != nil {
			return err
		}
		return l.def(a[3], l.op1("Where", []string{cond, x, y}), dt)
	}
	lowerings["aten::mm.out"] = matmul
	lowerings["aten::bmm.out"] = matmul
	lowerings["aten::matmul.out"] = matmul
	lowerings["aten::addmm.out"] = addmm
	lowerings["aten::linear.out"] = linear
	lowerings["aten::permute_copy.out"] = func(l *lowerer, a []int32) error {
		if err := need(a, 3); err != nil {
			return err
		}
		x, err := l.tensor(a[0])
		if err != nil {
			return err
		}
		r, err := l.rank(a[0])
		if err != nil {
			return err
		}
		dims, err := l.ints(a[1])
		if err != nil {
			return err
		}
		if len(dims) != r {
			return fmt.Errorf("permutation %v for rank %d", dims, r)
		}
		for i := range dims {
			if dims[i], err = normDim(dims[i], r); err != nil {
				return err
			}
		}
		_, dt, _ := l.meta(a[0])
		return l.def(a[2], l.op1("Transpose", []string{x}, aInts("perm", dims)), dt)
	}
	lowerings["aten::t_copy.out"] = func(l *lowerer, a []int32) error {
		if err := need(a, 2); err != nil {
			return err
		}
		x, err := l.tensor(a[0])
		if err != nil {
			return err
		}
		r, _ := l.rank(a[0])
		_, dt, _ := l.meta(a[0])
		if r < 2 {
			return l.def(a[1], l.op1("Identity", []string{x}), dt)
		}
		return l.def(a[1], l.op1("Transpose", []string{x}, aInts("perm", []int64{1, 0})), dt)
	}
	lowerings["aten::transpose_copy.int_out"] = func(l *lowerer, a []int32) error {
		r := l.args(a, 4)
		x, d0, d1 := r.tensor(0), r.int(1), r.int(2)
		if r.err != nil {
			return r.err
		}
		rk, _ := l.rank(a[0])
		var err error
		if d0, err = normDim(d0, rk); err != nil {
			return err
		}
		if d1, err = normDim(d1, rk); err != nil {
			return err
		}
		perm := make([]int64, rk)
		for i := range perm {
			perm[i] = int64(i)
		}
		perm[d0], perm[d1] = perm[d1], perm[d0]
		_, dt, _ := l.meta(a[0])
		return l.def(a[3], l.op1("Transpose", []string{x}, aInts("perm", perm)), dt)
	}
	// Shape-only ops: the out tensor's declared sizes are the result.
	lowerings["aten::view_copy.out"] = reshapeTo(3)
	lowerings["aten::_unsafe_view.out"] = reshapeTo(3)
	lowerings["aten::reshape.out"] = reshapeTo(3)
	lowerings["aten::unsqueeze_copy.out"] = reshapeTo(3)
	lowerings["aten::squeeze_copy.dims_out"] = reshapeTo(3)
	lowerings["aten::squeeze_copy.dim_out"] = reshapeTo(3)
	lowerings["aten::squeeze_copy.out"] = reshapeTo(2)
	lowerings["aten::flatten.using_ints_out"] = reshapeTo(4)
	lowerings["aten::expand_copy.out"] = func(l *lowerer, a []int32) error {
		if err := need(a, 4); err != nil {
			return err
		}
		x, err := l.tensor(a[0])
		if err != nil {
			return err
		}
		out, dt, err := l.staticOut(a[3])
		if err != nil {
			return err
		}
		return l.def(a[3], l.op1("Expand", []string{x, l.constI64(out...)}), dt)
	}
	lowerings["aten::cat.out"] = func(l *lowerer, a []int32) error {
		if err := need(a, 3); err != nil {
			return err
		}
		list, err := l.val(a[0])
		if err != nil {
			return err
		}
		if list.Kind != KindTensorList {
			return fmt.Errorf("cat of a %s", list.Kind)
		}
		_, dt, err := l.meta(a[2])
		if err != nil {
			return err
		}
		r, _ := l.rank(a[2])
		dim, err := l.dimOf(a[1], a[2])
		if err != nil {
			return err
		}
		var ins []string
		for _, it := range list.Items {
			t, _, err := l.meta(it)
			if err != nil {
				return err
			}
			if len(t.Sizes) == 1 && t.Sizes[0] == 0 && r != 1 {
				continue // legacy: 1-d empty tensors are skipped
			}
			o, err := l.operand(it)
			if err != nil {
				return err
			}
			x, err := l.materialize(it, o, dt)
			if err != nil {
				return err
			}
			ins = append(ins, x)
		}
		return l.def(a[2], l.op1("Concat", ins, aInt("axis", dim)), dt)
	}
	lowerings["aten::slice_copy.Tensor_out"] = func(l *lowerer, a []int32) error {
		if err := need(a, 6); err != nil {
			return err
		}
		x, err := l.tensor(a[0])
		if err != nil {
			return err
		}
		dim, err := l.dimOf(a[1], a[0])
		if err != nil {
			return err
		}
		start, end := int64(0), int64(math.MaxInt64)
		if !l.isNull(a[2]) {
			if start, err = l.int(a[2]); err != nil {
				return err
			}
		}
		if !l.isNull(a[3]) {
			if end, err = l.int(a[3]); err != nil {
				return err
			}
		}
		step, err := l.int(a[4])
		if err != nil {
			return err
		}
		if step <= 0 {
			return fmt.Errorf("slice step %d must be positive", step)
		}
		_, dt, _ := l.meta(a[0])
		return l.def(a[5], l.op1("Slice", []string{x, l.constI64(start), l.constI64(end), l.constI64(dim), l.constI64(step)}), dt)
	}
	lowerings["aten::scatter.value_out"] = func(l *lowerer, a []int32) error {
		if err := need(a, 5); err != nil {
			return err
		}
		x, err := l.tensor(a[0])
		if err != nil {
			return err
		}
		dim, err := l.dimOf(a[1], a[0])
		if err != nil {
			return err
		}
		idx, err := l.tensor(a[2])
		if err != nil {
			return err
		}
		v, err := l.scalarValue(a[3])
		if err != nil {
			return err
		}
		_, dt, _ := l.meta(a[0])
		c, err := l.scalarConst(dt, v)
		if err != nil {
			return err
		}
		upd := l.op1("Expand", []string{c, l.op1("Shape", []string{idx})})
		return l.def(a[4], l.op1("ScatterElements", []string{x, idx, upd}, aInt("axis", dim)), dt)
	}
	lowerings["aten::argmax.out"] = argReduce("ArgMax")
	lowerings["aten::argmin.out"] = argReduce("ArgMin")
	lowerings["aten::mean.out"] = reduce("ReduceMean")
	lowerings["aten::mean.dim_out"] = reduce("ReduceMean")
	lowerings["aten::sum.IntList_out"] = reduce("ReduceSum")
	lowerings["aten::amax.out"] = reduce("ReduceMax")
	lowerings["aten::amin.out"] = reduce("ReduceMin")
	lowerings["aten::native_layer_norm.out"] = layerNorm
	lowerings["aten::convolution.out"] = convolution
	lowerings["aten::max_pool2d_with_indices.out"] = maxPool
	lowerings["aten::avg_pool2d.out"] = avgPool
	lowerings["aten::constant_pad_nd.out"] = constantPad
}

func need(a []int32, n int) error {
	if len(a) < n {
		return fmt.Errorf("%d arguments, want at least %d", len(a), n)
	}
	return nil
}

// pair reads two operands and casts both to their promoted type.
func (l *lowerer) pair(x, y int32) (string, string, graph.DType, error) {
	ox, err := l.operand(x)
	if err != nil {
		return "", "", 0, err
	}
	oy, err := l.operand(y)
	if err != nil {
		return "", "", 0, err
	}
	dt := resultType([]operand{ox, oy})
	a, err := l.materialize(x, ox, dt)
	if err != nil {
		return "", "", 0, err
	}
	b, err := l.materialize(y, oy, dt)
	return a, b, dt, err
}

// binary lowers op(self, other[, alpha], out).
func binaryOp(op string, outAt int, alpha bool) kernelFunc {
	return func(l *lowerer, a []int32) error {
		if err := need(a, outAt+1); err != nil {
			return err
		}
		if alpha {
			return arith(l, op, a[0], a[1], a[2], a[outAt])
		}
		return arith(l, op, a[0], a[1], -1, a[outAt])
	}
}
