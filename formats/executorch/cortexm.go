package executorch

import (
	"fmt"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	"github.com/switchyard-hal/switchyard/core/ops"
)

// CortexMDomain is the IR domain of the reference kernels for ExecuTorch's
// Arm Cortex-M operators (cortex_m::*). They compute what CMSIS-NN's
// int8 kernels compute, from the formulas CMSIS-NN documents: int32
// accumulation of (input + input_offset) * weight plus bias, a per-channel
// fixed-point requantization (doubling high multiply, then a rounding
// right shift), the output offset and an activation clamp.
const CortexMDomain = "org.pytorch.executorch.cortex_m"

// Every op's output type is the out tensor the program declares, carried
// as attributes out_dtype and out_shape.
func declaredOut(n *graph.Node, _ int64, _ []ops.InferInput) ([]graph.ValueType, error) {
	shape := n.AttrInts("out_shape", nil)
	vt := graph.ValueType{Kind: "tensor", DType: graph.DType(n.AttrInt("out_dtype", int64(graph.Int8))), Shape: make(graph.Shape, len(shape))}
	for i, d := range shape {
		vt.Shape[i] = graph.Dim{Value: d}
	}
	return []graph.ValueType{vt}, nil
}

func init() {
	reg := func(op string, minIn, maxIn int, types []graph.DType, k kernels.Func) {
		kernels.Register(kernels.Schema{Domain: CortexMDomain, OpType: op, MinOpset: 1,
			MinInputs: minIn, MaxInputs: maxIn, MinOutputs: 1, MaxOutputs: 1, Types: types, Kernel: k, Infer: declaredOut})
	}
	reg("Conv2D", 5, 5, []graph.DType{graph.Int8}, cmConv)
	reg("Linear", 3, 3, []graph.DType{graph.Int8}, cmLinear)
	reg("AvgPool2D", 1, 1, []graph.DType{graph.Int8}, cmAvgPool)

	lowerings["cortex_m::quantize_per_tensor.out"] = quantLower("QuantizePerTensor", false)
	lowerings["cortex_m::dequantize_per_tensor.out"] = quantLower("DequantizePerTensor", false)
	lowerings["cortex_m::pad.out"] = cmPadLower
}

// requantize is CMSIS-NN's arm_nn_requantize (double rounding): a
// saturation-free doubling high multiply by multiplier after a left shift
// of max(shift, 0), then a rounding divide by 2^max(-shift, 0).
func requantize(val, multiplier, shift int32) int32 {
	left, right := int32(0), int32(0)
	if shift > 0 {
		left = shift
	} else {
		right = -shift
	}
	a := val * (1 << left) // wraps as int32 arithmetic does in C
	// doubling high multiply: round(a*m / 2^31) with gemmlowp's nudge
	// (+2^30, or 1-2^30 for a negative product) and C's truncating divide
	nudge := int64(1 << 30)
	if (a < 0) != (multiplier < 0) {
		nudge = 1 - nudge
	}
	r := int32((nudge + int64(a)*int64(multiplier)) / (1 << 31))
	if right == 0 {
		return r
	}
	// rounding divide by a power of two, ties away from zero
	mask := int32(1)<<right - 1
	rem := r & mask
	q := r >> right
	threshold := mask >> 1
	if q < 0 {
		threshold++
	}
	if rem > threshold {
		q++
	}
	return q
}

func clampI32(v, lo, hi int32) int32 {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}

func outTensor(ctx *kernels.Context, n *graph.Node) (*graph.Tensor, error) {
	shape := n.AttrInts("out_shape", nil)
	return ctx.New(graph.DType(n.AttrInt("out_dtype", int64(graph.Int8))), intsOf(shape))
}

