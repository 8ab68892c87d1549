package quant

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
	nnops "github.com/switchyard-hal/switchyard/core/ops/nn"
	quantops "github.com/switchyard-hal/switchyard/core/ops/quant"
)

// This file holds the reference kernels of ONNX's integer ops on the
// shared quantized representation (core/ops/quant/onnx.go): int8 or uint8
// values, scales per tensor or per channel, zero points of the value's
// type. Their rounding is ONNX's, not TFLite's:
//
//   - QLinearConv and QLinearMatMul (the ONNX spec and its reference
//     implementation): acc = Σ (x−xz)(w−wz) (+ bias) exactly in int32;
//     M = xs·ws/ys computed in the scales' type (float32, or float16 for
//     QLinearMatMul's opset-21 float16 scales); y = saturate(rint(acc·M)
//     + yz) with the product in float64 and ties to even.
//   - ConvInteger and MatMulInteger: the int32 accumulator, nothing more.
//   - The com.microsoft ops follow ONNX Runtime's CPU kernels, all in
//     float32 with ties to even: QLinearAdd y = rint((as/cs)(a−az) +
//     (bs/cs)(b−bz)) + cz; QLinearMul y = rint((a−az)(b−bz)·(as·bs/cs))
//     + cz; QLinearGlobalAveragePool y = rint((Σx − xz·n)·xs/(ys·n)) + yz;
//     QLinearSigmoid and QLinearConcat (inputs whose parameters differ
//     from the output's) go through QuantizeLinear(f(DequantizeLinear(x)))
//     per value, y = rint(f(xs·(x−xz))/ys) + yz. Every result saturates to
//     the output type's range.

// qtensor is a quantized tensor read as int32 values.
type qtensor struct {
	v     []int32
	shape []int
	dt    graph.DType
}

func qInput(n *graph.Node, in []*graph.Tensor, i int, what string) (qtensor, error) {
	t := kernels.Input(in, i)
	if err := kernels.CheckInput(n, t, what); err != nil {
		return qtensor{}, err
	}
	q := qtensor{shape: t.Shape, dt: t.DType}
	switch d := t.Data.(type) {
	case []int8:
		q.v = make([]int32, len(d))
		for k, x := range d {
			q.v[k] = int32(x)
		}
	case []uint8:
		q.v = make([]int32, len(d))
		for k, x := range d {
			q.v[k] = int32(x)
		}
	default:
		return qtensor{}, kernels.Unsupportedf(n, "%s must be int8 or uint8, got %v", what, t.DType)
	}
	return q, nil
}

// onnxParams is one tensor's quantization parameters: scales as float64
// (exact images of the stored float32 or float16 values), their type, and
// zero points (0 when the input is absent).
type onnxParams struct {
	scale []float64
	sdt   graph.DType
	zp    []int32
}

func (p onnxParams) s(c int) float64 {
	if len(p.scale) == 1 {
		return p.scale[0]
	}
	return p.scale[c]
}

func (p onnxParams) z(c int) int32 {
	if len(p.zp) == 1 {
		return p.zp[0]
	}
	return p.zp[c]
}

// readONNXParams reads a scale at si and a zero point at zi (zi < 0 or an
// absent input: zero). The zero point must have valueType when given;
// channels > 0 allows 1-D parameters of that length.
func readONNXParams(n *graph.Node, in []*graph.Tensor, si, zi int, valueType graph.DType, channels int, what string) (onnxParams, error) {
	s := kernels.Input(in, si)
	if s == nil {
		return onnxParams{}, kernels.Invalidf(n, "missing scale of %s", what)
	}
	if err := s.Check(); err != nil {
		return onnxParams{}, kernels.Invalidf(n, "scale of %s: %v", what, err)
	}
	if s.DType != graph.Float32 && s.DType != graph.Float16 {
		return onnxParams{}, kernels.Unsupportedf(n, "scale of %s must be float32 or float16, got %v", what, s.DType)
	}
	p := onnxParams{scale: s.Float64s(), sdt: s.DType}
	if len(p.scale) == 0 || (len(p.scale) != 1 && (channels <= 0 || len(p.scale) != channels || len(s.Shape) != 1)) {
		return onnxParams{}, kernels.Invalidf(n, "%s has scale shape %v; expected a scalar or [%d]", what, s.Shape, max(channels, 1))
	}
	for _, v := range p.scale {
		if !(v > 0) || math.IsInf(v, 0) {
			return onnxParams{}, kernels.Invalidf(n, "%s has scale %g; scales must be positive and finite", what, v)
		}
	}
	p.zp = make([]int32, len(p.scale))
	var z *graph.Tensor
	if zi >= 0 {
		z = kernels.Input(in, zi)
	}
	if z == nil {
		return p, nil
	}
	if err := z.Check(); err != nil {
		return onnxParams{}, kernels.Invalidf(n, "zero point of %s: %v", what, err)
	}
	if valueType != graph.Undefined && z.DType != valueType {
		return onnxParams{}, kernels.Invalidf(n, "zero point of %s is %v, the value is %v", what, z.DType, valueType)
	}
	if z.Len() != len(p.scale) {
		return onnxParams{}, kernels.Invalidf(n, "%s has %d scales and %d zero points", what, len(p.scale), z.Len())
	}
	for k := range p.zp {
		p.zp[k] = int32(z.Int64At(k))
	}
	return p, nil
}

