package quant

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// binary is int8 Add, Sub (TFLite's rescale to 2^20 × the larger input
// scale, then requantise the sum) and Mul (one multiplier xs·bs/ys), with
// numpy broadcasting.
func binary(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	a, at, err := int8Input(n, in, 0, "a")
	if err != nil {
		return nil, err
	}
	b, bt, err := int8Input(n, in, 3, "b")
	if err != nil {
		return nil, err
	}
	aq, err := readParams(n, in, 1, 0, "a")
	if err != nil {
		return nil, err
	}
	bq, err := readParams(n, in, 4, 0, "b")
	if err != nil {
		return nil, err
	}
	yq, err := readParams(n, in, 6, 0, "y")
	if err != nil {
		return nil, err
	}
	shape, err := kernels.BroadcastShapes(at.Shape, bt.Shape)
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	lo, hi, err := actRange(n, yq)
	if err != nil {
		return nil, err
	}
	out, err := ctx.New(graph.Int8, shape)
	if err != nil {
		return nil, err
	}
	y := out.Data.([]int8)
	ai, bi := kernels.BroadcastIndex(shape, at.Shape), kernels.BroadcastIndex(shape, bt.Shape)
	az, bz, yz := aq.z(0), bq.z(0), yq.z(0)
	if n.OpType == "Mul" {
		m, s := quantizeMultiplier(float64(aq.s(0)) * float64(bq.s(0)) / float64(yq.s(0)))
		for i := range y {
			p := (int32(a[ai[i]]) - az) * (int32(b[bi[i]]) - bz)
			y[i] = clamp8(mulByQuantizedMultiplier(p, m, s)+yz, lo, hi)
		}
		return ctx.Outputs(out), nil
	}
	const leftShift = 20
	twiceMax := 2 * float64(max(aq.s(0), bq.s(0)))
	am, as := quantizeMultiplier(float64(aq.s(0)) / twiceMax)
	bm, bs := quantizeMultiplier(float64(bq.s(0)) / twiceMax)
	ym, ys := quantizeMultiplier(twiceMax / (float64(int64(1)<<leftShift) * float64(yq.s(0))))
	sub := n.OpType == "Sub"
	for i := range y {
		sa := mulByQuantizedMultiplier((int32(a[ai[i]])-az)*(1<<leftShift), am, as)
		sb := mulByQuantizedMultiplier((int32(b[bi[i]])-bz)*(1<<leftShift), bm, bs)
		sum := sa + sb
		if sub {
			sum = sa - sb
		}
		y[i] = clamp8(mulByQuantizedMultiplier(sum, ym, ys)+yz, lo, hi)
	}
	return ctx.Outputs(out), nil
}

// pool is int8 AveragePool2D and MaxPool2D over NHWC windows that exclude
// padding; input and output share their quantization.
func pool(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x, xt, err := int8Input(n, in, 0, "x")
	if err != nil {
		return nil, err
	}
	if len(xt.Shape) != 4 {
		return nil, kernels.Invalidf(n, "x %v must be 4-D", xt.Shape)
	}
	yq, err := readParams(n, in, 3, 0, "y")
	if err != nil {
		return nil, err
	}
	k, err := ints(n, "kernel_shape", nil, 2)
	if err != nil {
		return nil, err
	}
	st, err := ints(n, "strides", []int64{1, 1}, 2)
	if err != nil {
		return nil, err
	}
	pd, err := ints(n, "pads", []int64{0, 0, 0, 0}, 4)
	if err != nil {
		return nil, err
	}
	if k[0] < 1 || k[1] < 1 || st[0] < 1 || st[1] < 1 {
		return nil, kernels.Invalidf(n, "kernel %v and strides %v must be positive", k, st)
	}
	N, H, W, C := xt.Shape[0], xt.Shape[1], xt.Shape[2], xt.Shape[3]
	OH, OW := (H+pd[0]+pd[2]-k[0])/st[0]+1, (W+pd[1]+pd[3]-k[1])/st[1]+1
	if OH < 1 || OW < 1 {
		return nil, kernels.Invalidf(n, "window larger than the padded input")
	}
	lo, hi, err := actRange(n, yq)
	if err != nil {
		return nil, err
	}
	out, err := ctx.New(graph.Int8, []int{N, OH, OW, C})
	if err != nil {
		return nil, err
	}
	y := out.Data.([]int8)
	isMax := n.OpType == "MaxPool2D"
	for b := 0; b < N; b++ {
		for oy := 0; oy < OH; oy++ {
			y0, y1 := max(oy*st[0]-pd[0], 0), min(oy*st[0]-pd[0]+k[0], H)
			for ox := 0; ox < OW; ox++ {
				x0, x1 := max(ox*st[1]-pd[1], 0), min(ox*st[1]-pd[1]+k[1], W)
				for c := 0; c < C; c++ {
					sum, mx, cnt := int32(0), int32(-128), int32(0)
					for iy := y0; iy < y1; iy++ {
						for ix := x0; ix < x1; ix++ {
							v := int32(x[((b*H+iy)*W+ix)*C+c])
							sum += v
							mx = max(mx, v)
							cnt++
						}
					}
					var r int32
					switch {
					case isMax:
						r = mx
					case cnt == 0:
						r = 0
					case sum > 0:
						r = (sum + cnt/2) / cnt
					default:
						r = (sum - cnt/2) / cnt
					}
					y[((b*OH+oy)*OW+ox)*C+c] = clamp8(r, lo, hi)
				}
			}
		}
	}
	return ctx.Outputs(out), nil
}