// cmConv computes an int8 NCHW (logical) convolution. Weights are OHWI
// (regular) or 1HWO (depthwise, output channel o reading input channel
// o / ch_mult). Padded positions contribute nothing.
func cmConv(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x, w, b, mul, sh := in[0], in[1], in[2], in[3], in[4]
	if x.Rank() != 4 || w.Rank() != 4 || w.DType != graph.Int8 || mul.DType != graph.Int32 || sh.DType != graph.Int32 {
		return nil, kernels.Invalidf(n, "want 4-d int8 input and weight, int32 multipliers and shifts")
	}
	out, err := outTensor(ctx, n)
	if err != nil {
		return nil, err
	}
	if out.Rank() != 4 || out.DType != graph.Int8 {
		return nil, kernels.Invalidf(n, "output %v%v", out.DType, out.Shape)
	}
	N, C, H, W := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	O, OH, OW := out.Shape[1], out.Shape[2], out.Shape[3]
	dw := n.AttrInt("depthwise", 0) != 0
	var KH, KW int
	if dw {
		KH, KW = w.Shape[1], w.Shape[2]
		mult := int(n.AttrInt("ch_mult", 1))
		if w.Shape[0] != 1 || w.Shape[3] != O || O != C*mult || out.Shape[0] != N {
			return nil, kernels.Invalidf(n, "depthwise weight %v for input %v, output %v", w.Shape, x.Shape, out.Shape)
		}
	} else {
		KH, KW = w.Shape[1], w.Shape[2]
		if w.Shape[0] != O || w.Shape[3] != C || out.Shape[0] != N {
			return nil, kernels.Invalidf(n, "weight %v for input %v, output %v", w.Shape, x.Shape, out.Shape)
		}
	}
	if mul.Len() != O || sh.Len() != O || (b != nil && (b.DType != graph.Int32 || b.Len() != O)) {
		return nil, kernels.Invalidf(n, "per-channel parameters for %d channels", O)
	}
	st, pd, dl := n.AttrInts("strides", []int64{1, 1}), n.AttrInts("pads", []int64{0, 0}), n.AttrInts("dilations", []int64{1, 1})
	if len(st) != 2 || len(pd) != 2 || len(dl) != 2 {
		return nil, kernels.Invalidf(n, "strides, pads and dilations need two values")
	}
	inOff, outOff := int32(n.AttrInt("input_offset", 0)), int32(n.AttrInt("output_offset", 0))
	lo, hi := int32(n.AttrInt("activation_min", -128)), int32(n.AttrInt("activation_max", 127))
	xd, wd, o := graph.Data[int8](x), graph.Data[int8](w), graph.Data[int8](out)
	md, sd := graph.Data[int32](mul), graph.Data[int32](sh)
	var bd []int32
	if b != nil {
		bd = graph.Data[int32](b)
	}
	mult := int(n.AttrInt("ch_mult", 1))
	for bn := 0; bn < N; bn++ {
		for oc := 0; oc < O; oc++ {
			if ctx.Stopped() {
				return nil, ctx.Stop(n)
			}
			for oy := 0; oy < OH; oy++ {
				for ox := 0; ox < OW; ox++ {
					acc := int32(0)
					if bd != nil {
						acc = bd[oc]
					}
					for ky := 0; ky < KH; ky++ {
						iy := oy*int(st[0]) - int(pd[0]) + ky*int(dl[0])
						if iy < 0 || iy >= H {
							continue
						}
						for kx := 0; kx < KW; kx++ {
							ix := ox*int(st[1]) - int(pd[1]) + kx*int(dl[1])
							if ix < 0 || ix >= W {
								continue
							}
							if dw {
								c := oc / mult
								xv := int32(xd[((bn*C+c)*H+iy)*W+ix]) + inOff
								acc += xv * int32(wd[(ky*KW+kx)*O+oc])
								continue
							}
							wb := ((oc*KH+ky)*KW + kx) * C
							for c := 0; c < C; c++ {
								xv := int32(xd[((bn*C+c)*H+iy)*W+ix]) + inOff
								acc += xv * int32(wd[wb+c])
							}
						}
					}
					r := requantize(acc, md[oc], sd[oc]) + outOff
					o[((bn*O+oc)*OH+oy)*OW+ox] = int8(clampI32(r, lo, hi))
				}
			}
		}
	}
	return []*graph.Tensor{out}, nil
}

// cmLinear is CMSIS-NN's fully connected layer: per-tensor (one
// multiplier) or per-channel requantization.
func cmLinear(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x, w, b := in[0], in[1], in[2]
	if w.Rank() != 2 || w.DType != graph.Int8 {
		return nil, kernels.Invalidf(n, "weight %v%v, want 2-d int8", w.DType, w.Shape)
	}
	O, I := w.Shape[0], w.Shape[1]
	if I == 0 || x.Len()%I != 0 {
		return nil, kernels.Invalidf(n, "input %v for %d features", x.Shape, I)
	}
	B := x.Len() / I
	out, err := outTensor(ctx, n)
	if err != nil {
		return nil, err
	}
	if out.Len() != B*O || out.DType != graph.Int8 {
		return nil, kernels.Invalidf(n, "output %v%v for %d×%d", out.DType, out.Shape, B, O)
	}
	mul, sh := n.AttrInts("multipliers", nil), n.AttrInts("shifts", nil)
	if len(mul) != len(sh) || (len(mul) != 1 && len(mul) != O) {
		return nil, kernels.Invalidf(n, "%d multipliers and %d shifts for %d outputs", len(mul), len(sh), O)
	}
	var bd []int32
	if b != nil {
		if b.DType != graph.Int32 || b.Len() != O {
			return nil, kernels.Invalidf(n, "bias %v%v", b.DType, b.Shape)
		}
		bd = graph.Data[int32](b)
	}
	inOff, fOff, outOff := int32(n.AttrInt("input_offset", 0)), int32(n.AttrInt("filter_offset", 0)), int32(n.AttrInt("output_offset", 0))
	lo, hi := int32(n.AttrInt("activation_min", -128)), int32(n.AttrInt("activation_max", 127))
	xd, wd, o := graph.Data[int8](x), graph.Data[int8](w), graph.Data[int8](out)
	for bi := 0; bi < B; bi++ {
		for oc := 0; oc < O; oc++ {
			acc := int32(0)
			if bd != nil {
				acc = bd[oc]
			}
			for i := 0; i < I; i++ {
				acc += (int32(xd[bi*I+i]) + inOff) * (int32(wd[oc*I+i]) + fOff)
			}
			k := 0
			if len(mul) > 1 {
				k = oc
			}
			r := requantize(acc, int32(mul[k]), int32(sh[k])) + outOff
			o[bi*O+oc] = int8(clampI32(r, lo, hi))
		}
	}
	return []*graph.Tensor{out}, nil
}

