package quant

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
	_ "github.com/switchyard-hal/switchyard/core/ops/nn" // Conv and MatMul shape inference, reused below
)

// The ONNX integer operators share the representation of the
// switchyard.quant ops: a quantized tensor is the same triple (value,
// scale, zero point) with real = scale × (q − zero_point), the scale a
// scalar per tensor or 1-D per channel (the output channel of a filter,
// the last axis of a MatMul B). They differ in two ways, both part of the
// op type rather than of the tensors:
//
//   - element type: ONNX allows uint8 as well as int8 (the zero point's
//     type is the value's type);
//   - rounding: ONNX requantises in floating point, round(acc·M) with M =
//     xs·ws/ys and ties to even (QuantizeLinear's rule), where the
//     switchyard.quant ops follow TFLite's fixed-point
//     MultiplyByQuantizedMultiplier (ties away from zero, double
//     rounding). The two differ by one step on some values, so an ONNX
//     QLinearConv is never rewritten into a switchyard.quant Conv2D: it
//     keeps its own reference kernel with ONNX's exact semantics
//     (core/kernels/quant/qlinear.go).
//
// QDQ graphs (DequantizeLinear → float op → QuantizeLinear) are not
// folded into integer ops at load time. For the arithmetic ops (Conv,
// MatMul, Gemm, Add) the fold is not exact: the float path sums float32
// products of dequantised values (rounded at every step, the bias
// dequantised separately) and rounds once at the QuantizeLinear, where
// QLinearConv sums exactly in int32 and rounds once; the two differ by a
// step near rounding ties, so a fold would change what the model
// computes under the ONNX semantics the reference kernels are held to
// (ONNX Runtime makes this trade by default; we do not do it silently).
// For data movement and max (Reshape, Transpose, MaxPool, … between a
// DequantizeLinear and a QuantizeLinear with the same scale and zero
// point) the fold is exact but saves only the two elementwise passes;
// it is not implemented. QDQ models run as written: DequantizeLinear and
// QuantizeLinear are reference kernels, the ops between them float.
//
// Registered here: QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger
// (default domain, opset 10) and the com.microsoft contrib ops QLinearAdd,
// QLinearMul, QLinearGlobalAveragePool, QLinearSigmoid and QLinearConcat.

// ContribDomain is the domain of ONNX Runtime's contrib ops.
const ContribDomain = "com.microsoft"

var int8s = []graph.DType{graph.Int8, graph.Uint8}

// reuse runs the shape inference of another op (Conv, MatMul) on a subset
// of the inputs and sets the output dtype.
func reuse(op string, idx []int, dt func(in []ops.InferInput) graph.DType) ops.InferFunc {
	return func(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
		s, ok := ops.Lookup("", op)
		if !ok || s.Infer == nil {
			return []graph.ValueType{{Kind: "tensor", DType: dt(in)}}, nil
		}
		sub := make([]ops.InferInput, len(idx))
		for i, k := range idx {
			if k < len(in) {
				sub[i] = in[k]
			}
		}
		out, err := s.Infer(n, opset, sub)
		if err != nil || len(out) == 0 {
			return nil, err
		}
		out[0].DType = dt(in)
		return out[:1], nil
	}
}

// dtypeAt is the dtype of input i when present, else of input j.
func dtypeAt(i, j int) func(in []ops.InferInput) graph.DType {
	return func(in []ops.InferInput) graph.DType {
		if i < len(in) && in[i].Type.DType != graph.Undefined {
			return in[i].Type.DType
		}
		if j < len(in) {
			return in[j].Type.DType
		}
		return graph.Undefined
	}
}

func fixed(dt graph.DType) func([]ops.InferInput) graph.DType {
	return func([]ops.InferInput) graph.DType { return dt }
}

func qBinaryInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	dt := dtypeAt(0, 0)(in)
	a, b := shapeOf(in, 0), shapeOf(in, 3)
	if a == nil || b == nil {
		return []graph.ValueType{tensor(dt, nil)}, nil
	}
	s, err := ops.BroadcastSymbolic(a, b)
	if err != nil {
		return nil, ops.Invalidf(n, "%v", err)
	}
	return []graph.ValueType{tensor(dt, s)}, nil
}

func qGlobalPoolInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	dt := dtypeAt(0, 0)(in)
	xs := shapeOf(in, 0)
	if xs == nil {
		return []graph.ValueType{tensor(dt, nil)}, nil
	}
	if len(xs) < 3 {
		return nil, ops.Invalidf(n, "X must have rank >= 3, got %v", xs)
	}
	out := make(graph.Shape, len(xs))
	one := graph.Dim{Value: 1}
	for i := range out {
		out[i] = one
	}
	out[0] = xs[0]
	if n.AttrInt("channels_last", 0) != 0 {
		out[len(xs)-1] = xs[len(xs)-1]
	} else {
		out[1] = xs[1]
	}
	return []graph.ValueType{tensor(dt, out)}, nil
}

func qConcatInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	dt := dtypeAt(2, 2)(in)
	if len(in) < 5 || (len(in)-2)%3 != 0 {
		return nil, ops.Invalidf(n, "QLinearConcat takes Y_scale, Y_zero_point and (X, scale, zero point) triples; got %d inputs", len(in))
	}
	var out graph.Shape
	var axis int
	for i := 2; i < len(in); i += 3 {
		s := in[i].Type.Shape
		if s == nil {
			return []graph.ValueType{tensor(dt, nil)}, nil
		}
		if out == nil {
			ax, err := ops.NormAxis(n.AttrInt("axis", 0), len(s))
			if err != nil {
				return nil, ops.Invalidf(n, "%v", err)
			}
			axis = ax
			out = append(graph.Shape{}, s...)
			continue
		}
		if len(s) != len(out) {
			return nil, ops.Invalidf(n, "inputs of ranks %d and %d", len(out), len(s))
		}
		if out[axis].Static() && s[axis].Static() {
			out[axis].Value += s[axis].Value
		} else {
			out[axis] = unknown
		}
	}
	return []graph.ValueType{tensor(dt, out)}, nil
}

func init() {
	reg := func(domain, op string, minIn, maxIn int, f ops.InferFunc) {
		ops.Register(ops.Schema{Domain: domain, OpType: op, MinOpset: 1, MinInputs: minIn, MaxInputs: maxIn,
			MinOutputs: 1, MaxOutputs: 1, Types: int8s, Infer: f})
	}
	ops.Register(ops.Schema{OpType: "QLinearConv", MinOpset: 10, MinInputs: 8, MaxInputs: 9, MinOutputs: 1, MaxOutputs: 1,
		Types: int8s, Infer: reuse("Conv", []int{0, 3}, dtypeAt(7, 0))})
	ops.Register(ops.Schema{OpType: "QLinearMatMul", MinOpset: 10, MinInputs: 8, MaxInputs: 8, MinOutputs: 1, MaxOutputs: 1,
		Types: int8s, Infer: reuse("MatMul", []int{0, 3}, dtypeAt(7, 0))})
	ops.Register(ops.Schema{OpType: "ConvInteger", MinOpset: 10, MinInputs: 2, MaxInputs: 4, MinOutputs: 1, MaxOutputs: 1,
		Types: int8s, Infer: reuse("Conv", []int{0, 1}, fixed(graph.Int32))})
	ops.Register(ops.Schema{OpType: "MatMulInteger", MinOpset: 10, MinInputs: 2, MaxInputs: 4, MinOutputs: 1, MaxOutputs: 1,
		Types: int8s, Infer: reuse("MatMul", []int{0, 1}, fixed(graph.Int32))})
	reg(ContribDomain, "QLinearAdd", 7, 8, qBinaryInfer)
	reg(ContribDomain, "QLinearMul", 7, 8, qBinaryInfer)
	reg(ContribDomain, "QLinearGlobalAveragePool", 4, 5, qGlobalPoolInfer)
	reg(ContribDomain, "QLinearSigmoid", 4, 5, func(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
		return []graph.ValueType{tensor(dtypeAt(0, 0)(in), shapeOf(in, 0))}, nil
	})
	ops.Register(ops.Schema{Domain: ContribDomain, OpType: "QLinearConcat", MinOpset: 1, MinInputs: 5, MaxInputs: -1,
		MinOutputs: 1, MaxOutputs: 1, TypeInput: 2, Types: int8s, Infer: qConcatInfer})
}
