package index

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func init() {
	ops.Register(ops.Schema{OpType: "ScatterElements", MinOpset: 11, MinInputs: 3, MaxInputs: 3, Types: ops.AllTypes, Infer: scatterInfer})
	// Scatter is the opset 9–10 name of ScatterElements (deprecated in 11).
	ops.Register(ops.Schema{OpType: "Scatter", MinOpset: 9, MinInputs: 3, MaxInputs: 3, Types: ops.AllTypes, Infer: scatterInfer})
	ops.Register(ops.Schema{OpType: "ScatterND", MinOpset: 11, MinInputs: 3, MaxInputs: 3, Types: ops.AllTypes, Infer: scatterInfer})
}

func scatterInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	x, ind, upd := inType(in, 0), inType(in, 1), inType(in, 2)
	if !isIndexType(ind.DType) {
		return nil, ops.Invalidf(n, "indices must be an integer tensor, got %v", ind.DType)
	}
	if x.DType != graph.Undefined && upd.DType != graph.Undefined && x.DType != upd.DType {
		return nil, ops.Invalidf(n, "updates dtype %v differs from data dtype %v", upd.DType, x.DType)
	}
	if _, err := ParseReduction(n); err != nil {
		return nil, err
	}
	return []graph.ValueType{tensorType(x.DType, x.Shape)}, nil
}
