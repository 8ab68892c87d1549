package control

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func init() {
	ops.Register(ops.Schema{OpType: "If", MinOpset: 1, MinInputs: 1, MaxInputs: 1, MinOutputs: 1, MaxOutputs: -1, Infer: ifInfer})
	ops.Register(ops.Schema{OpType: "Loop", MinOpset: 1, MinInputs: 2, MaxInputs: -1, MinOutputs: 1, MaxOutputs: -1})
}

func ifInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	g := n.AttrGraph("then_branch")
	if g == nil {
		return nil, nil
	}
	out := make([]graph.ValueType, len(g.Outputs))
	for i, o := range g.Outputs {
		out[i] = graph.ValueType{Kind: o.Type.Kind, DType: o.Type.DType}
	}
	return out, nil
}
