package attention

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

// checkOptional validates an optional input (nil is fine).
func checkOptional(n *graph.Node, t *graph.Tensor, what string) error {
	if t == nil {
		return nil
	}
	return checkTensor(n, t, what)
}

// wants reports whether node output i is requested.
func wants(n *graph.Node, i int) bool { return i < len(n.Outputs) && n.Outputs[i] != "" }

// newFromFloat64 allocates a float tensor of dtype dt and stores vals into
// it, rounding once to the element type.
func newFromFloat64(ctx *kernels.Context, n *graph.Node, dt graph.DType, shape []int, vals []float64) (*graph.Tensor, error) {
	out, err := ctx.New(dt, shape)
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	if out.Len() != len(vals) {
		return nil, kernels.Invalidf(n, "internal size mismatch: %d values for shape %v", len(vals), shape)
	}
	storeFloat64(out, vals)
	return out, nil
}

// storeFloat64 writes vals into the float tensor t.
func storeFloat64(t *graph.Tensor, vals []float64) {
	switch d := t.Data.(type) {
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
			d[i] = bf16FromFloat64(v)
		}
	default:
		for i, v := range vals {
			t.SetFloat64(i, v)
		}
	}
}

// bf16FromFloat64 rounds to bfloat16 (via float32; NaN stays NaN).
func bf16FromFloat64(v float64) graph.BF16 { return graph.BF16FromFloat32(float32(v)) }

// roundTo rounds v to the precision of the float dtype dt.
func roundTo(dt graph.DType, v float64) float64 {
	switch dt {
	case graph.Float32:
		return float64(float32(v))
	case graph.Float16:
		return float64(graph.F16FromFloat64(v).Float32())
	case graph.BFloat16:
		return float64(bf16FromFloat64(v).Float32())
	}
	return v
}

// broadcastTo checks that t unidirectionally broadcasts to shape and returns
// the index of t's element for each element of shape.
func broadcastTo(n *graph.Node, shape []int, t *graph.Tensor, what string) ([]int, error) {
	s, err := kernels.BroadcastShapes(shape, t.Shape)
	if err != nil || !graph.SameShape(s, shape) {
		return nil, kernels.Invalidf(n, "%s of shape %v does not broadcast to %v", what, t.Shape, shape)
	}
	return kernels.BroadcastIndex(shape, t.Shape), nil
}

// negInf is -∞.
var negInf = math.Inf(-1)
