package executorch

import (
	"fmt"
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// QuantDomain is the IR domain of ExecuTorch's affine quantize and
// dequantize kernels. They are kept apart from the IR's QuantizeLinear
// and DequantizeLinear because ExecuTorch rounds differently: it
// multiplies by a float32 inverse scale (q = zp + nearbyint(x·(1/scale)),
// clamped to [quant_min, quant_max]) where ONNX divides by the scale and
// saturates to the type's range; dequantization is (q - zp)·scale in
// double precision.
//
// They share the quantized representation of core/ops/quant (real =
// scale × (q − zero point), per tensor or per channel along axis) but
// not its ops: quantize rounds differently from both TFLite (half away
// from zero after a division) and ONNX (ties to even after a division),
// and the Cortex-M kernels (cortexm.go) carry CMSIS-NN's precomputed
// Q31 multipliers and shifts, which float32 scales cannot represent
// exactly (31 bits of mantissa against 24), so rewriting them into
// switchyard.quant ops would change their results.
const QuantDomain = "org.pytorch.executorch.quant"

var quantTypes = []graph.DType{graph.Int8, graph.Uint8, graph.Int16, graph.Uint16, graph.Int32}

func init() {
	reg := func(op string, in int, types []graph.DType, k kernels.Func) {
		kernels.Register(kernels.Schema{Domain: QuantDomain, OpType: op, MinOpset: 1,
			MinInputs: in, MaxInputs: in, MinOutputs: 1, MaxOutputs: 1, Types: types, Kernel: k, Infer: declaredOut})
	}
	floats := []graph.DType{graph.Float32, graph.Float64, graph.Float16, graph.BFloat16}
	reg("QuantizePerTensor", 1, floats, quantizeKernel)
	reg("DequantizePerTensor", 1, quantTypes, dequantizeKernel)
	reg("QuantizePerChannel", 3, floats, quantizeKernel)
	reg("DequantizePerChannel", 3, quantTypes, dequantizeKernel)
	for _, ns := range []string{"quantized_decomposed"} {
		lowerings[ns+"::quantize_per_tensor.out"] = quantLower("QuantizePerTensor", false)
		lowerings[ns+"::dequantize_per_tensor.out"] = quantLower("DequantizePerTensor", false)
		lowerings[ns+"::quantize_per_tensor.tensor_out"] = quantLower("QuantizePerTensor", true)
		lowerings[ns+"::dequantize_per_tensor.tensor_out"] = quantLower("DequantizePerTensor", true)
	}
}

// quantParams returns the scale and zero point of element i: per tensor
// from attributes, per channel from inputs 1 and 2 along axis.
type quantParams struct {
	scale    float64
	zp       int64
	scales   *graph.Tensor
	zps      *graph.Tensor
	axis     int
	inner    int
	channels int
}

func newQuantParams(n *graph.Node, x *graph.Tensor, in []*graph.Tensor) (*quantParams, error) {
	q := &quantParams{scale: float64(n.AttrFloat("scale", 1)), zp: n.AttrInt("zero_point", 0)}
	if n.HasAttr("scale_bits") {
		// the scale in double precision, as the program holds it
		q.scale = math.Float64frombits(uint64(n.AttrInt("scale_bits", 0)))
	}
	if len(in) < 3 {
		return q, nil
	}
	ax := int(n.AttrInt("axis", 0))
	if ax < 0 {
		ax += x.Rank()
	}
	if ax < 0 || ax >= x.Rank() {
		return nil, kernels.Invalidf(n, "axis %d for rank %d", ax, x.Rank())
	}
	q.axis, q.channels, q.inner = ax, x.Shape[ax], 1
	for _, d := range x.Shape[ax+1:] {
		q.inner *= d
	}
	q.scales, q.zps = in[1], in[2]
	if q.scales == nil || q.scales.Len() != q.channels || (q.zps != nil && q.zps.Len() != q.channels) {
		return nil, kernels.Invalidf(n, "per-channel scales/zero points for %d channels", q.channels)
	}
	return q, nil
}

func (q *quantParams) at(i int) (float64, int64) {
	if q.scales == nil {
		return q.scale, q.zp
	}
	c := (i / q.inner) % q.channels
	zp := int64(0)
	if q.zps != nil {
		zp = q.zps.Int64At(c)
	}
	return q.scales.Float64At(c), zp
}

// quantIO returns a (de)quantize node's input, its output (one element
// per input element, of a dtype outOK accepts) and its parameters.
func quantIO(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor, outOK func(graph.DType) bool) (x, out *graph.Tensor, q *quantParams, err error) {
	x = in[0]
	if out, err = outTensor(ctx, n); err != nil {
		return nil, nil, nil, err
	}
	if out.Len() != x.Len() || !outOK(out.DType) {
		return nil, nil, nil, kernels.Invalidf(n, "output %v%v for input %v%v", out.DType, out.Shape, x.DType, x.Shape)
	}
	if q, err = newQuantParams(n, x, in); err != nil {
		return nil, nil, nil, err
	}
	return x, out, q, nil
}

func quantizeKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x, out, q, err := quantIO(ctx, n, in, graph.DType.IsInteger)
	if err != nil {
		return nil, err
	}
	lo, hi := float64(n.AttrInt("quant_min", -128)), float64(n.AttrInt("quant_max", 127))
	for i := 0; i < x.Len(); i++ {
		s, zp := q.at(i)
		inv := 1 / float32(s)
		v := float64(zp) + math.RoundToEven(float64(inv*float32(x.Float64At(i))))
		out.SetFloat64(i, math.Min(math.Max(v, lo), hi))
	}
	return []*graph.Tensor{out}, nil
}

func dequantizeKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x, out, q, err := quantIO(ctx, n, in, graph.DType.IsFloat)
	if err != nil {
		return nil, err
	}
	for i := 0; i < x.Len(); i++ {
		s, zp := q.at(i)
		out.SetFloat64(i, float64(x.Int64At(i)-zp)*s)
	}
	return []*graph.Tensor{out}, nil
}

// quantLower lowers (input, scale, zero_point, quant_min, quant_max,
// dtype, [out_dtype,] out); tensorArgs: scale and zero point are 1-element
// constant tensors.
func quantLower(op string, tensorArgs bool) kernelFunc {
	return func(l *lowerer, a []int32) error {
		if err := need(a, 7); err != nil {
			return err
		}
		x, err := l.tensor(a[0])
		if err != nil {
			return err
		}
		var scale float64
		var zp int64
		if tensorArgs {
			st, err := l.constValue(a[1])
			if err != nil {
				return fmt.Errorf("scale: %w", err)
			}
			zt, err := l.constValue(a[2])
			if err != nil {
				return fmt.Errorf("zero point: %w", err)
			}
			scale, zp = st.Float64At(0), zt.Int64At(0)
		} else {
			if scale, err = l.double(a[1]); err != nil {
				return err
			}
			if zp, err = l.int(a[2]); err != nil {
				return err
			}
		}
		attrs, err := l.intAttrs([]string{"quant_min", "quant_max"}, a[3:5])
		if err != nil {
			return err
		}
		attrs = append(attrs, aInt("zero_point", zp), aFloat("scale", float32(scale)), aInt("scale_bits", int64(math.Float64bits(scale))))
		return l.custom(QuantDomain, op, []string{x}, a[len(a)-2], attrs...)
	}
}

// constValue returns the constant tensor of value v.
func (l *lowerer) constValue(v int32) (*graph.Tensor, error) {
	name, err := l.tensor(v)
	if err != nil {
		return nil, err
	}
	t, ok := l.g.Initializers[name]
	if !ok || t.Len() == 0 {
		return nil, fmt.Errorf("value %d is not a constant", v)
	}
	return t, nil
}
