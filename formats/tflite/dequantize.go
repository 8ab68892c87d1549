package tflite

import (
	"fmt"
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
)

// quantizable reports whether a tensor of TFLite type tt with
// quantization q is dequantised by ConvertOptions.Dequantize: an integer
// type with affine (not custom) parameters.
func quantizable(tt int8, q *Quant) bool {
	if q == nil || len(q.Scale) == 0 || q.Custom {
		return false
	}
	switch tt {
	case ttInt8, ttUint8, ttInt16, ttInt32:
		return true
	}
	return false
}

// dequantizeTensors implements ConvertOptions.Dequantize before any
// operator is converted. It replaces the converter's subgraph with a copy
// (the caller's Model is not modified) in which every quantized integer
// tensor is float32 without quantization parameters, and puts the real
// values of the constant ones in c.folded, where constant() finds them
// first: real = scale·(q − zero point), per tensor or per channel along
// the quantization's dimension. The int32 bias of an int8 CONV_2D,
// DEPTHWISE_CONV_2D, FULLY_CONNECTED or TRANSPOSE_CONV is dequantised
// with the scale TFLite's kernels give it, input scale × filter scale
// (per output channel when the filter is per channel), whatever its own
// parameters say. It returns how many tensors it dequantised.
func (c *converter) dequantizeTensors() (int, error) {
	src := c.sg
	biasScale, err := c.biasScales()
	if err != nil {
		return 0, err
	}
	sg := *src
	sg.Tensors = append([]Tensor(nil), src.Tensors...)
	n := 0
	for i := range sg.Tensors {
		t := &sg.Tensors[i]
		bs, isBias := biasScale[int32(i)]
		if !quantizable(t.Type, t.Quant) && !isBias {
			continue
		}
		k, err := c.constant(int32(i))
		if err != nil {
			return 0, fmt.Errorf("tflite: dequantize: %w", err)
		}
		if k != nil {
			scale, zp := bs, []int64(nil)
			if !isBias {
				scale = make([]float64, len(t.Quant.Scale))
				for j, s := range t.Quant.Scale {
					scale[j] = float64(s)
				}
				zp = t.Quant.ZeroPoint
			}
			f, err := c.dequantValues(t, k, scale, zp)
			if err != nil {
				return 0, fmt.Errorf("tflite: dequantize: %w", err)
			}
			c.folded[int32(i)] = f
		}
		t.Type, t.Quant = ttFloat32, nil
		n++
	}
	c.sg = &sg
	return n, nil
}

// biasScales returns, for each constant int32 bias of an int8 (or uint8)
// CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED or TRANSPOSE_CONV, the
// scales of its real values: input scale × filter scale, one per output
// channel when the filter is quantized per channel, else one.
func (c *converter) biasScales() (map[int32][]float64, error) {
	out := map[int32][]float64{}
	nt := int32(len(c.sg.Tensors))
	ok := func(i int32) bool { return i >= 0 && i < nt }
	for oi := range c.sg.Operators {
		op := &c.sg.Operators[oi]
		if int(op.Opcode) >= len(c.m.Opcodes) {
			continue
		}
		var x, w, b int32 = -1, -1, -1
		at := func(k int) int32 {
			if k < len(op.Inputs) {
				return op.Inputs[k]
			}
			return -1
		}
		switch c.m.Opcodes[op.Opcode].Builtin {
		case opCONV_2D, opDEPTHWISE_CONV_2D, opFULLY_CONNECTED:
			x, w, b = at(0), at(1), at(2)
		case opTRANSPOSE_CONV:
			x, w, b = at(2), at(1), at(3)
		default:
			continue
		}
		if !ok(x) || !ok(w) || !ok(b) {
			continue
		}
		xt, wt, bt := &c.sg.Tensors[x], &c.sg.Tensors[w], &c.sg.Tensors[b]
		if bt.Type != ttInt32 || !quantizable(xt.Type, xt.Quant) || !quantizable(wt.Type, wt.Quant) || len(xt.Quant.Scale) != 1 {
			continue
		}
		s := make([]float64, len(wt.Quant.Scale))
		for j, ws := range wt.Quant.Scale {
			s[j] = float64(xt.Quant.Scale[0]) * float64(ws)
		}
		if prev, seen := out[b]; seen {
			same := len(prev) == len(s)
			for j := 0; same && j < len(s); j++ {
				same = prev[j] == s[j]
			}
			if !same {
				return nil, fmt.Errorf("tflite: dequantize: bias %q is shared by operators whose input × filter scales differ", bt.Name)
			}
		}
		out[b] = s
	}
	return out, nil
}

