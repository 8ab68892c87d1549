package shape

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.Register(kernels.Schema{OpType: "Transpose", MinOpset: 1, MinInputs: 1, MaxInputs: 1, Kernel: transposeKernel, Infer: transposeInfer})
	kernels.Register(kernels.Schema{OpType: "Concat", MinOpset: 1, MinInputs: 1, MaxInputs: -1, Kernel: concatKernel, Infer: concatInfer})
	kernels.Register(kernels.Schema{OpType: "Split", MinOpset: 1, MinInputs: 1, MaxInputs: 2, MinOutputs: 1, MaxOutputs: -1, Kernel: splitKernel, Infer: splitInfer})
	kernels.Register(kernels.Schema{OpType: "Slice", MinOpset: 1, MinInputs: 1, MaxInputs: 5, Kernel: sliceKernel, Infer: sliceInfer})
	kernels.Register(kernels.Schema{OpType: "Expand", MinOpset: 8, MinInputs: 2, MaxInputs: 2, Kernel: expandKernel, Infer: expandInfer})
	kernels.Register(kernels.Schema{OpType: "Tile", MinOpset: 1, MinInputs: 2, MaxInputs: 3, Kernel: tileKernel, Infer: tileInfer})
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

func transposePerm(n *graph.Node, rank int) ([]int, error) {
	perm := make([]int, rank)
	if !n.HasAttr("perm") {
		for i := range perm {
			perm[i] = rank - 1 - i
		}
		return perm, nil
	}
	p := n.AttrInts("perm", nil)
	if len(p) != rank {
		return nil, kernels.Invalidf(n, "perm %v has %d entries for a rank-%d input", p, len(p), rank)
	}
	seen := make([]bool, rank)
	for i, v := range p {
		if v < 0 || v >= int64(rank) || seen[v] {
			return nil, kernels.Invalidf(n, "perm %v is not a permutation of 0..%d", p, rank-1)
		}
		seen[v] = true
		perm[i] = int(v)
	}
	return perm, nil
}

func transposeKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := checkInput(n, x, "data"); err != nil {
		return nil, err
	}
	perm, err := transposePerm(n, x.Rank())
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

func transposeInfer(n *graph.Node, opset int64, in []kernels.InferInput) ([]graph.ValueType, error) {
	x := inType(in, 0)
	if x.Shape == nil {
		if p := n.AttrInts("perm", nil); p != nil {
			return []graph.ValueType{tensorType(x.DType, unknownDims(len(p)))}, nil
		}
		return []graph.ValueType{tensorType(x.DType, nil)}, nil
	}
	perm, err := transposePerm(n, len(x.Shape))
	if err != nil {
		return nil, err
	}
	s := make(graph.Shape, len(perm))
	for i, p := range perm {
		s[i] = x.Shape[p]
	}
	return []graph.ValueType{tensorType(x.DType, s)}, nil
}

// ---- Concat ----

func concatAxis(n *graph.Node, opset int64, rank int) (int, error) {
	if !n.HasAttr("axis") && opset >= 4 {
		return 0, kernels.Invalidf(n, "missing axis attribute")
	}
	ax, err := kernels.NormAxis(n.AttrInt("axis", 1), rank)
	if err != nil {
		return 0, kernels.Invalidf(n, "%v", err)
	}
	return ax, nil
}

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
	axis, err := concatAxis(n, ctx.Opset, rank)
	if err != nil {
		return nil, err
	}
	shape := append([]int{}, in[0].Shape...)
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
	return []*graph.Tensor{out}, nil
}

