package shape

import (
	shapeops "github.com/switchyard-hal/switchyard/core/ops/shape"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.RegisterKernel("", "Transpose", transposeKernel)
	kernels.RegisterKernel("", "Concat", concatKernel)
	kernels.RegisterKernel("", "Split", splitKernel)
	kernels.RegisterKernel("", "Slice", sliceKernel)
	kernels.RegisterKernel("", "Expand", expandKernel)
	kernels.RegisterKernel("", "Tile", tileKernel)
}

func one(t *graph.Tensor, err error) ([]*graph.Tensor, error) {
	if err != nil {
		return nil, err
	}
	return []*graph.Tensor{t}, nil
}

func newOut(ctx *kernels.Context, n *graph.Node, dt graph.DType, shape []int) (*graph.Tensor, error) {
	out, err := ctx.New(dt, shape)
	if err != nil {
		return nil, kernels.Errorf(n, "%w", err)
	}
	return out, nil
}

// ---- Transpose ----

func transposeKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := checkInput(n, x, "data"); err != nil {
		return nil, err
	}
	perm, err := shapeops.TransposePerm(n, x.Rank())
	if err != nil {
		return nil, err
	}
	shape := make([]int, len(perm))
	inSt := kernels.Strides(x.Shape)
	sSt := make([]int, len(perm))
	for i, p := range perm {
		shape[i] = x.Shape[p]
		sSt[i] = inSt[p]
	}
	out, err := newOut(ctx, n, x.DType, shape)
	if err != nil {
		return nil, err
	}
	return one(out, copyPlan(ctx, n, out, x, plan{shape: shape, sSt: sSt, dSt: kernels.Strides(shape)}))
}

// ---- Concat ----

func concatKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	if len(in) == 0 {
		return nil, kernels.Invalidf(n, "no inputs")
	}
	for i, t := range in {
		if err := checkInput(n, t, "inputs"); err != nil {
			return nil, err
		}
		if t.DType != in[0].DType {
			return nil, kernels.Invalidf(n, "input %d is %v, input 0 is %v", i, t.DType, in[0].DType)
		}
	}
	rank := in[0].Rank()
	axis, err := shapeops.ConcatAxis(n, ctx.Opset, rank)
	if err != nil {
		return nil, err
	}
	var sbuf [8]int
	shape := append(sbuf[:0], in[0].Shape...)
	shape[axis] = 0
	for i, t := range in {
		if t.Rank() != rank {
			return nil, kernels.Invalidf(n, "input %d has shape %v, input 0 has %v", i, t.Shape, in[0].Shape)
		}
		for d := range t.Shape {
			if d != axis && t.Shape[d] != shape[d] {
				return nil, kernels.Invalidf(n, "input %d has shape %v, input 0 has %v (concat axis %d)", i, t.Shape, in[0].Shape, axis)
			}
		}
		shape[axis] += t.Shape[axis]
	}
	out, err := newOut(ctx, n, in[0].DType, shape)
	if err != nil {
		return nil, err
	}
	outSt := kernels.Strides(shape)
	off := 0
	for _, t := range in {
		p := plan{shape: t.Shape, sSt: kernels.Strides(t.Shape), dSt: outSt, dOff: off * outSt[axis]}
		if err := copyPlan(ctx, n, out, t, p); err != nil {
			return nil, kernels.Errorf(n, "%w", err)
		}
		off += t.Shape[axis]
	}
	return ctx.Outputs(out), nil
}

// ---- Split ----

func splitKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := checkInput(n, x, "input"); err != nil {
		return nil, err
	}
	axis, err := kernels.NormAxis(n.AttrInt("axis", 0), x.Rank())
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	var split []int64
	haveSplit := false
	if t := kernels.Input(in, 1); t != nil && (ctx.Opset >= 13 || ctx.Opset < 2) {
		split, err = intsInput(n, t, "split")
		if err != nil {
			return nil, err
		}
		haveSplit = true
	} else if ctx.Opset < 13 && n.HasAttr("split") {
		split, haveSplit = n.AttrInts("split", nil), true
	}
	sizes, err := shapeops.SplitSizes(n, ctx.Opset, int64(x.Shape[axis]), split, haveSplit, len(n.Outputs))
	if err != nil {
		return nil, err
	}
	inSt := kernels.Strides(x.Shape)
	res := make([]*graph.Tensor, len(sizes))
	off := 0
	for i, sz := range sizes {
		shape := append([]int{}, x.Shape...)
		shape[axis] = int(sz)
		if i < len(n.Outputs) && n.Outputs[i] != "" {
			out, err := newOut(ctx, n, x.DType, shape)
			if err != nil {
				return nil, err
			}
			if err := copyPlan(ctx, n, out, x, plan{shape: shape, sSt: inSt, dSt: kernels.Strides(shape), sOff: off * inSt[axis]}); err != nil {
				return nil, kernels.Errorf(n, "%w", err)
			}
			res[i] = out
		}
		off += int(sz)
	}
	return res, nil
}

// ---- Slice ----

func sliceKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := checkInput(n, x, "data"); err != nil {
		return nil, err
	}
	var a shapeops.SliceArgs
	var err error
	if ctx.Opset < 10 {
		if !n.HasAttr("starts") || !n.HasAttr("ends") {
			return nil, kernels.Invalidf(n, "missing starts or ends attribute")
		}
		a.Starts, a.Ends = n.AttrInts("starts", nil), n.AttrInts("ends", nil)
		if n.HasAttr("axes") {
			a.Axes, a.HasAxes = n.AttrInts("axes", nil), true
		}
	} else {
		if a.Starts, err = intsInput(n, kernels.Input(in, 1), "starts"); err != nil {
			return nil, err
		}
		if a.Ends, err = intsInput(n, kernels.Input(in, 2), "ends"); err != nil {
			return nil, err
		}
		if t := kernels.Input(in, 3); t != nil {
			if a.Axes, err = intsInput(n, t, "axes"); err != nil {
				return nil, err
			}
			a.HasAxes = true
		}
		if t := kernels.Input(in, 4); t != nil {
			if a.Steps, err = intsInput(n, t, "steps"); err != nil {
				return nil, err
			}
		}
	}
	axes, err := a.Check(n, x.Rank())
	if err != nil {
		return nil, err
	}
	inSt := kernels.Strides(x.Shape)
	shape := append([]int{}, x.Shape...)
	sSt := append([]int{}, inSt...)
	sOff := 0
	for i, ax := range axes {
		st := a.Step(i)
		start, cnt := shapeops.SliceRange(a.Starts[i], a.Ends[i], st, int64(x.Shape[ax]))
		shape[ax] = int(cnt)
		if cnt > 0 {
			sOff += int(start) * inSt[ax]
			sSt[ax] = int(st) * inSt[ax]
		}
	}
	out, err := newOut(ctx, n, x.DType, shape)
	if err != nil {
		return nil, err
	}
	return one(out, copyPlan(ctx, n, out, x, plan{shape: shape, sSt: sSt, dSt: kernels.Strides(shape), sOff: sOff}))
}

// ---- Expand ----

func expandKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := checkInput(n, x, "input"); err != nil {
		return nil, err
	}
	target, err := intsInput(n, kernels.Input(in, 1), "shape")
	if err != nil {
		return nil, err
	}
	ts := make([]int, len(target))
	for i, v := range target {
		if v < 0 || v > graph.MaxTensorBytes {
			return nil, kernels.Invalidf(n, "shape %v has invalid dimension %d", target, v)
		}
		ts[i] = int(v)
	}
	shape, err := kernels.BroadcastShapes(x.Shape, ts)
	if err != nil {
		return nil, kernels.Invalidf(n, "cannot expand %v to %v", x.Shape, target)
	}
	out, err := newOut(ctx, n, x.DType, shape)
	if err != nil {
		return nil, err
	}
	rank := len(shape)
	sSt := make([]int, rank)
	inSt := kernels.Strides(x.Shape)
	off := rank - x.Rank()
	for i, d := range x.Shape {
		if d != 1 {
			sSt[off+i] = inSt[i]
		}
	}
	return one(out, copyPlan(ctx, n, out, x, plan{shape: shape, sSt: sSt, dSt: kernels.Strides(shape)}))
}

// ---- Tile ----

// tileRepeats returns the repeat count per dim; before opset 6 Tile took a
// scalar "tiles" and an "axis" input instead of a repeats vector.
func tileRepeats(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor, rank int) ([]int64, error) {
	if ctx.Opset < 6 && len(in) >= 3 && in[2] != nil {
		tiles, err := intsInput(n, in[1], "tiles")
		if err != nil {
			return nil, err
		}
		axis, err := intsInput(n, in[2], "axis")
		if err != nil {
			return nil, err
		}
		if len(tiles) != 1 || len(axis) != 1 {
			return nil, kernels.Invalidf(n, "tiles and axis must be scalars")
		}
		ax, err := kernels.NormAxis(axis[0], rank)
		if err != nil {
			return nil, kernels.Invalidf(n, "%v", err)
		}
		reps := make([]int64, rank)
		for i := range reps {
			reps[i] = 1
		}
		reps[ax] = tiles[0]
		return reps, nil
	}
	reps, err := intsInput(n, kernels.Input(in, 1), "repeats")
	if err != nil {
		return nil, err
	}
	if len(reps) != rank {
		return nil, kernels.Invalidf(n, "repeats %v has %d entries for a rank-%d input", reps, len(reps), rank)
	}
	return reps, nil
}

func tileKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := checkInput(n, x, "input"); err != nil {
		return nil, err
	}
	rank := x.Rank()
	reps, err := tileRepeats(ctx, n, in, rank)
	if err != nil {
		return nil, err
	}
	shape := make([]int, rank)
	for i, r := range reps {
		if r < 0 || r > graph.MaxTensorBytes {
			return nil, kernels.Invalidf(n, "repeats %v has invalid entry %d", reps, r)
		}
		if x.Shape[i] > 0 && r > graph.MaxTensorBytes/int64(x.Shape[i]) {
			return nil, kernels.Invalidf(n, "tiling %v by %v is too large", x.Shape, reps)
		}
		shape[i] = x.Shape[i] * int(r)
	}
	out, err := newOut(ctx, n, x.DType, shape)
	if err != nil {
		return nil, err
	}
	// Iterate over (repeat, in-dim) pairs: the repeat index moves the output
	// by one input-sized block and leaves the source where it is.
	outSt := kernels.Strides(shape)
	inSt := kernels.Strides(x.Shape)
	p := plan{}
	for i := range rank {
		p.shape = append(p.shape, int(reps[i]), x.Shape[i])
		p.sSt = append(p.sSt, 0, inSt[i])
		p.dSt = append(p.dSt, x.Shape[i]*outSt[i], outSt[i])
	}
	return one(out, copyPlan(ctx, n, out, x, p))
}
