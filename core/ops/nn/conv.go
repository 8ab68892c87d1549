package nn

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func convInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	if len(in) < 2 {
		return nil, nil
	}
	dt := in[0].Type.DType
	xs, ws := in[0].Type.Shape, in[1].Type.Shape
	ch := graph.Dim{Value: -1}
	var wKernel []int
	if ws != nil {
		if len(ws) < 3 {
			return nil, ops.Invalidf(n, "W must have rank >= 3, got %v", ws)
		}
		ch = ws[0]
		if k, ok := staticDims(ws[2:]); ok {
			wKernel = k
		}
		if xs != nil && len(xs) != len(ws) {
			return nil, ops.Invalidf(n, "X %v and W %v ranks differ", xs, ws)
		}
	}
	out, err := inferWindowOut(n, xs, ch, wKernel, false)
	if err != nil {
		return nil, ops.Errorf(n, "%w", err)
	}
	return []graph.ValueType{{Kind: "tensor", DType: dt, Shape: out}}, nil
}
