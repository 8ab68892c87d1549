package shape

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.Register(kernels.Schema{OpType: "Reshape", MinOpset: 1, MinInputs: 1, MaxInputs: 2, Kernel: reshapeKernel, Infer: reshapeInfer})
	kernels.Register(kernels.Schema{OpType: "Flatten", MinOpset: 1, MinInputs: 1, MaxInputs: 1, Kernel: flattenKernel, Infer: flattenInfer})
	kernels.Register(kernels.Schema{OpType: "Squeeze", MinOpset: 1, MinInputs: 1, MaxInputs: 2, Kernel: squeezeKernel, Infer: squeezeInfer})
	kernels.Register(kernels.Schema{OpType: "Unsqueeze", MinOpset: 1, MinInputs: 1, MaxInputs: 2, Kernel: unsqueezeKernel, Infer: unsqueezeInfer})
	kernels.Register(kernels.Schema{OpType: "Identity", MinOpset: 1, MinInputs: 1, MaxInputs: 1, Kernel: identityKernel, Infer: kernels.SameAsInput})
	kernels.Register(kernels.Schema{OpType: "Dropout", MinOpset: 1, MinInputs: 1, MaxInputs: 3, MinOutputs: 1, MaxOutputs: 2, Types: kernels.FloatTypes, Kernel: dropoutKernel, Infer: dropoutInfer})
}

// ---- Reshape ----

// reshapeTarget returns the requested shape: the "shape" attribute before
// opset 5, the second input from opset 5.
func reshapeTarget(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]int64, error) {
	if ctx.Opset < 5 {
		a := n.Attr("shape")
		if a == nil {
			return nil, kernels.Invalidf(n, "missing shape attribute")
		}
		return n.AttrInts("shape", nil), nil
	}
	return intsInput(n, kernels.Input(in, 1), "shape")
}

// resolveReshape applies Reshape's 0 / -1 rules to a concrete input shape.
func resolveReshape(n *graph.Node, inShape []int, target []int64, allowZero bool) ([]int, error) {
	out := make([]int, len(target))
	neg, hasZero := -1, false
	prod := int64(1)
	for i, v := range target {
		switch {
		case v == -1:
			if neg >= 0 {
				return nil, kernels.Invalidf(n, "shape %v has more than one -1", target)
			}
			neg = i
			continue
		case v < -1:
			return nil, kernels.Invalidf(n, "shape %v has invalid dimension %d", target, v)
		case v == 0 && !allowZero:
			if i >= len(inShape) {
				return nil, kernels.Invalidf(n, "shape %v copies dimension %d of a rank-%d input", target, i, len(inShape))
			}
			out[i] = inShape[i]
		default:
			if v == 0 {
				hasZero = true
			}
			if v > int64(graph.MaxTensorBytes) {
				return nil, kernels.Invalidf(n, "shape %v has too large dimension %d", target, v)
			}
			out[i] = int(v)
		}
		if d := int64(out[i]); d == 0 {
			prod = 0
		} else if prod > (1<<62)/d {
			return nil, kernels.Invalidf(n, "cannot reshape %v to %v", inShape, target)
		} else {
			prod *= d
		}
	}
	total, err := graph.NumElements(inShape)
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	if neg >= 0 {
		if hasZero {
			return nil, kernels.Invalidf(n, "shape %v has both 0 and -1 with allowzero=1", target)
		}
		if prod == 0 || int64(total)%prod != 0 {
			return nil, kernels.Invalidf(n, "cannot reshape %v to %v", inShape, target)
		}
		out[neg] = int(int64(total) / prod)
	}
	cnt, err := graph.NumElements(out)
	if err != nil || cnt != total {
		return nil, kernels.Invalidf(n, "cannot reshape %v (%d elements) to %v", inShape, total, target)
	}
	return out, nil
}

func reshapeKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := checkInput(n, x, "data"); err != nil {
		return nil, err
	}
	target, err := reshapeTarget(ctx, n, in)
	if err != nil {
		return nil, err
	}
	allowZero := ctx.Opset >= 14 && n.AttrInt("allowzero", 0) != 0
	shape, err := resolveReshape(n, x.Shape, target, allowZero)
	if err != nil {
		return nil, err
	}
	out, err := copyReshaped(ctx, n, x, shape)
	if err != nil {
		return nil, err
	}
	return []*graph.Tensor{out}, nil
}

