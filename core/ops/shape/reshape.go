package shape

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func init() {
	ops.Register(ops.Schema{OpType: "Reshape", MinOpset: 1, MinInputs: 1, MaxInputs: 2, Infer: reshapeInfer})
	ops.Register(ops.Schema{OpType: "Flatten", MinOpset: 1, MinInputs: 1, MaxInputs: 1, Infer: flattenInfer})
	ops.Register(ops.Schema{OpType: "Squeeze", MinOpset: 1, MinInputs: 1, MaxInputs: 2, Infer: squeezeInfer})
	ops.Register(ops.Schema{OpType: "Unsqueeze", MinOpset: 1, MinInputs: 1, MaxInputs: 2, Infer: unsqueezeInfer})
	ops.Register(ops.Schema{OpType: "Identity", MinOpset: 1, MinInputs: 1, MaxInputs: 1, Infer: ops.SameAsInput})
	ops.Register(ops.Schema{OpType: "Dropout", MinOpset: 1, MinInputs: 1, MaxInputs: 3, MinOutputs: 1, MaxOutputs: 2, Types: ops.FloatTypes, Infer: dropoutInfer})
}

// ResolveReshape applies Reshape's 0 / -1 rules to a concrete input shape.
func ResolveReshape(n *graph.Node, inShape []int, target []int64, allowZero bool) ([]int, error) {
	out := make([]int, len(target))
	neg, hasZero := -1, false
	prod := int64(1)
	for i, v := range target {
		switch {
		case v == -1:
			if neg >= 0 {
				return nil, ops.Invalidf(n, "shape %v has more than one -1", target)
			}
			neg = i
			continue
		case v < -1:
			return nil, ops.Invalidf(n, "shape %v has invalid dimension %d", target, v)
		case v == 0 && !allowZero:
			if i >= len(inShape) {
				return nil, ops.Invalidf(n, "shape %v copies dimension %d of a rank-%d input", target, i, len(inShape))
			}
			out[i] = inShape[i]
		default:
			if v == 0 {
				hasZero = true
			}
			if v > int64(graph.MaxTensorBytes) {
				return nil, ops.Invalidf(n, "shape %v has too large dimension %d", target, v)
			}
			out[i] = int(v)
		}
		if d := int64(out[i]); d == 0 {
			prod = 0
		} else if prod > (1<<62)/d {
			return nil, ops.Invalidf(n, "cannot reshape %v to %v", inShape, target)
		} else {
			prod *= d
		}
	}
	total, err := graph.NumElements(inShape)
	if err != nil {
		return nil, ops.Invalidf(n, "%v", err)
	}
	if neg >= 0 {
		if hasZero {
			return nil, ops.Invalidf(n, "shape %v has both 0 and -1 with allowzero=1", target)
		}
		if prod == 0 || int64(total)%prod != 0 {
			return nil, ops.Invalidf(n, "cannot reshape %v to %v", inShape, target)
		}
		out[neg] = int(int64(total) / prod)
	}
	cnt, err := graph.NumElements(out)
	if err != nil || cnt != total {
		return nil, ops.Invalidf(n, "cannot reshape %v (%d elements) to %v", inShape, total, target)
	}
	return out, nil
}

func reshapeInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	x := inType(in, 0)
	dt := x.DType
	var target []int64
	if opset < 5 {
		if !n.HasAttr("shape") {
			return []graph.ValueType{tensorType(dt, nil)}, nil
		}
		target = n.AttrInts("shape", nil)
	} else {
		t, ok := constInts(in, 1)
		if !ok {
			s := inType(in, 1).Shape
			if len(s) == 1 && s[0].Static() {
				return []graph.ValueType{tensorType(dt, unknownDims(int(s[0].Value)))}, nil
			}
			return []graph.ValueType{tensorType(dt, nil)}, nil
		}
		target = t
	}
	allowZero := opset >= 14 && n.AttrInt("allowzero", 0) != 0
	if ints, ok := x.Shape.Ints(); ok {
		s, err := ResolveReshape(n, ints, target, allowZero)
		if err != nil {
			return nil, err
		}
		return []graph.ValueType{tensorType(dt, staticDims(s))}, nil
	}
	out := make(graph.Shape, len(target))
	neg := -1
	for i, v := range target {
		switch {
		case v == -1:
			if neg >= 0 {
				return nil, ops.Invalidf(n, "shape %v has more than one -1", target)
			}
			neg = i
			out[i] = graph.Dim{Value: -1}
		case v < -1:
			return nil, ops.Invalidf(n, "shape %v has invalid dimension %d", target, v)
		case v == 0 && !allowZero:
			if x.Shape != nil {
				if i >= len(x.Shape) {
					return nil, ops.Invalidf(n, "shape %v copies dimension %d of a rank-%d input", target, i, len(x.Shape))
				}
				out[i] = x.Shape[i]
			} else {
				out[i] = graph.Dim{Value: -1}
			}
		default:
			out[i] = graph.Dim{Value: v}
		}
	}
	return []graph.ValueType{tensorType(dt, out)}, nil
}

