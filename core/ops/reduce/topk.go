package reduce

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func init() {
	ops.Register(ops.Schema{OpType: "TopK", MinOpset: 1, MinInputs: 1, MaxInputs: 2, MinOutputs: 2, MaxOutputs: 2, Types: numericTypes, Infer: topkInfer})
}

func topkInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	x := inType(in, 0)
	if x.Shape == nil {
		return []graph.ValueType{tensorType(x.DType, nil), tensorType(graph.Int64, nil)}, nil
	}
	axis, err := ops.NormAxis(n.AttrInt("axis", -1), len(x.Shape))
	if err != nil {
		return nil, ops.Invalidf(n, "%v", err)
	}
	kd := graph.Dim{Value: -1}
	if opset < 10 {
		if n.HasAttr("k") {
			kd = graph.Dim{Value: n.AttrInt("k", 0)}
		}
	} else if c := inConst(in, 1); c != nil && c.Len() == 1 {
		kd = graph.Dim{Value: c.Int64At(0)}
	}
	if kd.Value < -1 {
		return nil, ops.Invalidf(n, "k=%d is negative", kd.Value)
	}
	if d := x.Shape[axis]; kd.Value >= 0 && d.Static() && kd.Value > d.Value {
		return nil, ops.Invalidf(n, "k=%d exceeds axis size %d", kd.Value, d.Value)
	}
	s := copyShape(x.Shape)
	s[axis] = kd
	return []graph.ValueType{tensorType(x.DType, s), tensorType(graph.Int64, copyShape(s))}, nil
}
