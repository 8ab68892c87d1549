package shape

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	ops "github.com/switchyard-hal/switchyard/core/ops"
)

func init() {
	ops.Register(ops.Schema{OpType: "Transpose", MinOpset: 1, MinInputs: 1, MaxInputs: 1, Infer: transposeInfer})
	ops.Register(ops.Schema{OpType: "Concat", MinOpset: 1, MinInputs: 1, MaxInputs: -1, Infer: concatInfer})
	ops.Register(ops.Schema{OpType: "Split", MinOpset: 1, MinInputs: 1, MaxInputs: 2, MinOutputs: 1, MaxOutputs: -1, Infer: splitInfer})
	ops.Register(ops.Schema{OpType: "Slice", MinOpset: 1, MinInputs: 1, MaxInputs: 5, Infer: sliceInfer})
	ops.Register(ops.Schema{OpType: "Expand", MinOpset: 8, MinInputs: 2, MaxInputs: 2, Infer: expandInfer})
	ops.Register(ops.Schema{OpType: "Tile", MinOpset: 1, MinInputs: 2, MaxInputs: 3, Infer: tileInfer})
}

func TransposePerm(n *graph.Node, rank int) ([]int, error) {
	perm := make([]int, rank)
	if !n.HasAttr("perm") {
		for i := range perm {
			perm[i] = rank - 1 - i
		}
		return perm, nil
	}
	p := n.AttrInts("perm", nil)
	if len(p) != rank {
		return nil, ops.Invalidf(n, "perm %v has %d entries for a rank-%d input", p, len(p), rank)
	}
	seen := make([]bool, rank)
	for i, v := range p {
		if v < 0 || v >= int64(rank) || seen[v] {
			return nil, ops.Invalidf(n, "perm %v is not a permutation of 0..%d", p, rank-1)
		}
		seen[v] = true
		perm[i] = int(v)
	}
	return perm, nil
}

func transposeInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	x := inType(in, 0)
	if x.Shape == nil {
		if p := n.AttrInts("perm", nil); p != nil {
			return []graph.ValueType{tensorType(x.DType, unknownDims(len(p)))}, nil
		}
		return []graph.ValueType{tensorType(x.DType, nil)}, nil
	}
	perm, err := TransposePerm(n, len(x.Shape))
	if err != nil {
		return nil, err
	}
	s := make(graph.Shape, len(perm))
	for i, p := range perm {
		s[i] = x.Shape[p]
	}
	return []graph.ValueType{tensorType(x.DType, s)}, nil
}

func ConcatAxis(n *graph.Node, opset int64, rank int) (int, error) {
	if !n.HasAttr("axis") && opset >= 4 {
		return 0, ops.Invalidf(n, "missing axis attribute")
	}
	ax, err := ops.NormAxis(n.AttrInt("axis", 1), rank)
	if err != nil {
		return 0, ops.Invalidf(n, "%v", err)
	}
	return ax, nil
}

func concatInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
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
	axis, err := ConcatAxis(n, opset, len(ref))
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
			return nil, ops.Invalidf(n, "input %d has rank %d, expected %d", k, len(s), len(ref))
		}
		for d, dim := range s {
			if d == axis {
				continue
			}
			if o := out[d]; o.Static() && dim.Static() && o.Value != dim.Value {
				return nil, ops.Invalidf(n, "input %d has shape %v, expected dim %d = %d", k, s, d, o.Value)
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

// SplitSizes works out the chunk sizes of Split along a dim of size dim.
// split is nil when not given; nOut is the node's number of outputs.
func SplitSizes(n *graph.Node, opset int64, dim int64, split []int64, haveSplit bool, nOut int) ([]int64, error) {
	if haveSplit {
		if len(split) != nOut {
			return nil, ops.Invalidf(n, "split %v has %d entries for %d outputs", split, len(split), nOut)
		}
		sum := int64(0)
		for _, s := range split {
			if s < 0 {
				return nil, ops.Invalidf(n, "split %v has a negative size", split)
			}
			sum += s
		}
		if sum != dim {
			return nil, ops.Invalidf(n, "split %v sums to %d, axis has size %d", split, sum, dim)
		}
		return split, nil
	}
	num := int64(nOut)
	if opset >= 18 && n.HasAttr("num_outputs") {
		num = n.AttrInt("num_outputs", 0)
		if num < 1 || num != int64(nOut) {
			return nil, ops.Invalidf(n, "num_outputs %d does not match the %d outputs", num, nOut)
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
		return nil, ops.Invalidf(n, "axis of size %d cannot be split evenly into %d outputs", dim, num)
	}
	chunk := (dim + num - 1) / num
	last := dim - chunk*(num-1)
	if last < 0 {
		return nil, ops.Invalidf(n, "axis of size %d cannot be split into %d chunks of %d", dim, num, chunk)
	}
	for i := range sizes {
		sizes[i] = chunk
	}
	sizes[num-1] = last
	return sizes, nil
}

func splitInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	x := inType(in, 0)
	nOut := len(n.Outputs)
	res := make([]graph.ValueType, nOut)
	for i := range res {
		res[i] = tensorType(x.DType, nil)
	}
	if x.Shape == nil {
		return res, nil
	}
	axis, err := ops.NormAxis(n.AttrInt("axis", 0), len(x.Shape))
	if err != nil {
		return nil, ops.Invalidf(n, "%v", err)
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
	sizes, err := SplitSizes(n, opset, dim.Value, split, haveSplit, nOut)
	if err != nil {
		return nil, err
	}
	for i := range res {
		res[i].Shape[axis] = graph.Dim{Value: sizes[i]}
	}
	return res, nil
}

type SliceArgs struct {
	Starts, Ends, Axes, Steps []int64
	HasAxes                   bool
}

// SliceRange clamps start/end for one axis of size dim and returns the
// effective start and the element count.
func SliceRange(start, end, step, dim int64) (int64, int64) {
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
func (a *SliceArgs) Check(n *graph.Node, rank int) ([]int, error) {
	k := len(a.Starts)
	if len(a.Ends) != k {
		return nil, ops.Invalidf(n, "starts %v and ends %v differ in length", a.Starts, a.Ends)
	}
	if a.HasAxes && len(a.Axes) != k {
		return nil, ops.Invalidf(n, "axes %v has %d entries, starts has %d", a.Axes, len(a.Axes), k)
	}
	if a.Steps != nil && len(a.Steps) != k {
		return nil, ops.Invalidf(n, "steps %v has %d entries, starts has %d", a.Steps, len(a.Steps), k)
	}
	if !a.HasAxes && k > rank {
		return nil, ops.Invalidf(n, "starts %v has more entries than rank %d", a.Starts, rank)
	}
	axes := make([]int, k)
	seen := make([]bool, rank)
	for i := range axes {
		ax := i
		if a.HasAxes {
			var err error
			ax, err = ops.NormAxis(a.Axes[i], rank)
			if err != nil {
				return nil, ops.Invalidf(n, "axes %v: %v", a.Axes, err)
			}
		}
		if seen[ax] {
			return nil, ops.Invalidf(n, "axes %v has a duplicate", a.Axes)
		}
		seen[ax] = true
		axes[i] = ax
		if a.Steps != nil && a.Steps[i] == 0 {
			return nil, ops.Invalidf(n, "steps %v has a zero", a.Steps)
		}
	}
	return axes, nil
}

func (a *SliceArgs) Step(i int) int64 {
	if a.Steps == nil {
		return 1
	}
	return a.Steps[i]
}

func sliceInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
	x := inType(in, 0)
	if x.Shape == nil {
		return []graph.ValueType{tensorType(x.DType, nil)}, nil
	}
	rank := len(x.Shape)
	var a SliceArgs
	known := true
	if opset < 10 {
		a.Starts, a.Ends = n.AttrInts("starts", nil), n.AttrInts("ends", nil)
		if n.HasAttr("axes") {
			a.Axes, a.HasAxes = n.AttrInts("axes", nil), true
		}
	} else {
		var ok bool
		if a.Starts, ok = constInts(in, 1); !ok {
			known = false
		}
		if a.Ends, ok = constInts(in, 2); !ok {
			known = false
		}
		if n.Input(3) != "" {
			a.HasAxes = true
			if a.Axes, ok = constInts(in, 3); !ok {
				known = false
			}
		}
		if n.Input(4) != "" {
			if a.Steps, ok = constInts(in, 4); !ok {
				known = false
			}
		}
	}
	if !known {
		out := append(graph.Shape{}, x.Shape...)
		if a.Axes != nil {
			for _, v := range a.Axes {
				if ax, err := ops.NormAxis(v, rank); err == nil {
					out[ax] = graph.Dim{Value: -1}
				}
			}
		} else {
			out = unknownDims(rank)
		}
		return []graph.ValueType{tensorType(x.DType, out)}, nil
	}
	axes, err := a.Check(n, rank)
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
		_, cnt := SliceRange(a.Starts[i], a.Ends[i], a.Step(i), d.Value)
		out[ax] = graph.Dim{Value: cnt}
	}
	return []graph.ValueType{tensorType(x.DType, out)}, nil
}

func expandInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
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
			return nil, ops.Invalidf(n, "shape %v has invalid dimension %d", target, v)
		}
		ts[i] = graph.Dim{Value: v}
	}
	if x.Shape == nil {
		return []graph.ValueType{tensorType(x.DType, nil)}, nil
	}
	s, err := ops.BroadcastSymbolic(x.Shape, ts)
	if err != nil {
		return nil, ops.Invalidf(n, "cannot expand %v to %v", x.Shape, target)
	}
	return []graph.ValueType{tensorType(x.DType, s)}, nil
}

func tileInfer(n *graph.Node, opset int64, in []ops.InferInput) ([]graph.ValueType, error) {
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
		return nil, ops.Invalidf(n, "repeats %v has %d entries for a rank-%d input", reps, len(reps), len(x.Shape))
	}
	for i, r := range reps {
		if r < 0 {
			return nil, ops.Invalidf(n, "repeats %v has a negative entry", reps)
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
