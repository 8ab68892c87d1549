package attention

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func init() {
	ops.Register(ops.Schema{OpType: "RMSNormalization", MinOpset: 23, MinInputs: 2, MaxInputs: 2, Types: ops.FloatTypes, Infer: rmsNormInfer})
	ops.Register(ops.Schema{OpType: "LpNormalization", MinOpset: 1, MinInputs: 1, MaxInputs: 1, Types: ops.FloatTypes, Infer: lpNormInfer})
	ops.Register(ops.Schema{OpType: "MeanVarianceNormalization", MinOpset: 9, MinInputs: 1, MaxInputs: 1, Types: ops.FloatTypes, Infer: mvnInfer})
}

func rmsNormInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	x := ops.InputType(in, 0)
	if x.Shape != nil {
		if len(x.Shape) == 0 {
			return nil, ops.Invalidf(n, "X must have rank >= 1")
		}
		if _, err := ops.NormAxis(n.AttrInt("axis", -1), len(x.Shape)); err != nil {
			return nil, ops.Invalidf(n, "%v", err)
		}
	}
	return []graph.ValueType{ops.TensorType(x.DType, ops.CopyShape(x.Shape))}, nil
}

func lpNormInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	x := ops.InputType(in, 0)
	if p := n.AttrInt("p", 2); p != 1 && p != 2 {
		return nil, ops.Invalidf(n, "p must be 1 or 2, got %d", p)
	}
	if x.Shape != nil {
		if _, err := ops.NormAxis(n.AttrInt("axis", -1), len(x.Shape)); err != nil {
			return nil, ops.Invalidf(n, "%v", err)
		}
	}
	return []graph.ValueType{ops.TensorType(x.DType, ops.CopyShape(x.Shape))}, nil
}

func MvnAxes(n *graph.Node, rank int) ([]bool, error) {
	axes := n.AttrInts("axes", []int64{0, 2, 3})
	red := make([]bool, rank)
	for _, a := range axes {
		ax, err := ops.NormAxis(a, rank)
		if err != nil {
			return nil, ops.Invalidf(n, "axes %v: %v", axes, err)
		}
		if red[ax] {
			return nil, ops.Invalidf(n, "axes %v repeat axis %d", axes, a)
		}
		red[ax] = true
	}
	return red, nil
}

func mvnInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	x := ops.InputType(in, 0)
	if x.Shape != nil {
		if _, err := MvnAxes(n, len(x.Shape)); err != nil {
			return nil, err
		}
	}
	return []graph.ValueType{ops.TensorType(x.DType, ops.CopyShape(x.Shape))}, nil
}
