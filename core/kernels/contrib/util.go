package contrib

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

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

// checkOptFloat validates an optional float input (nil is fine).
func checkOptFloat(n *graph.Node, t *graph.Tensor, what string) error {
	if t == nil {
		return nil
	}
	return checkFloat(n, t, what)
}

// checkInts validates an optional integer input (nil is fine).
func checkInts(n *graph.Node, t *graph.Tensor, what string) error {
	if t == nil {
		return nil
	}
	if err := checkTensor(n, t, what); err != nil {
		return err
	}
	if !t.DType.IsInteger() {
		return kernels.Invalidf(n, "input %s has dtype %v, want an integer type", what, t.DType)
	}
	return nil
}

// wants reports whether node output i is requested.
func wants(n *graph.Node, i int) bool { return i < len(n.Outputs) && n.Outputs[i] != "" }

// newTensor allocates an output of dtype dt holding vals (rounded once to
// dt).
func newTensor(ctx *kernels.Context, n *graph.Node, dt graph.DType, shape []int, vals []float64) (*graph.Tensor, error) {
	out, err := ctx.New(dt, shape)
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	if out.Len() != len(vals) {
		return nil, kernels.Invalidf(n, "internal size mismatch: %d values for shape %v", len(vals), shape)
	}
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
	default:
		for i, v := range vals {
			out.SetFloat64(i, v)
		}
	}
	return out, nil
}

// lowest is float32's most negative finite value, what ONNX Runtime puts
// on causally masked scores.
var lowest = -float64(math.MaxFloat32)

// vec1 checks that t is 1-D with size elements (t may be nil) and returns
// its values.
func vec1(n *graph.Node, t *graph.Tensor, size int, what string) ([]float64, error) {
	if t == nil {
		return nil, nil
	}
	if t.Rank() != 1 || t.Shape[0] != size {
		return nil, kernels.Invalidf(n, "%s has shape %v, want [%d]", what, t.Shape, size)
	}
	return t.Float64s(), nil
}
