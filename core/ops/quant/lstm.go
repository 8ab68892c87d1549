package quant

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

// lstmInfer: y is int8 [B,T,N] (or [T,B,N]) from x's first two dims and
// W's gate rows.
func lstmInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	xs, ws := shapeOf(in, 0), shapeOf(in, 3)
	if xs == nil || ws == nil {
		return []graph.ValueType{tensor(graph.Int8, nil)}, nil
	}
	if len(xs) != 3 || len(ws) != 3 {
		return nil, ops.Invalidf(n, "LSTM needs a 3-D input and 3-D [4,N,I] weights, got %v and %v", xs, ws)
	}
	return []graph.ValueType{tensor(graph.Int8, graph.Shape{xs[0], xs[1], ws[1]})}, nil
}

func init() {
	ops.Register(ops.Schema{Domain: Domain, OpType: "LSTM", MinOpset: 1, MaxOpset: 1, MinInputs: 11, MaxInputs: 11,
		MinOutputs: 1, MaxOutputs: 1, Types: int8Only, Infer: lstmInfer})
}