func concatInfer(n *graph.Node, opset int64, in []kernels.InferInput) ([]graph.ValueType, error) {
	if len(in) == 0 {
		return nil, nil
	}
	dt := graph.Undefined
	var ref graph.Shape
	for _, i := range in {
		if dt == graph.Undefined {
			dt = i.Type.DType
		}
		if ref == nil && i.Type.Shape != nil {
			ref = i.Type.Shape
		}
	}
	if ref == nil {
		return []graph.ValueType{tensorType(dt, nil)}, nil
	}
	axis, err := concatAxis(n, opset, len(ref))
	if err != nil {
		return nil, err
	}
	out := unknownDims(len(ref))
	sum := graph.Dim{Value: 0}
	for k, i := range in {
		s := i.Type.Shape
		if s == nil {
			sum = graph.Dim{Value: -1}
			continue
		}
		if len(s) != len(ref) {
			return nil, kernels.Invalidf(n, "input %d has rank %d, expected %d", k, len(s), len(ref))
		}
		for d, dim := range s {
			if d == axis {
				continue
			}
			if o := out[d]; o.Static() && dim.Static() && o.Value != dim.Value {
				return nil, kernels.Invalidf(n, "input %d has shape %v, expected dim %d = %d", k, s, d, o.Value)
			}
			if dim.Static() || (out[d].Value < 0 && out[d].Param == "") {
				out[d] = dim
			}
		}
		if sum.Static() && s[axis].Static() {
			sum.Value += s[axis].Value
		} else {
			sum = graph.Dim{Value: -1}
		}
	}
	out[axis] = sum
	return []graph.ValueType{tensorType(dt, out)}, nil
}

// ---- Split ----

// splitSizes works out the chunk sizes of Split along a dim of size dim.
// split is nil when not given; nOut is the node's number of outputs.
func splitSizes(n *graph.Node, opset int64, dim int64, split []int64, haveSplit bool, nOut int) ([]int64, error) {
	if haveSplit {
		if len(split) != nOut {
			return nil, kernels.Invalidf(n, "split %v has %d entries for %d outputs", split, len(split), nOut)
		}
		sum := int64(0)
		for _, s := range split {
			if s < 0 {
				return nil, kernels.Invalidf(n, "split %v has a negative size", split)
			}
			sum += s
		}
		if sum != dim {
			return nil, kernels.Invalidf(n, "split %v sums to %d, axis has size %d", split, sum, dim)
		}
		return split, nil
	}
	num := int64(nOut)
	if opset >= 18 && n.HasAttr("num_outputs") {
		num = n.AttrInt("num_outputs", 0)
		if num < 1 || num != int64(nOut) {
			return nil, kernels.Invalidf(n, "num_outputs %d does not match the %d outputs", num, nOut)
		}
	}
	sizes := make([]int64, num)
	if dim%num == 0 {
		for i := range sizes {
			sizes[i] = dim / num
		}
		return sizes, nil
	}
	if opset < 18 {
		return nil, kernels.Invalidf(n, "axis of size %d cannot be split evenly into %d outputs", dim, num)
	}
	chunk := (dim + num - 1) / num
	last := dim - chunk*(num-1)
	if last < 0 {
		return nil, kernels.Invalidf(n, "axis of size %d cannot be split into %d chunks of %d", dim, num, chunk)
	}
	for i := range sizes {
		sizes[i] = chunk
	}
	sizes[num-1] = last
	return sizes, nil
}

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
	sizes, err := splitSizes(n, ctx.Opset, int64(x.Shape[axis]), split, haveSplit, len(n.Outputs))
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

func splitInfer(n *graph.Node, opset int64, in []kernels.InferInput) ([]graph.ValueType, error) {
	x := inType(in, 0)
	nOut := len(n.Outputs)
	res := make([]graph.ValueType, nOut)
	for i := range res {
		res[i] = tensorType(x.DType, nil)
	}
	if x.Shape == nil {
		return res, nil
	}
	axis, err := kernels.NormAxis(n.AttrInt("axis", 0), len(x.Shape))
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	for i := range res {
		s := append(graph.Shape{}, x.Shape...)
		s[axis] = graph.Dim{Value: -1}
		res[i].Shape = s
	}
	var split []int64
	haveSplit, known := false, true
	if n.Input(1) != "" && (opset >= 13 || opset < 2) {
		split, known = constInts(in, 1)
		haveSplit = true
	} else if opset < 13 && n.HasAttr("split") {
		split, haveSplit = n.AttrInts("split", nil), true
	}
	if !known {
		return res, nil
	}
	dim := x.Shape[axis]
	if !dim.Static() {
		if haveSplit && len(split) == nOut {
			for i := range res {
				res[i].Shape[axis] = graph.Dim{Value: split[i]}
			}
		}
		return res, nil
	}
	sizes, err := splitSizes(n, opset, dim.Value, split, haveSplit, nOut)
	if err != nil {
		return nil, err
	}
	for i := range res {
		res[i].Shape[axis] = graph.Dim{Value: sizes[i]}
	}
	return res, nil
}

