package resize

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func inferAt(in []ops.InferInput, i int) (ops.InferInput, bool) {
	if i < len(in) {
		return in[i], true
	}
	return ops.InferInput{}, false
}

func resizeInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	a, err := ResizeAttrs(n, opset)
	if err != nil {
		return nil, err
	}
	var scales, sizes ops.InferInput
	var hasScales, hasSizes bool
	if opset < 11 {
		scales, hasScales = inferAt(in, 1)
	} else {
		scales, hasScales = inferAt(in, 2)
		sizes, hasSizes = inferAt(in, 3)
		hasScales = hasScales && n.Input(2) != ""
		hasSizes = hasSizes && n.Input(3) != ""
	}
	return inferShape(n, &a, in, scales, hasScales, sizes, hasSizes)
}

func upsampleInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	a, err := UpsampleAttrs(n)
	if err != nil {
		return nil, err
	}
	x, _ := inferAt(in, 0)
	scales, has := inferAt(in, 1)
	if !has || n.Input(1) == "" {
		has = false
		if x.Type.Shape != nil {
			if t, err := UpsampleScales(n, opset, len(x.Type.Shape), nil); err == nil {
				scales, has = ops.InferInput{Const: t}, true
			}
		}
	}
	return inferShape(n, &a, in, scales, has, ops.InferInput{}, false)
}

// inferShape derives the output shape from constant scales or sizes where
// it can; otherwise the resized axes become unknown.
func inferShape(n *graph.Node, a *Attrs, in []ops.InferInput, scales ops.InferInput, hasScales bool, sizes ops.InferInput, hasSizes bool) ([]graph.ValueType, error) {
	x, _ := inferAt(in, 0)
	vt := graph.ValueType{Kind: "tensor", DType: x.Type.DType}
	shape := x.Type.Shape
	if shape == nil {
		return []graph.ValueType{vt}, nil
	}
	rank := len(shape)
	axes, err := normAxes(n, a.axes, rank)
	if err != nil {
		return nil, err
	}
	out := append(graph.Shape{}, shape...)
	unknownAxes := func() {
		for _, ax := range axes {
			out[ax] = graph.Dim{Value: -1}
		}
	}
	switch {
	case hasSizes && sizes.Const != nil && Present(sizes.Const):
		sz := sizes.Const.Int64s()
		if len(sz) != len(axes) {
			return nil, ops.Invalidf(n, "sizes has %d elements, expected %d", len(sz), len(axes))
		}
		if a.policy == "stretch" {
			for i, ax := range axes {
				if sz[i] < 0 {
					return nil, ops.Invalidf(n, "sizes[%d] = %d is negative", i, sz[i])
				}
				out[ax] = graph.Dim{Value: sz[i]}
			}
			break
		}
		dims, ok := shape.Ints()
		if !ok {
			unknownAxes()
			break
		}
		p, err := MakePlan(n, *a, dims, nil, nil, sizes.Const)
		if err != nil {
			return nil, err
		}
		for _, ax := range axes {
			out[ax] = graph.Dim{Value: int64(p.Out[ax])}
		}
	case hasScales && scales.Const != nil && Present(scales.Const):
		sc := scales.Const.Float64s()
		if len(sc) != len(axes) {
			return nil, ops.Invalidf(n, "scales has %d elements, expected %d", len(sc), len(axes))
		}
		for i, ax := range axes {
			s := sc[i]
			if !(s > 0) || math.IsInf(s, 0) {
				return nil, ops.Invalidf(n, "scales[%d] = %g must be positive and finite", i, s)
			}
			switch d := shape[ax]; {
			case s == 1:
			case d.Static():
				out[ax] = graph.Dim{Value: int64(math.Floor(float64(d.Value) * s))}
			default:
				out[ax] = graph.Dim{Value: -1}
			}
		}
	default:
		unknownAxes()
	}
	vt.Shape = out
	return []graph.ValueType{vt}, nil
}
