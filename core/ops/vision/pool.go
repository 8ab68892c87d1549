package vision

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

// lpPoolPlan is a validated LpPool node for input spatial dims.
type lpPoolPlan struct {
	W   window
	Out []int
	P   float64
}

func PlanLpPool(n *graph.Node, opset int64, in []int) (*lpPoolPlan, error) {
	nd := len(in)
	ks := n.AttrInts("kernel_shape", nil)
	if ks == nil {
		return nil, ErrInvalid("kernel_shape is required")
	}
	kernel, err := ReadInts(n, "kernel_shape", nd, 1, 1)
	if err != nil {
		return nil, err
	}
	w, err := ReadWindow(n, kernel)
	if err != nil {
		return nil, err
	}
	ceil := false
	if opset >= 18 {
		ceil = n.AttrInt("ceil_mode", 0) != 0
	} else {
		for i := range w.Dilations {
			w.Dilations[i] = 1
		}
	}
	out, err := w.OutSizes(in, n.AttrString("auto_pad", "NOTSET"), ceil)
	if err != nil {
		return nil, err
	}
	p := float64(n.AttrFloat("p", 2))
	if !(p > 0) || math.IsInf(p, 0) {
		return nil, ErrInvalid("p must be positive and finite, got %v", p)
	}
	return &lpPoolPlan{W: w, Out: out, P: p}, nil
}

func lpPoolInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	xs := in[0].Type.Shape
	vt := graph.ValueType{Kind: "tensor", DType: in[0].Type.DType}
	if xs == nil {
		return []graph.ValueType{vt}, nil
	}
	if len(xs) < 3 {
		return nil, ops.Invalidf(n, "input must have rank >= 3, got %v", xs)
	}
	vt.Shape = append(graph.Shape{xs[0], xs[1]}, unknownDims(len(xs)-2)...)
	if sp, ok := staticInts(xs[2:]); ok {
		p, err := PlanLpPool(n, opset, sp)
		if err != nil {
			return nil, ops.Errorf(n, "%w", err)
		}
		for i, o := range p.Out {
			vt.Shape[2+i] = graph.Dim{Value: int64(o)}
		}
	}
	return []graph.ValueType{vt}, nil
}

// UnpoolShape is MaxUnpool's inferred output shape for input shape xs
// (noPads ignores the pads attribute, as when output_shape is given).
func UnpoolShape(n *graph.Node, xs []int, noPads bool) ([]int, error) {
	nd := len(xs) - 2
	if nd < 1 {
		return nil, ErrInvalid("X must have rank >= 3, got shape %v", xs)
	}
	if n.AttrInts("kernel_shape", nil) == nil {
		return nil, ErrInvalid("kernel_shape is required")
	}
	kernel, err := ReadInts(n, "kernel_shape", nd, 1, 1)
	if err != nil {
		return nil, err
	}
	w, err := ReadWindow(n, kernel)
	if err != nil {
		return nil, err
	}
	if noPads {
		clear(w.Pads)
	}
	out := []int{xs[0], xs[1]}
	for i := 0; i < nd; i++ {
		d := (xs[2+i]-1)*w.Strides[i] + kernel[i] - w.Pads[i] - w.Pads[nd+i]
		if d < 0 {
			return nil, ErrInvalid("pads %v leave a negative output size on spatial dim %d", w.Pads, i)
		}
		out = append(out, d)
	}
	return out, nil
}

func maxUnpoolInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	vt := graph.ValueType{Kind: "tensor", DType: in[0].Type.DType}
	if n.Input(2) != "" {
		if c := in[2].Const; c != nil {
			vt.Shape = graph.Shape{}
			for _, v := range c.Int64s() {
				vt.Shape = append(vt.Shape, graph.Dim{Value: v})
			}
		} else if s := in[2].Type.Shape; len(s) == 1 && s[0].Static() && s[0].Value <= 64 {
			vt.Shape = unknownDims(int(s[0].Value))
		}
		return []graph.ValueType{vt}, nil
	}
	xs := in[0].Type.Shape
	if xs == nil {
		return []graph.ValueType{vt}, nil
	}
	if len(xs) < 3 {
		return nil, ops.Invalidf(n, "X must have rank >= 3, got %v", xs)
	}
	vt.Shape = append(graph.Shape{xs[0], xs[1]}, unknownDims(len(xs)-2)...)
	if sp, ok := staticInts(xs); ok {
		o, err := UnpoolShape(n, sp, false)
		if err != nil {
			return nil, ops.Errorf(n, "%w", err)
		}
		for i := 2; i < len(o); i++ {
			vt.Shape[i] = graph.Dim{Value: int64(o[i])}
		}
	}
	return []graph.ValueType{vt}, nil
}
