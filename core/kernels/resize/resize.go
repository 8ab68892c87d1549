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
		gatherNearest(s, out.Data.([]int8), maps, x.Shape, kernels.SatInt[int8](math.Round(ev)))
	case []int16:
		gatherNearest(s, out.Data.([]int16), maps, x.Shape, kernels.SatInt[int16](math.Round(ev)))
	case []int32:
		gatherNearest(s, out.Data.([]int32), maps, x.Shape, kernels.SatInt[int32](math.Round(ev)))
	case []int64:
		gatherNearest(s, out.Data.([]int64), maps, x.Shape, kernels.SatInt[int64](math.Round(ev)))
	case []uint8:
		gatherNearest(s, out.Data.([]uint8), maps, x.Shape, kernels.SatInt[uint8](math.Round(ev)))
	case []uint16:
		gatherNearest(s, out.Data.([]uint16), maps, x.Shape, kernels.SatInt[uint16](math.Round(ev)))
	case []uint32:
		gatherNearest(s, out.Data.([]uint32), maps, x.Shape, kernels.SatInt[uint32](math.Round(ev)))
	case []uint64:
		gatherNearest(s, out.Data.([]uint64), maps, x.Shape, kernels.SatInt[uint64](math.Round(ev)))
	case []bool:
		gatherNearest(s, out.Data.([]bool), maps, x.Shape, ev != 0)
	case []string:
		gatherNearest(s, out.Data.([]string), maps, x.Shape, "")
	default:
		return errors.New("unsupported element type " + x.DType.String())
	}
	return nil
}

// storeFloat64 rounds the float64 results into out's element type: floats
// round to nearest, integers round half away from zero and saturate.
func storeFloat64(out *graph.Tensor, vals []float64) { kernels.StoreRounded(out, vals, math.Round) }
