package index

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

type Reduction int

const (
	RedNone Reduction = iota
	RedAdd
	RedMul
	RedMax
	RedMin
)

func ParseReduction(n *graph.Node) (Reduction, error) {
	switch r := n.AttrString("reduction", "none"); r {
	case "none", "":
		return RedNone, nil
	case "add":
		return RedAdd, nil
	case "mul":
		return RedMul, nil
	case "max":
		return RedMax, nil
	case "min":
		return RedMin, nil
	default:
		return RedNone, ops.Invalidf(n, "unknown reduction %q", r)
	}
}

func inType(in []ops.InferInput, i int) graph.ValueType {
	if i < len(in) {
		return in[i].Type
	}
	return graph.ValueType{}
}

func tensorType(dt graph.DType, s graph.Shape) graph.ValueType {
	return graph.ValueType{Kind: "tensor", DType: dt, Shape: s}
}

// constInts returns input i's value when it is known at load time.
func constInts(in []ops.InferInput, i int) ([]int64, bool) {
	if i >= len(in) || in[i].Const == nil || !in[i].Const.DType.IsInteger() || in[i].Const.Check() != nil {
		return nil, false
	}
	return in[i].Const.Int64s(), true
}

func unknownDims(r int) graph.Shape {
	s := make(graph.Shape, r)
	for i := range s {
		s[i] = graph.Dim{Value: -1}
	}
	return s
}

func isIndexType(dt graph.DType) bool {
	return dt == graph.Undefined || dt.IsInteger()
}