// mean is int8 Mean (see the package doc for the two TFLite paths).
func mean(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x, xt, err := int8Input(n, in, 0, "x")
	if err != nil {
		return nil, err
	}
	xq, err := readParams(n, in, 1, 0, "x")
	if err != nil {
		return nil, err
	}
	yq, err := readParams(n, in, 3, 0, "y")
	if err != nil {
		return nil, err
	}
	rank := len(xt.Shape)
	red := make([]bool, rank)
	for _, a := range n.AttrInts("axes", nil) {
		ax, err := kernels.NormAxis(a, rank)
		if err != nil {
			return nil, kernels.Invalidf(n, "%v", err)
		}
		red[ax] = true
	}
	keep := n.AttrInt("keepdims", 0) != 0
	var shape, kshape []int
	count := 1
	for i, d := range xt.Shape {
		if red[i] {
			count *= d
			kshape = append(kshape, 1)
			if keep {
				shape = append(shape, 1)
			}
			continue
		}
		kshape = append(kshape, d)
		shape = append(shape, d)
	}
	if shape == nil {
		shape = []int{}
	}
	out, err := ctx.New(graph.Int8, shape)
	if err != nil {
		return nil, err
	}
	y := out.Data.([]int8)
	sums := make([]int32, len(y))
	idx := kernels.BroadcastIndex(xt.Shape, kshape) // x element -> output element
	xz, yz := xq.z(0), yq.z(0)
	integer := rank == 4 && red[1] && red[2] && !red[0] && !red[3]
	for i, v := range x {
		if integer {
			sums[idx[i]] += int32(v) - xz
		} else {
			sums[idx[i]] += int32(v)
		}
	}
	if count == 0 {
		return ctx.Outputs(out), nil
	}
	if integer {
		m, s := quantizeMultiplier(float64(xq.s(0)) / float64(yq.s(0)))
		c := int32(count)
		for i, acc := range sums {
			acc = mulByQuantizedMultiplier(acc, m, s)
			if acc > 0 {
				acc = (acc + c/2) / c
			} else {
				acc = (acc - c/2) / c
			}
			y[i] = clamp8(acc+yz, -128, 127)
		}
		return ctx.Outputs(out), nil
	}
	scale := xq.s(0) / yq.s(0)
	bias := -float32(xz) * scale
	for i, acc := range sums {
		fm := float32(acc) / float32(count)
		r := float32(math.Round(float64(fm*scale+bias))) + float32(yz)
		y[i] = int8(min(max(r, -128), 127))
	}
	return ctx.Outputs(out), nil
}

// softmax is TFLite's fixed-point int8 Softmax over the last axis.
func softmax(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x, xt, err := int8Input(n, in, 0, "x")
	if err != nil {
		return nil, err
	}
	xq, err := readParams(n, in, 1, 0, "x")
	if err != nil {
		return nil, err
	}
	if _, err := readParams(n, in, 3, 0, "y"); err != nil {
		return nil, err
	}
	if len(xt.Shape) == 0 {
		return nil, kernels.Invalidf(n, "x must have rank ≥ 1")
	}
	beta := float64(n.AttrFloat("beta", 1))
	const scaledDiffBits = 5
	const accumBits = 12
	real := min(beta*float64(xq.s(0))*float64(int64(1)<<(31-scaledDiffBits)), float64(int64(1)<<31)-1)
	qm, ls := quantizeMultiplier(real)
	if ls < 0 {
		// QuantizeMultiplierGreaterThanOne requires a multiplier ≥ 1
		return nil, kernels.Unsupportedf(n, "beta·scale %g is too small for the fixed-point softmax", beta*float64(xq.s(0)))
	}
	diffMin := -inputRadius(scaledDiffBits, ls, 31)
	out, err := ctx.New(graph.Int8, xt.Shape)
	if err != nil {
		return nil, err
	}
	y := out.Data.([]int8)
	depth := xt.Shape[len(xt.Shape)-1]
	if depth == 0 {
		return ctx.Outputs(out), nil
	}
	for r := 0; r < len(x)/depth; r++ {
		row := x[r*depth : (r+1)*depth]
		mx := int32(-128)
		for _, v := range row {
			mx = max(mx, int32(v))
		}
		sum := int32(0)
		for _, v := range row {
			d := int32(v) - mx
			if d >= diffMin {
				sum += mulByPOT(expOnNegativeValues(srdhm(d*(int32(1)<<ls), qm), scaledDiffBits), -accumBits)
			}
		}
		scale, overUnit := reciprocal(sum, accumBits)
		for k, v := range row {
			d := int32(v) - mx
			o := int32(-128)
			if d >= diffMin {
				e := expOnNegativeValues(srdhm(d*(int32(1)<<ls), qm), scaledDiffBits)
				o = rdbypot(srdhm(scale, e), overUnit+31-8) - 128
			}
			y[r*depth+k] = clamp8(o, -128, 127)
		}
	}
	return ctx.Outputs(out), nil
}

