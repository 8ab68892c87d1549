package resize

import (
	resizeops "github.com/switchyard-hal/switchyard/core/ops/resize"

	"errors"
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.RegisterKernel("", "Resize", resizeKernel)
	kernels.RegisterKernel("", "Upsample", upsampleKernel)
}

// resizeInputs splits Resize's inputs by opset: Resize-10 is (X, scales);
// later versions are (X, roi, scales, sizes).
func resizeInputs(n *graph.Node, opset int64, in []*graph.Tensor) (x, roi, scales, sizes *graph.Tensor, err error) {
	x = kernels.Input(in, 0)
	if x == nil {
		return nil, nil, nil, nil, kernels.Invalidf(n, "missing input X")
	}
	if opset < 11 {
		if len(in) > 2 {
			return nil, nil, nil, nil, kernels.Invalidf(n, "Resize-%d takes 2 inputs, got %d", opset, len(in))
		}
		scales = kernels.Input(in, 1)
		if scales == nil {
			return nil, nil, nil, nil, kernels.Invalidf(n, "missing input scales")
		}
		return x, nil, scales, nil, nil
	}
	return x, kernels.Input(in, 1), kernels.Input(in, 2), kernels.Input(in, 3), nil
}

func resizeKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	a, err := resizeops.ResizeAttrs(n, ctx.Opset)
	if err != nil {
		return nil, err
	}
	x, roi, scales, sizes, err := resizeInputs(n, ctx.Opset, in)
	if err != nil {
		return nil, err
	}
	out, err := run(ctx, n, &a, x, roi, scales, sizes)
	if err != nil {
		return nil, err
	}
	return ctx.Outputs(out), nil
}

func upsampleKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	a, err := resizeops.UpsampleAttrs(n)
	if err != nil {
		return nil, err
	}
	x := kernels.Input(in, 0)
	if x == nil {
		return nil, kernels.Invalidf(n, "missing input X")
	}
	scales, err := resizeops.UpsampleScales(n, ctx.Opset, x.Rank(), kernels.Input(in, 1))
	if err != nil {
		return nil, err
	}
	if !resizeops.Present(scales) && x.Rank() > 0 {
		return nil, kernels.Invalidf(n, "scales is empty")
	}
	out, err := run(ctx, n, &a, x, nil, scales, nil)
	if err != nil {
		return nil, err
	}
	return ctx.Outputs(out), nil
}

// run resizes x as the attributes and scales/sizes say.
func run(ctx *kernels.Context, n *graph.Node, a *resizeops.Attrs, x, roi, scales, sizes *graph.Tensor) (*graph.Tensor, error) {
	p, err := resizeops.MakePlan(n, *a, x.Shape, roi, scales, sizes)
	if err != nil {
		return nil, err
	}
	out, err := ctx.New(x.DType, p.Out)
	if err != nil {
		return nil, kernels.Errorf(n, "%w", err)
	}
	if out.Len() == 0 {
		return out, nil
	}
	if x.Len() == 0 {
		return nil, kernels.Invalidf(n, "cannot resize an empty tensor of shape %v to %v", x.Shape, p.Out)
	}
	rank := x.Rank()
	maps := make([]*axisMap, rank)
	nearest := a.Mode == resizeops.ModeNearest
	for ax := 0; ax < rank; ax++ {
		m, err := buildAxis(a, p, ax, rank)
		if err != nil {
			if errors.Is(err, errTooSmall) {
				return nil, kernels.Unsupportedf(n, "%v (scale %g)", err, p.Scales[ax])
			}
			return nil, err
		}
		maps[ax] = m
	}
	allIdentity := true
	for _, m := range maps {
		allIdentity = allIdentity && m.identity
	}
	if nearest || allIdentity {
		for _, m := range maps {
			if !m.identity && m.nearest == nil { // identity-free linear map can't be gathered
				return nil, kernels.Errorf(n, "internal: axis map without nearest indices")
			}
		}
		if err := gather(x, out, maps, a.Extrapolation); err != nil {
			return nil, kernels.Unsupportedf(n, "%v", err)
		}
		return out, nil
	}
	if !x.DType.IsNumeric() {
		return nil, kernels.Unsupportedf(n, "mode %q on %v input", a.Mode, x.DType)
	}
	res, err := interpolate(n, a, maps, x.Shape, x.Float64s())
	if err != nil {
		return nil, err
	}
	storeFloat64(out, res)
	return out, nil
}

