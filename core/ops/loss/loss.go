package loss

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func init() {
	ops.Register(ops.Schema{
		OpType: "NegativeLogLikelihoodLoss", MinOpset: 12,
		MinInputs: 2, MaxInputs: 3, MinOutputs: 1, MaxOutputs: 1,
		Types: ops.FloatTypes, Infer: lossInfer(false),
	})
	ops.Register(ops.Schema{
		OpType: "SoftmaxCrossEntropyLoss", MinOpset: 12,
		MinInputs: 2, MaxInputs: 3, MinOutputs: 1, MaxOutputs: 2,
		Types: ops.FloatTypes, Infer: lossInfer(true),
	})
}

type Reduction int

const (
	redNone Reduction = iota
	RedSum
	RedMean
)

func ParseReduction(n *graph.Node) (Reduction, error) {
	switch r := n.AttrString("reduction", "mean"); r {
	case "none":
		return redNone, nil
	case "sum":
		return RedSum, nil
	case "mean":
		return RedMean, nil
	default:
		return 0, ops.Invalidf(n, "reduction %q is not one of none, sum, mean", r)
	}
}

// lossInfer returns the shape/type inference for both ops: output 0 has the
// input's dtype and either the target's shape (reduction "none") or rank 0;
// SoftmaxCrossEntropyLoss's optional output 1 (log_prob) matches the input.
func lossInfer(sce bool) ops.InferFunc {
	return func(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
		red, err := ParseReduction(n)
		if err != nil {
			return nil, err
		}
		var xt, tt graph.ValueType
		if len(in) > 0 {
			xt = in[0].Type
		}
		if len(in) > 1 {
			tt = in[1].Type
		}
		if xt.DType != graph.Undefined && !xt.DType.IsFloat() {
			return nil, ops.Invalidf(n, "input must be a float tensor, got %v", xt.DType)
		}
		if tt.DType != graph.Undefined && tt.DType != graph.Int32 && tt.DType != graph.Int64 {
			return nil, ops.Invalidf(n, "target must be int32 or int64, got %v", tt.DType)
		}
		if xt.Shape != nil && len(xt.Shape) < 2 {
			return nil, ops.Invalidf(n, "input must have rank >= 2, got %v", xt.Shape)
		}
		if xt.Shape != nil && tt.Shape != nil && len(tt.Shape) != len(xt.Shape)-1 {
			return nil, ops.Invalidf(n, "target rank %d, want input rank - 1 = %d", len(tt.Shape), len(xt.Shape)-1)
		}
		out := graph.ValueType{Kind: "tensor", DType: xt.DType}
		switch {
		case red != redNone:
			out.Shape = graph.Shape{}
		case tt.Shape != nil && xt.Shape != nil:
			// merge the two sources of each dimension
			s := make(graph.Shape, len(tt.Shape))
			for i := range s {
				xd := xt.Shape[0]
				if i > 0 {
					xd = xt.Shape[i+1]
				}
				td := tt.Shape[i]
				switch {
				case td.Static() && xd.Static() && td.Value != xd.Value:
					return nil, ops.Invalidf(n, "target shape %v does not match input shape %v", tt.Shape, xt.Shape)
				case td.Static() || td.Param != "":
					s[i] = td
				default:
					s[i] = xd
				}
			}
			out.Shape = s
		case tt.Shape != nil:
			out.Shape = append(graph.Shape{}, tt.Shape...)
		case xt.Shape != nil:
			out.Shape = append(graph.Shape{xt.Shape[0]}, xt.Shape[2:]...)
		}
		res := []graph.ValueType{out}
		if sce && len(n.Outputs) > 1 {
			res = append(res, graph.ValueType{Kind: "tensor", DType: xt.DType, Shape: xt.Shape})
		}
		return res, nil
	}
}
