package vision

import (
	"math"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.Register(kernels.Schema{
		OpType: "LpPool", MinOpset: 1,
		MinInputs: 1, MaxInputs: 1,
		Types:  floatTypes,
		Kernel: lpPoolKernel,
		Infer:  padInfer(3, lpPoolInfer),
	})
	kernels.Register(kernels.Schema{
		OpType: "MaxUnpool", MinOpset: 9,
		MinInputs: 2, MaxInputs: 3,
		Types:  floatTypes,
		Kernel: maxUnpoolKernel,
		Infer:  padInfer(3, maxUnpoolInfer),
	})
}

// lpPoolPlan is a validated LpPool node for input spatial dims.
type lpPoolPlan struct {
	w   window
	out []int
	p   float64
}

func planLpPool(n *graph.Node, opset int64, in []int) (*lpPoolPlan, error) {
	nd := len(in)
	ks := n.AttrInts("kernel_shape", nil)
	if ks == nil {
		return nil, errInvalid("kernel_shape is required")
	}
	kernel, err := readInts(n, "kernel_shape", nd, 1, 1)
	if err != nil {
		return nil, err
	}
	w, err := readWindow(n, kernel)
	if err != nil {
		return nil, err
	}
	ceil := false
	if opset >= 18 {
		ceil = n.AttrInt("ceil_mode", 0) != 0
	} else {
		for i := range w.dilations {
			w.dilations[i] = 1
		}
	}
	out, err := w.outSizes(in, n.AttrString("auto_pad", "NOTSET"), ceil)
	if err != nil {
		return nil, err
	}
	p := float64(n.AttrFloat("p", 2))
	if !(p > 0) || math.IsInf(p, 0) {
		return nil, errInvalid("p must be positive and finite, got %v", p)
	}
	return &lpPoolPlan{w: w, out: out, p: p}, nil
}

func lpPoolInfer(n *graph.Node, opset int64, in []kernels.InferInput) ([]graph.ValueType, error) {
	xs := in[0].Type.Shape
	vt := graph.ValueType{Kind: "tensor", DType: in[0].Type.DType}
	if xs == nil {
		return []graph.ValueType{vt}, nil
	}
	if len(xs) < 3 {
		return nil, kernels.Invalidf(n, "input must have rank >= 3, got %v", xs)
	}
	vt.Shape = append(graph.Shape{xs[0], xs[1]}, unknownDims(len(xs)-2)...)
	if sp, ok := staticInts(xs[2:]); ok {
		p, err := planLpPool(n, opset, sp)
		if err != nil {
			return nil, kernels.Errorf(n, "%w", err)
		}
		for i, o := range p.out {
			vt.Shape[2+i] = graph.Dim{Value: int64(o)}
		}
	}
	return []graph.ValueType{vt}, nil
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
	p, err := planLpPool(n, ctx.Opset, sp)
	if err != nil {
		return nil, kernels.Errorf(n, "%w", err)
	}
	outShape := append([]int{x.Shape[0], x.Shape[1]}, p.out...)
	if _, err := checkScratch(outShape); err != nil {
		return nil, kernels.Errorf(n, "%w", err)
	}
	nd := len(sp)
	planes := x.Shape[0] * x.Shape[1]
	inSize, outSize := kernels.Prod(sp), kernels.Prod(p.out)
	// Per axis, the input index of each (output, kernel tap), -1 in padding.
	taps := make([][]int, nd)
	for a := 0; a < nd; a++ {
		k := p.w.kernel[a]
		if _, err := graph.CheckAlloc(graph.Int64, []int{p.out[a], k}); err != nil {
			return nil, kernels.Errorf(n, "%w", err)
		}
		taps[a] = make([]int, p.out[a]*k)
		for o := 0; o < p.out[a]; o++ {
			for t := 0; t < k; t++ {
				i := o*p.w.strides[a] - p.w.pads[a] + t*p.w.dilations[a]
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
		k := p.w.kernel[a]
		for t := 0; t < k; t++ {
			if i := taps[a][oc[a]*k+t]; i >= 0 {
				rec(a+1, oc, base+i*inStr[a])
			}
		}
	}
	xv := x.Float64s()
	yv := make([]float64, planes*outSize)
	pw := p.p
	inv := 1 / pw
	oi := 0
	for c := newCounter(p.out); !c.done; c.next() {
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
	return []*graph.Tensor{out}, nil
}

// unpoolShape is MaxUnpool's inferred output shape for input shape xs
// (noPads ignores the pads attribute, as when output_shape is given).
func unpoolShape(n *graph.Node, xs []int, noPads bool) ([]int, error) {
	nd := len(xs) - 2
	if nd < 1 {
		return nil, errInvalid("X must have rank >= 3, got shape %v", xs)
	}
	if n.AttrInts("kernel_shape", nil) == nil {
		return nil, errInvalid("kernel_shape is required")
	}
	kernel, err := readInts(n, "kernel_shape", nd, 1, 1)
	if err != nil {
		return nil, err
	}
	w, err := readWindow(n, kernel)
	if err != nil {
		return nil, err
	}
	if noPads {
		clear(w.pads)
	}
	out := []int{xs[0], xs[1]}
	for i := 0; i < nd; i++ {
		d := (xs[2+i]-1)*w.strides[i] + kernel[i] - w.pads[i] - w.pads[nd+i]
		if d < 0 {
			return nil, errInvalid("pads %v leave a negative output size on spatial dim %d", w.pads, i)
		}
		out = append(out, d)
	}
	return out, nil
}

func maxUnpoolInfer(n *graph.Node, opset int64, in []kernels.InferInput) ([]graph.ValueType, error) {
	vt := graph.ValueType{Kind: "tensor", DType: in[0].Type.DType}
	if n.Input(2) != "" {
		if c := in[2].Const; c != nil {
			vt.Shape = graph.Shape{}
			for _, v := range c.Int64s() {
				vt.Shape = append(vt.Shape, graph.Dim{Value: v})
			}
		} else if s := in[2].Type.Shape; len(s) == 1 && s[0].Static() && s[0].Value <= 64 {
			vt.Shape = unknownDims(int(s[0].Value))
		}
		return []graph.ValueType{vt}, nil
	}
	xs := in[0].Type.Shape
	if xs == nil {
		return []graph.ValueType{vt}, nil
	}
	if len(xs) < 3 {
		return nil, kernels.Invalidf(n, "X must have rank >= 3, got %v", xs)
	}
	vt.Shape = append(graph.Shape{xs[0], xs[1]}, unknownDims(len(xs)-2)...)
	if sp, ok := staticInts(xs); ok {
		o, err := unpoolShape(n, sp, false)
		if err != nil {
			return nil, kernels.Errorf(n, "%w", err)
		}
		for i := 2; i < len(o); i++ {
			vt.Shape[i] = graph.Dim{Value: int64(o[i])}
		}
	}
	return []graph.ValueType{vt}, nil
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
	inferred, err := unpoolShape(n, x.Shape, os != nil)
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
	gatherAny(out.Data, x.Data, src)
	return []*graph.Tensor{out}, nil
}
