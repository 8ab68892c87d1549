package quant

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

// conv is Conv2D (filter OHWI, grouped when the filter has fewer input
// channels than x) and DepthwiseConv2D (filter 1HWC, output channel
// ic·m+k reads input channel ic), NHWC, TFLite's ConvPerChannel and
// DepthwiseConvPerChannel: acc = bias + Σ (w−wz)(x−xz) over the window
// (padding contributes nothing), requantised per output channel.
func conv(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor, depthwise bool) ([]*graph.Tensor, error) {
	x, xt, err := int8Input(n, in, 0, "x")
	if err != nil {
		return nil, err
	}
	w, wt, err := int8Input(n, in, 3, "w")
	if err != nil {
		return nil, err
	}
	if len(xt.Shape) != 4 || len(wt.Shape) != 4 {
		return nil, kernels.Invalidf(n, "x %v and w %v must be 4-D", xt.Shape, wt.Shape)
	}
	N, H, W, C := xt.Shape[0], xt.Shape[1], xt.Shape[2], xt.Shape[3]
	KH, KW := wt.Shape[1], wt.Shape[2]
	var cout, wc, group, mult int
	if depthwise {
		cout = wt.Shape[3]
		if wt.Shape[0] != 1 || C == 0 || cout%C != 0 {
			return nil, kernels.Invalidf(n, "depthwise filter %v does not fit %d input channels", wt.Shape, C)
		}
		mult = cout / C
	} else {
		cout, wc = wt.Shape[0], wt.Shape[3]
		if wc == 0 || C%wc != 0 || cout%(C/wc) != 0 {
			return nil, kernels.Invalidf(n, "filter %v does not fit %d input channels", wt.Shape, C)
		}
		group = C / wc
	}
	l, bias, err := linearQuant(ctx, n, in, cout, false)
	if err != nil {
		return nil, err
	}
	st, err := ints(n, "strides", []int64{1, 1}, 2)
	if err != nil {
		return nil, err
	}
	dl, err := ints(n, "dilations", []int64{1, 1}, 2)
	if err != nil {
		return nil, err
	}
	pd, err := ints(n, "pads", []int64{0, 0, 0, 0}, 4)
	if err != nil {
		return nil, err
	}
	if st[0] < 1 || st[1] < 1 || dl[0] < 1 || dl[1] < 1 {
		return nil, kernels.Invalidf(n, "strides %v and dilations %v must be positive", st, dl)
	}
	OH := (H+pd[0]+pd[2]-((KH-1)*dl[0]+1))/st[0] + 1
	OW := (W+pd[1]+pd[3]-((KW-1)*dl[1]+1))/st[1] + 1
	if OH < 1 || OW < 1 {
		return nil, kernels.Invalidf(n, "window larger than the padded input")
	}
	out, err := ctx.New(graph.Int8, []int{N, OH, OW, cout})
	if err != nil {
		return nil, err
	}
	y := out.Data.([]int8)
	xz, yz, lo, hi, requant := l.xz, l.yz, l.lo, l.hi, l.requant
	mq, ms, wz := l.mq, l.ms, l.wz
	acc := make([]int32, cout)
	xv := make([]int32, C)
	perGroup := 0
	if !depthwise {
		perGroup = cout / group
	}
	for b := 0; b < N; b++ {
		if ctx.Stopped() {
			return nil, ctx.Stop(n)
		}
		for oy := 0; oy < OH; oy++ {
			for ox := 0; ox < OW; ox++ {
				if bias != nil {
					copy(acc, bias)
				} else {
					clear(acc)
				}
				for ky := 0; ky < KH; ky++ {
					iy := oy*st[0] - pd[0] + ky*dl[0]
					if iy < 0 || iy >= H {
						continue
					}
					for kx := 0; kx < KW; kx++ {
						ix := ox*st[1] - pd[1] + kx*dl[1]
						if ix < 0 || ix >= W {
							continue
						}
						xo := ((b*H+iy)*W + ix) * C
						for c := 0; c < C; c++ {
							xv[c] = int32(x[xo+c]) - xz
						}
						if depthwise {
							wo := (ky*KW + kx) * cout
							for ic := 0; ic < C; ic++ {
								for m := 0; m < mult; m++ {
									oc := ic*mult + m
									acc[oc] += (int32(w[wo+oc]) - wz[oc]) * xv[ic]
								}
							}
							continue
						}
						for oc := 0; oc < cout; oc++ {
							wo := ((oc*KH+ky)*KW + kx) * wc
							g0 := (oc / perGroup) * wc
							wr := w[wo : wo+wc]
							xr := xv[g0 : g0+wc]
							s := int32(0)
							zw := wz[oc]
							for k, wvv := range wr {
								s += (int32(wvv) - zw) * xr[k]
							}
							acc[oc] += s
						}
					}
				}
				yo := ((b*OH+oy)*OW + ox) * cout
				for oc := 0; oc < cout; oc++ {
					v := requant(acc[oc], mq[oc], ms[oc]) + yz
					y[yo+oc] = clamp8(v, lo, hi)
				}
			}
		}
	}
	return ctx.Outputs(out), nil
}

