package reduce

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// intElem is the set of integer element types (native arithmetic, wrapping
// on overflow like ONNX Runtime and numpy).
type intElem = kernels.Int

// checkTensor validates a required input tensor.
func checkTensor(n *graph.Node, t *graph.Tensor, what string) error {
	if t == nil {
		return kernels.Invalidf(n, "missing input %s", what)
	}
	if err := t.Check(); err != nil {
		return kernels.Invalidf(n, "input %s: %v", what, err)
	}
	return nil
}

// checkFloat validates a required float input.
func checkFloat(n *graph.Node, t *graph.Tensor, what string) error {
	if err := checkTensor(n, t, what); err != nil {
		return err
	}
	if !t.DType.IsFloat() {
		return kernels.Unsupportedf(n, "input %s has dtype %v, want a float type", what, t.DType)
	}
	return nil
}

// newFromFloat64 allocates a tensor of dtype dt and stores vals into it
// (floats round to nearest, integers truncate and saturate, bool is v != 0).
func newFromFloat64(ctx *kernels.Context, dt graph.DType, shape []int, vals []float64) (*graph.Tensor, error) {
	out, err := ctx.New(dt, shape)
	if err != nil {
		return nil, err
	}
	if out.Len() != len(vals) {
		return nil, kernels.ErrInvalid
	}
	storeFloat64(out, vals)
	return out, nil
}

// storeFloat64 writes vals into t (see newFromFloat64 for the conversions).
func storeFloat64(t *graph.Tensor, vals []float64) { kernels.StoreRounded(t, vals, math.Trunc) }

// splitAt returns the products of shape[:axis], shape[axis] and shape[axis+1:].
func splitAt(shape []int, axis int) (outer, d, inner int) {
	return kernels.Prod(shape[:axis]), shape[axis], kernels.Prod(shape[axis+1:])
}

// gather builds a tensor of x's dtype and the given shape whose element i is
// x's flat element idx[i].
func gather(ctx *kernels.Context, x *graph.Tensor, shape []int, idx []int) (*graph.Tensor, error) {
	out, err := ctx.New(x.DType, shape)
	if err != nil {
		return nil, err
	}
	if !kernels.Gather(out.Data, x.Data, idx) {
		return nil, kernels.ErrUnsupported
	}
	return out, nil
}