// zeroPoints reads an integer-op zero point input (absent: 0) that is a
// scalar or 1-D of length channels.
func zeroPoints(n *graph.Node, in []*graph.Tensor, i int, valueType graph.DType, channels int, what string) ([]int32, error) {
	z := kernels.Input(in, i)
	if z == nil {
		return []int32{0}, nil
	}
	if err := z.Check(); err != nil {
		return nil, kernels.Invalidf(n, "zero point of %s: %v", what, err)
	}
	if z.DType != valueType {
		return nil, kernels.Invalidf(n, "zero point of %s is %v, the value is %v", what, z.DType, valueType)
	}
	if z.Len() != 1 && (len(z.Shape) != 1 || z.Len() != channels) {
		return nil, kernels.Invalidf(n, "zero point of %s has shape %v; expected a scalar or [%d]", what, z.Shape, channels)
	}
	out := make([]int32, z.Len())
	for k := range out {
		out[k] = int32(z.Int64At(k))
	}
	return out, nil
}

func pick(v []int32, c int) int32 {
	if len(v) == 1 {
		return v[0]
	}
	return v[c]
}

// inScaleType rounds v to the scale type's precision (float32 or
// float16), as numpy does after each operation on arrays of that type.
func inScaleType(dt graph.DType, v float64) float64 {
	if dt == graph.Float16 {
		return float64(graph.F16FromFloat32(float32(v)).Float32())
	}
	return float64(float32(v))
}

// onnxMultiplier is a·b/c computed in the scales' type.
func onnxMultiplier(dt graph.DType, a, b, c float64) float64 {
	return inScaleType(dt, inScaleType(dt, a*b)/c)
}

func qRange(dt graph.DType) (int32, int32) {
	if dt == graph.Uint8 {
		return 0, 255
	}
	return -128, 127
}

// requantONNX is saturate(rint(acc·m) + zp) with ties to even.
func requantONNX(acc int32, m float64, zp, lo, hi int32) int32 {
	v := math.RoundToEven(float64(acc)*m) + float64(zp)
	return int32(min(max(v, float64(lo)), float64(hi)))
}

// storeQ writes int32 values (already in range) as a tensor of dt.
func storeQ(ctx *kernels.Context, dt graph.DType, shape []int, v []int32) (*graph.Tensor, error) {
	out, err := ctx.New(dt, shape)
	if err != nil {
		return nil, err
	}
	switch d := out.Data.(type) {
	case []int8:
		for i, x := range v {
			d[i] = int8(x)
		}
	case []uint8:
		for i, x := range v {
			d[i] = uint8(x)
		}
	case []int32:
		copy(d, v)
	}
	return out, nil
}

