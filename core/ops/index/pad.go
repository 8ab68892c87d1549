package index

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func init() {
	ops.Register(ops.Schema{OpType: "Pad", MinOpset: 1, MinInputs: 1, MaxInputs: 4, Types: ops.AllTypes, Infer: padInfer})
}

func PadMode(n *graph.Node) (string, error) {
	switch m := n.AttrString("mode", "constant"); m {
	case "constant", "reflect", "edge", "wrap":
		return m, nil
	default:
		return "", ops.Invalidf(n, "unknown mode %q", m)
	}
}

// ExpandPads turns pads (for the listed axes, or all axes when axes is nil)
// into begin/end slices over every axis of a rank-r tensor.
func ExpandPads(n *graph.Node, pads, axes []int64, r int) (begin, end []int64, err error) {
	if axes == nil {
		axes = make([]int64, r)
		for i := range axes {
			axes[i] = int64(i)
		}
	}
	if len(pads) != 2*len(axes) {
		return nil, nil, ops.Invalidf(n, "pads has %d values, expected %d (2 per axis)", len(pads), 2*len(axes))
	}
	begin, end = make([]int64, r), make([]int64, r)
	seen := make([]bool, r)
	for i, a := range axes {
		d, err := ops.NormAxis(a, r)
		if err != nil {
			return nil, nil, ops.Invalidf(n, "axes: %v", err)
		}
		if seen[d] {
			return nil, nil, ops.Invalidf(n, "axis %d is listed twice in axes %v", d, axes)
		}
		seen[d] = true
		begin[d], end[d] = pads[i], pads[i+len(axes)]
	}
	return begin, end, nil
}

func padInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	x := inType(in, 0)
	if _, err := PadMode(n); err != nil {
		return nil, err
	}
	if x.Shape == nil {
		return []graph.ValueType{tensorType(x.DType, nil)}, nil
	}
	r := len(x.Shape)
	var pads, axes []int64
	ok := true
	if opset < 11 {
		name := "pads"
		if opset < 2 {
			name = "paddings"
		}
		pads, ok = n.AttrInts(name, nil), n.HasAttr(name)
	} else {
		pads, ok = constInts(in, 1)
		if n.Input(3) != "" {
			var aok bool
			axes, aok = constInts(in, 3)
			ok = ok && aok
		}
	}
	if !ok {
		return []graph.ValueType{tensorType(x.DType, unknownDims(r))}, nil
	}
	begin, end, err := ExpandPads(n, pads, axes, r)
	if err != nil {
		return nil, err
	}
	s := make(graph.Shape, r)
	for d := range r {
		if !x.Shape[d].Static() {
			s[d] = graph.Dim{Value: -1}
			if begin[d] == 0 && end[d] == 0 {
				s[d] = x.Shape[d]
			}
			continue
		}
		v := x.Shape[d].Value + begin[d] + end[d]
		if v < 0 {
			return nil, ops.Invalidf(n, "pads %d, %d crop more than dimension %d", begin[d], end[d], x.Shape[d].Value)
		}
		s[d] = graph.Dim{Value: v}
	}
	return []graph.ValueType{tensorType(x.DType, s)}, nil
}
