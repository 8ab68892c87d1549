package binary

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// qmap maps elements of x to their scale / zero-point element for the three
// quantization granularities: per tensor, per axis (1-D scale along axis) and
// blocked (scale of x's rank, with blocks of block_size along axis).
type qmap struct {
	perTensor         bool
	outer, dim, inner int // x = [outer, dim, inner] around axis
	bs, sdim          int // blocked: block size and scale's size along axis (0 = per axis)
}

// newQmap validates the scale (and zero point) shapes against x.
func newQmap(n *graph.Node, x, scale, zp *graph.Tensor) (*qmap, error) {
	if zp != nil && !graph.SameShape(zp.Shape, scale.Shape) {
		return nil, kernels.Invalidf(n, "zero point shape %v differs from scale shape %v", zp.Shape, scale.Shape)
	}
	bs := n.AttrInt("block_size", 0)
	if bs < 0 {
		return nil, kernels.Invalidf(n, "block_size must be >= 0, got %d", bs)
	}
	if scale.Len() == 1 {
		return &qmap{perTensor: true}, nil
	}
	if bs == 0 && len(scale.Shape) != 1 {
		return nil, kernels.Invalidf(n, "scale must be a scalar or 1-D without block_size, got shape %v", scale.Shape)
	}
	axis, err := kernels.NormAxis(n.AttrInt("axis", 1), len(x.Shape))
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	q := &qmap{outer: kernels.Prod(x.Shape[:axis]), dim: x.Shape[axis], inner: kernels.Prod(x.Shape[axis+1:])}
	if bs == 0 {
		if scale.Shape[0] != q.dim {
			return nil, kernels.Invalidf(n, "scale has %d elements but x has %d along axis %d", scale.Shape[0], q.dim, axis)
		}
		return q, nil
	}
	if len(scale.Shape) != len(x.Shape) {
		return nil, kernels.Invalidf(n, "blocked scale %v must have the rank of x %v", scale.Shape, x.Shape)
	}
	for i, d := range scale.Shape {
		want := x.Shape[i]
		if i == axis {
			want = int((int64(want) + bs - 1) / bs)
		}
		if d != want {
			return nil, kernels.Invalidf(n, "blocked scale %v does not fit x %v with block_size %d on axis %d", scale.Shape, x.Shape, bs, axis)
		}
	}
	q.bs, q.sdim = int(bs), scale.Shape[axis]
	return q, nil
}

// each calls fn for runs of x elements [start, start+count) whose scale
// index is sidx, advancing by step (0 or 1) per element.
func (q *qmap) each(total int, fn func(start, count, sidx, step int)) {
	if total == 0 {
		return
	}
	if q.perTensor {
		fn(0, total, 0, 0)
		return
	}
	for o := 0; o < q.outer; o++ {
		for d := 0; d < q.dim; d++ {
			start := (o*q.dim + d) * q.inner
			if q.bs == 0 {
				fn(start, q.inner, d, 0)
			} else {
				fn(start, q.inner, (o*q.sdim+d/q.bs)*q.inner, 1)
			}
		}
	}
}

// quantRange is the saturation range of a quantized integer type.
func quantRange(dt graph.DType) (lo, hi float64, ok bool) {
	switch dt {
	case graph.Uint8:
		return 0, 255, true
	case graph.Int8:
		return -128, 127, true
	case graph.Uint16:
		return 0, 65535, true
	case graph.Int16:
		return -32768, 32767, true
	}
	return 0, 0, false
}

// divPrecision is the type x / y_scale is computed in: the "precision"
// attribute if set, else numpy's promotion of the two types (which is what
// the ONNX reference implementation does).
func divPrecision(n *graph.Node, xt, st graph.DType) graph.DType {
	if p := graph.DType(n.AttrInt("precision", 0)); p != graph.Undefined {
		return p
	}
	switch {
	case xt == st:
		return xt
	case xt == graph.Float64 || st == graph.Float64 || !xt.IsFloat() || !st.IsFloat():
		return graph.Float64
	}
	return graph.Float32
}

// roundTo rounds v to the precision of dt (a float type).
func roundTo(dt graph.DType, v float64) float64 {
	switch dt {
	case graph.Float32:
		return float64(float32(v))
	case graph.Float16:
		return float64(f16From64(v).Float32())
	case graph.BFloat16:
		return float64(bf16From64(v).Float32())
	}
	return v
}

func quantizeKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	if err := checkInputs(n, in, 2); err != nil {
		return nil, err
	}
	x, scale, zp := in[0], in[1], kernels.Input(in, 2)
	if zp != nil {
		if err := zp.Check(); err != nil {
			return nil, kernels.Invalidf(n, "input 2: %v", err)
		}
	}
	if !x.DType.IsFloat() && x.DType != graph.Int32 {
		return nil, kernels.Unsupportedf(n, "x dtype %v", x.DType)
	}
	if !scale.DType.IsFloat() {
		return nil, kernels.Invalidf(n, "scale dtype must be a float type, got %v", scale.DType)
	}
	odt := graph.DType(n.AttrInt("output_dtype", 0))
	if zp != nil {
		if odt != graph.Undefined && odt != zp.DType {
			return nil, kernels.Invalidf(n, "output_dtype %v differs from zero point dtype %v", odt, zp.DType)
		}
		odt = zp.DType
	}
	if odt == graph.Undefined {
		odt = graph.Uint8
	}
	lo, hi, ok := quantRange(odt)
	if !ok {
		return nil, kernels.Unsupportedf(n, "quantization to %v", odt)
	}
	prec := divPrecision(n, x.DType, scale.DType)
	if !prec.IsFloat() {
		return nil, kernels.Invalidf(n, "precision must be a float type, got %v", prec)
	}
	q, err := newQmap(n, x, scale, zp)
	if err != nil {
		return nil, err
	}
	out, err := ctx.New(odt, x.Shape)
	if err != nil {
		return nil, err
	}
	xs := x.Float64s()
	ss := roundAll(prec, scale.Float64s())
	var zs []float64
	if zp != nil {
		zs = zp.Float64s()
	}
	res := make([]int32, len(xs))
	q.each(len(xs), func(start, count, sidx, step int) {
		for i := start; i < start+count; i++ {
			v := math.RoundToEven(roundTo(prec, roundTo(prec, xs[i])/ss[sidx]))
			if zs != nil {
				v += zs[sidx]
			}
			switch {
			case v != v || v < lo:
				v = lo
			case v > hi:
				v = hi
			}
			res[i] = int32(v)
			sidx += step
		}
	})
	switch d := out.Data.(type) {
	case []uint8:
		convSlice(res, d)
	case []int8:
		convSlice(res, d)
	case []uint16:
		convSlice(res, d)
	case []int16:
		convSlice(res, d)
	}
	return ctx.Outputs(out), nil
}

func roundAll(dt graph.DType, v []float64) []float64 {
	for i := range v {
		v[i] = roundTo(dt, v[i])
	}
	return v
}

func dequantizeKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	if err := checkInputs(n, in, 2); err != nil {
		return nil, err
	}
	x, scale, zp := in[0], in[1], kernels.Input(in, 2)
	if zp != nil {
		if err := zp.Check(); err != nil {
			return nil, kernels.Invalidf(n, "input 2: %v", err)
		}
		if zp.DType != x.DType {
			return nil, kernels.Invalidf(n, "zero point dtype %v differs from x dtype %v", zp.DType, x.DType)
		}
	}
	switch x.DType {
	case graph.Int8, graph.Uint8, graph.Int16, graph.Uint16, graph.Int32:
	default:
		return nil, kernels.Unsupportedf(n, "x dtype %v", x.DType)
	}
	if !scale.DType.IsFloat() {
		return nil, kernels.Invalidf(n, "scale dtype must be a float type, got %v", scale.DType)
	}
	odt := scale.DType
	if dt := graph.DType(n.AttrInt("output_dtype", 0)); dt != graph.Undefined {
		odt = dt
	}
	if !odt.IsFloat() {
		return nil, kernels.Unsupportedf(n, "output dtype %v", odt)
	}
	q, err := newQmap(n, x, scale, zp)
	if err != nil {
		return nil, err
	}
	out, err := ctx.New(odt, x.Shape)
	if err != nil {
		return nil, err
	}
	xs := x.Float64s()
	ss := scale.Float64s()
	var zs []float64
	if zp != nil {
		zs = zp.Float64s()
	}
	res := make([]float32, len(xs))
	q.each(len(xs), func(start, count, sidx, step int) {
		for i := start; i < start+count; i++ {
			dx := float32(xs[i])
			if zs != nil {
				dx -= float32(zs[sidx])
			}
			res[i] = dx * float32(ss[sidx])
			sidx += step
		}
	})
	switch d := out.Data.(type) {
	case []float32:
		copy(d, res)
	case []float64:
		convSlice(res, d)
	case []graph.F16:
		for i, v := range res {
			d[i] = graph.F16FromFloat32(v)
		}
	case []graph.BF16:
		for i, v := range res {
			d[i] = graph.BF16FromFloat32(v)
		}
	}
	return ctx.Outputs(out), nil
}

func init() {
	kernels.RegisterKernel("", "QuantizeLinear", quantizeKernel)
	kernels.RegisterKernel("", "DequantizeLinear", dequantizeKernel)
}