func reshapeInfer(n *graph.Node, opset int64, in []kernels.InferInput) ([]graph.ValueType, error) {
	x := inType(in, 0)
	dt := x.DType
	var target []int64
	if opset < 5 {
		if !n.HasAttr("shape") {
			return []graph.ValueType{tensorType(dt, nil)}, nil
		}
		target = n.AttrInts("shape", nil)
	} else {
		t, ok := constInts(in, 1)
		if !ok {
			s := inType(in, 1).Shape
			if len(s) == 1 && s[0].Static() {
				return []graph.ValueType{tensorType(dt, unknownDims(int(s[0].Value)))}, nil
			}
			return []graph.ValueType{tensorType(dt, nil)}, nil
		}
		target = t
	}
	allowZero := opset >= 14 && n.AttrInt("allowzero", 0) != 0
	if ints, ok := x.Shape.Ints(); ok {
		s, err := resolveReshape(n, ints, target, allowZero)
		if err != nil {
			return nil, err
		}
		return []graph.ValueType{tensorType(dt, staticDims(s))}, nil
	}
	out := make(graph.Shape, len(target))
	neg := -1
	for i, v := range target {
		switch {
		case v == -1:
			if neg >= 0 {
				return nil, kernels.Invalidf(n, "shape %v has more than one -1", target)
			}
			neg = i
			out[i] = graph.Dim{Value: -1}
		case v < -1:
			return nil, kernels.Invalidf(n, "shape %v has invalid dimension %d", target, v)
		case v == 0 && !allowZero:
			if x.Shape != nil {
				if i >= len(x.Shape) {
					return nil, kernels.Invalidf(n, "shape %v copies dimension %d of a rank-%d input", target, i, len(x.Shape))
				}
				out[i] = x.Shape[i]
			} else {
				out[i] = graph.Dim{Value: -1}
			}
		default:
			out[i] = graph.Dim{Value: v}
		}
	}
	return []graph.ValueType{tensorType(dt, out)}, nil
}

// ---- Flatten ----

func flattenAxis(n *graph.Node, opset int64, rank int) (int, error) {
	axis := n.AttrInt("axis", 1)
	if axis < -int64(rank) || axis > int64(rank) {
		return 0, kernels.Invalidf(n, "axis %d out of range for rank %d", axis, rank)
	}
	if axis < 0 {
		axis += int64(rank)
	}
	return int(axis), nil
}

func flattenKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := checkInput(n, x, "input"); err != nil {
		return nil, err
	}
	axis, err := flattenAxis(n, ctx.Opset, x.Rank())
	if err != nil {
		return nil, err
	}
	out, err := copyReshaped(ctx, n, x, []int{kernels.Prod(x.Shape[:axis]), kernels.Prod(x.Shape[axis:])})
	if err != nil {
		return nil, err
	}
	return []*graph.Tensor{out}, nil
}

func flattenInfer(n *graph.Node, opset int64, in []kernels.InferInput) ([]graph.ValueType, error) {
	x := inType(in, 0)
	if x.Shape == nil {
		return []graph.ValueType{tensorType(x.DType, unknownDims(2))}, nil
	}
	axis, err := flattenAxis(n, opset, len(x.Shape))
	if err != nil {
		return nil, err
	}
	return []graph.ValueType{tensorType(x.DType, graph.Shape{dimProd(x.Shape[:axis]), dimProd(x.Shape[axis:])})}, nil
}

// ---- Squeeze / Unsqueeze ----

// axesArg reads "axes" from the attribute (before opset 13) or input 1.
// present is false when no axes were given.
func axesArg(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) (axes []int64, present bool, err error) {
	if ctx.Opset < 13 {
		if !n.HasAttr("axes") {
			return nil, false, nil
		}
		return n.AttrInts("axes", nil), true, nil
	}
	t := kernels.Input(in, 1)
	if t == nil {
		return nil, false, nil
	}
	a, err := intsInput(n, t, "axes")
	return a, err == nil, err
}

