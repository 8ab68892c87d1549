package misc

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func tensorType(dt graph.DType, s graph.Shape) graph.ValueType {
	return graph.ValueType{Kind: "tensor", DType: dt, Shape: s}
}

func dims(v ...int64) graph.Shape {
	s := make(graph.Shape, len(v))
	for i, x := range v {
		if x < 0 {
			s[i] = graph.Dim{Value: -1}
		} else {
			s[i] = graph.Dim{Value: x}
		}
	}
	return s
}

// inType returns input i's type, or an unknown tensor type when absent.
func inType(in []ops.InferInput, i int) graph.ValueType {
	if i < len(in) {
		return in[i].Type
	}
	return graph.ValueType{Kind: "tensor"}
}

// inConst returns input i's constant value or nil.
func inConst(in []ops.InferInput, i int) *graph.Tensor {
	if i < len(in) {
		return in[i].Const
	}
	return nil
}