// cmAvgPool is CMSIS-NN's arm_avgpool_s8: the mean of the window's valid
// (unpadded) elements, rounded half away from zero, clamped to int8.
func cmAvgPool(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := in[0]
	if x.Rank() != 4 {
		return nil, kernels.Invalidf(n, "input %v, want 4-d", x.Shape)
	}
	out, err := outTensor(ctx, n)
	if err != nil {
		return nil, err
	}
	N, C, H, W := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	if out.Rank() != 4 || out.Shape[0] != N || out.Shape[1] != C {
		return nil, kernels.Invalidf(n, "output %v for input %v", out.Shape, x.Shape)
	}
	OH, OW := out.Shape[2], out.Shape[3]
	k, st, pd := n.AttrInts("kernel_shape", nil), n.AttrInts("strides", nil), n.AttrInts("pads", []int64{0, 0})
	if len(k) != 2 || len(st) != 2 || len(pd) != 2 {
		return nil, kernels.Invalidf(n, "kernel, strides and pads need two values")
	}
	xd, o := graph.Data[int8](x), graph.Data[int8](out)
	for p := 0; p < N*C; p++ {
		for oy := 0; oy < OH; oy++ {
			for ox := 0; ox < OW; ox++ {
				sum, cnt := int32(0), int32(0)
				for ky := 0; ky < int(k[0]); ky++ {
					iy := oy*int(st[0]) - int(pd[0]) + ky
					if iy < 0 || iy >= H {
						continue
					}
					for kx := 0; kx < int(k[1]); kx++ {
						ix := ox*int(st[1]) - int(pd[1]) + kx
						if ix < 0 || ix >= W {
							continue
						}
						sum += int32(xd[(p*H+iy)*W+ix])
						cnt++
					}
				}
				if cnt == 0 {
					return nil, kernels.Invalidf(n, "pooling window outside the input")
				}
				if sum > 0 {
					sum = (sum + cnt/2) / cnt
				} else {
					sum = (sum - cnt/2) / cnt
				}
				o[(p*OH+oy)*OW+ox] = int8(clampI32(sum, -128, 127))
			}
		}
	}
	return []*graph.Tensor{out}, nil
}

// outAttrs are the declared out type of value v as attributes.
func (l *lowerer) outAttrs(v int32) ([]*graph.Attribute, error) {
	shape, dt, err := l.staticOut(v)
	if err != nil {
		return nil, err
	}
	return []*graph.Attribute{aInts("out_shape", shape), aInt("out_dtype", int64(dt))}, nil
}

// custom adds a node of one of this package's domains whose output is
// value out, with out's declared type as attributes.
func (l *lowerer) custom(domain, op string, in []string, out int32, attrs ...*graph.Attribute) error {
	oa, err := l.outAttrs(out)
	if err != nil {
		return err
	}
	name := l.fresh("t")
	l.customNode(domain, op, in, []string{name}, append(attrs, oa...)...)
	_, dt, _ := l.meta(out)
	return l.def(out, name, dt)
}

func (l *lowerer) intAttrs(names []string, vals []int32) ([]*graph.Attribute, error) {
	var out []*graph.Attribute
	for i, nm := range names {
		v, err := l.int(vals[i])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", nm, err)
		}
		out = append(out, aInt(nm, v))
	}
	return out, nil
}

// pad: (input, pre_pad, post_pad, pad_value, out); the pads are given in
// the input's memory order (N, H, W, C for a channels-last tensor).
func cmPadLower(l *lowerer, a []int32) error {
	ar := l.args(a, 5)
	x, pre, post, v := ar.tensor(0), ar.ints(1), ar.ints(2), ar.int(3)
	if ar.err != nil {
		return ar.err
	}
	t, dt, _ := l.meta(a[0])
	r := len(t.Sizes)
	if r == 0 || r > 4 || len(pre) != 4 || len(post) != 4 {
		return fmt.Errorf("pad of a rank-%d tensor with %d/%d pads", r, len(pre), len(post))
	}
	pads := make([]int64, 2*r)
	off := 4 - r
	for i := 0; i < r; i++ {
		d := i
		if !contiguous(t.DimOrder) {
			d = int(t.DimOrder[i])
		}
		pads[d], pads[r+d] = pre[off+i], post[off+i]
	}
	c, err := l.scalarConst(dt, float64(v))
	if err != nil {
		return err
	}
	return l.def(a[4], l.op1("Pad", []string{x, l.constI64(pads...), c}, aString("mode", "constant")), dt)
}