// convAcc is the int32 accumulator of an NCHW convolution with 1–3
// spatial dims and groups: acc[n,m,o…] = Σ x'[n,g·C/G+c,i…]·w'[m,c,k…]
// over the window (padding contributes nothing), where x' and w' are the
// zero-point-subtracted values.
func convAcc(ctx *kernels.Context, n *graph.Node, x qtensor, xz int32, w qtensor, wz []int32, bias []int32) ([]int32, []int, error) {
	if len(x.shape) < 3 || len(x.shape) > 5 || len(w.shape) != len(x.shape) {
		return nil, nil, kernels.Invalidf(n, "x %v and w %v must both have rank 3–5", x.shape, w.shape)
	}
	nd := len(x.shape) - 2
	N, C, M := x.shape[0], x.shape[1], w.shape[0]
	group := int(n.AttrInt("group", 1))
	if group < 1 || C%group != 0 || M%group != 0 || w.shape[1] != C/group {
		return nil, nil, kernels.Invalidf(n, "group %d does not fit x %v and w %v", group, x.shape, w.shape)
	}
	if len(wz) != 1 && len(wz) != M {
		return nil, nil, kernels.Invalidf(n, "w has %d zero points for %d output channels", len(wz), M)
	}
	wa, err := nnops.ReadWindowAttrs(n, nd, w.shape[2:])
	if err != nil {
		return nil, nil, kernels.Invalidf(n, "%v", err)
	}
	g, err := nnops.ForwardGeom(wa, x.shape[2:], false)
	if err != nil {
		return nil, nil, kernels.Invalidf(n, "%v", err)
	}
	outShape := append([]int{N, M}, make([]int, nd)...)
	for i := 0; i < nd; i++ {
		outShape[2+i] = g.Out[3-nd+i]
	}
	cg, mg := C/group, M/group
	inSz, outSz, kSz := g.InSize(), g.OutSize(), g.KSize()
	acc := make([]int32, N*M*outSz)
	xv := make([]int32, len(x.v))
	for i, v := range x.v {
		xv[i] = v - xz
	}
	wv := make([]int32, len(w.v))
	for m := 0; m < M; m++ {
		z := pick(wz, m)
		for k := 0; k < cg*kSz; k++ {
			wv[m*cg*kSz+k] = w.v[m*cg*kSz+k] - z
		}
	}
	pointwise := kSz == 1 && inSz == outSz && g.Pb == [3]int{} && g.S == [3]int{1, 1, 1}
	for b := 0; b < N; b++ {
		if ctx.Stopped() {
			return nil, nil, ctx.Stop(n)
		}
		for m := 0; m < M; m++ {
			gi := m / mg
			out := acc[(b*M+m)*outSz : (b*M+m+1)*outSz]
			if bias != nil {
				for i := range out {
					out[i] = bias[m]
				}
			}
			for c := 0; c < cg; c++ {
				xc := xv[(b*C+gi*cg+c)*inSz:]
				wc := wv[(m*cg+c)*kSz:]
				if pointwise {
					// the same sum, the window being one input value
					wk := wc[0]
					for i, xi := range xc[:outSz] {
						out[i] += xi * wk
					}
					continue
				}
				for o0 := 0; o0 < g.Out[0]; o0++ {
					for o1 := 0; o1 < g.Out[1]; o1++ {
						for o2 := 0; o2 < g.Out[2]; o2++ {
							s := int32(0)
							for k0 := 0; k0 < g.K[0]; k0++ {
								i0 := o0*g.S[0] - g.Pb[0] + k0*g.D[0]
								if i0 < 0 || i0 >= g.In[0] {
									continue
								}
								for k1 := 0; k1 < g.K[1]; k1++ {
									i1 := o1*g.S[1] - g.Pb[1] + k1*g.D[1]
									if i1 < 0 || i1 >= g.In[1] {
										continue
									}
									for k2 := 0; k2 < g.K[2]; k2++ {
										i2 := o2*g.S[2] - g.Pb[2] + k2*g.D[2]
										if i2 < 0 || i2 >= g.In[2] {
											continue
										}
										s += xc[(i0*g.In[1]+i1)*g.In[2]+i2] * wc[(k0*g.K[1]+k1)*g.K[2]+k2]
									}
								}
							}
							out[(o0*g.Out[1]+o1)*g.Out[2]+o2] += s
						}
					}
				}
			}
		}
	}
	return acc, outShape, nil
}