// fullyConnected is TFLite's int8 FullyConnected: x is read as rows of
// w's input size; acc = bias + Σ (w−wz)(x−xz), requantised (per tensor:
// float64(float32(xs·ws))/ys; per output channel: xs·ws[c]/ys in float64).
func fullyConnected(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x, xt, err := int8Input(n, in, 0, "x")
	if err != nil {
		return nil, err
	}
	w, wt, err := fcWeights(ctx, n, in)
	if err != nil {
		return nil, err
	}
	if len(wt.Shape) != 2 || wt.Shape[1] == 0 {
		return nil, kernels.Invalidf(n, "weights %v must be [units, depth]", wt.Shape)
	}
	units, depth := wt.Shape[0], wt.Shape[1]
	if len(x)%depth != 0 {
		return nil, kernels.Invalidf(n, "x %v does not divide into rows of %d", xt.Shape, depth)
	}
	rows := len(x) / depth
	l, bias, err := linearQuant(ctx, n, in, units, true)
	if err != nil {
		return nil, err
	}
	shape := l.shape
	if shape == nil {
		shape = []int{rows, units}
	} else if l.size != rows*units {
		return nil, kernels.Invalidf(n, "output_shape %v does not hold %d×%d values", shape, rows, units)
	}
	out, err := ctx.NewUninit(graph.Int8, shape)
	if err != nil {
		return nil, err
	}
	y := out.Data.([]int8)
	xz, yz, lo, hi := l.xz, l.yz, l.lo, l.hi
	mq, ms, wz, ls, rs := l.mq[:units], l.ms[:units], l.wz[:units], l.ls[:units], l.rs[:units]
	if f := l.fold; f != nil && !l.halfUp && f.w == wt && f.b == kernels.Input(in, 8) && ctx.IsConst(3) && (f.b == nil || ctx.IsConst(8)) {
		fcFolded(f, w, x, y, units, depth, mq, wz, ls, rs, yz, lo, hi)
		return ctx.Outputs(out), nil
	}
	for r := 0; r < rows; r++ {
		xr := x[r*depth : (r+1)*depth]
		yr := y[r*units : (r+1)*units]
		for u := range yr {
			acc := dotQ8(w[u*depth:(u+1)*depth], xr, wz[u], xz)
			if bias != nil {
				acc += bias[u]
			}
			var v int32
			if l.halfUp {
				v = mulByQuantizedMultiplierHalfUp(acc, mq[u], ms[u])
			} else {
				v = requantAway(acc, mq[u], ls[u], rs[u])
			}
			yr[u] = clamp8(v+yz, lo, hi)
		}
	}
	return ctx.Outputs(out), nil
}