// gather runs gatherNearest on x's element type.
func gather(x, out *graph.Tensor, maps []*axisMap, ev float64) error {
	switch s := x.Data.(type) {
	case []float32:
		gatherNearest(s, out.Data.([]float32), maps, x.Shape, float32(ev))
	case []float64:
		gatherNearest(s, out.Data.([]float64), maps, x.Shape, ev)
	case []graph.F16:
		gatherNearest(s, out.Data.([]graph.F16), maps, x.Shape, graph.F16FromFloat64(ev))
	case []graph.BF16:
		gatherNearest(s, out.Data.([]graph.BF16), maps, x.Shape, graph.BF16FromFloat32(float32(ev)))
	case []int8:
		gatherNearest(s, out.Data.([]int8), maps, x.Shape, saturate[int8](ev, math.MinInt8, math.MaxInt8))
	case []int16:
		gatherNearest(s, out.Data.([]int16), maps, x.Shape, saturate[int16](ev, math.MinInt16, math.MaxInt16))
	case []int32:
		gatherNearest(s, out.Data.([]int32), maps, x.Shape, saturate[int32](ev, math.MinInt32, math.MaxInt32))
	case []int64:
		gatherNearest(s, out.Data.([]int64), maps, x.Shape, saturate[int64](ev, math.MinInt64, math.MaxInt64))
	case []uint8:
		gatherNearest(s, out.Data.([]uint8), maps, x.Shape, saturate[uint8](ev, 0, math.MaxUint8))
	case []uint16:
		gatherNearest(s, out.Data.([]uint16), maps, x.Shape, saturate[uint16](ev, 0, math.MaxUint16))
	case []uint32:
		gatherNearest(s, out.Data.([]uint32), maps, x.Shape, saturate[uint32](ev, 0, math.MaxUint32))
	case []uint64:
		gatherNearest(s, out.Data.([]uint64), maps, x.Shape, saturate[uint64](ev, 0, math.MaxUint64))
	case []bool:
		gatherNearest(s, out.Data.([]bool), maps, x.Shape, ev != 0)
	case []string:
		gatherNearest(s, out.Data.([]string), maps, x.Shape, "")
	default:
		return errors.New("unsupported element type " + x.DType.String())
	}
	return nil
}

// saturate rounds v half away from zero and clamps it to [lo, hi]; NaN is 0.
func saturate[T int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64](v float64, lo, hi float64) T {
	switch r := math.Round(v); {
	case r != r:
		return 0
	case r <= lo:
		return T(lo)
	case r >= hi:
		// float64(hi) may round up past the type's range (int64, uint64)
		var m T
		m--
		if m > 0 { // unsigned: all ones
			return m
		}
		return T(uint64(1)<<(8*sizeOf[T]()-1) - 1)
	default:
		return T(r)
	}
}

func sizeOf[T int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64]() uint {
	var z T
	switch any(z).(type) {
	case int8, uint8:
		return 1
	case int16, uint16:
		return 2
	case int32, uint32:
		return 4
	}
	return 8
}

func storeInts[T int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64](d []T, vals []float64, lo, hi float64) {
	for i, v := range vals {
		d[i] = saturate[T](v, lo, hi)
	}
}

// storeFloat64 rounds the float64 results into out's element type: floats
// round to nearest, integers round half away from zero and saturate.
func storeFloat64(out *graph.Tensor, vals []float64) {
	switch d := out.Data.(type) {
	case []float32:
		for i, v := range vals {
			d[i] = float32(v)
		}
	case []float64:
		copy(d, vals)
	case []graph.F16:
		for i, v := range vals {
			d[i] = graph.F16FromFloat64(v)
		}
	case []graph.BF16:
		for i, v := range vals {
			d[i] = graph.BF16FromFloat32(float32(v))
		}
	case []int8:
		storeInts(d, vals, math.MinInt8, math.MaxInt8)
	case []int16:
		storeInts(d, vals, math.MinInt16, math.MaxInt16)
	case []int32:
		storeInts(d, vals, math.MinInt32, math.MaxInt32)
	case []int64:
		storeInts(d, vals, math.MinInt64, math.MaxInt64)
	case []uint8:
		storeInts(d, vals, 0, math.MaxUint8)
	case []uint16:
		storeInts(d, vals, 0, math.MaxUint16)
	case []uint32:
		storeInts(d, vals, 0, math.MaxUint32)
	case []uint64:
		storeInts(d, vals, 0, math.MaxUint64)
	}
}
