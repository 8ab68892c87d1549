package reduce

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

var // floatTypes are the float dtypes (computed in float64, rounded back).
floatTypes = ops.FloatTypes

var // numericTypes are every float and integer dtype.
numericTypes = ops.NumericTypes

var // numericBool is numericTypes plus bool (ReduceMax/ReduceMin from opset 20).
numericBool = append(append([]graph.DType{}, ops.NumericTypes...), graph.Bool)

// inType returns the type of input i, or an unknown tensor type.
func inType(in []ops.InferInput, i int) graph.ValueType {
	if i < len(in) {
		return in[i].Type
	}
	return graph.ValueType{}
}

// inConst returns the load-time value of input i, or nil.
func inConst(in []ops.InferInput, i int) *graph.Tensor {
	if i < len(in) {
		return in[i].Const
	}
	return nil
}

func tensorType(dt graph.DType, s graph.Shape) graph.ValueType {
	return graph.ValueType{Kind: "tensor", DType: dt, Shape: s}
}

// unknownDims returns a shape of the given rank with every dim unknown.
func unknownDims(rank int) graph.Shape {
	s := make(graph.Shape, rank)
	for i := range s {
		s[i] = graph.Dim{Value: -1}
	}
	return s
}

// copyShape copies a declared shape (nil stays nil).
func copyShape(s graph.Shape) graph.Shape {
	if s == nil {
		return nil
	}
	return append(graph.Shape{}, s...)
}