// fcFolded is fullyConnected's rounding-away path on folded zero points
// and bias (fcFold): the same int32 accumulators, fewer operations.
func fcFolded(f *fcFold, w, x, y []int8, units, depth int, mq, wz []int32, ls, rs []uint, yz, lo, hi int32) {
	off := f.off[:units]
	if f.wp != nil && units <= fcSmallUnits && len(f.rq) >= units {
		fcSmall(f, x, y, units, depth, wz, yz, lo, hi)
		return
	}
	if f.wt != nil && units <= fcSmallUnits && len(f.rq) >= units {
		fcSmallT(f, f.wt, x, y, units, depth, wz, yz, lo, hi)
		return
	}
	for r := 0; r*depth < len(x); r++ {
		xr := x[r*depth : (r+1)*depth]
		yr := y[r*units : (r+1)*units]
		var sx int32
		if f.anyWZ {
			for _, v := range xr {
				sx += int32(v)
			}
		}
		for u := range yr {
			acc := dotI8(w[u*depth:(u+1)*depth], xr) + off[u] - wz[u]*sx
			yr[u] = clamp8(requantAway31(acc, mq[u], ls[u], rs[u])+yz, lo, hi)
		}
	}
}

// requantAway31 is requantAway for shifts below 32 (foldFC checks it):
// the shifts are masked, so the compiler leaves out the handling of
// larger ones.
func requantAway31(x, q int32, left, right uint) int32 {
	ab := int64(x<<(left&31)) * int64(q)
	nudge := int64(1 << 30)
	if ab < 0 {
		nudge = 1 - (1 << 30)
	}
	v := int32((ab + nudge) / (1 << 31))
	right &= 31
	mask := int32(1)<<right - 1
	threshold := mask>>1 - v>>31 // +1 for a negative v
	r := v >> right
	if v&mask > threshold {
		r++
	}
	return r
}

// dotI8 is Σ w·x over w (x at least as long), in wrapping int32.
func dotI8(w, x []int8) int32 {
	x = x[:len(w)]
	var a0, a1, a2, a3 int32
	k := 0
	for ; k+4 <= len(w); k += 4 {
		a0 += int32(w[k]) * int32(x[k])
		a1 += int32(w[k+1]) * int32(x[k+1])
		a2 += int32(w[k+2]) * int32(x[k+2])
		a3 += int32(w[k+3]) * int32(x[k+3])
	}
	for ; k < len(w); k++ {
		a0 += int32(w[k]) * int32(x[k])
	}
	return a0 + a1 + a2 + a3
}

// dotQ8 is Σ (w−wz)(x−xz) over w (x at least as long), in int32 as
// TFLite accumulates (wrapping on overflow as its int32 does).
func dotQ8(w, x []int8, wz, xz int32) int32 {
	x = x[:len(w)]
	var a0, a1, a2, a3 int32
	k := 0
	for ; k+4 <= len(w); k += 4 {
		a0 += (int32(w[k]) - wz) * (int32(x[k]) - xz)
		a1 += (int32(w[k+1]) - wz) * (int32(x[k+1]) - xz)
		a2 += (int32(w[k+2]) - wz) * (int32(x[k+2]) - xz)
		a3 += (int32(w[k+3]) - wz) * (int32(x[k+3]) - xz)
	}
	for ; k < len(w); k++ {
		a0 += (int32(w[k]) - wz) * (int32(x[k]) - xz)
	}
	return a0 + a1 + a2 + a3
}

// linearParams are the quantisation of a quantised convolution's or fully
// connected layer's x (input 1), weights (4, per output channel of the
// channels) and y (6), and its int32 bias (input 8; nil when absent).
func linearParams(n *graph.Node, in []*graph.Tensor, channels int) (xq, wq, yq params, bias []int32, err error) {
	if xq, err = readParams(n, in, 1, 0, "x"); err != nil {
		return
	}
	if wq, err = readParams(n, in, 4, channels, "w"); err != nil {
		return
	}
	if yq, err = readParams(n, in, 6, 0, "y"); err != nil {
		return
	}
	bias, err = linearBias(n, in, channels)
	return xq, wq, yq, bias, err
}
