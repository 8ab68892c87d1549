package shape

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

// constInts returns the value of a known integer input at inference time.
func constInts(in []ops.InferInput, i int) ([]int64, bool) {
	if i >= len(in) || in[i].Const == nil {
		return nil, false
	}
	c := in[i].Const
	if c.Check() != nil || !c.DType.IsInteger() || c.Rank() > 1 {
		return nil, false
	}
	return c.Int64s(), true
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

func unknownDims(r int) graph.Shape {
	s := make(graph.Shape, r)
	for i := range s {
		s[i] = graph.Dim{Value: -1}
	}
	return s
}

func staticDims(d []int) graph.Shape {
	s := make(graph.Shape, len(d))
	for i, v := range d {
		s[i] = graph.Dim{Value: int64(v)}
	}
	return s
}

// dimProd multiplies symbolic dims; the result is unknown unless all are
// static (or one is a static zero).
func dimProd(ds graph.Shape) graph.Dim {
	p := int64(1)
	known := true
	for _, d := range ds {
		if d.Static() && d.Value == 0 {
			return graph.Dim{Value: 0}
		}
		if !d.Static() {
			known = false
			continue
		}
		p *= d.Value
	}
	if !known {
		return graph.Dim{Value: -1}
	}
	return graph.Dim{Value: p}
}

func clampInt(v, lo, hi int64) int64 {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}
