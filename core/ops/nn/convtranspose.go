package nn

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

// ConvTransposeGeom computes the output sizes and pads of a transposed
// convolution over in (spatial sizes). Without output_shape the output is
// stride·(in-1) + output_padding + extent - pads (auto_pad SAME_* gives
// In·stride). With an output shape, the total padding
// stride·(in-1) + output_padding + extent - out (0 when negative: the
// excess is left at the end) is split between begin and end as the ONNX
// spec says: the odd one at the end under SAME_UPPER, else at the begin.
func ConvTransposeGeom(n *graph.Node, w windowAttrs, in []int) (Geom3, error) {
	nd := len(in)
	var g Geom3
	if nd < 1 || nd > 3 {
		return g, errUnsupportedRank(nd)
	}
	outPad, err := readIntsAttr(n, "output_padding", nd, 0)
	if err != nil {
		return g, err
	}
	var outShape []int
	if os := n.AttrInts("output_shape", nil); os != nil {
		if len(os) == nd+2 {
			os = os[2:]
		}
		if len(os) != nd {
			return g, ErrInvalid("output_shape %v has %d values, expected %d", os, len(os), nd)
		}
		for _, v := range os {
			if v < 0 || v > 1<<31 {
				return g, ErrInvalid("output_shape %v out of range", os)
			}
			outShape = append(outShape, int(v))
		}
	}
	off := 3 - nd
	for i := 0; i < 3; i++ {
		g.In[i], g.Out[i], g.K[i], g.S[i], g.D[i] = 1, 1, 1, 1, 1
	}
	for i := 0; i < nd; i++ {
		I, k, s, d := in[i], w.Kernel[i], w.strides[i], w.dilations[i]
		ek := (k-1)*d + 1
		full := s*(I-1) + outPad[i] + ek
		var o, pb, pe int
		switch {
		case outShape != nil || w.autoPad == "SAME_UPPER" || w.autoPad == "SAME_LOWER":
			if outShape != nil {
				o = outShape[i]
			} else {
				o = I * s
			}
			total := max(0, full-o)
			if w.autoPad == "SAME_UPPER" {
				pb, pe = total/2, total-total/2
			} else {
				pb, pe = total-total/2, total/2
			}
		case w.autoPad == "VALID":
			o = full
		default:
			pb, pe = w.pads[i], w.pads[nd+i]
			o = full - pb - pe
		}
		if o < 0 {
			return g, ErrInvalid("spatial dim %d: output size %d is negative", i, o)
		}
		j := off + i
		g.In[j], g.Out[j], g.K[j], g.S[j], g.D[j], g.Pb[j], g.Pe[j] = I, o, k, s, d, pb, pe
	}
	return g, nil
}

func readIntsAttr(n *graph.Node, name string, want, def int) ([]int, error) {
	out := make([]int, want)
	v := n.AttrInts(name, nil)
	if v == nil {
		for i := range out {
			out[i] = def
		}
		return out, nil
	}
	if len(v) != want {
		return nil, ErrInvalid("%s has %d values, expected %d", name, len(v), want)
	}
	for i, x := range v {
		if x < 0 || x > 1<<31 {
			return nil, ErrInvalid("%s value %d out of range", name, x)
		}
		out[i] = int(x)
	}
	return out, nil
}

func convTransposeInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	if len(in) < 2 {
		return nil, nil
	}
	dt := in[0].Type.DType
	xs, ws := in[0].Type.Shape, in[1].Type.Shape
	if xs == nil {
		return []graph.ValueType{{Kind: "tensor", DType: dt}}, nil
	}
	if len(xs) < 3 {
		return nil, ops.Invalidf(n, "X must have rank >= 3, got %v", xs)
	}
	nd := len(xs) - 2
	out := make(graph.Shape, len(xs))
	out[0] = xs[0]
	for i := 1; i < len(out); i++ {
		out[i] = graph.Dim{Value: -1}
	}
	if ws == nil {
		return []graph.ValueType{{Kind: "tensor", DType: dt, Shape: out}}, nil
	}
	if len(ws) != len(xs) {
		return nil, ops.Invalidf(n, "X %v and W %v ranks differ", xs, ws)
	}
	group := n.AttrInt("group", 1)
	if ws[1].Static() && group >= 1 {
		out[1] = graph.Dim{Value: ws[1].Value * group}
	}
	wk, okW := staticDims(ws[2:])
	in2, okX := staticDims(xs[2:])
	if !okW || !okX || nd > 3 {
		return []graph.ValueType{{Kind: "tensor", DType: dt, Shape: out}}, nil
	}
	attrs, err := ReadWindowAttrs(n, nd, wk)
	if err != nil {
		return nil, ops.Errorf(n, "%w", err)
	}
	g, err := ConvTransposeGeom(n, attrs, in2)
	if err != nil {
		return nil, ops.Errorf(n, "%w", err)
	}
	for i := 0; i < nd; i++ {
		out[2+i] = graph.Dim{Value: int64(g.Out[3-nd+i])}
	}
	return []graph.ValueType{{Kind: "tensor", DType: dt, Shape: out}}, nil
}
