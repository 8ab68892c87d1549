package index

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func init() {
	ops.Register(ops.Schema{OpType: "NonZero", MinOpset: 9, MinInputs: 1, MaxInputs: 1, Types: ops.AllTypes, Infer: nonZeroInfer})
	ops.Register(ops.Schema{OpType: "OneHot", MinOpset: 9, MinInputs: 3, MaxInputs: 3, Types: ops.NumericTypes, Infer: oneHotInfer})
	ops.Register(ops.Schema{OpType: "Trilu", MinOpset: 14, MinInputs: 1, MaxInputs: 2, Types: ops.AllTypes, Infer: triluInfer})
	ops.Register(ops.Schema{OpType: "DepthToSpace", MinOpset: 1, MinInputs: 1, MaxInputs: 1, Types: ops.AllTypes, Infer: depthToSpaceInfer})
	ops.Register(ops.Schema{OpType: "SpaceToDepth", MinOpset: 1, MinInputs: 1, MaxInputs: 1, Types: ops.AllTypes, Infer: spaceToDepthInfer})
}

func nonZeroInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	x := inType(in, 0)
	if x.Shape == nil {
		return []graph.ValueType{tensorType(graph.Int64, unknownDims(2))}, nil
	}
	r := max(len(x.Shape), 1)
	return []graph.ValueType{tensorType(graph.Int64, graph.Shape{{Value: int64(r)}, {Value: -1}})}, nil
}

func oneHotInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	ind, vals := inType(in, 0), inType(in, 2)
	dt := vals.DType
	if ind.Shape == nil {
		return []graph.ValueType{tensorType(dt, nil)}, nil
	}
	r := len(ind.Shape)
	axis, err := ops.NormAxis(n.AttrInt("axis", -1), r+1)
	if err != nil {
		return nil, ops.Invalidf(n, "%v", err)
	}
	d := graph.Dim{Value: -1}
	if len(in) > 1 && in[1].Const != nil && in[1].Const.Check() == nil && in[1].Const.Len() == 1 && in[1].Const.DType.IsNumeric() {
		if f := in[1].Const.Float64At(0); f >= 0 && f <= float64(math.MaxInt32)*8 {
			d = graph.Dim{Value: int64(f)}
		}
	}
	s := append(append(append(graph.Shape{}, ind.Shape[:axis]...), d), ind.Shape[axis:]...)
	return []graph.ValueType{tensorType(dt, s)}, nil
}

func triluInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	x := inType(in, 0)
	if x.Shape != nil && len(x.Shape) < 2 {
		return nil, ops.Invalidf(n, "input must have rank >= 2, got %v", x.Shape)
	}
	return []graph.ValueType{x}, nil
}

func BlockSize(n *graph.Node) (int, error) {
	bs := n.AttrInt("blocksize", 0)
	if bs <= 0 || bs > 1<<16 {
		return 0, ops.Invalidf(n, "blocksize must be a positive integer, got %d", bs)
	}
	return int(bs), nil
}

func mulDim(d graph.Dim, f int) graph.Dim {
	if !d.Static() {
		return graph.Dim{Value: -1}
	}
	return graph.Dim{Value: d.Value * int64(f)}
}

func divDim(n *graph.Node, d graph.Dim, f int) (graph.Dim, error) {
	if !d.Static() {
		return graph.Dim{Value: -1}, nil
	}
	if d.Value%int64(f) != 0 {
		return d, ops.Invalidf(n, "dimension %d is not divisible by %d", d.Value, f)
	}
	return graph.Dim{Value: d.Value / int64(f)}, nil
}

func depthToSpaceInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	x := inType(in, 0)
	bs, err := BlockSize(n)
	if err != nil {
		return nil, err
	}
	if x.Shape == nil {
		return []graph.ValueType{tensorType(x.DType, unknownDims(4))}, nil
	}
	if len(x.Shape) != 4 {
		return nil, ops.Invalidf(n, "input must have rank 4, got %v", x.Shape)
	}
	c, err := divDim(n, x.Shape[1], bs*bs)
	if err != nil {
		return nil, err
	}
	s := graph.Shape{x.Shape[0], c, mulDim(x.Shape[2], bs), mulDim(x.Shape[3], bs)}
	return []graph.ValueType{tensorType(x.DType, s)}, nil
}

func spaceToDepthInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	x := inType(in, 0)
	bs, err := BlockSize(n)
	if err != nil {
		return nil, err
	}
	if x.Shape == nil {
		return []graph.ValueType{tensorType(x.DType, unknownDims(4))}, nil
	}
	if len(x.Shape) != 4 {
		return nil, ops.Invalidf(n, "input must have rank 4, got %v", x.Shape)
	}
	h, err := divDim(n, x.Shape[2], bs)
	if err != nil {
		return nil, err
	}
	w, err := divDim(n, x.Shape[3], bs)
	if err != nil {
		return nil, err
	}
	s := graph.Shape{x.Shape[0], mulDim(x.Shape[1], bs*bs), h, w}
	return []graph.ValueType{tensorType(x.DType, s)}, nil
}
