package reduce

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func init() {
	ops.Register(ops.Schema{OpType: "ArgMax", MinOpset: 1, MinInputs: 1, MaxInputs: 1, Types: numericTypes, Infer: argInfer})
	ops.Register(ops.Schema{OpType: "ArgMin", MinOpset: 1, MinInputs: 1, MaxInputs: 1, Types: numericTypes, Infer: argInfer})
}

func argInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	x := inType(in, 0)
	if x.Shape == nil {
		return []graph.ValueType{tensorType(graph.Int64, nil)}, nil
	}
	axis, err := ops.NormAxis(n.AttrInt("axis", 0), len(x.Shape))
	if err != nil {
		return nil, ops.Invalidf(n, "%v", err)
	}
	keep := n.AttrInt("keepdims", 1) != 0
	out := graph.Shape{}
	for i, d := range x.Shape {
		switch {
		case i != axis:
			out = append(out, d)
		case keep:
			out = append(out, graph.Dim{Value: 1})
		}
	}
	return []graph.ValueType{tensorType(graph.Int64, out)}, nil
}
