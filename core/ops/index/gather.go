package index

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func init() {
	ops.Register(ops.Schema{OpType: "Gather", MinOpset: 1, MinInputs: 2, MaxInputs: 2, Types: ops.AllTypes, Infer: gatherInfer})
	ops.Register(ops.Schema{OpType: "GatherElements", MinOpset: 11, MinInputs: 2, MaxInputs: 2, Types: ops.AllTypes, Infer: gatherElementsInfer})
	ops.Register(ops.Schema{OpType: "GatherND", MinOpset: 11, MinInputs: 2, MaxInputs: 2, Types: ops.AllTypes, Infer: gatherNDInfer})
}

func gatherInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	x, ind := inType(in, 0), inType(in, 1)
	if !isIndexType(ind.DType) {
		return nil, ops.Invalidf(n, "indices must be an integer tensor, got %v", ind.DType)
	}
	if x.Shape == nil || ind.Shape == nil {
		return []graph.ValueType{tensorType(x.DType, nil)}, nil
	}
	if len(x.Shape) < 1 {
		return nil, ops.Invalidf(n, "data must have rank >= 1, got a scalar")
	}
	axis, err := ops.NormAxis(n.AttrInt("axis", 0), len(x.Shape))
	if err != nil {
		return nil, ops.Invalidf(n, "%v", err)
	}
	s := append(append(append(graph.Shape{}, x.Shape[:axis]...), ind.Shape...), x.Shape[axis+1:]...)
	return []graph.ValueType{tensorType(x.DType, s)}, nil
}

func gatherElementsInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	x, ind := inType(in, 0), inType(in, 1)
	if !isIndexType(ind.DType) {
		return nil, ops.Invalidf(n, "indices must be an integer tensor, got %v", ind.DType)
	}
	if x.Shape != nil && ind.Shape != nil && len(x.Shape) != len(ind.Shape) {
		return nil, ops.Invalidf(n, "indices rank %d differs from data rank %d", len(ind.Shape), len(x.Shape))
	}
	return []graph.ValueType{tensorType(x.DType, ind.Shape)}, nil
}

func gatherNDInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	x, ind := inType(in, 0), inType(in, 1)
	if !isIndexType(ind.DType) {
		return nil, ops.Invalidf(n, "indices must be an integer tensor, got %v", ind.DType)
	}
	if x.Shape == nil || ind.Shape == nil || len(ind.Shape) == 0 {
		return []graph.ValueType{tensorType(x.DType, nil)}, nil
	}
	last := ind.Shape[len(ind.Shape)-1]
	if !last.Static() {
		return []graph.ValueType{tensorType(x.DType, nil)}, nil
	}
	b := 0
	if opset >= 12 {
		b = int(n.AttrInt("batch_dims", 0))
	}
	k := int(last.Value)
	if b < 0 || b+k > len(x.Shape) || b >= len(ind.Shape) {
		return nil, ops.Invalidf(n, "indices %v with batch_dims %d cannot address data %v", ind.Shape, b, x.Shape)
	}
	s := append(append(graph.Shape{}, ind.Shape[:len(ind.Shape)-1]...), x.Shape[b+k:]...)
	return []graph.ValueType{tensorType(x.DType, s)}, nil
}