func quantize(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	xt := kernels.Input(in, 0)
	if err := kernels.CheckInput(n, xt, "x"); err != nil {
		return nil, err
	}
	x, ok := xt.Data.([]float32)
	if !ok {
		return nil, kernels.Unsupportedf(n, "x must be float32, got %v", xt.DType)
	}
	yq, err := readParams(n, in, 1, 0, "y")
	if err != nil {
		return nil, err
	}
	out, err := ctx.New(graph.Int8, xt.Shape)
	if err != nil {
		return nil, err
	}
	y := out.Data.([]int8)
	for i, v := range x {
		y[i] = quantizeRound(v, yq.s(0), yq.z(0))
	}
	return ctx.Outputs(out), nil
}

func dequantize(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x, xt, err := int8Input(n, in, 0, "x")
	if err != nil {
		return nil, err
	}
	xq, err := readParams(n, in, 1, 0, "x")
	if err != nil {
		return nil, err
	}
	out, err := ctx.New(graph.Float32, xt.Shape)
	if err != nil {
		return nil, err
	}
	y := out.Data.([]float32)
	s, z := float64(xq.s(0)), xq.z(0)
	for i, v := range x {
		y[i] = float32(s * float64(int32(v)-z))
	}
	return ctx.Outputs(out), nil
}

// logistic is the int8 reference Logistic of TFLite (Micro): x − xz
// scaled by xs·2^27 into Q4.27 (inputs beyond the radius saturate to
// −128 / 127), gemmlowp's fixed-point logistic, then divided by 2^23 with
// rounding and offset by −128 (output scale 1/256, zero point −128).
func logistic(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	return fixedTranscendental(ctx, n, in, false)
}

// tanh is TFLite Micro's int8 reference Tanh (reference_integer_ops::Tanh):
// (x−xz) into Q4.27 by the multiplier xs·2^27 (saturating to ±127
// beyond the input radius), gemmlowp's fixed-point tanh, divided by 2^24
// with rounding (ties away from zero) and clamped; output scale 1/128 and
// zero point 0 expected, as TFLite requires.
func tanh(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	return fixedTranscendental(ctx, n, in, true)
}

// fixedTranscendental is Logistic (isTanh false) or Tanh.
func fixedTranscendental(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor, isTanh bool) ([]*graph.Tensor, error) {
	x, xt, err := int8Input(n, in, 0, "x")
	if err != nil {
		return nil, err
	}
	xq, err := readParams(n, in, 1, 0, "x")
	if err != nil {
		return nil, err
	}
	if _, err := readParams(n, in, 3, 0, "y"); err != nil {
		return nil, err
	}
	const inBits = 4
	qm, ls := quantizeMultiplier(float64(xq.s(0)) * float64(int64(1)<<(31-inBits)))
	if ls < 0 || ls > 30 {
		return nil, kernels.Unsupportedf(n, "input scale %g is outside the fixed-point %s's range", xq.s(0), n.OpType)
	}
	radius := inputRadius(inBits, ls, 31)
	out, err := ctx.New(graph.Int8, xt.Shape)
	if err != nil {
		return nil, err
	}
	y := out.Data.([]int8)
	xz := xq.z(0)
	for i, v := range x {
		d := int32(v) - xz
		switch {
		case d <= -radius:
			y[i] = -128
		case d >= radius:
			y[i] = 127
		default:
			q4 := mulByQuantizedMultiplier(d, qm, ls)
			if isTanh {
				y[i] = clamp8(rdbypot(tanhQ0(q4, inBits), 31-7), -128, 127)
			} else {
				y[i] = clamp8(rdbypot(logisticQ0(q4, inBits), 31-8)-128, -128, 127)
			}
		}
	}
	return ctx.Outputs(out), nil
}