// qlinearConv is ONNX QLinearConv (opset 10): NCHW, weights [M, C/group,
// k…] per tensor or per output channel, an optional int32 bias.
func qlinearConv(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x, err := qInput(n, in, 0, "x")
	if err != nil {
		return nil, err
	}
	w, err := qInput(n, in, 3, "w")
	if err != nil {
		return nil, err
	}
	if len(w.shape) == 0 {
		return nil, kernels.Invalidf(n, "w must have rank >= 3")
	}
	M := w.shape[0]
	xq, err := readONNXParams(n, in, 1, 2, x.dt, 0, "x")
	if err != nil {
		return nil, err
	}
	wq, err := readONNXParams(n, in, 4, 5, w.dt, M, "w")
	if err != nil {
		return nil, err
	}
	ydt := x.dt
	if z := kernels.Input(in, 7); z != nil {
		ydt = z.DType
	}
	yq, err := readONNXParams(n, in, 6, 7, ydt, 0, "y")
	if err != nil {
		return nil, err
	}
	bias, err := int32Bias(n, in, 8, M)
	if err != nil {
		return nil, err
	}
	acc, shape, err := convAcc(ctx, n, x, xq.z(0), w, wq.zp, bias)
	if err != nil {
		return nil, err
	}
	lo, hi := qRange(ydt)
	per := max(len(acc)/max(shape[0]*M, 1), 1)
	mult := make([]float64, M)
	for m := range mult {
		mult[m] = onnxMultiplier(xq.sdt, xq.s(0), wq.s(m), yq.s(0))
	}
	for i := range acc {
		acc[i] = requantONNX(acc[i], mult[(i/per)%M], yq.z(0), lo, hi)
	}
	return outQ(ctx, ydt, shape, acc)
}

// outQ is storeQ as a kernel's result.
func outQ(ctx *kernels.Context, dt graph.DType, shape []int, v []int32) ([]*graph.Tensor, error) {
	t, err := storeQ(ctx, dt, shape, v)
	if err != nil {
		return nil, err
	}
	return []*graph.Tensor{t}, nil
}

func int32Bias(n *graph.Node, in []*graph.Tensor, i, m int) ([]int32, error) {
	b := kernels.Input(in, i)
	if b == nil {
		return nil, nil
	}
	bd, ok := b.Data.([]int32)
	if !ok || len(bd) != m || b.Check() != nil {
		return nil, kernels.Invalidf(n, "bias must be int32[%d], got %v%v", m, b.DType, b.Shape)
	}
	return bd, nil
}

// convInteger is ONNX ConvInteger (opset 10): the int32 accumulator of
// QLinearConv without bias or requantisation.
func convInteger(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x, err := qInput(n, in, 0, "x")
	if err != nil {
		return nil, err
	}
	w, err := qInput(n, in, 1, "w")
	if err != nil {
		return nil, err
	}
	if len(w.shape) == 0 {
		return nil, kernels.Invalidf(n, "w must have rank >= 3")
	}
	xz, err := zeroPoints(n, in, 2, x.dt, 1, "x")
	if err != nil {
		return nil, err
	}
	wz, err := zeroPoints(n, in, 3, w.dt, w.shape[0], "w")
	if err != nil {
		return nil, err
	}
	acc, shape, err := convAcc(ctx, n, x, xz[0], w, wz, nil)
	if err != nil {
		return nil, err
	}
	return outQ(ctx, graph.Int32, shape, acc)
}

// matmulAcc is numpy matmul of zero-point-subtracted a (zero point per
// tensor or per row) and b (per tensor or per column) in int32. rows and
// cols are the sizes the per-row / per-column parameters index.
func matmulAcc(ctx *kernels.Context, n *graph.Node, a qtensor, az []int32, b qtensor, bz []int32) (acc []int32, shape []int, rows, cols int, err error) {
	as, bs := a.shape, b.shape
	if len(as) == 0 || len(bs) == 0 {
		return nil, nil, 0, 0, kernels.Invalidf(n, "operands must have rank >= 1, got %v and %v", as, bs)
	}
	a2, b2 := as, bs
	if len(as) == 1 {
		a2 = []int{1, as[0]}
	}
	if len(bs) == 1 {
		b2 = []int{bs[0], 1}
	}
	M, K, N := a2[len(a2)-2], a2[len(a2)-1], b2[len(b2)-1]
	if b2[len(b2)-2] != K {
		return nil, nil, 0, 0, kernels.Invalidf(n, "inner dimensions differ: %v and %v", as, bs)
	}
	if len(az) != 1 && len(az) != M {
		return nil, nil, 0, 0, kernels.Invalidf(n, "a has %d zero points for %d rows", len(az), M)
	}
	if len(bz) != 1 && len(bz) != N {
		return nil, nil, 0, 0, kernels.Invalidf(n, "b has %d zero points for %d columns", len(bz), N)
	}
	batch, err := kernels.BroadcastShapes(a2[:len(a2)-2], b2[:len(b2)-2])
	if err != nil {
		return nil, nil, 0, 0, kernels.Invalidf(n, "%v", err)
	}
	ai := kernels.BroadcastIndex(batch, a2[:len(a2)-2])
	bi := kernels.BroadcastIndex(batch, b2[:len(b2)-2])
	nb := kernels.Prod(batch)
	acc = make([]int32, nb*M*N)
	for t := 0; t < nb; t++ {
		if ctx.Stopped() {
			return nil, nil, 0, 0, ctx.Stop(n)
		}
		ao, bo := ai[t]*M*K, bi[t]*K*N
		for i := 0; i < M; i++ {
			zi := pick(az, i)
			for j := 0; j < N; j++ {
				zj := pick(bz, j)
				s := int32(0)
				for k := 0; k < K; k++ {
					s += (a.v[ao+i*K+k] - zi) * (b.v[bo+k*N+j] - zj)
				}
				acc[(t*M+i)*N+j] = s
			}
		}
	}
	shape = append([]int{}, batch...)
	if len(as) > 1 {
		shape = append(shape, M)
	}
	if len(bs) > 1 {
		shape = append(shape, N)
	}
	return acc, shape, M, N, nil
}

