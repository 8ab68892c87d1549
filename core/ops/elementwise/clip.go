package elementwise

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

// Clip is Min(max, Max(input, min)); NaN in the input or a bound propagates,
// and a bound that is not given does not clip (as the ONNX reference
// implementation and Clip's function body do).
func init() {
	ops.Register(ops.Schema{
		OpType:    "Clip",
		MinOpset:  1,
		MinInputs: 1, MaxInputs: 3,
		MinOutputs: 1, MaxOutputs: 1,
		Types: numTypes,

		Infer: clipInfer,
	})
}

func clipInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	if len(in) == 0 {
		return nil, nil
	}
	x := in[0].Type
	for i := 1; i < len(in) && opset >= 11; i++ {
		t := in[i].Type
		if t.DType != graph.Undefined && x.DType != graph.Undefined && t.DType != x.DType {
			return nil, ops.Invalidf(n, "input %d has dtype %v, input 0 has %v", i, t.DType, x.DType)
		}
		if s, ok := t.Shape.Ints(); ok && ops.Prod(s) != 1 {
			return nil, ops.Invalidf(n, "input %d must be a scalar, got shape %v", i, t.Shape)
		}
	}
	return []graph.ValueType{{Kind: "tensor", DType: x.DType, Shape: x.Shape}}, nil
}