func inferAxesArg(n *graph.Node, opset int64, in []kernels.InferInput) (axes []int64, present, known bool) {
	if opset < 13 {
		if !n.HasAttr("axes") {
			return nil, false, true
		}
		return n.AttrInts("axes", nil), true, true
	}
	if n.Input(1) == "" {
		return nil, false, true
	}
	a, ok := constInts(in, 1)
	return a, true, ok
}

// squeezeMask marks the dims to remove; dims are the input's sizes, with -1
// for unknown ones (only used at inference).
func squeezeMask(n *graph.Node, opset int64, dims []int64, axes []int64, present bool) ([]bool, error) {
	rm := make([]bool, len(dims))
	if !present || len(axes) == 0 {
		for i, d := range dims {
			if d < 0 {
				return nil, nil // cannot decide
			}
			rm[i] = d == 1
		}
		return rm, nil
	}
	for _, a := range axes {
		ax, err := kernels.NormAxis(a, len(dims))
		if err != nil {
			return nil, kernels.Invalidf(n, "axes %v: %v", axes, err)
		}
		if rm[ax] {
			return nil, kernels.Invalidf(n, "axes %v has a duplicate", axes)
		}
		if dims[ax] >= 0 && dims[ax] != 1 {
			return nil, kernels.Invalidf(n, "cannot squeeze axis %d of size %d", a, dims[ax])
		}
		rm[ax] = true
	}
	return rm, nil
}

func squeezeKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := checkInput(n, x, "data"); err != nil {
		return nil, err
	}
	axes, present, err := axesArg(ctx, n, in)
	if err != nil {
		return nil, err
	}
	dims := make([]int64, x.Rank())
	for i, d := range x.Shape {
		dims[i] = int64(d)
	}
	rm, err := squeezeMask(n, ctx.Opset, dims, axes, present)
	if err != nil {
		return nil, err
	}
	shape := []int{}
	for i, d := range x.Shape {
		if !rm[i] {
			shape = append(shape, d)
		}
	}
	out, err := copyReshaped(ctx, n, x, shape)
	if err != nil {
		return nil, err
	}
	return []*graph.Tensor{out}, nil
}

func squeezeInfer(n *graph.Node, opset int64, in []kernels.InferInput) ([]graph.ValueType, error) {
	x := inType(in, 0)
	axes, present, known := inferAxesArg(n, opset, in)
	if x.Shape == nil || !known {
		return []graph.ValueType{tensorType(x.DType, nil)}, nil
	}
	dims := make([]int64, len(x.Shape))
	for i, d := range x.Shape {
		dims[i] = d.Value
		if !d.Static() {
			dims[i] = -1
		}
	}
	rm, err := squeezeMask(n, opset, dims, axes, present)
	if err != nil || rm == nil {
		return []graph.ValueType{tensorType(x.DType, nil)}, err
	}
	s := graph.Shape{}
	for i, d := range x.Shape {
		if !rm[i] {
			s = append(s, d)
		}
	}
	return []graph.ValueType{tensorType(x.DType, s)}, nil
}

// unsqueezeMask marks the inserted dims of the output (rank r+len(axes)).
func unsqueezeMask(n *graph.Node, opset int64, rank int, axes []int64) ([]bool, error) {
	outRank := rank + len(axes)
	ins := make([]bool, outRank)
	for _, a := range axes {
		ax, err := kernels.NormAxis(a, outRank)
		if err != nil {
			return nil, kernels.Invalidf(n, "axes %v: %v", axes, err)
		}
		if ins[ax] {
			return nil, kernels.Invalidf(n, "axes %v has a duplicate", axes)
		}
		ins[ax] = true
	}
	return ins, nil
}

func unsqueezeKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := checkInput(n, x, "data"); err != nil {
		return nil, err
	}
	axes, present, err := axesArg(ctx, n, in)
	if err != nil {
		return nil, err
	}
	if !present {
		return nil, kernels.Invalidf(n, "missing axes")
	}
	ins, err := unsqueezeMask(n, ctx.Opset, x.Rank(), axes)
	if err != nil {
		return nil, err
	}
	shape := make([]int, len(ins))
	j := 0
	for i := range shape {
		if ins[i] {
			shape[i] = 1
		} else {
			shape[i] = x.Shape[j]
			j++
		}
	}
	out, err := copyReshaped(ctx, n, x, shape)
	if err != nil {
		return nil, err
	}
	return []*graph.Tensor{out}, nil
}

func unsqueezeInfer(n *graph.Node, opset int64, in []kernels.InferInput) ([]graph.ValueType, error) {
	x := inType(in, 0)
	axes, present, known := inferAxesArg(n, opset, in)
	if !present && known {
		return nil, kernels.Invalidf(n, "missing axes")
	}
	if x.Shape == nil || !known {
		return []graph.ValueType{tensorType(x.DType, nil)}, nil
	}
	ins, err := unsqueezeMask(n, opset, len(x.Shape), axes)
	if err != nil {
		return nil, err
	}
	s := make(graph.Shape, len(ins))
	j := 0
	for i := range s {
		if ins[i] {
			s[i] = graph.Dim{Value: 1}
		} else {
			s[i] = x.Shape[j]
			j++
		}
	}
	return []graph.ValueType{tensorType(x.DType, s)}, nil
}

// ---- Identity ----

func identityKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := checkInput(n, x, "input"); err != nil {
		return nil, err
	}
	out, err := copyReshaped(ctx, n, x, x.Shape)
	if err != nil {
		return nil, err
	}
	return []*graph.Tensor{out}, nil
}

// ---- Dropout ----

func dropoutKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := checkInput(n, x, "data"); err != nil {
		return nil, err
	}
	if ctx.Opset >= 12 {
		ratio := 0.5
		if r := kernels.Input(in, 1); r != nil {
			if err := checkInput(n, r, "ratio"); err != nil {
				return nil, err
			}
			if r.Len() != 1 || !r.DType.IsFloat() {
				return nil, kernels.Invalidf(n, "ratio must be a float scalar, got %v%v", r.DType, r.Shape)
			}
			ratio = r.Float64At(0)
		}
		training := false
		if t := kernels.Input(in, 2); t != nil {
			if err := checkInput(n, t, "training_mode"); err != nil {
				return nil, err
			}
			if t.Len() != 1 || t.DType != graph.Bool {
				return nil, kernels.Invalidf(n, "training_mode must be a bool scalar, got %v%v", t.DType, t.Shape)
			}
			training = t.Float64At(0) != 0
		}
		if training {
			if !(ratio >= 0 && ratio < 1) {
				return nil, kernels.Invalidf(n, "ratio %g must be in [0, 1)", ratio)
			}
			if ratio != 0 {
				return nil, kernels.Unsupportedf(n, "random dropout in training mode (ratio %g)", ratio)
			}
		}
	}
	// Dropout before opset 7 has a training mode (is_test=0); an inference
	// engine always evaluates it in test mode, as later opsets do.
	out, err := copyReshaped(ctx, n, x, x.Shape)
	if err != nil {
		return nil, err
	}
	res := []*graph.Tensor{out}
	if len(n.Outputs) > 1 && n.Outputs[1] != "" {
		mdt := graph.Bool
		if ctx.Opset < 10 {
			mdt = x.DType
		}
		mask, err := ctx.New(mdt, x.Shape)
		if err != nil {
			return nil, kernels.Errorf(n, "%w", err)
		}
		for i := 0; i < mask.Len(); i++ {
			mask.SetFloat64(i, 1)
		}
		res = append(res, mask)
	}
	return res, nil
}

func dropoutInfer(n *graph.Node, opset int64, in []kernels.InferInput) ([]graph.ValueType, error) {
	x := inType(in, 0)
	out := []graph.ValueType{tensorType(x.DType, x.Shape)}
	if len(n.Outputs) > 1 {
		mdt := graph.Bool
		if opset < 10 {
			mdt = x.DType
		}
		out = append(out, tensorType(mdt, x.Shape))
	}
	return out, nil
}
