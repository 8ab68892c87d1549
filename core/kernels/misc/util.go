package misc

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// alloc allocates an output with ctx.New and classifies an allocation
// failure as invalid input (an absurd shape).
func alloc(ctx *kernels.Context, n *graph.Node, dt graph.DType, shape []int) (*graph.Tensor, error) {
	t, err := ctx.New(dt, shape)
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	return t, nil
}

// checkIn reports a missing or malformed required input.
func checkIn(n *graph.Node, t *graph.Tensor, name string) error {
	if t == nil {
		return kernels.Invalidf(n, "missing input %s", name)
	}
	if err := t.Check(); err != nil {
		return kernels.Invalidf(n, "input %s: %v", name, err)
	}
	return nil
}

// scalarInt reads a one-element integer tensor (rank 0 or 1).
func scalarInt(n *graph.Node, t *graph.Tensor, name string) (int64, error) {
	if err := checkIn(n, t, name); err != nil {
		return 0, err
	}
	if !t.DType.IsInteger() || t.Len() != 1 || t.Rank() > 1 {
		return 0, kernels.Invalidf(n, "%s must be an integer scalar, got %v", name, t)
	}
	return t.Int64At(0), nil
}

// scalarFloat reads a one-element numeric tensor (rank 0 or 1) as float64.
func scalarFloat(n *graph.Node, t *graph.Tensor, name string) (float64, error) {
	if err := checkIn(n, t, name); err != nil {
		return 0, err
	}
	if !t.DType.IsNumeric() || t.Len() != 1 || t.Rank() > 1 {
		return 0, kernels.Invalidf(n, "%s must be a numeric scalar, got %v", name, t)
	}
	return t.Float64At(0), nil
}

// gather sets dst[i] = src[idx[i]] for every idx[i] >= 0 (others keep their
// zero value); dst and src must have the same dtype.
func gather(n *graph.Node, dst, src *graph.Tensor, idx []int) error {
	if !kernels.Gather(dst.Data, src.Data, idx) {
		return kernels.Unsupportedf(n, "dtype %v", src.DType)
	}
	return nil
}

// splitAt returns the products of the dims before, at and after axis.
func splitAt(shape []int, axis int) (outer, d, inner int) {
	outer, inner = 1, 1
	for i, s := range shape {
		switch {
		case i < axis:
			outer *= s
		case i > axis:
			inner *= s
		}
	}
	return outer, shape[axis], inner
}

// floatsOut stores float64 values into a new tensor of dtype dt (floats
// round, integers truncate toward zero, bool is v != 0).
func floatsOut(ctx *kernels.Context, n *graph.Node, dt graph.DType, shape []int, vals []float64) (*graph.Tensor, error) {
	out, err := alloc(ctx, n, dt, shape)
	if err != nil {
		return nil, err
	}
	switch d := out.Data.(type) {
	case []float64:
		copy(d, vals)
	case []float32:
		for i, v := range vals {
			d[i] = float32(v)
		}
	case []graph.F16:
		for i, v := range vals {
			d[i] = graph.F16FromFloat64(v)
		}
	case []graph.BF16:
		for i, v := range vals {
			d[i] = graph.BF16FromFloat32(float32(v))
		}
	default:
		for i, v := range vals {
			out.SetFloat64(i, v)
		}
	}
	return out, nil
}
