package tflite

import (
	"fmt"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// dequantConst returns a constant as float32: float32 constants as they
// are, int8/int32 ones dequantised (per tensor, or per channel along the
// quantization's dimension).
func (c *converter) dequantConst(i int32) (*graph.Tensor, error) {
	k, err := c.constant(i)
	if err != nil || k == nil {
		return nil, err
	}
	if k.DType == graph.Float32 {
		return k, nil
	}
	q := c.sg.Tensors[i].Quant
	if q == nil || len(q.Scale) == 0 || (k.DType != graph.Int8 && k.DType != graph.Int32) {
		return nil, fmt.Errorf("constant %q of %v cannot be dequantised", c.sg.Tensors[i].Name, k.DType)
	}
	inner, dim := 1, 1
	if len(q.Scale) > 1 {
		if int(q.Dim) >= len(k.Shape) || k.Shape[q.Dim] != len(q.Scale) {
			return nil, fmt.Errorf("constant %q: %d scales along dim %d of %v", c.sg.Tensors[i].Name, len(q.Scale), q.Dim, k.Shape)
		}
		dim = len(q.Scale)
		for _, d := range k.Shape[q.Dim+1:] {
			inner *= d
		}
	}
	out := make([]float32, k.Len())
	for j := range out {
		ch := (j / inner) % dim
		z := int64(0)
		if ch < len(q.ZeroPoint) {
			z = q.ZeroPoint[ch]
		}
		out[j] = float32(float64(q.Scale[ch]) * float64(k.Int64At(j)-z))
	}
	return graph.FromSlice(k.Shape, out)
}

// lstm converts UNIDIRECTIONAL_SEQUENCE_LSTM without CIFG, peepholes,
// projection or layer norm to an ONNX LSTM (batch-major layout when the
// model is) computed in float32 on the dequantised weights: an int8 LSTM
// therefore runs as Dequantize → float LSTM → Quantize, within the
// quantisation of its output but not bit-exact with TFLite's integer
// LSTM. The state tensors start at zero on every run (TFLite keeps them
// between invocations of one interpreter).
func (c *converter) lstm(op *Operator, r *optReader) error {
	in := func(k int) int32 {
		if k < len(op.Inputs) {
			return op.Inputs[k]
		}
		return -1
	}
	if len(op.Inputs) < 20 {
		return fmt.Errorf("LSTM has %d inputs, expected 20 or 24", len(op.Inputs))
	}
	act := r.i8(0)
	cellClip, projClip := r.f32(1, 0), r.f32(2, 0)
	timeMajor := r.boolean(3)
	switch {
	case in(1) < 0 || in(5) < 0:
		return fmt.Errorf("CIFG LSTM (no input gate) is not supported")
	case in(9) >= 0 || in(10) >= 0 || in(11) >= 0:
		return fmt.Errorf("peephole LSTM is not supported")
	case in(16) >= 0:
		return fmt.Errorf("LSTM with projection is not supported")
	case in(20) >= 0 || in(21) >= 0 || in(22) >= 0 || in(23) >= 0:
		return fmt.Errorf("layer-norm LSTM is not supported")
	case act != actTanh:
		return fmt.Errorf("LSTM activation %d is not supported (TANH only)", act)
	case projClip != 0:
		return fmt.Errorf("LSTM projection clipping is not supported")
	}
	for _, s := range []int{18, 19} {
		if k, err := c.constant(in(s)); err != nil || k != nil {
			return fmt.Errorf("LSTM state %d must be a zero-initialised variable", s)
		}
	}
	x, y := op.Inputs[0], op.Outputs[0]
	xs, ys := c.shapeOf(x), c.shapeOf(y)
	if len(xs) != 3 || len(ys) != 3 {
		return fmt.Errorf("LSTM input %v and output %v must be 3-D", xs, ys)
	}
	// From a zero state |c_t| ≤ t (each step adds i·g with |i·g| < 1 to
	// f·c with |f| < 1), so a cell clip of at least the sequence length
	// never acts; a smaller one would need clipping ONNX's LSTM lacks.
	seq := xs[1]
	if timeMajor {
		seq = xs[0]
	}
	if cellClip != 0 && float64(cellClip) < float64(seq) {
		return fmt.Errorf("LSTM cell clip %g below the sequence length %d is not supported", cellClip, seq)
	}
	// gate order: TFLite input, forget, cell, output; ONNX i, o, f, c
	order := []int{0, 3, 1, 2}
	stack := func(base int, rows, cols int) (*graph.Tensor, error) {
		out := make([]float32, 0, 4*rows*cols)
		for _, g := range order {
			t, err := c.dequantConst(in(base + g))
			if err != nil {
				return nil, err
			}
			if t == nil || t.Len() != rows*cols {
				return nil, fmt.Errorf("LSTM input %d must be a constant of %d×%d", base+g, rows, cols)
			}
			out = append(out, t.Data.([]float32)...)
		}
		shape := []int{1, 4 * rows, cols}
		if cols == 1 {
			shape = []int{1, 4 * rows}
		}
		return graph.FromSlice(shape, out)
	}
	hidden := ys[2]
	W, err := stack(1, hidden, xs[2])
	if err != nil {
		return err
	}
	R, err := stack(5, hidden, hidden)
	if err != nil {
		return err
	}
	Wb, err := stack(12, hidden, 1)
	if err != nil {
		return err
	}
	B := make([]float32, 8*hidden)
	copy(B, Wb.Data.([]float32))
	xv, err := c.value(x)
	if err != nil {
		return err
	}
	if c.isInt8(x) {
		s, z, err := c.qparams(x)
		if err != nil {
			return err
		}
		f := c.freshName(xv + "/float")
		c.node("Dequantize", QuantDomain, []string{xv, s, z}, []string{f})
		xv = f
	} else if c.sg.Tensors[x].Type != ttFloat32 {
		return fmt.Errorf("LSTM input of TFLite type %d", c.sg.Tensors[x].Type)
	}
	layout := int64(1)
	if timeMajor {
		layout = 0
	}
	Y := c.freshName(c.names[y] + "/onnx")
	c.node("LSTM", "", []string{xv, c.addConst("W", W), c.addConst("R", R), c.addConst("B", graph.MustFromSlice([]int{1, 8 * hidden}, B))},
		[]string{Y}, aInt("hidden_size", int64(hidden)), aInt("layout", layout))
	target := c.names[y]
	if c.isInt8(y) {
		target = c.freshName(c.names[y] + "/float")
	} else if c.sg.Tensors[y].Type != ttFloat32 {
		return fmt.Errorf("LSTM output of TFLite type %d", c.sg.Tensors[y].Type)
	}
	c.node("Reshape", "", []string{Y, c.addConst("shape", graph.MustFromSlice([]int{3}, i64s(ys)))}, []string{target})
	if c.isInt8(y) {
		s, z, err := c.qparams(y)
		if err != nil {
			return err
		}
		c.node("Quantize", QuantDomain, []string{target, s, z}, []string{c.names[y]})
	}
	return nil
}
