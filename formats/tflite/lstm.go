package tflite

import (
	"fmt"
	"math"

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

// integerLSTM converts a fully integer UNIDIRECTIONAL_SEQUENCE_LSTM (int8
// input, weights and output state, int16 cell state: TFLite's 8x8→16
// kernel) to the switchyard.quant LSTM, which computes it exactly as
// TFLite does. The gate weights and biases are stacked in TFLite's gate
// order (input, forget, cell, output); the states start at TFLite's
// reset values: the output state at its zero point, the cell state at 0.
func (c *converter) integerLSTM(op *Operator, in func(int) int32, cellClip float32, timeMajor bool) error {
	x, y := op.Inputs[0], op.Outputs[0]
	xs := c.shapeOf(x)
	if len(op.Intermediates) != 5 {
		return fmt.Errorf("integer LSTM has %d intermediates, expected 5", len(op.Intermediates))
	}
	hidden := c.sg.Tensors[op.Intermediates[4]].Quant
	if hidden == nil || len(hidden.Scale) != 1 || len(hidden.ZeroPoint) != 1 {
		return fmt.Errorf("integer LSTM: the effective hidden intermediate has no per-tensor quantization")
	}
	cq := c.sg.Tensors[in(19)].Quant
	if cq == nil || len(cq.Scale) != 1 || !(cq.Scale[0] > 0) {
		return fmt.Errorf("integer LSTM: the cell state has no per-tensor scale")
	}
	// TFLite's CheckedLog2: the cell scale must be a power of two
	l2 := math.Log(float64(cq.Scale[0])) / math.Ln2
	cellScale := math.Round(l2)
	if math.Abs(l2-cellScale) >= 1e-3 || cellScale < -15 || cellScale > -9 {
		return fmt.Errorf("integer LSTM: cell state scale %g is not 2^k with −15 ≤ k ≤ −9", cq.Scale[0])
	}
	batch, n := xs[0], c.shapeOf(in(4))
	if timeMajor {
		batch = xs[1]
	}
	if len(n) != 2 {
		return fmt.Errorf("integer LSTM: input-to-output weights of shape %v", n)
	}
	N, I := n[0], xs[2]
	stack := func(base int, cols int, dt graph.DType) ([]int64, []float32, error) {
		var vals []int64
		var scales []float32
		for g := 0; g < 4; g++ {
			k, err := c.constant(in(base + g))
			if err != nil {
				return nil, nil, err
			}
			if k == nil || k.DType != dt || k.Len() != N*cols {
				return nil, nil, fmt.Errorf("integer LSTM input %d must be a %v constant of %d×%d", base+g, dt, N, cols)
			}
			q := c.sg.Tensors[in(base+g)].Quant
			if q == nil || len(q.Scale) != 1 {
				return nil, nil, fmt.Errorf("integer LSTM input %d needs one per-tensor scale", base+g)
			}
			if len(q.ZeroPoint) > 0 && q.ZeroPoint[0] != 0 {
				return nil, nil, fmt.Errorf("integer LSTM input %d has zero point %d (symmetric weights only)", base+g, q.ZeroPoint[0])
			}
			scales = append(scales, q.Scale[0])
			for j := 0; j < k.Len(); j++ {
				vals = append(vals, k.Int64At(j))
			}
		}
		return vals, scales, nil
	}
	toI8 := func(v []int64) []int8 {
		out := make([]int8, len(v))
		for i, x := range v {
			out[i] = int8(x)
		}
		return out
	}
	wv, wsc, err := stack(1, I, graph.Int8)
	if err != nil {
		return err
	}
	rv, rsc, err := stack(5, N, graph.Int8)
	if err != nil {
		return err
	}
	var bv []int32
	for g := 0; g < 4; g++ {
		k, err := c.constant(in(12 + g))
		if err != nil {
			return err
		}
		if k == nil || k.DType != graph.Int32 || k.Len() != N {
			return fmt.Errorf("integer LSTM bias %d must be an int32 constant of %d", 12+g, N)
		}
		bv = append(bv, k.Data.([]int32)...)
	}
	xsn, xzn, err := c.qparams(x)
	if err != nil {
		return err
	}
	hsn, hzn, err := c.qparams(in(18))
	if err != nil {
		return err
	}
	xv, err := c.value(x)
	if err != nil {
		return err
	}
	// TFLite resets an int8 variable to its zero point (real 0), others
	// to raw zeros
	h0 := make([]int8, batch*N)
	if q := c.sg.Tensors[in(18)].Quant; q != nil && len(q.ZeroPoint) == 1 {
		for i := range h0 {
			h0[i] = int8(q.ZeroPoint[0])
		}
	}
	tm := int64(0)
	if timeMajor {
		tm = 1
	}
	c.node("LSTM", QuantDomain, []string{xv, xsn, xzn,
		c.addConst("W", graph.MustFromSlice([]int{4, N, I}, toI8(wv))),
		c.addConst("R", graph.MustFromSlice([]int{4, N, N}, toI8(rv))),
		c.addConst("weight_scales", graph.MustFromSlice([]int{8}, append(wsc, rsc...))),
		c.addConst("B", graph.MustFromSlice([]int{4, N}, bv)),
		c.addConst("h0", graph.MustFromSlice([]int{batch, N}, h0)),
		hsn, hzn,
		c.addConst("c0", graph.MustFromSlice([]int{batch, N}, make([]int16, batch*N))),
	}, []string{c.names[y]},
		aInt("cell_scale", int64(cellScale)), aFloat("hidden_scale", hidden.Scale[0]),
		aInt("hidden_zero_point", hidden.ZeroPoint[0]), aFloat("cell_clip", cellClip), aInt("time_major", tm))
	return nil
}

// lstm converts UNIDIRECTIONAL_SEQUENCE_LSTM without CIFG, peepholes,
// projection or layer norm: a fully integer one (int16 cell state) to the
// exact switchyard.quant LSTM (integerLSTM), any other to an ONNX LSTM
// (batch-major layout when the model is) computed in float32 on the
// dequantised weights, between Dequantize and Quantize for int8 inputs
// and outputs. The state tensors start at zero on every run (TFLite keeps them
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
	if c.isInt8(x) && c.isInt8(in(1)) && c.sg.Tensors[in(19)].Type == ttInt16 {
		return c.integerLSTM(op, in, cellClip, timeMajor)
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
