package binary

import (
	"strings"

	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

// legacyTypeNames maps Cast-1's string "to" attribute to dtypes.
var legacyTypeNames = map[string]graph.DType{
	"FLOAT": graph.Float32, "UINT8": graph.Uint8, "INT8": graph.Int8,
	"UINT16": graph.Uint16, "INT16": graph.Int16, "INT32": graph.Int32,
	"INT64": graph.Int64, "STRING": graph.String, "BOOL": graph.Bool,
	"FLOAT16": graph.Float16, "DOUBLE": graph.Float64, "UINT32": graph.Uint32,
	"UINT64": graph.Uint64, "COMPLEX64": graph.Complex64,
	"COMPLEX128": graph.Complex128, "BFLOAT16": graph.BFloat16,
}

// CastTo reads Cast's "to" attribute (an int, or a type name before opset 6).
func CastTo(n *graph.Node) (graph.DType, error) {
	a := n.Attr("to")
	if a == nil {
		return 0, ops.Invalidf(n, "missing attribute \"to\"")
	}
	switch a.Type {
	case graph.AttrInt:
		return graph.DType(a.I), nil
	case graph.AttrString:
		if dt, ok := legacyTypeNames[strings.ToUpper(a.S)]; ok {
			return dt, nil
		}
		if dt, ok := graph.ParseDType(strings.ToLower(a.S)); ok {
			return dt, nil
		}
		return 0, ops.Invalidf(n, "unknown type name %q in \"to\"", a.S)
	}
	return 0, ops.Invalidf(n, "attribute \"to\" has type %v", a.Type)
}

func castInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	to, err := CastTo(n)
	if err != nil {
		return nil, err
	}
	var shape graph.Shape
	if len(in) > 0 {
		shape = in[0].Type.Shape
	}
	return []graph.ValueType{{Kind: "tensor", DType: to, Shape: shape}}, nil
}

func castLikeInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	if len(in) < 2 {
		return nil, nil
	}
	return []graph.ValueType{{Kind: "tensor", DType: in[1].Type.DType, Shape: in[0].Type.Shape}}, nil
}

func init() {
	ops.Register(ops.Schema{
		OpType:    "Cast",
		MinOpset:  1,
		MinInputs: 1, MaxInputs: 1,
		MinOutputs: 1, MaxOutputs: 1,
		Types: ops.AllTypes,

		Infer: castInfer,
	})
	ops.Register(ops.Schema{
		OpType:    "CastLike",
		MinOpset:  15,
		MinInputs: 2, MaxInputs: 2,
		MinOutputs: 1, MaxOutputs: 1,
		Types: ops.AllTypes,

		Infer: castLikeInfer,
	})
}