// matMulInteger is ONNX MatMulInteger (opset 10).
func matMulInteger(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	a, err := qInput(n, in, 0, "A")
	if err != nil {
		return nil, err
	}
	b, err := qInput(n, in, 1, "B")
	if err != nil {
		return nil, err
	}
	rows, cols := 1, 1
	if len(a.shape) >= 2 {
		rows = a.shape[len(a.shape)-2]
	}
	if len(b.shape) >= 1 {
		cols = b.shape[len(b.shape)-1]
	}
	az, err := zeroPoints(n, in, 2, a.dt, rows, "A")
	if err != nil {
		return nil, err
	}
	bz, err := zeroPoints(n, in, 3, b.dt, cols, "B")
	if err != nil {
		return nil, err
	}
	acc, shape, _, _, err := matmulAcc(ctx, n, a, az, b, bz)
	if err != nil {
		return nil, err
	}
	return outQ(ctx, graph.Int32, shape, acc)
}

// qlinearMatMul is ONNX QLinearMatMul (opsets 10 and 21): a per tensor or
// per row, b per tensor or per column, y per tensor or per row.
func qlinearMatMul(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	a, err := qInput(n, in, 0, "a")
	if err != nil {
		return nil, err
	}
	b, err := qInput(n, in, 3, "b")
	if err != nil {
		return nil, err
	}
	rows, cols := 1, 1
	if len(a.shape) >= 2 {
		rows = a.shape[len(a.shape)-2]
	}
	if len(b.shape) >= 1 {
		cols = b.shape[len(b.shape)-1]
	}
	aq, err := readONNXParams(n, in, 1, 2, a.dt, rows, "a")
	if err != nil {
		return nil, err
	}
	bq, err := readONNXParams(n, in, 4, 5, b.dt, cols, "b")
	if err != nil {
		return nil, err
	}
	ydt := a.dt
	if z := kernels.Input(in, 7); z != nil {
		ydt = z.DType
	}
	yq, err := readONNXParams(n, in, 6, 7, ydt, rows, "y")
	if err != nil {
		return nil, err
	}
	acc, shape, M, N, err := matmulAcc(ctx, n, a, aq.zp, b, bq.zp)
	if err != nil {
		return nil, err
	}
	lo, hi := qRange(ydt)
	for i := range acc {
		r, c := (i/N)%M, i%N
		m := onnxMultiplier(aq.sdt, aq.s(r), bq.s(c), yq.s(r))
		acc[i] = requantONNX(acc[i], m, yq.z(r), lo, hi)
	}
	return outQ(ctx, ydt, shape, acc)
}

// round32 is rint of a float32 value, saturated to [lo, hi] after adding zp.
func round32(v float32, zp, lo, hi int32) int32 {
	r := math.RoundToEven(float64(v)) + float64(zp)
	if r != r {
		return lo
	}
	return int32(min(max(r, float64(lo)), float64(hi)))
}

