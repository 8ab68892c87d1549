package shape

import (
	shapeops "github.com/switchyard-hal/switchyard/core/ops/shape"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.RegisterKernel("", "Shape", shapeKernel)
	kernels.RegisterKernel("", "Size", sizeKernel)
	kernels.RegisterKernel("", "Constant", constantKernel)
	kernels.RegisterKernel("", "ConstantOfShape", constantOfShapeKernel)
	kernels.RegisterKernel("", "Range", rangeKernel)
}

// ---- Shape / Size ----

func shapeKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := checkInput(n, x, "data"); err != nil {
		return nil, err
	}
	s, e := shapeops.ShapeBounds(n, ctx.Opset, x.Rank())
	out, err := newOut(ctx, n, graph.Int64, []int{e - s})
	if err != nil {
		return nil, err
	}
	d := out.Data.([]int64)
	for i := range d {
		d[i] = int64(x.Shape[s+i])
	}
	return ctx.Outputs(out), nil
}

func sizeKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := checkInput(n, x, "data"); err != nil {
		return nil, err
	}
	out, err := newOut(ctx, n, graph.Int64, []int{})
	if err != nil {
		return nil, err
	}
	out.Data.([]int64)[0] = int64(x.Len())
	return ctx.Outputs(out), nil
}

// ---- Constant ----

func constantKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	v, err := shapeops.ConstantValue(n)
	if err != nil {
		return nil, err
	}
	out, err := copyReshaped(ctx, n, v, v.Shape)
	if err != nil {
		return nil, err
	}
	return ctx.Outputs(out), nil
}

// ---- ConstantOfShape ----

func constantOfShapeKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	v, err := shapeops.ConstantOfShapeValue(n)
	if err != nil {
		return nil, err
	}
	dims, err := intsInput(n, kernels.Input(in, 0), "input")
	if err != nil {
		return nil, err
	}
	shape := make([]int, len(dims))
	for i, d := range dims {
		if d < 0 || d > graph.MaxTensorBytes {
			return nil, kernels.Invalidf(n, "shape %v has invalid dimension %d", dims, d)
		}
		shape[i] = int(d)
	}
	out, err := newOut(ctx, n, v.DType, shape)
	if err != nil {
		return nil, err
	}
	// broadcast the single value: every source stride is zero
	src := &graph.Tensor{DType: v.DType, Shape: []int{}, Data: v.Data}
	return one(out, copyPlan(ctx, n, out, src, plan{shape: shape, sSt: make([]int, len(shape)), dSt: kernels.Strides(shape)}))
}

// ---- Range ----

func scalarInput(n *graph.Node, t *graph.Tensor, what string, dt graph.DType) error {
	if err := checkInput(n, t, what); err != nil {
		return err
	}
	if t.Len() != 1 || t.Rank() > 1 {
		return kernels.Invalidf(n, "%s must be a scalar, got shape %v", what, t.Shape)
	}
	if t.DType != dt {
		return kernels.Invalidf(n, "%s is %v, start is %v", what, t.DType, dt)
	}
	return nil
}

func rangeKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	if err := checkInput(n, kernels.Input(in, 0), "start"); err != nil {
		return nil, err
	}
	dt := in[0].DType
	for i, what := range []string{"start", "limit", "delta"} {
		if err := scalarInput(n, kernels.Input(in, i), what, dt); err != nil {
			return nil, err
		}
	}
	st, lim, del := in[0], in[1], in[2]
	cnt, err := shapeops.RangeCount(n, st, lim, del)
	if err != nil {
		return nil, err
	}
	out, err := newOut(ctx, n, dt, []int{cnt})
	if err != nil {
		return nil, err
	}
	switch d := out.Data.(type) {
	case []float64:
		s, dl := st.Float64At(0), del.Float64At(0)
		for i := range d {
			d[i] = s + float64(i)*dl
		}
	case []float32:
		s, dl := float32(st.Float64At(0)), float32(del.Float64At(0))
		for i := range d {
			d[i] = s + float32(i)*dl
		}
	case []graph.F16:
		s, dl := float32(st.Float64At(0)), float32(del.Float64At(0))
		for i := range d {
			d[i] = graph.F16FromFloat32(s + float32(i)*dl)
		}
	case []graph.BF16:
		s, dl := float32(st.Float64At(0)), float32(del.Float64At(0))
		for i := range d {
			d[i] = graph.BF16FromFloat32(s + float32(i)*dl)
		}
	default:
		if !dt.IsInteger() {
			return nil, kernels.Unsupportedf(n, "dtype %v", dt)
		}
		s, dl := st.Int64At(0), del.Int64At(0)
		for i := range cnt {
			setInt(out, i, s+int64(i)*dl)
		}
	}
	return ctx.Outputs(out), nil
}

// setInt stores an integer exactly (SetFloat64 would round large int64s).
func setInt(t *graph.Tensor, i int, v int64) {
	switch d := t.Data.(type) {
	case []int8:
		d[i] = int8(v)
	case []int16:
		d[i] = int16(v)
	case []int32:
		d[i] = int32(v)
	case []int64:
		d[i] = v
	case []uint8:
		d[i] = uint8(v)
	case []uint16:
		d[i] = uint16(v)
	case []uint32:
		d[i] = uint32(v)
	case []uint64:
		d[i] = uint64(v)
	}
}