func FlattenAxis(n *graph.Node, opset int64, rank int) (int, error) {
	axis := n.AttrInt("axis", 1)
	if axis < -int64(rank) || axis > int64(rank) {
		return 0, ops.Invalidf(n, "axis %d out of range for rank %d", axis, rank)
	}
	if axis < 0 {
		axis += int64(rank)
	}
	return int(axis), nil
}

func flattenInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	x := inType(in, 0)
	if x.Shape == nil {
		return []graph.ValueType{tensorType(x.DType, unknownDims(2))}, nil
	}
	axis, err := FlattenAxis(n, opset, len(x.Shape))
	if err != nil {
		return nil, err
	}
	return []graph.ValueType{tensorType(x.DType, graph.Shape{dimProd(x.Shape[:axis]), dimProd(x.Shape[axis:])})}, nil
}

func inferAxesArg(n *graph.Node, opset int64, in []ops.InferInput) (axes []int64, present, known bool) {
	if opset < 13 {
		if !n.HasAttr("axes") {
			return nil, false, true
		}
		return n.AttrInts("axes", nil), true, true
	}
	if n.Input(1) == "" {
		return nil, false, true
	}
	a, ok := constInts(in, 1)
	return a, true, ok
}

// SqueezeMask marks the dims to remove; dims are the input's sizes, with -1
// for unknown ones (only used at inference).
func SqueezeMask(n *graph.Node, opset int64, dims []int64, axes []int64, present bool) ([]bool, error) {
	rm := make([]bool, len(dims))
	if !present || len(axes) == 0 {
		for i, d := range dims {
			if d < 0 {
				return nil, nil // cannot decide
			}
			rm[i] = d == 1
		}
		return rm, nil
	}
	for _, a := range axes {
		ax, err := ops.NormAxis(a, len(dims))
		if err != nil {
			return nil, ops.Invalidf(n, "axes %v: %v", axes, err)
		}
		if rm[ax] {
			return nil, ops.Invalidf(n, "axes %v has a duplicate", axes)
		}
		if dims[ax] >= 0 && dims[ax] != 1 {
			return nil, ops.Invalidf(n, "cannot squeeze axis %d of size %d", a, dims[ax])
		}
		rm[ax] = true
	}
	return rm, nil
}

func squeezeInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	x := inType(in, 0)
	axes, present, known := inferAxesArg(n, opset, in)
	if x.Shape == nil || !known {
		return []graph.ValueType{tensorType(x.DType, nil)}, nil
	}
	dims := make([]int64, len(x.Shape))
	for i, d := range x.Shape {
		dims[i] = d.Value
		if !d.Static() {
			dims[i] = -1
		}
	}
	rm, err := SqueezeMask(n, opset, dims, axes, present)
	if err != nil || rm == nil {
		return []graph.ValueType{tensorType(x.DType, nil)}, err
	}
	s := graph.Shape{}
	for i, d := range x.Shape {
		if !rm[i] {
			s = append(s, d)
		}
	}
	return []graph.ValueType{tensorType(x.DType, s)}, nil
}

// UnsqueezeMask marks the inserted dims of the output (rank r+len(axes)).
func UnsqueezeMask(n *graph.Node, opset int64, rank int, axes []int64) ([]bool, error) {
	outRank := rank + len(axes)
	ins := make([]bool, outRank)
	for _, a := range axes {
		ax, err := ops.NormAxis(a, outRank)
		if err != nil {
			return nil, ops.Invalidf(n, "axes %v: %v", axes, err)
		}
		if ins[ax] {
			return nil, ops.Invalidf(n, "axes %v has a duplicate", axes)
		}
		ins[ax] = true
	}
	return ins, nil
}

func unsqueezeInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	x := inType(in, 0)
	axes, present, known := inferAxesArg(n, opset, in)
	if !present && known {
		return nil, ops.Invalidf(n, "missing axes")
	}
	if x.Shape == nil || !known {
		return []graph.ValueType{tensorType(x.DType, nil)}, nil
	}
	ins, err := UnsqueezeMask(n, opset, len(x.Shape), axes)
	if err != nil {
		return nil, err
	}
	s := make(graph.Shape, len(ins))
	j := 0
	for i := range s {
		if ins[i] {
			s[i] = graph.Dim{Value: 1}
		} else {
			s[i] = x.Shape[j]
			j++
		}
	}
	return []graph.ValueType{tensorType(x.DType, s)}, nil
}

func dropoutInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	x := inType(in, 0)
	out := []graph.ValueType{tensorType(x.DType, x.Shape)}
	if len(n.Outputs) > 1 {
		mdt := graph.Bool
		if opset < 10 {
			mdt = x.DType
		}
		out = append(out, tensorType(mdt, x.Shape))
	}
	return out, nil
}
