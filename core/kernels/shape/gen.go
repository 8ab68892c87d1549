package shape

import (
	"errors"
	"math"
	"math/big"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.Register(kernels.Schema{OpType: "Shape", MinOpset: 1, MinInputs: 1, MaxInputs: 1, Kernel: shapeKernel, Infer: shapeInfer})
	kernels.Register(kernels.Schema{OpType: "Size", MinOpset: 1, MinInputs: 1, MaxInputs: 1, Kernel: sizeKernel, Infer: sizeInfer})
	kernels.Register(kernels.Schema{OpType: "Constant", MinOpset: 1, MinInputs: 0, MaxInputs: 0, Kernel: constantKernel, Infer: constantInfer})
	kernels.Register(kernels.Schema{OpType: "ConstantOfShape", MinOpset: 9, MinInputs: 1, MaxInputs: 1, Types: []graph.DType{graph.Int64}, Kernel: constantOfShapeKernel, Infer: constantOfShapeInfer})
	kernels.Register(kernels.Schema{OpType: "Range", MinOpset: 11, MinInputs: 3, MaxInputs: 3,
		Types:  []graph.DType{graph.Float32, graph.Float64, graph.Float16, graph.BFloat16, graph.Int16, graph.Int32, graph.Int64},
		Kernel: rangeKernel, Infer: rangeInfer})
}

// ---- Shape / Size ----

// shapeBounds applies Shape's start/end attributes (opset 15) to a rank.
func shapeBounds(n *graph.Node, opset int64, rank int) (int, int) {
	r := int64(rank)
	if opset < 15 {
		return 0, rank
	}
	norm := func(v int64) int64 {
		if v < 0 {
			v += r
		}
		return clampInt(v, 0, r)
	}
	s := norm(n.AttrInt("start", 0))
	e := r
	if n.HasAttr("end") {
		e = norm(n.AttrInt("end", r))
	}
	if e < s {
		e = s
	}
	return int(s), int(e)
}

func shapeKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := checkInput(n, x, "data"); err != nil {
		return nil, err
	}
	s, e := shapeBounds(n, ctx.Opset, x.Rank())
	out, err := newOut(ctx, n, graph.Int64, []int{e - s})
	if err != nil {
		return nil, err
	}
	d := out.Data.([]int64)
	for i := range d {
		d[i] = int64(x.Shape[s+i])
	}
	return []*graph.Tensor{out}, nil
}

func shapeInfer(n *graph.Node, opset int64, in []kernels.InferInput) ([]graph.ValueType, error) {
	x := inType(in, 0)
	if x.Shape == nil {
		return []graph.ValueType{tensorType(graph.Int64, unknownDims(1))}, nil
	}
	s, e := shapeBounds(n, opset, len(x.Shape))
	return []graph.ValueType{tensorType(graph.Int64, graph.Shape{{Value: int64(e - s)}})}, nil
}

func sizeKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := checkInput(n, x, "data"); err != nil {
		return nil, err
	}
	out, err := newOut(ctx, n, graph.Int64, []int{})
	if err != nil {
		return nil, err
	}
	out.Data.([]int64)[0] = int64(x.Len())
	return []*graph.Tensor{out}, nil
}

func sizeInfer(n *graph.Node, opset int64, in []kernels.InferInput) ([]graph.ValueType, error) {
	return []graph.ValueType{tensorType(graph.Int64, graph.Shape{})}, nil
}

// ---- Constant ----

var constantAttrs = []string{"value", "sparse_value", "value_float", "value_floats", "value_int", "value_ints", "value_string", "value_strings"}

// constantValue builds the (not yet copied) value of a Constant node.
func constantValue(n *graph.Node) (*graph.Tensor, error) {
	var name string
	for _, a := range constantAttrs {
		if n.HasAttr(a) {
			if name != "" {
				return nil, kernels.Invalidf(n, "both %s and %s are set", name, a)
			}
			name = a
		}
	}
	a := n.Attr(name)
	switch name {
	case "":
		return nil, kernels.Invalidf(n, "no value attribute")
	case "value":
		if a.Type != graph.AttrTensor || a.T == nil {
			return nil, kernels.Invalidf(n, "value attribute is a %v, want tensor", a.Type)
		}
		if !a.T.DType.Supported() {
			return nil, kernels.Unsupportedf(n, "value of dtype %v", a.T.DType)
		}
		if err := a.T.Check(); err != nil {
			return nil, kernels.Invalidf(n, "value: %v", err)
		}
		return a.T, nil
	case "sparse_value":
		return nil, kernels.Unsupportedf(n, "sparse_value")
	case "value_float":
		if a.Type != graph.AttrFloat {
			return nil, kernels.Invalidf(n, "value_float attribute is a %v", a.Type)
		}
		return graph.Scalar(a.F), nil
	case "value_floats":
		if a.Type != graph.AttrFloats {
			return nil, kernels.Invalidf(n, "value_floats attribute is a %v", a.Type)
		}
		return graph.MustFromSlice([]int{len(a.Floats)}, a.Floats), nil
	case "value_int":
		if a.Type != graph.AttrInt {
			return nil, kernels.Invalidf(n, "value_int attribute is a %v", a.Type)
		}
		return graph.Scalar(a.I), nil
	case "value_ints":
		if a.Type != graph.AttrInts {
			return nil, kernels.Invalidf(n, "value_ints attribute is a %v", a.Type)
		}
		return graph.MustFromSlice([]int{len(a.Ints)}, a.Ints), nil
	case "value_string":
		if a.Type != graph.AttrString {
			return nil, kernels.Invalidf(n, "value_string attribute is a %v", a.Type)
		}
		return graph.Scalar(a.S), nil
	default: // value_strings
		if a.Type != graph.AttrStrings {
			return nil, kernels.Invalidf(n, "value_strings attribute is a %v", a.Type)
		}
		return graph.MustFromSlice([]int{len(a.Strings)}, a.Strings), nil
	}
}

func constantKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	v, err := constantValue(n)
	if err != nil {
		return nil, err
	}
	out, err := copyReshaped(ctx, n, v, v.Shape)
	if err != nil {
		return nil, err
	}
	return []*graph.Tensor{out}, nil
}

func constantInfer(n *graph.Node, opset int64, in []kernels.InferInput) ([]graph.ValueType, error) {
	v, err := constantValue(n)
	if err != nil {
		if errors.Is(err, kernels.ErrUnsupported) {
			dt := graph.Undefined
			if v := n.AttrTensor("value"); v != nil {
				dt = v.DType
			}
			return []graph.ValueType{tensorType(dt, nil)}, nil
		}
		return nil, err
	}
	return []graph.ValueType{tensorType(v.DType, staticDims(v.Shape))}, nil
}

// ---- ConstantOfShape ----

func constantOfShapeValue(n *graph.Node) (*graph.Tensor, error) {
	if !n.HasAttr("value") {
		return graph.Scalar(float32(0)), nil
	}
	v := n.AttrTensor("value")
	if v == nil {
		return nil, kernels.Invalidf(n, "value attribute must be a tensor")
	}
	if !v.DType.Supported() {
		return nil, kernels.Unsupportedf(n, "value of dtype %v", v.DType)
	}
	if err := v.Check(); err != nil {
		return nil, kernels.Invalidf(n, "value: %v", err)
	}
	if v.Len() != 1 {
		return nil, kernels.Invalidf(n, "value must hold one element, has shape %v", v.Shape)
	}
	return v, nil
}

func constantOfShapeKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	v, err := constantOfShapeValue(n)
	if err != nil {
		return nil, err
	}
	dims, err := intsInput(n, kernels.Input(in, 0), "input")
	if err != nil {
		return nil, err
	}
	shape := make([]int, len(dims))
	for i, d := range dims {
		if d < 0 || d > graph.MaxTensorBytes {
			return nil, kernels.Invalidf(n, "shape %v has invalid dimension %d", dims, d)
		}
		shape[i] = int(d)
	}
	out, err := newOut(ctx, n, v.DType, shape)
	if err != nil {
		return nil, err
	}
	// broadcast the single value: every source stride is zero
	src := &graph.Tensor{DType: v.DType, Shape: []int{}, Data: v.Data}
	return one(out, copyPlan(ctx, n, out, src, plan{shape: shape, sSt: make([]int, len(shape)), dSt: kernels.Strides(shape)}))
}

func constantOfShapeInfer(n *graph.Node, opset int64, in []kernels.InferInput) ([]graph.ValueType, error) {
	v, err := constantOfShapeValue(n)
	if errors.Is(err, kernels.ErrUnsupported) {
		return []graph.ValueType{tensorType(n.AttrTensor("value").DType, nil)}, nil
	}
	if err != nil {
		return nil, err
	}
	if dims, ok := constInts(in, 0); ok {
		s := make(graph.Shape, len(dims))
		for i, d := range dims {
			if d < 0 {
				return nil, kernels.Invalidf(n, "shape %v has invalid dimension %d", dims, d)
			}
			s[i] = graph.Dim{Value: d}
		}
		return []graph.ValueType{tensorType(v.DType, s)}, nil
	}
	if s := inType(in, 0).Shape; len(s) == 1 && s[0].Static() {
		return []graph.ValueType{tensorType(v.DType, unknownDims(int(s[0].Value)))}, nil
	}
	return []graph.ValueType{tensorType(v.DType, nil)}, nil
}

// ---- Range ----

// maxRangeCount bounds Range's element count before any allocation.
const maxRangeCount = math.MaxInt32 * 8

func scalarInput(n *graph.Node, t *graph.Tensor, what string, dt graph.DType) error {
	if err := checkInput(n, t, what); err != nil {
		return err
	}
	if t.Len() != 1 || t.Rank() > 1 {
		return kernels.Invalidf(n, "%s must be a scalar, got shape %v", what, t.Shape)
	}
	if t.DType != dt {
		return kernels.Invalidf(n, "%s is %v, start is %v", what, t.DType, dt)
	}
	return nil
}

