package binary

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

// binaryInfer is the InferFunc of two-input elementwise ops; outType
// Undefined means input 0's dtype. legacy selects the opset<7 rules.
func binaryInfer(outType graph.DType, legacy bool) ops.InferFunc {
	bc := ops.BroadcastInfer(outType)
	return func(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
		if legacy && opset < 7 && len(in) > 0 {
			dt := outType
			if dt == graph.Undefined {
				dt = in[0].Type.DType
			}
			return []graph.ValueType{{Kind: "tensor", DType: dt, Shape: in[0].Type.Shape}}, nil
		}
		return bc(n, opset, in)
	}
}
