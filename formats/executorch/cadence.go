package executorch

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// CadenceDomain is the IR domain of the reference kernels for the
// Cadence DSP operators (cadence::*), computed as ExecuTorch's generic
// Cadence kernels define them: a float32 accumulation of
// (input - in_zero_point)·(weight - weight_zero_point) over input
// channel, kernel row and kernel column, started at the int32 bias,
// scaled by bias_scale and quantized with nearbyint(value / out_scale) +
// out_zero_point, clamped to the output type's range.
const CadenceDomain = "org.pytorch.executorch.cadence"

func init() {
	kernels.Register(kernels.Schema{Domain: CadenceDomain, OpType: "QuantizedConv2DNCHW", MinOpset: 1,
		MinInputs: 3, MaxInputs: 3, MinOutputs: 1, MaxOutputs: 1,
		Types: []graph.DType{graph.Int8, graph.Uint8, graph.Int16, graph.Uint16}, Kernel: cadenceConv, Infer: declaredOut})
	lowerings["cadence::quantize_per_tensor.out"] = cadenceQuant("QuantizePerTensor")
	lowerings["cadence::dequantize_per_tensor.out"] = cadenceQuant("DequantizePerTensor")
	lowerings["cadence::quantized_conv2d_nchw.per_tensor_out"] = cadenceConvLower
}

// typeRange is the value range of an integer dtype.
func typeRange(dt graph.DType) (int64, int64) {
	switch dt {
	case graph.Int8:
		return math.MinInt8, math.MaxInt8
	case graph.Uint8:
		return 0, math.MaxUint8
	case graph.Int16:
		return math.MinInt16, math.MaxInt16
	case graph.Uint16:
		return 0, math.MaxUint16
	case graph.Int32:
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

// cadenceQuant lowers cadence's (de)quantize_per_tensor: as
// quantized_decomposed's, except that values clamp to the type's range.
func cadenceQuant(op string) kernelFunc {
	q := quantLower(op, false)
	return func(l *lowerer, a []int32) error {
		if err := need(a, 7); err != nil {
			return err
		}
		if op == "QuantizePerTensor" {
			_, dt, err := l.meta(a[len(a)-2])
			if err != nil {
				return err
			}
			lo, hi := typeRange(dt)
			b := append([]int32{}, a...)
			b[3], b[4] = l.syntheticInt(lo), l.syntheticInt(hi)
			return q(l, b)
		}
		return q(l, a)
	}
}

// syntheticInt adds an Int value to the plan's table for lowering only.
func (l *lowerer) syntheticInt(v int64) int32 {
	l.vals = append(l.vals, Value{Kind: KindInt, Int: v})
	l.names = append(l.names, "")
	return int32(len(l.vals) - 1)
}

// quantized_conv2d_nchw.per_tensor_out: (input, weight, bias, stride,
// padding, dilation, groups, in_zero_point, weight_zero_point,
// bias_scale, output_scale, output_zero_point, out_multiplier, out_shift,
// out); the multiplier and shift are unused by the reference kernel.
func cadenceConvLower(l *lowerer, a []int32) error {
	r := l.args(a, 15)
	ins := []string{r.tensor(0), r.tensor(1), r.tensor(2)}
	var attrs []*graph.Attribute
	for i, nm := range []string{"strides", "pads", "dilations"} {
		v := r.ints(3 + i)
		if r.err != nil {
			return r.err
		}
		if len(v) != 2 {
			return errf("%s %v: want two values", nm, v)
		}
		attrs = append(attrs, aInts(nm, v))
	}
	ia, err := l.intAttrs([]string{"group", "in_zero_point", "weight_zero_point"}, a[6:9])
	if err != nil {
		return err
	}
	bs, os, zp := r.double(9), r.double(10), r.int(11)
	if r.err != nil {
		return r.err
	}
	attrs = append(append(attrs, ia...), aFloat("bias_scale", float32(bs)), aFloat("inv_out_scale", float32(1/os)), aInt("out_zero_point", zp))
	return l.custom(CadenceDomain, "QuantizedConv2DNCHW", ins, a[len(a)-2], attrs...)
}

func cadenceConv(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x, w, b := in[0], in[1], in[2]
	out, err := outTensor(ctx, n)
	if err != nil {
		return nil, err
	}
	if x.Rank() != 4 || w.Rank() != 4 || out.Rank() != 4 || w.DType != x.DType || out.DType != x.DType || b == nil || b.DType != graph.Int32 {
		return nil, kernels.Invalidf(n, "want 4-d input, weight and output of one type and an int32 bias")
	}
	N, C, H, W := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	O, WC, KH, KW := w.Shape[0], w.Shape[1], w.Shape[2], w.Shape[3]
	OH, OW := out.Shape[2], out.Shape[3]
	g := int(n.AttrInt("group", 1))
	if g <= 0 || C%g != 0 || O%g != 0 || WC != C/g || out.Shape[0] != N || out.Shape[1] != O || b.Len() != O {
		return nil, kernels.Invalidf(n, "weight %v, groups %d for input %v, output %v", w.Shape, g, x.Shape, out.Shape)
	}
	st, pd, dl := n.AttrInts("strides", nil), n.AttrInts("pads", nil), n.AttrInts("dilations", nil)
	if len(st) != 2 || len(pd) != 2 || len(dl) != 2 {
		return nil, kernels.Invalidf(n, "strides, pads and dilations need two values")
	}
	izp, wzp := float32(n.AttrInt("in_zero_point", 0)), float32(n.AttrInt("weight_zero_point", 0))
	bs, inv := n.AttrFloat("bias_scale", 1), n.AttrFloat("inv_out_scale", 1)
	ozp := float64(n.AttrInt("out_zero_point", 0))
	lo, hi := typeRange(out.DType)
	xs, ws, bd := x.Float64s(), w.Float64s(), graph.Data[int32](b)
	ocpg, icpg := O/g, C/g
	for bn := 0; bn < N; bn++ {
		for oc := 0; oc < O; oc++ {
			if ctx.Stopped() {
				return nil, ctx.Stop(n)
			}
			sic := (oc / ocpg) * icpg
			for oy := 0; oy < OH; oy++ {
				for ox := 0; ox < OW; ox++ {
					acc := float32(bd[oc])
					for ic := sic; ic < sic+icpg; ic++ {
						for ky := 0; ky < KH; ky++ {
							iy := oy*int(st[0]) + int(dl[0])*ky - int(pd[0])
							if iy < 0 || iy >= H {
								continue
							}
							for kx := 0; kx < KW; kx++ {
								ix := ox*int(st[1]) + int(dl[1])*kx - int(pd[1])
								if ix < 0 || ix >= W {
									continue
								}
								lhs := float32(xs[((bn*C+ic)*H+iy)*W+ix]) - izp
								rhs := float32(ws[((oc*WC+ic-sic)*KH+ky)*KW+kx]) - wzp
								acc += lhs * rhs
							}
						}
					}
					v := bs * acc
					q := ozp + math.RoundToEven(float64(inv*v))
					out.SetFloat64(((bn*O+oc)*OH+oy)*OW+ox, math.Min(math.Max(q, float64(lo)), float64(hi)))
				}
			}
		}
	}
	return []*graph.Tensor{out}, nil
}
