package shape

import (
	shapeops "github.com/switchyard-hal/switchyard/core/ops/shape"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.RegisterKernel("", "Reshape", reshapeKernel)
	kernels.RegisterKernel("", "Flatten", flattenKernel)
	kernels.RegisterKernel("", "Squeeze", squeezeKernel)
	kernels.RegisterKernel("", "Unsqueeze", unsqueezeKernel)
	kernels.RegisterKernel("", "Identity", identityKernel)
	kernels.RegisterKernel("", "Dropout", dropoutKernel)
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
	shape, err := shapeops.ResolveReshape(n, x.Shape, target, allowZero)
	if err != nil {
		return nil, err
	}
	out, err := copyReshaped(ctx, n, x, shape)
	if err != nil {
		return nil, err
	}
	return ctx.Outputs(out), nil
}

// ---- Flatten ----

func flattenKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := checkInput(n, x, "input"); err != nil {
		return nil, err
	}
	axis, err := shapeops.FlattenAxis(n, ctx.Opset, x.Rank())
	if err != nil {
		return nil, err
	}
	out, err := copyReshaped(ctx, n, x, []int{kernels.Prod(x.Shape[:axis]), kernels.Prod(x.Shape[axis:])})
	if err != nil {
		return nil, err
	}
	return ctx.Outputs(out), nil
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
	rm, err := shapeops.SqueezeMask(n, ctx.Opset, dims, axes, present)
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
	return ctx.Outputs(out), nil
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
	ins, err := shapeops.UnsqueezeMask(n, ctx.Opset, x.Rank(), axes)
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
	return ctx.Outputs(out), nil
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
	return ctx.Outputs(out), nil
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
