package contrib

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// checkOptFloat validates an optional float input (nil is fine).
func checkOptFloat(n *graph.Node, t *graph.Tensor, what string) error {
	if t == nil {
		return nil
	}
	return kernels.CheckFloatInput(n, t, what)
}

// checkInts validates an optional integer input (nil is fine).
func checkInts(n *graph.Node, t *graph.Tensor, what string) error {
	if t == nil {
		return nil
	}
	if err := kernels.CheckInput(n, t, what); err != nil {
		return err
	}
	if !t.DType.IsInteger() {
		return kernels.Invalidf(n, "input %s has dtype %v, want an integer type", what, t.DType)
	}
	return nil
}

// wants reports whether node output i is requested.
func wants(n *graph.Node, i int) bool { return i < len(n.Outputs) && n.Outputs[i] != "" }

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
