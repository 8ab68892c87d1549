package misc

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func init() {
	ops.Register(ops.Schema{OpType: "CumProd", MinOpset: 26, MinInputs: 2, MaxInputs: 2, Types: ops.NumericTypes, Infer: ops.SameAsInput})
	ops.Register(ops.Schema{OpType: "EyeLike", MinOpset: 9, MinInputs: 1, MaxInputs: 1, Types: append(append([]graph.DType{}, ops.NumericTypes...), graph.Bool), Infer: eyeLikeInfer})
	ops.Register(ops.Schema{OpType: "Compress", MinOpset: 9, MinInputs: 2, MaxInputs: 2, Infer: compressInfer})
	ops.Register(ops.Schema{OpType: "CenterCropPad", MinOpset: 18, MinInputs: 2, MaxInputs: 2, Infer: centerCropPadInfer})
	ops.Register(ops.Schema{OpType: "Det", MinOpset: 11, MinInputs: 1, MaxInputs: 1, Types: ops.FloatTypes, Infer: detInfer})
}

func EyeLikeDType(n *graph.Node, in graph.DType) graph.DType {
	if n.HasAttr("dtype") {
		return graph.DType(n.AttrInt("dtype", int64(in)))
	}
	return in
}

func eyeLikeInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	t := ops.InputType(in, 0)
	dt := EyeLikeDType(n, t.DType)
	if t.Shape != nil && len(t.Shape) != 2 {
		return nil, ops.Invalidf(n, "input must be 2-D, got %v", t.Shape)
	}
	return []graph.ValueType{ops.TensorType(dt, t.Shape)}, nil
}

func compressInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	t := ops.InputType(in, 0)
	if !n.HasAttr("axis") {
		return []graph.ValueType{ops.TensorType(t.DType, dims(-1))}, nil
	}
	if t.Shape == nil {
		return []graph.ValueType{ops.TensorType(t.DType, nil)}, nil
	}
	axis, err := ops.NormAxis(n.AttrInt("axis", 0), len(t.Shape))
	if err != nil {
		return nil, ops.Invalidf(n, "%v", err)
	}
	s := append(graph.Shape{}, t.Shape...)
	s[axis] = graph.Dim{Value: -1}
	return []graph.ValueType{ops.TensorType(t.DType, s)}, nil
}

func CropAxes(n *graph.Node, rank, nshape int) ([]int, error) {
	ax := n.AttrInts("axes", nil)
	if ax == nil {
		if nshape != rank {
			return nil, ops.Invalidf(n, "shape has %d entries for a rank-%d input", nshape, rank)
		}
		out := make([]int, rank)
		for i := range out {
			out[i] = i
		}
		return out, nil
	}
	if len(ax) != nshape {
		return nil, ops.Invalidf(n, "shape has %d entries for %d axes", nshape, len(ax))
	}
	out := make([]int, len(ax))
	seen := map[int]bool{}
	for i, a := range ax {
		v, err := ops.NormAxis(a, rank)
		if err != nil {
			return nil, ops.Invalidf(n, "%v", err)
		}
		if seen[v] {
			return nil, ops.Invalidf(n, "axis %d repeated", a)
		}
		seen[v] = true
		out[i] = v
	}
	return out, nil
}

func centerCropPadInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	t := ops.InputType(in, 0)
	sc := inConst(in, 1)
	if t.Shape == nil {
		return []graph.ValueType{ops.TensorType(t.DType, nil)}, nil
	}
	s := make(graph.Shape, len(t.Shape))
	copy(s, t.Shape)
	if sc == nil {
		ax := n.AttrInts("axes", nil)
		if ax == nil {
			return []graph.ValueType{ops.TensorType(t.DType, dims(staticDimsUnknown(len(s))...))}, nil
		}
		for _, a := range ax {
			if v, err := ops.NormAxis(a, len(s)); err == nil {
				s[v] = graph.Dim{Value: -1}
			}
		}
		return []graph.ValueType{ops.TensorType(t.DType, s)}, nil
	}
	vals := sc.Int64s()
	axes, err := CropAxes(n, len(s), len(vals))
	if err != nil {
		return nil, err
	}
	for i, a := range axes {
		if vals[i] < 0 {
			return nil, ops.Invalidf(n, "negative target size %d", vals[i])
		}
		s[a] = graph.Dim{Value: vals[i]}
	}
	return []graph.ValueType{ops.TensorType(t.DType, s)}, nil
}

func staticDimsUnknown(r int) []int64 {
	out := make([]int64, r)
	for i := range out {
		out[i] = -1
	}
	return out
}

func detInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	t := ops.InputType(in, 0)
	if t.Shape == nil {
		return []graph.ValueType{ops.TensorType(t.DType, nil)}, nil
	}
	r := len(t.Shape)
	if r < 2 {
		return nil, ops.Invalidf(n, "input must have rank >= 2, got %v", t.Shape)
	}
	a, b := t.Shape[r-2], t.Shape[r-1]
	if a.Static() && b.Static() && a.Value != b.Value {
		return nil, ops.Invalidf(n, "matrices must be square, got %v", t.Shape)
	}
	return []graph.ValueType{ops.TensorType(t.DType, append(graph.Shape{}, t.Shape[:r-2]...))}, nil
}
