package attention

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func init() {
	ops.Register(ops.Schema{OpType: "Shrink", MinOpset: 9, MinInputs: 1, MaxInputs: 1, Types: ops.NumericTypes, Infer: ops.SameAsInput})
	ops.Register(ops.Schema{OpType: "Swish", MinOpset: 24, MinInputs: 1, MaxInputs: 1, Types: ops.FloatTypes, Infer: ops.SameAsInput})
	ops.Register(ops.Schema{OpType: "SwiGLU", MinOpset: 28, MinInputs: 2, MaxInputs: 2, Types: ops.FloatTypes, Infer: swigluInfer})
}

func swigluInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	a, b := ops.InputType(in, 0), ops.InputType(in, 1)
	if a.DType != graph.Undefined && b.DType != graph.Undefined && a.DType != b.DType {
		return nil, ops.Invalidf(n, "A is %v but B is %v", a.DType, b.DType)
	}
	s := a.Shape
	if s == nil {
		s = b.Shape
	} else if b.Shape != nil {
		if len(a.Shape) != len(b.Shape) {
			return nil, ops.Invalidf(n, "A %v and B %v must have identical shapes", a.Shape, b.Shape)
		}
		s = ops.CopyShape(a.Shape)
		for i := range s {
			da, db := a.Shape[i], b.Shape[i]
			switch {
			case da.Static() && db.Static() && da.Value != db.Value:
				return nil, ops.Invalidf(n, "A %v and B %v must have identical shapes", a.Shape, b.Shape)
			case !da.Static() && db.Static():
				s[i] = db
			}
		}
	}
	dt := a.DType
	if dt == graph.Undefined {
		dt = b.DType
	}
	return []graph.ValueType{ops.TensorType(dt, ops.CopyShape(s))}, nil
}