// ---- Slice ----

type sliceArgs struct {
	starts, ends, axes, steps []int64
	hasAxes                   bool
}

// sliceRange clamps start/end for one axis of size dim and returns the
// effective start and the element count.
func sliceRange(start, end, step, dim int64) (int64, int64) {
	if start < 0 {
		start += dim
	}
	if end < 0 {
		end += dim
	}
	var cnt int64
	if step > 0 {
		start = clampInt(start, 0, dim)
		end = clampInt(end, 0, dim)
		if end > start {
			cnt = (end - start + step - 1) / step
		}
	} else {
		start = clampInt(start, 0, dim-1)
		end = clampInt(end, -1, dim-1)
		if start > end {
			cnt = (start - end + (-step) - 1) / (-step)
		}
	}
	return start, cnt
}

// sliceAxes validates the slice arguments against a rank and returns the
// normalised axis of each entry.
func (a *sliceArgs) check(n *graph.Node, rank int) ([]int, error) {
	k := len(a.starts)
	if len(a.ends) != k {
		return nil, kernels.Invalidf(n, "starts %v and ends %v differ in length", a.starts, a.ends)
	}
	if a.hasAxes && len(a.axes) != k {
		return nil, kernels.Invalidf(n, "axes %v has %d entries, starts has %d", a.axes, len(a.axes), k)
	}
	if a.steps != nil && len(a.steps) != k {
		return nil, kernels.Invalidf(n, "steps %v has %d entries, starts has %d", a.steps, len(a.steps), k)
	}
	if !a.hasAxes && k > rank {
		return nil, kernels.Invalidf(n, "starts %v has more entries than rank %d", a.starts, rank)
	}
	axes := make([]int, k)
	seen := make([]bool, rank)
	for i := range axes {
		ax := i
		if a.hasAxes {
			var err error
			ax, err = kernels.NormAxis(a.axes[i], rank)
			if err != nil {
				return nil, kernels.Invalidf(n, "axes %v: %v", a.axes, err)
			}
		}
		if seen[ax] {
			return nil, kernels.Invalidf(n, "axes %v has a duplicate", a.axes)
		}
		seen[ax] = true
		axes[i] = ax
		if a.steps != nil && a.steps[i] == 0 {
			return nil, kernels.Invalidf(n, "steps %v has a zero", a.steps)
		}
	}
	return axes, nil
}

func (a *sliceArgs) step(i int) int64 {
	if a.steps == nil {
		return 1
	}
	return a.steps[i]
}

func sliceKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := checkInput(n, x, "data"); err != nil {
		return nil, err
	}
	var a sliceArgs
	var err error
	if ctx.Opset < 10 {
		if !n.HasAttr("starts") || !n.HasAttr("ends") {
			return nil, kernels.Invalidf(n, "missing starts or ends attribute")
		}
		a.starts, a.ends = n.AttrInts("starts", nil), n.AttrInts("ends", nil)
		if n.HasAttr("axes") {
			a.axes, a.hasAxes = n.AttrInts("axes", nil), true
		}
	} else {
		if a.starts, err = intsInput(n, kernels.Input(in, 1), "starts"); err != nil {
			return nil, err
		}
		if a.ends, err = intsInput(n, kernels.Input(in, 2), "ends"); err != nil {
			return nil, err
		}
		if t := kernels.Input(in, 3); t != nil {
			if a.axes, err = intsInput(n, t, "axes"); err != nil {
				return nil, err
			}
			a.hasAxes = true
		}
		if t := kernels.Input(in, 4); t != nil {
			if a.steps, err = intsInput(n, t, "steps"); err != nil {
				return nil, err
			}
		}
	}
	axes, err := a.check(n, x.Rank())
	if err != nil {
		return nil, err
	}
	inSt := kernels.Strides(x.Shape)
	shape := append([]int{}, x.Shape...)
	sSt := append([]int{}, inSt...)
	sOff := 0
	for i, ax := range axes {
		st := a.step(i)
		start, cnt := sliceRange(a.starts[i], a.ends[i], st, int64(x.Shape[ax]))
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

func sliceInfer(n *graph.Node, opset int64, in []kernels.InferInput) ([]graph.ValueType, error) {
	x := inType(in, 0)
	if x.Shape == nil {
		return []graph.ValueType{tensorType(x.DType, nil)}, nil
	}
	rank := len(x.Shape)
	var a sliceArgs
	known := true
	if opset < 10 {
		a.starts, a.ends = n.AttrInts("starts", nil), n.AttrInts("ends", nil)
		if n.HasAttr("axes") {
			a.axes, a.hasAxes = n.AttrInts("axes", nil), true
		}
	} else {
		var ok bool
		if a.starts, ok = constInts(in, 1); !ok {
			known = false
		}
		if a.ends, ok = constInts(in, 2); !ok {
			known = false
		}
		if n.Input(3) != "" {
			a.hasAxes = true
			if a.axes, ok = constInts(in, 3); !ok {
				known = false
			}
		}
		if n.Input(4) != "" {
			if a.steps, ok = constInts(in, 4); !ok {
				known = false
			}
		}
	}
	if !known {
		out := append(graph.Shape{}, x.Shape...)
		if a.axes != nil {
			for _, v := range a.axes {
				if ax, err := kernels.NormAxis(v, rank); err == nil {
					out[ax] = graph.Dim{Value: -1}
				}
			}
		} else {
			out = unknownDims(rank)
		}
		return []graph.ValueType{tensorType(x.DType, out)}, nil
	}
	axes, err := a.check(n, rank)
	if err != nil {
		return nil, err
	}
	out := append(graph.Shape{}, x.Shape...)
	for i, ax := range axes {
		d := x.Shape[ax]
		if !d.Static() {
			out[ax] = graph.Dim{Value: -1}
			continue
		}
		_, cnt := sliceRange(a.starts[i], a.ends[i], a.step(i), d.Value)
		out[ax] = graph.Dim{Value: cnt}
	}
	return []graph.ValueType{tensorType(x.DType, out)}, nil
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

func expandInfer(n *graph.Node, opset int64, in []kernels.InferInput) ([]graph.ValueType, error) {
	x := inType(in, 0)
	target, ok := constInts(in, 1)
	if !ok {
		if s := inType(in, 1).Shape; len(s) == 1 && s[0].Static() && x.Shape != nil {
			r := max(int(s[0].Value), len(x.Shape))
			return []graph.ValueType{tensorType(x.DType, unknownDims(r))}, nil
		}
		return []graph.ValueType{tensorType(x.DType, nil)}, nil
	}
	ts := make(graph.Shape, len(target))
	for i, v := range target {
		if v < 0 {
			return nil, kernels.Invalidf(n, "shape %v has invalid dimension %d", target, v)
		}
		ts[i] = graph.Dim{Value: v}
	}
	if x.Shape == nil {
		return []graph.ValueType{tensorType(x.DType, nil)}, nil
	}
	s, err := kernels.BroadcastSymbolic(x.Shape, ts)
	if err != nil {
		return nil, kernels.Invalidf(n, "cannot expand %v to %v", x.Shape, target)
	}
	return []graph.ValueType{tensorType(x.DType, s)}, nil
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

func tileInfer(n *graph.Node, opset int64, in []kernels.InferInput) ([]graph.ValueType, error) {
	x := inType(in, 0)
	if x.Shape == nil {
		return []graph.ValueType{tensorType(x.DType, nil)}, nil
	}
	out := unknownDims(len(x.Shape))
	if opset < 6 && len(in) >= 3 {
		return []graph.ValueType{tensorType(x.DType, out)}, nil
	}
	reps, ok := constInts(in, 1)
	if !ok {
		return []graph.ValueType{tensorType(x.DType, out)}, nil
	}
	if len(reps) != len(x.Shape) {
		return nil, kernels.Invalidf(n, "repeats %v has %d entries for a rank-%d input", reps, len(reps), len(x.Shape))
	}
	for i, r := range reps {
		if r < 0 {
			return nil, kernels.Invalidf(n, "repeats %v has a negative entry", reps)
		}
		if d := x.Shape[i]; d.Static() {
			out[i] = graph.Dim{Value: d.Value * r}
		} else if r == 1 {
			out[i] = d
		} else if r == 0 {
			out[i] = graph.Dim{Value: 0}
		}
	}
	return []graph.ValueType{tensorType(x.DType, out)}, nil
}
