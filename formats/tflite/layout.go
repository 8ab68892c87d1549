package tflite

import (
	"github.com/switchyard-hal/switchyard/core/graph"
)

// nchwPair returns the NCHW forms of a float binary operator's two operands
// when the operator can run on them in NCHW: its result is rank 4, one
// operand came out of an NCHW op (c.produced), and the other is one of
//   - a rank-4 value (its NCHW form: the one it came from, or a Transpose),
//   - a float32 constant, re-laid for NCHW broadcasting: a per-channel
//     constant (every dim but the last 1, as PRELU's [1,1,C] slopes and
//     ADD/MUL's [C] vectors) becomes [C,1,1], a scalar stays, any other
//     shape is padded to rank 4 and transposed.
//
// Element-wise arithmetic does not care about layout, so running it on the
// NCHW values is exact and keeps chains of NCHW ops (convolutions,
// activations, adds) free of Transpose pairs.
func (c *converter) nchwPair(a, b, y int32) (ta, tb string, ok bool, err error) {
	if len(c.shapeOf(y)) != 4 {
		return "", "", false, nil
	}
	av, err := c.value(a)
	if err != nil {
		return "", "", false, err
	}
	bv, err := c.value(b)
	if err != nil {
		return "", "", false, err
	}
	_, pa := c.produced[av]
	_, pb := c.produced[bv]
	if !pa && !pb {
		return "", "", false, nil
	}
	ta, okA, err := c.nchwOperand(a, av)
	if err != nil || !okA {
		return "", "", false, err
	}
	tb, okB, err := c.nchwOperand(b, bv)
	if err != nil || !okB {
		return "", "", false, err
	}
	return ta, tb, true, nil
}

// nchwOperand is one operand's NCHW form for nchwPair.
func (c *converter) nchwOperand(i int32, v string) (string, bool, error) {
	k, err := c.constant(i)
	if err != nil {
		return "", false, err
	}
	if k == nil {
		if len(c.shapeOf(i)) != 4 || c.sg.Tensors[i].Type != ttFloat32 {
			return "", false, nil
		}
		return c.toNCHW(v), true, nil
	}
	if k.DType != graph.Float32 || len(k.Shape) > 4 {
		return "", false, nil
	}
	n := k.Len()
	if n == 1 {
		// a scalar broadcasts the same in either layout
		return v, true, nil
	}
	last := k.Shape[len(k.Shape)-1]
	if last == n {
		// per channel: [C], [1,C], [1,1,C] or [1,1,1,C] -> [C,1,1]
		t, err := graph.FromSlice([]int{n, 1, 1}, k.Data.([]float32))
		if err != nil {
			return "", false, err
		}
		return c.addConst(v+"/nchw", t), true, nil
	}
	shape := make([]int, 4)
	for d := range shape {
		shape[d] = 1
	}
	copy(shape[4-len(k.Shape):], k.Shape)
	full, err := graph.FromSlice(shape, k.Data.([]float32))
	if err != nil {
		return "", false, err
	}
	return c.addConst(v+"/nchw", transposeF32(full, []int{0, 3, 1, 2})), true, nil
}