// rangeCount returns max(ceil((limit-start)/delta), 0) for Range's scalar
// inputs (all of dtype st.DType).
func rangeCount(n *graph.Node, st, lim, del *graph.Tensor) (int, error) {
	dt := st.DType
	if dt.IsInteger() {
		s, l, d := st.Int64At(0), lim.Int64At(0), del.Int64At(0)
		if d == 0 {
			return 0, kernels.Invalidf(n, "delta is zero")
		}
		diff := new(big.Int).Sub(big.NewInt(l), big.NewInt(s))
		bd := big.NewInt(d)
		if diff.Sign() == 0 || diff.Sign() != bd.Sign() {
			return 0, nil
		}
		// ceil(diff/d) for same-sign operands: (|diff| + |d| - 1) / |d|
		diff.Abs(diff)
		bd.Abs(bd)
		diff.Add(diff, bd).Sub(diff, big.NewInt(1)).Quo(diff, bd)
		if !diff.IsInt64() || diff.Int64() > maxRangeCount {
			return 0, kernels.Invalidf(n, "range has too many elements (%v)", diff)
		}
		return int(diff.Int64()), nil
	}
	var c float64
	if dt == graph.Float64 {
		s, l, d := st.Float64At(0), lim.Float64At(0), del.Float64At(0)
		if d == 0 {
			return 0, kernels.Invalidf(n, "delta is zero")
		}
		c = math.Ceil((l - s) / d)
	} else {
		s, l, d := float32(st.Float64At(0)), float32(lim.Float64At(0)), float32(del.Float64At(0))
		if d == 0 {
			return 0, kernels.Invalidf(n, "delta is zero")
		}
		c = math.Ceil(float64((l - s) / d))
	}
	if math.IsNaN(c) || c > maxRangeCount {
		return 0, kernels.Invalidf(n, "range count %v is not a valid size", c)
	}
	if c < 0 {
		return 0, nil
	}
	return int(c), nil
}

func rangeKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	if err := checkInput(n, kernels.Input(in, 0), "start"); err != nil {
		return nil, err
	}
	dt := in[0].DType
	for i, what := range []string{"start", "limit", "delta"} {
		if err := scalarInput(n, kernels.Input(in, i), what, dt); err != nil {
			return nil, err
		}
	}
	st, lim, del := in[0], in[1], in[2]
	cnt, err := rangeCount(n, st, lim, del)
	if err != nil {
		return nil, err
	}
	out, err := newOut(ctx, n, dt, []int{cnt})
	if err != nil {
		return nil, err
	}
	switch d := out.Data.(type) {
	case []float64:
		s, dl := st.Float64At(0), del.Float64At(0)
		for i := range d {
			d[i] = s + float64(i)*dl
		}
	case []float32:
		s, dl := float32(st.Float64At(0)), float32(del.Float64At(0))
		for i := range d {
			d[i] = s + float32(i)*dl
		}
	case []graph.F16:
		s, dl := float32(st.Float64At(0)), float32(del.Float64At(0))
		for i := range d {
			d[i] = graph.F16FromFloat32(s + float32(i)*dl)
		}
	case []graph.BF16:
		s, dl := float32(st.Float64At(0)), float32(del.Float64At(0))
		for i := range d {
			d[i] = graph.BF16FromFloat32(s + float32(i)*dl)
		}
	default:
		if !dt.IsInteger() {
			return nil, kernels.Unsupportedf(n, "dtype %v", dt)
		}
		s, dl := st.Int64At(0), del.Int64At(0)
		for i := range cnt {
			setInt(out, i, s+int64(i)*dl)
		}
	}
	return []*graph.Tensor{out}, nil
}

// setInt stores an integer exactly (SetFloat64 would round large int64s).
func setInt(t *graph.Tensor, i int, v int64) {
	switch d := t.Data.(type) {
	case []int8:
		d[i] = int8(v)
	case []int16:
		d[i] = int16(v)
	case []int32:
		d[i] = int32(v)
	case []int64:
		d[i] = v
	case []uint8:
		d[i] = uint8(v)
	case []uint16:
		d[i] = uint16(v)
	case []uint32:
		d[i] = uint32(v)
	case []uint64:
		d[i] = uint64(v)
	}
}

func rangeInfer(n *graph.Node, opset int64, in []kernels.InferInput) ([]graph.ValueType, error) {
	dt := inType(in, 0).DType
	if len(in) == 3 && in[0].Const != nil && in[1].Const != nil && in[2].Const != nil {
		ok := true
		for _, i := range in {
			if i.Const.Check() != nil || i.Const.Len() != 1 || i.Const.DType != in[0].Const.DType {
				ok = false
			}
		}
		if ok {
			if cnt, err := rangeCount(n, in[0].Const, in[1].Const, in[2].Const); err == nil {
				return []graph.ValueType{tensorType(in[0].Const.DType, graph.Shape{{Value: int64(cnt)}})}, nil
			}
		}
	}
	return []graph.ValueType{tensorType(dt, unknownDims(1))}, nil
}
