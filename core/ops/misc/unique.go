package misc

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func init() {
	ops.Register(ops.Schema{OpType: "Unique", MinOpset: 11, MinInputs: 1, MaxInputs: 1, MinOutputs: 1, MaxOutputs: 4, Infer: uniqueInfer})
}

func uniqueInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	t := ops.InputType(in, 0)
	y := ops.TensorType(t.DType, dims(-1))
	inv := ops.TensorType(graph.Int64, dims(-1))
	if n.HasAttr("axis") {
		y.Shape = nil
		if t.Shape != nil {
			axis, err := ops.NormAxis(n.AttrInt("axis", 0), len(t.Shape))
			if err != nil {
				return nil, ops.Invalidf(n, "%v", err)
			}
			y.Shape = append(graph.Shape{}, t.Shape...)
			y.Shape[axis] = graph.Dim{Value: -1}
			inv.Shape = graph.Shape{t.Shape[axis]}
		}
	} else if t.Shape != nil {
		if s, ok := t.Shape.Ints(); ok {
			inv.Shape = dims(int64(ops.Prod(s)))
		}
	}
	out := []graph.ValueType{y, ops.TensorType(graph.Int64, dims(-1)), inv, ops.TensorType(graph.Int64, dims(-1))}
	if len(n.Outputs) < len(out) {
		out = out[:len(n.Outputs)]
	}
	return out, nil
}
