// Package quant holds the schemas of Switchyard's int8 operators (domain
// "switchyard.quant", opset 1): the quantized representation every
// importer lands on (TFLite int8 today).
//
// A quantized tensor travels as a triple of node inputs: the int8 value,
// its scale (float32; a scalar per tensor, or 1-D per channel along the
// op's channel axis) and its zero point (int8, the scale's shape), so
// real = scale × (q − zero_point). Int32 biases carry no parameters of
// their own (their scale is input scale × filter scale). Spatial ops are
// NHWC, filters OHWI (Conv2D) or 1HWC (DepthwiseConv2D), as TFLite stores
// them. "activation" (NONE, RELU, RELU6, RELU_N1_TO_1) is a fused clamp
// in the output's quantized domain. The reference kernels
// (core/kernels/quant) are bit-exact with TFLite's int8 reference kernels.
//
// Ops and inputs:
//
//	Conv2D, DepthwiseConv2D  x xs xz w ws wz ys yz [bias]  strides dilations pads(t,l,b,r) activation
//	FullyConnected           x xs xz w ws wz ys yz [bias]  activation output_shape
//	Add, Sub, Mul            a as az b bs bz ys yz          activation (numpy broadcasting)
//	AveragePool2D, MaxPool2D x xs xz ys yz                  kernel_shape strides pads activation
//	Mean                     x xs xz ys yz                  axes keepdims
//	Softmax                  x xs xz ys yz                  beta (last axis)
//	Logistic, Tanh           x xs xz ys yz
//	Quantize                 x(float32) ys yz
//	Dequantize               x xs xz -> float32
//	LSTM                     x xs xz W R ws B h0 hs hz c0    cell_scale hidden_scale hidden_zero_point cell_clip time_major
//
// Conv2D and FullyConnected take "rounding": "away" (the default, TFLite's
// reference kernels: the final rounding right shift of requantisation
// rounds ties away from zero) or "half_up" (ties toward +∞, what TFLite's
// optimized builds compute in ruy's GEMM).
//
// LSTM is TFLite's integer (8x8→16) UNIDIRECTIONAL_SEQUENCE_LSTM without
// CIFG, peepholes, projection or layer norm: x int8 [B,T,I] ([T,B,I] with
// time_major=1); W int8 [4,N,I] and R int8 [4,N,N] the input and
// recurrent weights of the input, forget, cell and output gates, symmetric
// (zero point 0) with the per-tensor scales ws float32 [8] (W's four, then
// R's); B int32 [4,N] the gate biases; h0 int8 [B,N] the initial output
// state with its quantization hs, hz, which is also y's; c0 int16 [B,N]
// the initial cell state, of scale 2^cell_scale (−15 ≤ cell_scale ≤ −9).
// Gates are Q3.12, the hidden product is requantised with hidden_scale
// and hidden_zero_point (the op's "effective hidden" intermediate), and
// cell_clip > 0 clamps the cell state. y int8 [B,T,N] ([T,B,N]).
package quant

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

// Domain is the operator domain of the int8 ops.
const Domain = "switchyard.quant"

var int8Only = []graph.DType{graph.Int8}

func tensor(dt graph.DType, s graph.Shape) graph.ValueType {
	return graph.ValueType{Kind: "tensor", DType: dt, Shape: s}
}

func shapeOf(in []ops.InferInput, i int) graph.Shape {
	if i < len(in) {
		return in[i].Type.Shape
	}
	return nil
}

var unknown = graph.Dim{Value: -1}

// windowDim is the output size of a padded strided window.
func windowDim(in graph.Dim, k, stride, dil, pad int64) graph.Dim {
	if !in.Static() || stride < 1 || dil < 1 || k < 1 {
		return unknown
	}
	eff := (k-1)*dil + 1
	v := (in.Value+pad-eff)/stride + 1
	if in.Value+pad < eff {
		return unknown
	}
	return graph.Dim{Value: v}
}

func attr4(n *graph.Node, name string, def []int64, want int) []int64 {
	v := n.AttrInts(name, def)
	if len(v) != want {
		return nil
	}
	return v
}

func convInfer(depthwise bool) ops.InferFunc {
	return func(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
		xs, ws := shapeOf(in, 0), shapeOf(in, 3)
		if len(xs) != 4 || len(ws) != 4 {
			return []graph.ValueType{tensor(graph.Int8, nil)}, nil
		}
		st := attr4(n, "strides", []int64{1, 1}, 2)
		dl := attr4(n, "dilations", []int64{1, 1}, 2)
		pd := attr4(n, "pads", []int64{0, 0, 0, 0}, 4)
		if st == nil || dl == nil || pd == nil {
			return nil, ops.Invalidf(n, "strides/dilations need 2 values and pads 4")
		}
		cout := ws[0]
		if depthwise {
			cout = ws[3]
		}
		kh, kw := ws[1], ws[2]
		out := graph.Shape{xs[0], unknown, unknown, cout}
		if kh.Static() && kw.Static() {
			out[1] = windowDim(xs[1], kh.Value, st[0], dl[0], pd[0]+pd[2])
			out[2] = windowDim(xs[2], kw.Value, st[1], dl[1], pd[1]+pd[3])
		}
		return []graph.ValueType{tensor(graph.Int8, out)}, nil
	}
}

func poolInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	xs := shapeOf(in, 0)
	k := attr4(n, "kernel_shape", nil, 2)
	st := attr4(n, "strides", []int64{1, 1}, 2)
	pd := attr4(n, "pads", []int64{0, 0, 0, 0}, 4)
	if k == nil || st == nil || pd == nil {
		return nil, ops.Invalidf(n, "kernel_shape and strides need 2 values, pads 4")
	}
	if len(xs) != 4 {
		return []graph.ValueType{tensor(graph.Int8, nil)}, nil
	}
	out := graph.Shape{xs[0], windowDim(xs[1], k[0], st[0], 1, pd[0]+pd[2]), windowDim(xs[2], k[1], st[1], 1, pd[1]+pd[3]), xs[3]}
	return []graph.ValueType{tensor(graph.Int8, out)}, nil
}

func fcInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	if s := n.AttrInts("output_shape", nil); len(s) > 0 {
		return []graph.ValueType{tensor(graph.Int8, graph.StaticShape(toInts(s)...))}, nil
	}
	xs, ws := shapeOf(in, 0), shapeOf(in, 3)
	if len(ws) != 2 || xs == nil {
		return []graph.ValueType{tensor(graph.Int8, nil)}, nil
	}
	return []graph.ValueType{tensor(graph.Int8, graph.Shape{unknown, ws[0]})}, nil
}

func toInts(v []int64) []int {
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out
}

func binaryInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	a, b := shapeOf(in, 0), shapeOf(in, 3)
	if a == nil || b == nil {
		return []graph.ValueType{tensor(graph.Int8, nil)}, nil
	}
	s, err := ops.BroadcastSymbolic(a, b)
	if err != nil {
		return nil, ops.Invalidf(n, "%v", err)
	}
	return []graph.ValueType{tensor(graph.Int8, s)}, nil
}

func meanInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	xs := shapeOf(in, 0)
	if xs == nil {
		return []graph.ValueType{tensor(graph.Int8, nil)}, nil
	}
	red := map[int]bool{}
	for _, a := range n.AttrInts("axes", nil) {
		ax, err := ops.NormAxis(a, len(xs))
		if err != nil {
			return nil, ops.Invalidf(n, "%v", err)
		}
		red[ax] = true
	}
	keep := n.AttrInt("keepdims", 0) != 0
	var out graph.Shape
	for i, d := range xs {
		switch {
		case !red[i]:
			out = append(out, d)
		case keep:
			out = append(out, graph.Dim{Value: 1})
		}
	}
	if out == nil {
		out = graph.Shape{}
	}
	return []graph.ValueType{tensor(graph.Int8, out)}, nil
}

func sameAs(dt graph.DType) ops.InferFunc {
	return func(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
		return []graph.ValueType{tensor(dt, shapeOf(in, 0))}, nil
	}
}

func init() {
	reg := func(op string, minIn, maxIn int, types []graph.DType, f ops.InferFunc) {
		ops.Register(ops.Schema{Domain: Domain, OpType: op, MinOpset: 1, MaxOpset: 1, MinInputs: minIn, MaxInputs: maxIn,
			MinOutputs: 1, MaxOutputs: 1, Types: types, Infer: f})
	}
	reg("Conv2D", 8, 9, int8Only, convInfer(false))
	reg("DepthwiseConv2D", 8, 9, int8Only, convInfer(true))
	reg("FullyConnected", 8, 9, int8Only, fcInfer)
	for _, op := range []string{"Add", "Sub", "Mul"} {
		reg(op, 8, 8, int8Only, binaryInfer)
	}
	reg("AveragePool2D", 5, 5, int8Only, poolInfer)
	reg("MaxPool2D", 5, 5, int8Only, poolInfer)
	reg("Mean", 5, 5, int8Only, meanInfer)
	reg("Softmax", 5, 5, int8Only, sameAs(graph.Int8))
	reg("Logistic", 5, 5, int8Only, sameAs(graph.Int8))
	reg("Tanh", 5, 5, int8Only, sameAs(graph.Int8))
	reg("Quantize", 3, 3, []graph.DType{graph.Float32}, sameAs(graph.Int8))
	reg("Dequantize", 3, 3, int8Only, sameAs(graph.Float32))
}
