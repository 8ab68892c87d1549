package misc

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func init() {
	ops.Register(ops.Schema{OpType: "DFT", MinOpset: 17, MinInputs: 1, MaxInputs: 3, Types: ops.FloatTypes, Infer: dftInfer})
	ops.Register(ops.Schema{OpType: "STFT", MinOpset: 17, MinInputs: 2, MaxInputs: 4, Types: ops.FloatTypes, Infer: stftInfer})
}

type DftParams struct {
	Axis      int
	N         int // transform length
	Inverse   bool
	Onesided  bool
	OutLen    int // output length along axis
	OutComplx int // output last dim (2, or 1 for the real inverse)
}

// dftAxis reads the axis (attribute before opset 20, input 2 after) in
// [-r, r-2]; returns ok=false when it is a non-constant input at load time.
func DftAxisValue(n *graph.Node, opset int64, axisT *graph.Tensor, haveInput bool) (int64, bool, error) {
	if opset < 20 {
		return n.AttrInt("axis", 1), true, nil
	}
	if !haveInput {
		return -2, true, nil
	}
	if axisT == nil {
		return 0, false, nil
	}
	if !axisT.DType.IsInteger() || axisT.Len() != 1 || axisT.Rank() > 1 {
		return 0, false, ops.Invalidf(n, "axis must be an integer scalar, got %v", axisT)
	}
	return axisT.Int64At(0), true, nil
}

func NormDFTAxis(n *graph.Node, a int64, r int) (int, error) {
	if a < 0 {
		a += int64(r)
	}
	if a < 0 || a > int64(r)-2 {
		return 0, ops.Invalidf(n, "axis %d out of range for rank %d (the last dimension holds real/imaginary parts)", a, r)
	}
	return int(a), nil
}

// DftShape derives the transform length and output size along the axis.
func DftShape(n *graph.Node, p *DftParams, dimLen int, lenGiven bool, length int64) error {
	if lenGiven {
		if length <= 0 || length > math.MaxInt32 {
			return ops.Invalidf(n, "dft_length must be positive, got %d", length)
		}
		p.N = int(length)
	} else if p.Inverse && p.Onesided {
		p.N = 2 * (dimLen - 1)
	} else {
		p.N = dimLen
	}
	p.OutLen, p.OutComplx = p.N, 2
	switch {
	case p.Inverse && p.Onesided:
		p.OutComplx = 1
	case p.Onesided:
		p.OutLen = p.N/2 + 1
	}
	return nil
}

func dftInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	t := ops.InputType(in, 0)
	if t.Shape == nil {
		return []graph.ValueType{ops.TensorType(t.DType, nil)}, nil
	}
	r := len(t.Shape)
	if r < 2 {
		return nil, ops.Invalidf(n, "input must have rank >= 2, got %v", t.Shape)
	}
	out := append(graph.Shape{}, t.Shape...)
	p := DftParams{Inverse: n.AttrInt("inverse", 0) != 0, Onesided: n.AttrInt("onesided", 0) != 0}
	a, ok, err := DftAxisValue(n, opset, inConst(in, 2), len(n.Inputs) > 2 && n.Inputs[2] != "")
	if err != nil {
		return nil, err
	}
	last := graph.Dim{Value: 2}
	if p.Inverse && p.Onesided {
		last = graph.Dim{Value: 1}
	}
	out[r-1] = last
	if !ok {
		for i := 0; i < r-1; i++ {
			out[i] = graph.Dim{Value: -1}
		}
		return []graph.ValueType{ops.TensorType(t.DType, out)}, nil
	}
	axis, err := NormDFTAxis(n, a, r)
	if err != nil {
		return nil, err
	}
	lenGiven := len(n.Inputs) > 1 && n.Inputs[1] != ""
	var length int64
	if lenGiven {
		c := inConst(in, 1)
		if c == nil || c.Len() != 1 {
			out[axis] = graph.Dim{Value: -1}
			return []graph.ValueType{ops.TensorType(t.DType, out)}, nil
		}
		length = c.Int64At(0)
	}
	d := t.Shape[axis]
	if !lenGiven && !d.Static() {
		out[axis] = graph.Dim{Value: -1}
		return []graph.ValueType{ops.TensorType(t.DType, out)}, nil
	}
	if err := DftShape(n, &p, int(d.Value), lenGiven, length); err != nil {
		return nil, err
	}
	out[axis] = graph.Dim{Value: int64(p.OutLen)}
	return []graph.ValueType{ops.TensorType(t.DType, out)}, nil
}

func stftInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	t := ops.InputType(in, 0)
	out := dims(-1, -1, -1, 2)
	if t.Shape != nil {
		if len(t.Shape) != 3 {
			return nil, ops.Invalidf(n, "signal must be [batch, length, 1|2], got %v", t.Shape)
		}
		out[0] = t.Shape[0]
	}
	return []graph.ValueType{ops.TensorType(t.DType, out)}, nil
}
