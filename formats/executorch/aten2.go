package executorch

import (
	"fmt"
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// More portable kernels: activations, indexing, splitting, generators.
func init() {
	for k, op := range map[string]string{
		"tan": "Tan", "asin": "Asin", "acos": "Acos", "atan": "Atan", "sinh": "Sinh", "cosh": "Cosh",
		"asinh": "Asinh", "acosh": "Acosh", "atanh": "Atanh", "hardswish": "HardSwish",
	} {
		lowerings["aten::"+k+".out"] = unary(op)
	}
	lowerings["aten::hardsigmoid.out"] = floatUnary(func(l *lowerer, x string, _ graph.DType) string {
		return l.op1("HardSigmoid", []string{x}, aFloat("alpha", 1.0/6), aFloat("beta", 0.5))
	})
	lowerings["aten::silu.out"] = floatUnary(func(l *lowerer, x string, _ graph.DType) string {
		return l.op1("Mul", []string{x, l.op1("Sigmoid", []string{x})})
	})
	lowerings["aten::expm1.out"] = floatUnary(func(l *lowerer, x string, dt graph.DType) string {
		one, _ := l.scalarConst(dt, 1)
		return l.op1("Sub", []string{l.op1("Exp", []string{x}), one})
	})
	lowerings["aten::log1p.out"] = floatUnary(func(l *lowerer, x string, dt graph.DType) string {
		one, _ := l.scalarConst(dt, 1)
		return l.op1("Log", []string{l.op1("Add", []string{x, one})})
	})
	for k, base := range map[string]float64{"log2": 2, "log10": 10} {
		base := base
		lowerings["aten::"+k+".out"] = floatUnary(func(l *lowerer, x string, dt graph.DType) string {
			c, _ := l.scalarConst(dt, math.Log(base))
			return l.op1("Div", []string{l.op1("Log", []string{x}), c})
		})
	}
	lowerings["aten::trunc.out"] = floatUnary(func(l *lowerer, x string, _ graph.DType) string {
		return l.op1("Mul", []string{l.op1("Sign", []string{x}), l.op1("Floor", []string{l.op1("Abs", []string{x})})})
	})
	lowerings["aten::elu.out"] = func(l *lowerer, a []int32) error {
		if err := need(a, 5); err != nil {
			return err
		}
		x, dt, err := l.floatInput(a[0], a[4])
		if err != nil {
			return err
		}
		var p [3]float64
		for i := range p {
			if p[i], err = l.double(a[1+i]); err != nil {
				return err
			}
		}
		if p[1] != 1 || p[2] != 1 {
			return fmt.Errorf("elu with scale %v, input_scale %v not supported", p[1], p[2])
		}
		return l.def(a[4], l.op1("Elu", []string{x}, aFloat("alpha", float32(p[0]))), dt)
	}
	lowerings["aten::masked_fill.Scalar_out"] = func(l *lowerer, a []int32) error {
		r := l.args(a, 4)
		x, m, dt := r.tensor(0), r.tensor(1), r.dtype(0)
		c := r.scalarConst(dt, r.scalar(2))
		if r.err != nil {
			return r.err
		}
		return l.def(a[3], l.op1("Where", []string{m, c, x}), dt)
	}
	lowerings["aten::stack.out"] = func(l *lowerer, a []int32) error {
		if err := need(a, 3); err != nil {
			return err
		}
		list, err := l.val(a[0])
		if err != nil || list.Kind != KindTensorList {
			return fmt.Errorf("stack of a %s", list.Kind)
		}
		_, dt, err := l.meta(a[2])
		if err != nil {
			return err
		}
		dim, err := l.dimOf(a[1], a[2])
		if err != nil {
			return err
		}
		var ins []string
		for _, it := range list.Items {
			o, err := l.operand(it)
			if err != nil {
				return err
			}
			x, err := l.materialize(it, o, dt)
			if err != nil {
				return err
			}
			ins = append(ins, l.op1("Unsqueeze", []string{x, l.constI64(dim)}))
		}
		return l.def(a[2], l.op1("Concat", ins, aInt("axis", dim)), dt)
	}
	lowerings["aten::repeat.out"] = func(l *lowerer, a []int32) error {
		if err := need(a, 3); err != nil {
			return err
		}
		x, err := l.tensor(a[0])
		if err != nil {
			return err
		}
		t, dt, _ := l.meta(a[0])
		reps, err := l.ints(a[1])
		if err != nil {
			return err
		}
		if len(reps) < len(t.Sizes) {
			return fmt.Errorf("repeat %v for rank %d", reps, len(t.Sizes))
		}
		if extra := len(reps) - len(t.Sizes); extra > 0 {
			shape := make([]int64, len(reps))
			for i := range shape {
				shape[i] = 1
				if i >= extra {
					shape[i] = int64(t.Sizes[i-extra])
				}
			}
			x = l.op1("Reshape", []string{x, l.constI64(shape...)}, aInt("allowzero", 1))
		}
		return l.def(a[2], l.op1("Tile", []string{x, l.constI64(reps...)}), dt)
	}
	arange := func(l *lowerer, start, end, step float64, out int32) error {
		_, dt, err := l.meta(out)
		if err != nil {
			return err
		}
		var c [3]string
		for i, v := range []float64{start, end, step} {
			if c[i], err = l.scalarConst(dt, v); err != nil {
				return err
			}
		}
		return l.def(out, l.op1("Range", c[:]), dt)
	}
	lowerings["aten::arange.out"] = func(l *lowerer, a []int32) error {
		if err := need(a, 2); err != nil {
			return err
		}
		end, err := l.scalarValue(a[0])
		if err != nil {
			return err
		}
		return arange(l, 0, end, 1, a[1])
	}
	lowerings["aten::arange.start_out"] = func(l *lowerer, a []int32) error {
		if err := need(a, 4); err != nil {
			return err
		}
		var v [3]float64
		for i := range v {
			var err error
			if v[i], err = l.scalarValue(a[i]); err != nil {
				return err
			}
		}
		return arange(l, v[0], v[1], v[2], a[3])
	}
	lowerings["aten::_native_batch_norm_legit_no_training.out"] = func(l *lowerer, a []int32) error {
		r := l.args(a, 8)
		x := r.tensor(0)
		if r.err != nil {
			return r.err
		}
		t, dt, _ := l.meta(a[0])
		if len(t.Sizes) < 2 {
			return fmt.Errorf("batch norm of rank %d", len(t.Sizes))
		}
		c := int(t.Sizes[1])
		// weight and bias: null is ones and zeros
		param := func(i int, fill float64) string {
			if r.err != nil || !l.isNull(a[i]) {
				return r.tensor(i)
			}
			p, err := l.newTensor(dt, []int{c})
			if r.keep(err); err != nil {
				return ""
			}
			for k := 0; k < c; k++ {
				p.SetFloat64(k, fill)
			}
			return l.constT(p)
		}
		w, b := param(1, 1), param(2, 0)
		mean, vr, eps := r.tensor(3), r.tensor(4), r.double(6)
		if r.err != nil {
			return r.err
		}
		return l.def(a[7], l.op1("BatchNormalization", []string{x, w, b, mean, vr}, aFloat("epsilon", float32(eps))), dt)
	}
	lowerings["aten::index.Tensor_out"] = func(l *lowerer, a []int32) error {
		if err := need(a, 3); err != nil {
			return err
		}
		x, err := l.tensor(a[0])
		if err != nil {
			return err
		}
		list, err := l.val(a[1])
		if err != nil {
			return err
		}
		axis, idx := -1, int32(-1)
		for i, it := range list.Items {
			if it < 0 || l.isNull(it) {
				continue
			}
			if axis >= 0 {
				return fmt.Errorf("index with several index tensors not supported")
			}
			axis, idx = i, it
		}
		if axis < 0 {
			return fmt.Errorf("index without an index tensor")
		}
		ix, err := l.tensor(idx)
		if err != nil {
			return err
		}
		if _, idt, _ := l.meta(idx); idt == graph.Bool {
			return fmt.Errorf("boolean mask indexing not supported")
		}
		_, dt, _ := l.meta(a[0])
		return l.def(a[2], l.op1("Gather", []string{x, ix}, aInt("axis", int64(axis))), dt)
	}
	lowerings["aten::split_with_sizes_copy.out"] = func(l *lowerer, a []int32) error {
		if err := need(a, 4); err != nil {
			return err
		}
		sizes, err := l.ints(a[1])
		if err != nil {
			return err
		}
		return l.split(a[0], a[2], a[3], sizes, false)
	}
	lowerings["aten::split_copy.Tensor_out"] = func(l *lowerer, a []int32) error {
		if err := need(a, 4); err != nil {
			return err
		}
		return l.split(a[0], a[2], a[3], nil, false)
	}
	lowerings["aten::unbind_copy.int_out"] = func(l *lowerer, a []int32) error {
		if err := need(a, 3); err != nil {
			return err
		}
		return l.split(a[0], a[1], a[2], nil, true)
	}
	lowerings["aten::flip.out"] = func(l *lowerer, a []int32) error {
		if err := need(a, 3); err != nil {
			return err
		}
		x, err := l.tensor(a[0])
		if err != nil {
			return err
		}
		r, _ := l.rank(a[0])
		dims, err := l.ints(a[1])
		if err != nil {
			return err
		}
		var starts, ends, axes, steps []int64
		for _, d := range dims {
			if d, err = normDim(d, r); err != nil {
				return err
			}
			starts, ends, axes, steps = append(starts, -1), append(ends, math.MinInt64), append(axes, d), append(steps, -1)
		}
		_, dt, _ := l.meta(a[0])
		if len(dims) == 0 {
			return l.def(a[2], l.op1("Identity", []string{x}), dt)
		}
		return l.def(a[2], l.op1("Slice", []string{x, l.constI64(starts...), l.constI64(ends...), l.constI64(axes...), l.constI64(steps...)}), dt)
	}
	for _, k := range []string{"remainder.Scalar_out", "remainder.Tensor_out", "fmod.Scalar_out", "fmod.Tensor_out"} {
		python := k[0] == 'r'
		lowerings["aten::"+k] = func(l *lowerer, a []int32) error {
			if err := need(a, 3); err != nil {
				return err
			}
			x, y, dt, err := l.pair(a[0], a[1])
			if err != nil {
				return err
			}
			var r string
			switch {
			case dt.IsInteger() && python:
				r = l.op1("Mod", []string{x, y}, aInt("fmod", 0))
			case python:
				// x - floor(x / y) * y
				r = l.op1("Sub", []string{x, l.op1("Mul", []string{l.op1("Floor", []string{l.op1("Div", []string{x, y})}), y})})
			default:
				r = l.op1("Mod", []string{x, y}, aInt("fmod", 1))
			}
			return l.def(a[2], r, dt)
		}
	}
	lowerings["aten::upsample_nearest2d.vec_out"] = func(l *lowerer, a []int32) error {
		if err := need(a, 4); err != nil {
			return err
		}
		x, err := l.tensor(a[0])
		if err != nil {
			return err
		}
		shape, dt, err := l.staticOut(a[3])
		if err != nil {
			return err
		}
		// PyTorch's nearest: source index floor(dst · in/out).
		return l.def(a[3], l.op1("Resize", []string{x, "", "", l.constI64(shape...)}, aString("mode", "nearest"),
			aString("coordinate_transformation_mode", "asymmetric"), aString("nearest_mode", "floor")), dt)
	}
}

// floatUnary lowers a one-input float function f(self) with out.
func floatUnary(f func(l *lowerer, x string, dt graph.DType) string) kernelFunc {
	return func(l *lowerer, a []int32) error {
		if err := need(a, 2); err != nil {
			return err
		}
		x, dt, err := l.floatInput(a[0], a[1])
		if err != nil {
			return err
		}
		return l.def(a[1], f(l, x, dt), dt)
	}
}

// split writes the pieces of self along dim into the tensors of the
// list value outs; sizes nil takes them from the outs' declared sizes;
// squeeze drops the split dim (unbind).
func (l *lowerer) split(self, dimV, outs int32, sizes []int64, squeeze bool) error {
	x, err := l.tensor(self)
	if err != nil {
		return err
	}
	r, _ := l.rank(self)
	dim, err := l.int(dimV)
	if err != nil {
		return err
	}
	if dim, err = normDim(dim, r); err != nil {
		return err
	}
	list, err := l.val(outs)
	if err != nil {
		return err
	}
	if list.Kind != KindTensorList || len(list.Items) == 0 {
		return fmt.Errorf("split into a %s", list.Kind)
	}
	if sizes == nil {
		for _, it := range list.Items {
			t, _, err := l.meta(it)
			if err != nil {
				return err
			}
			s := int64(1)
			if !squeeze {
				if int(dim) >= len(t.Sizes) {
					return fmt.Errorf("split output of rank %d", len(t.Sizes))
				}
				s = int64(t.Sizes[dim])
			}
			sizes = append(sizes, s)
		}
	}
	if len(sizes) != len(list.Items) {
		return fmt.Errorf("%d split sizes for %d outputs", len(sizes), len(list.Items))
	}
	names := make([]string, len(sizes))
	for i := range names {
		names[i] = l.fresh("split")
	}
	l.node("Split", []string{x, l.constI64(sizes...)}, names, aInt("axis", dim))
	_, dt, _ := l.meta(self)
	for i, it := range list.Items {
		n := names[i]
		if squeeze {
			n = l.op1("Squeeze", []string{n, l.constI64(dim)})
		}
		if err := l.def(it, n, dt); err != nil {
			return err
		}
	}
	return nil
}
