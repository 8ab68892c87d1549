package attention

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// checkOptional validates an optional input (nil is fine).
func checkOptional(n *graph.Node, t *graph.Tensor, what string) error {
	if t == nil {
		return nil
	}
	return kernels.CheckInput(n, t, what)
}

// wants reports whether node output i is requested.
func wants(n *graph.Node, i int) bool { return i < len(n.Outputs) && n.Outputs[i] != "" }

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

// negInf is -∞.
var negInf = math.Inf(-1)
