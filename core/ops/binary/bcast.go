package binary

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

// register registers a two-input, one-output elementwise op whose output
// has dtype outType (Undefined: input 0's); legacy: the op existed before
// opset 7's broadcasting rules.
func register(op string, minOpset int64, types []graph.DType, outType graph.DType, legacy bool) {
	ops.Register(ops.Schema{
		OpType:    op,
		MinOpset:  minOpset,
		MinInputs: 2, MaxInputs: 2,
		MinOutputs: 1, MaxOutputs: 1,
		Types: types,
		Infer: binaryInfer(outType, legacy),
	})
}

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
