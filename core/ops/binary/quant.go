package binary

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func quantizeInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	if len(in) == 0 {
		return nil, nil
	}
	dt := graph.DType(n.AttrInt("output_dtype", 0))
	if len(in) > 2 && in[2].Type.DType != graph.Undefined {
		dt = in[2].Type.DType
	} else if len(n.Inputs) > 2 && n.Inputs[2] != "" {
		dt = graph.Undefined // zero point present but of unknown type
	}
	if dt == graph.Undefined && (len(n.Inputs) < 3 || n.Inputs[2] == "") {
		dt = graph.Uint8
	}
	return []graph.ValueType{{Kind: "tensor", DType: dt, Shape: in[0].Type.Shape}}, nil
}

func dequantizeInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	if len(in) == 0 {
		return nil, nil
	}
	dt := graph.DType(n.AttrInt("output_dtype", 0))
	if dt == graph.Undefined && len(in) > 1 {
		dt = in[1].Type.DType
	}
	return []graph.ValueType{{Kind: "tensor", DType: dt, Shape: in[0].Type.Shape}}, nil
}

func init() {
	ops.Register(ops.Schema{
		OpType:    "QuantizeLinear",
		MinOpset:  10,
		MinInputs: 2, MaxInputs: 3,
		MinOutputs: 1, MaxOutputs: 1,
		Types: []graph.DType{graph.Float32, graph.Float16, graph.BFloat16, graph.Float64, graph.Int32},

		Infer: quantizeInfer,
	})
	ops.Register(ops.Schema{
		OpType:    "DequantizeLinear",
		MinOpset:  10,
		MinInputs: 2, MaxInputs: 3,
		MinOutputs: 1, MaxOutputs: 1,
		Types: []graph.DType{graph.Int8, graph.Uint8, graph.Int16, graph.Uint16, graph.Int32},

		Infer: dequantizeInfer,
	})
}
