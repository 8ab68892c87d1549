package attention

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

// inType returns input i's type, or an unknown tensor type.
func inType(in []ops.InferInput, i int) graph.ValueType {
	if i < len(in) {
		return in[i].Type
	}
	return graph.ValueType{Kind: "tensor"}
}

func tensorType(dt graph.DType, s graph.Shape) graph.ValueType {
	return graph.ValueType{Kind: "tensor", DType: dt, Shape: s}
}

func copyShape(s graph.Shape) graph.Shape {
	if s == nil {
		return nil
	}
	return append(graph.Shape{}, s...)
}

var unknownDim = graph.Dim{Value: -1}

// addDims adds two dims when both are static.
func addDims(a, b graph.Dim) graph.Dim {
	if a.Static() && b.Static() {
		return graph.Dim{Value: a.Value + b.Value}
	}
	if a.Static() && a.Value == 0 {
		return b
	}
	if b.Static() && b.Value == 0 {
		return a
	}
	return unknownDim
}

// divDim divides a static dim by k (> 0) when it divides evenly.
func divDim(a graph.Dim, k int64) graph.Dim {
	if a.Static() && k > 0 && a.Value%k == 0 {
		return graph.Dim{Value: a.Value / k}
	}
	return unknownDim
}