// dequantValues returns the float32 real values scale[ch]·(q − zp[ch]) of
// the integer constant k (tensor t), the channel ch running along the
// quantization dimension when there are several scales; missing zero
// points are 0. A bias's scales have one entry per element of its only
// dimension (or one for all).
func (c *converter) dequantValues(t *Tensor, k *graph.Tensor, scale []float64, zp []int64) (*graph.Tensor, error) {
	if _, err := graph.CheckAllocLimit(graph.Float32, k.Shape, c.opts.MaxTensorBytes); err != nil {
		return nil, fmt.Errorf("constant %q as float32: %w", t.Name, err)
	}
	inner, nch := 1, 1
	if len(scale) > 1 {
		dim := 0
		if t.Quant != nil {
			dim = int(t.Quant.Dim)
		}
		if dim < 0 || dim >= len(k.Shape) || k.Shape[dim] != len(scale) {
			return nil, fmt.Errorf("constant %q: %d scales along dim %d of %v", t.Name, len(scale), dim, k.Shape)
		}
		nch = len(scale)
		for _, d := range k.Shape[dim+1:] {
			inner *= d
		}
	}
	for _, s := range scale {
		if math.IsNaN(s) || math.IsInf(s, 0) {
			return nil, fmt.Errorf("constant %q has scale %g", t.Name, s)
		}
	}
	out := make([]float32, k.Len())
	for j := range out {
		ch := (j / inner) % nch
		z := int64(0)
		if ch < len(zp) {
			z = zp[ch]
		}
		out[j] = float32(scale[ch] * float64(k.Int64At(j)-z))
	}
	return graph.FromSlice(k.Shape, out)
}

// identity converts a QUANTIZE or DEQUANTIZE whose input and output are
// both float32 after ConvertOptions.Dequantize: a folded constant when the
// input is one, else an Identity node.
func (c *converter) identity(x, y int32) error {
	k, err := c.constant(x)
	if err != nil {
		return err
	}
	if k != nil {
		c.folded[y] = k
		return nil
	}
	xv, err := c.value(x)
	if err != nil {
		return err
	}
	c.node("Identity", "", []string{xv}, []string{c.names[y]})
	return nil
}

// hybridWeights returns the real values of the constant int8 weights w of
// a float32 CONV_2D, DEPTHWISE_CONV_2D or FULLY_CONNECTED (TFLite's
// dynamic-range "hybrid" quantization): scale·(q − zero point), per
// tensor or per channel along the quantization's dimension. The operator
// then runs in float32 on them. TFLite's hybrid kernels instead quantize
// each input row to int8 at run time and accumulate in integers, so
// results differ from TFLite's by that input rounding (about 1/254 of
// each row's largest magnitude per term), not by the weights.
func (c *converter) hybridWeights(w int32) (*graph.Tensor, error) {
	t := &c.sg.Tensors[w]
	q := t.Quant
	if q == nil || len(q.Scale) == 0 || q.Custom {
		return nil, fmt.Errorf("int8 weights %q of a float operator have no affine quantization parameters", t.Name)
	}
	k, err := c.constant(w)
	if err != nil {
		return nil, err
	}
	if k == nil {
		return nil, fmt.Errorf("int8 weights %q of a float operator are not constant", t.Name)
	}
	scale := make([]float64, len(q.Scale))
	for i, s := range q.Scale {
		scale[i] = float64(s)
	}
	return c.dequantValues(t, k, scale, q.ZeroPoint)
}
