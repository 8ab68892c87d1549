package vision

import (
	visionops "github.com/switchyard-hal/switchyard/core/ops/vision"

	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.RegisterKernel("", "LpPool", lpPoolKernel)
	kernels.RegisterKernel("", "MaxUnpool", maxUnpoolKernel)
}

func lpPoolKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if x == nil {
		return nil, kernels.Invalidf(n, "input X is required")
	}
	if len(x.Shape) < 3 {
		return nil, kernels.Invalidf(n, "X must have rank >= 3, got shape %v", x.Shape)
	}
	sp := x.Shape[2:]
	p, err := visionops.PlanLpPool(n, ctx.Opset, sp)
	if err != nil {
		return nil, kernels.Errorf(n, "%w", err)
	}
	outShape := append([]int{x.Shape[0], x.Shape[1]}, p.Out...)
	if _, err := checkScratch(outShape); err != nil {
		return nil, kernels.Errorf(n, "%w", err)
	}
	nd := len(sp)
	planes := x.Shape[0] * x.Shape[1]
	inSize, outSize := kernels.Prod(sp), kernels.Prod(p.Out)
	// Per axis, the input index of each (output, kernel tap), -1 in padding.
	taps := make([][]int, nd)
	for a := 0; a < nd; a++ {
		k := p.W.Kernel[a]
		if _, err := graph.CheckAlloc(graph.Int64, []int{p.Out[a], k}); err != nil {
			return nil, kernels.Errorf(n, "%w", err)
		}
		taps[a] = make([]int, p.Out[a]*k)
		for o := 0; o < p.Out[a]; o++ {
			for t := 0; t < k; t++ {
				i := o*p.W.Strides[a] - p.W.Pads[a] + t*p.W.Dilations[a]
				if i < 0 || i >= sp[a] {
					i = -1
				}
				taps[a][o*k+t] = i
			}
		}
	}
	inStr := kernels.Strides(sp)
	// flat offsets of every in-range tap of each output position
	var offs []int
	var rec func(a int, oc []int, base int)
	rec = func(a int, oc []int, base int) {
		if a == nd {
			offs = append(offs, base)
			return
		}
		k := p.W.Kernel[a]
		for t := 0; t < k; t++ {
			if i := taps[a][oc[a]*k+t]; i >= 0 {
				rec(a+1, oc, base+i*inStr[a])
			}
		}
	}
	xv := x.Float64s()
	yv := make([]float64, planes*outSize)
	pw := p.P
	inv := 1 / pw
	oi := 0
	for c := newCounter(p.Out); !c.done; c.next() {
		offs = offs[:0]
		rec(0, c.idx, 0)
		for pl := 0; pl < planes; pl++ {
			xs := xv[pl*inSize : (pl+1)*inSize]
			s := 0.0
			for _, at := range offs {
				v := math.Abs(xs[at])
				switch pw {
				case 1:
					s += v
				case 2:
					s += v * v
				default:
					s += math.Pow(v, pw)
				}
			}
			var r float64
			switch pw {
			case 1:
				r = s
			case 2:
				r = math.Sqrt(s)
			default:
				r = math.Pow(s, inv)
			}
			yv[pl*outSize+oi] = r
		}
		oi++
	}
	out, err := newFromFloat64(ctx, x.DType, outShape, yv)
	if err != nil {
		return nil, err
	}
	return ctx.Outputs(out), nil
}

func maxUnpoolKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x, idx := kernels.Input(in, 0), kernels.Input(in, 1)
	if x == nil || idx == nil {
		return nil, kernels.Invalidf(n, "X and I are required")
	}
	if idx.DType != graph.Int64 || !graph.SameShape(idx.Shape, x.Shape) {
		return nil, kernels.Invalidf(n, "I must be int64 with X's shape %v, got %v%v", x.Shape, idx.DType, idx.Shape)
	}
	os := kernels.Input(in, 2)
	inferred, err := visionops.UnpoolShape(n, x.Shape, os != nil)
	if err != nil {
		return nil, kernels.Errorf(n, "%w", err)
	}
	shape := inferred
	if os != nil {
		if !os.DType.IsInteger() || len(os.Shape) != 1 || os.Len() != len(x.Shape) {
			return nil, kernels.Invalidf(n, "output_shape must be a 1-D integer tensor of %d values, got %v%v", len(x.Shape), os.DType, os.Shape)
		}
		shape = nil
		for i, v := range os.Int64s() {
			if v < int64(inferred[i]) || v > 1<<40 {
				return nil, kernels.Invalidf(n, "output_shape %v is out of range (it must not be smaller than the inferred shape %v)", os.Int64s(), inferred)
			}
			shape = append(shape, int(v))
		}
	}
	out, err := ctx.New(x.DType, shape)
	if err != nil {
		return nil, err
	}
	// I holds flat indices into the inferred output shape (as MaxPool's
	// Indices output does for its input); with output_shape that result is
	// placed at the start of every axis of the larger output, zero-filled.
	iv := graph.Data[int64](idx)
	total := int64(kernels.Prod(inferred))
	src := make([]int, out.Len())
	for i := range src {
		src[i] = -1
	}
	inStr, outStr := kernels.Strides(inferred), kernels.Strides(shape)
	for i, j := range iv {
		if j < 0 || j >= total {
			return nil, kernels.Invalidf(n, "index %d at position %d is outside the inferred output of %d elements", j, i, total)
		}
		at, rem := 0, int(j)
		for a := range inStr {
			at += rem / inStr[a] * outStr[a]
			rem %= inStr[a]
		}
		src[at] = i
	}
	kernels.Gather(out.Data, x.Data, src)
	return ctx.Outputs(out), nil
}