// contribBinary is com.microsoft QLinearAdd and QLinearMul (per-tensor
// parameters, numpy broadcasting; zero points optional).
func contribBinary(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	a, err := qInput(n, in, 0, "A")
	if err != nil {
		return nil, err
	}
	b, err := qInput(n, in, 3, "B")
	if err != nil {
		return nil, err
	}
	if a.dt != b.dt {
		return nil, kernels.Invalidf(n, "A is %v and B %v", a.dt, b.dt)
	}
	ap, err := readONNXParams(n, in, 1, 2, a.dt, 0, "A")
	if err != nil {
		return nil, err
	}
	bp, err := readONNXParams(n, in, 4, 5, b.dt, 0, "B")
	if err != nil {
		return nil, err
	}
	cp, err := readONNXParams(n, in, 6, 7, a.dt, 0, "C")
	if err != nil {
		return nil, err
	}
	shape, err := kernels.BroadcastShapes(a.shape, b.shape)
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	ai, bi := kernels.BroadcastIndex(shape, a.shape), kernels.BroadcastIndex(shape, b.shape)
	sa, sb, sc := float32(ap.s(0)), float32(bp.s(0)), float32(cp.s(0))
	za, zb, zc := ap.z(0), bp.z(0), cp.z(0)
	lo, hi := qRange(a.dt)
	out := make([]int32, len(ai))
	if n.OpType == "QLinearAdd" {
		ra, rb := sa/sc, sb/sc
		for i := range out {
			va := float32(ra * float32(a.v[ai[i]]-za))
			vb := float32(rb * float32(b.v[bi[i]]-zb))
			out[i] = round32(va+vb, zc, lo, hi)
		}
	} else {
		m := float32(float32(sa*sb) / sc)
		for i := range out {
			p := float32(float32(a.v[ai[i]]-za) * float32(b.v[bi[i]]-zb))
			out[i] = round32(float32(p*m), zc, lo, hi)
		}
	}
	return outQ(ctx, a.dt, shape, out)
}

// globalAveragePool is com.microsoft QLinearGlobalAveragePool: the mean
// over every spatial position of each channel (NCHW, or channels last).
func globalAveragePool(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x, err := qInput(n, in, 0, "X")
	if err != nil {
		return nil, err
	}
	if len(x.shape) < 3 {
		return nil, kernels.Invalidf(n, "X must have rank >= 3, got %v", x.shape)
	}
	xp, err := readONNXParams(n, in, 1, 2, x.dt, 0, "X")
	if err != nil {
		return nil, err
	}
	yp, err := readONNXParams(n, in, 3, 4, x.dt, 0, "Y")
	if err != nil {
		return nil, err
	}
	last := n.AttrInt("channels_last", 0) != 0
	N := x.shape[0]
	C := x.shape[1]
	if last {
		C = x.shape[len(x.shape)-1]
	}
	count := kernels.Prod(x.shape) / max(N*C, 1)
	outShape := make([]int, len(x.shape))
	for i := range outShape {
		outShape[i] = 1
	}
	outShape[0] = N
	if last {
		outShape[len(outShape)-1] = C
	} else {
		outShape[1] = C
	}
	if count == 0 {
		return nil, kernels.Invalidf(n, "X %v has no spatial values", x.shape)
	}
	scale := float32(float32(xp.s(0)) / float32(float32(yp.s(0))*float32(count)))
	lo, hi := qRange(x.dt)
	out := make([]int32, N*C)
	for b := 0; b < N; b++ {
		for c := 0; c < C; c++ {
			s := int32(0)
			for k := 0; k < count; k++ {
				if last {
					s += x.v[(b*count+k)*C+c]
				} else {
					s += x.v[(b*C+c)*count+k]
				}
			}
			s -= xp.z(0) * int32(count)
			out[b*C+c] = round32(float32(float32(s)*scale), yp.z(0), lo, hi)
		}
	}
	return outQ(ctx, x.dt, outShape, out)
}

// requantTable maps every value of dt through dequantize (xs, xz), f and
// quantize (ys, yz), in float32 with ties to even.
func requantTable(dt graph.DType, xs float32, xz int32, ys float32, yz int32, f func(float32) float32) [256]int32 {
	var t [256]int32
	lo, hi := qRange(dt)
	for q := lo; q <= hi; q++ {
		v := float32(float32(q-xz) * xs)
		if f != nil {
			v = f(v)
		}
		t[q-lo] = round32(v/ys, yz, lo, hi)
	}
	return t
}

// sigmoid is com.microsoft QLinearSigmoid.
func sigmoid(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x, err := qInput(n, in, 0, "X")
	if err != nil {
		return nil, err
	}
	xp, err := readONNXParams(n, in, 1, 2, x.dt, 0, "X")
	if err != nil {
		return nil, err
	}
	yp, err := readONNXParams(n, in, 3, 4, x.dt, 0, "Y")
	if err != nil {
		return nil, err
	}
	lo, _ := qRange(x.dt)
	t := requantTable(x.dt, float32(xp.s(0)), xp.z(0), float32(yp.s(0)), yp.z(0), func(v float32) float32 {
		return float32(1 / (1 + math.Exp(-float64(v))))
	})
	out := make([]int32, len(x.v))
	for i, v := range x.v {
		out[i] = t[v-lo]
	}
	return outQ(ctx, x.dt, x.shape, out)
}

// concat is com.microsoft QLinearConcat: inputs whose scale and zero
// point equal the output's are copied, the others requantised.
func concat(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	if len(in) < 5 || (len(in)-2)%3 != 0 {
		return nil, kernels.Invalidf(n, "QLinearConcat takes Y_scale, Y_zero_point and (X, scale, zero point) triples; got %d inputs", len(in))
	}
	var xs []qtensor
	var ps []onnxParams
	for i := 2; i < len(in); i += 3 {
		x, err := qInput(n, in, i, "X")
		if err != nil {
			return nil, err
		}
		if len(xs) > 0 && x.dt != xs[0].dt {
			return nil, kernels.Invalidf(n, "inputs of types %v and %v", xs[0].dt, x.dt)
		}
		p, err := readONNXParams(n, in, i+1, i+2, x.dt, 0, "X")
		if err != nil {
			return nil, err
		}
		xs, ps = append(xs, x), append(ps, p)
	}
	dt := xs[0].dt
	yp, err := readONNXParams(n, in, 0, 1, dt, 0, "Y")
	if err != nil {
		return nil, err
	}
	rank := len(xs[0].shape)
	axis, err := kernels.NormAxis(n.AttrInt("axis", 0), rank)
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	shape := append([]int{}, xs[0].shape...)
	shape[axis] = 0
	for _, x := range xs {
		if len(x.shape) != rank {
			return nil, kernels.Invalidf(n, "inputs of ranks %d and %d", rank, len(x.shape))
		}
		for d := range shape {
			if d != axis && x.shape[d] != shape[d] {
				return nil, kernels.Invalidf(n, "input shapes %v and %v differ off axis %d", xs[0].shape, x.shape, axis)
			}
		}
		shape[axis] += x.shape[axis]
	}
	outer := kernels.Prod(shape[:axis])
	inner := kernels.Prod(shape[axis+1:])
	out := make([]int32, kernels.Prod(shape))
	lo, _ := qRange(dt)
	off := 0
	for k, x := range xs {
		p := ps[k]
		same := float32(p.s(0)) == float32(yp.s(0)) && p.z(0) == yp.z(0)
		t := requantTable(dt, float32(p.s(0)), p.z(0), float32(yp.s(0)), yp.z(0), nil)
		run := x.shape[axis] * inner
		for o := 0; o < outer; o++ {
			dst := out[o*shape[axis]*inner+off:]
			for i, v := range x.v[o*run : (o+1)*run] {
				if same {
					dst[i] = v
				} else {
					dst[i] = t[v-lo]
				}
			}
		}
		off += run
	}
	return outQ(ctx, dt, shape, out)
}

func init() {
	kernels.RegisterKernel("", "QLinearConv", qlinearConv)
	kernels.RegisterKernel("", "QLinearMatMul", qlinearMatMul)
	kernels.RegisterKernel("", "ConvInteger", convInteger)
	kernels.RegisterKernel("", "MatMulInteger", matMulInteger)
	d := quantops.ContribDomain
	kernels.RegisterKernel(d, "QLinearAdd", contribBinary)
	kernels.RegisterKernel(d, "QLinearMul", contribBinary)
	kernels.RegisterKernel(d, "QLinearGlobalAveragePool", globalAveragePool)
	kernels.RegisterKernel(d, "QLinearSigmoid", sigmoid)
	kernels.RegisterKernel(d, "QLinearConcat", concat)
}
