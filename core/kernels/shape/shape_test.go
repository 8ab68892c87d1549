package shape

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func ints(v ...int64) *graph.Attribute          { return &graph.Attribute{Type: graph.AttrInts, Ints: v} }
func intA(v int64) *graph.Attribute             { return &graph.Attribute{Type: graph.AttrInt, I: v} }
func tensA(t *graph.Tensor) *graph.Attribute    { return &graph.Attribute{Type: graph.AttrTensor, T: t} }
func i64(shape []int, v ...int64) *graph.Tensor { return graph.MustFromSlice(shape, v) }
func vec(v ...int64) *graph.Tensor              { return graph.MustFromSlice([]int{len(v)}, v) }
func f32(shape []int, v ...float32) *graph.Tensor {
	return graph.MustFromSlice(shape, v)
}
func iota32(shape ...int) *graph.Tensor {
	n := kernels.Prod(shape)
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i)
	}
	return graph.MustFromSlice(shape, v)
}

// run executes op at opset with the given attributes and inputs; nOut is
// the number of node outputs.
func run(t *testing.T, op string, opset int64, attrs map[string]*graph.Attribute, nOut int, in ...*graph.Tensor) ([]*graph.Tensor, error) {
	t.Helper()
	s, ok := kernels.Lookup("", op)
	if !ok {
		t.Fatalf("%s not registered", op)
	}
	n := &graph.Node{OpType: op, Attrs: attrs}
	for i, x := range in {
		name := ""
		if x != nil {
			name = "in" + string(rune('0'+i))
		}
		n.Inputs = append(n.Inputs, name)
	}
	for i := 0; i < nOut; i++ {
		n.Outputs = append(n.Outputs, "out"+string(rune('0'+i)))
	}
	if err := kernels.CheckNode(n, opset); err != nil {
		return nil, err
	}
	outs, err := s.Kernel(&kernels.Context{Opset: opset}, n, in)
	if err != nil {
		return nil, err
	}
	// inference must agree with the kernel when all inputs are constant
	ii := make([]kernels.InferInput, len(in))
	for i, x := range in {
		if x != nil {
			ii[i] = kernels.InferInput{Type: tensorType(x.DType, graph.StaticShape(x.Shape...)), Const: x}
		}
	}
	types, err := s.Infer(n, opset, ii)
	if err != nil {
		t.Fatalf("%s infer: %v", op, err)
	}
	for i, o := range outs {
		if o == nil {
			continue
		}
		if err := o.Check(); err != nil {
			t.Fatalf("%s output %d: %v", op, i, err)
		}
		if types[i].DType != o.DType {
			t.Errorf("%s infer dtype %v, kernel %v", op, types[i].DType, o.DType)
		}
		if got, ok := types[i].Shape.Ints(); !ok || !graph.SameShape(got, o.Shape) {
			t.Errorf("%s infer shape %v, kernel %v", op, types[i].Shape, o.Shape)
		}
		for _, x := range in {
			if x != nil && x.Len() > 0 && o.Len() > 0 && reflect.ValueOf(x.Data).Pointer() == reflect.ValueOf(o.Data).Pointer() {
				t.Errorf("%s output %d shares an input's data", op, i)
			}
		}
	}
	return outs, nil
}

func want(t *testing.T, name string, got *graph.Tensor, shape []int, data any) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: nil output", name)
	}
	if !graph.SameShape(got.Shape, shape) {
		t.Fatalf("%s: shape %v, want %v", name, got.Shape, shape)
	}
	if !reflect.DeepEqual(got.Data, data) {
		t.Fatalf("%s: data %v, want %v", name, got.Data, data)
	}
}

func mustRun(t *testing.T, op string, opset int64, attrs map[string]*graph.Attribute, nOut int, in ...*graph.Tensor) []*graph.Tensor {
	t.Helper()
	out, err := run(t, op, opset, attrs, nOut, in...)
	if err != nil {
		t.Fatalf("%s: %v", op, err)
	}
	return out
}

func wantErr(t *testing.T, name string, target error, op string, opset int64, attrs map[string]*graph.Attribute, nOut int, in ...*graph.Tensor) {
	t.Helper()
	_, err := run(t, op, opset, attrs, nOut, in...)
	if err == nil || !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", name, err, target)
	}
}

func TestReshape(t *testing.T) {
	x := iota32(2, 3, 4)
	cases := []struct {
		name   string
		opset  int64
		target []int64
		attrs  map[string]*graph.Attribute
		shape  []int
	}{
		{"infer", 13, []int64{4, -1}, nil, []int{4, 6}},
		{"copy0", 13, []int64{0, 0, 2, 2}, nil, []int{2, 3, 2, 2}},
		{"zero-neg", 13, []int64{0, -1}, nil, []int{2, 12}},
		{"flat", 13, []int64{-1}, nil, []int{24}},
		{"allowzero-nonzero", 14, []int64{2, 12}, map[string]*graph.Attribute{"allowzero": intA(1)}, []int{2, 12}},
	}
	for _, c := range cases {
		out := mustRun(t, "Reshape", c.opset, c.attrs, 1, x, vec(c.target...))
		want(t, c.name, out[0], c.shape, x.Data)
	}
	// opset 1-4: attribute
	out := mustRun(t, "Reshape", 4, map[string]*graph.Attribute{"shape": ints(6, -1)}, 1, x)
	want(t, "attr", out[0], []int{6, 4}, x.Data)
	// allowzero: a 0 is a real 0
	e := iota32(0, 3)
	out = mustRun(t, "Reshape", 14, map[string]*graph.Attribute{"allowzero": intA(1)}, 1, e, vec(3, 0))
	want(t, "allowzero", out[0], []int{3, 0}, []float32{})
	// allowzero=0: a 0 copies the input dim
	out = mustRun(t, "Reshape", 14, nil, 1, e, vec(0, 3))
	want(t, "copy-zero-dim", out[0], []int{0, 3}, []float32{})
	wantErr(t, "two -1", kernels.ErrInvalid, "Reshape", 13, nil, 1, x, vec(-1, -1))
	wantErr(t, "bad count", kernels.ErrInvalid, "Reshape", 13, nil, 1, x, vec(5, -1))
	wantErr(t, "mismatch", kernels.ErrInvalid, "Reshape", 13, nil, 1, x, vec(5, 5))
	wantErr(t, "0 and -1 allowzero", kernels.ErrInvalid, "Reshape", 14, map[string]*graph.Attribute{"allowzero": intA(1)}, 1, e, vec(0, -1))
	wantErr(t, "copy past rank", kernels.ErrInvalid, "Reshape", 13, nil, 1, x, vec(2, 12, 0, 1))
	wantErr(t, "huge", kernels.ErrInvalid, "Reshape", 13, nil, 1, x, vec(math.MaxInt64, math.MaxInt64, 0))
	wantErr(t, "float shape", kernels.ErrInvalid, "Reshape", 13, nil, 1, x, f32([]int{1}, 24))
}

func TestTranspose(t *testing.T) {
	x := iota32(2, 3)
	out := mustRun(t, "Transpose", 13, nil, 1, x)
	want(t, "default", out[0], []int{3, 2}, []float32{0, 3, 1, 4, 2, 5})
	x3 := iota32(2, 2, 3)
	out = mustRun(t, "Transpose", 13, map[string]*graph.Attribute{"perm": ints(1, 0, 2)}, 1, x3)
	want(t, "perm102", out[0], []int{2, 2, 3}, []float32{0, 1, 2, 6, 7, 8, 3, 4, 5, 9, 10, 11})
	out = mustRun(t, "Transpose", 13, map[string]*graph.Attribute{"perm": ints(2, 0, 1)}, 1, x3)
	want(t, "perm201", out[0], []int{3, 2, 2}, []float32{0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11})
	b := graph.MustFromSlice([]int{2, 2}, []bool{true, false, false, false})
	out = mustRun(t, "Transpose", 13, nil, 1, b)
	want(t, "bool", out[0], []int{2, 2}, []bool{true, false, false, false})
	s := graph.MustFromSlice([]int{1, 2}, []string{"a", "b"})
	out = mustRun(t, "Transpose", 13, nil, 1, s)
	want(t, "string", out[0], []int{2, 1}, []string{"a", "b"})
	out = mustRun(t, "Transpose", 13, nil, 1, iota32(0, 3))
	want(t, "empty", out[0], []int{3, 0}, []float32{})
	out = mustRun(t, "Transpose", 13, nil, 1, graph.Scalar(int8(7)))
	want(t, "scalar", out[0], []int{}, []int8{7})
	wantErr(t, "bad perm", kernels.ErrInvalid, "Transpose", 13, map[string]*graph.Attribute{"perm": ints(0, 0)}, 1, x)
	wantErr(t, "short perm", kernels.ErrInvalid, "Transpose", 13, map[string]*graph.Attribute{"perm": ints(0)}, 1, x)
}

func TestConcat(t *testing.T) {
	a := iota32(2, 2)
	b := f32([]int{2, 1}, 10, 11)
	out := mustRun(t, "Concat", 13, map[string]*graph.Attribute{"axis": intA(-1)}, 1, a, b)
	want(t, "axis-1", out[0], []int{2, 3}, []float32{0, 1, 10, 2, 3, 11})
	out = mustRun(t, "Concat", 13, map[string]*graph.Attribute{"axis": intA(0)}, 1, a, iota32(0, 2), a)
	want(t, "axis0 with empty", out[0], []int{4, 2}, []float32{0, 1, 2, 3, 0, 1, 2, 3})
	out = mustRun(t, "Concat", 1, nil, 1, a, b) // opset 1 default axis 1
	want(t, "opset1 default", out[0], []int{2, 3}, []float32{0, 1, 10, 2, 3, 11})
	u := graph.MustFromSlice([]int{2}, []uint16{1, 2})
	out = mustRun(t, "Concat", 13, map[string]*graph.Attribute{"axis": intA(0)}, 1, u, u)
	want(t, "uint16", out[0], []int{4}, []uint16{1, 2, 1, 2})
	wantErr(t, "no axis", kernels.ErrInvalid, "Concat", 13, nil, 1, a, b)
	wantErr(t, "bad dims", kernels.ErrInvalid, "Concat", 13, map[string]*graph.Attribute{"axis": intA(0)}, 1, a, b)
	wantErr(t, "dtype", kernels.ErrInvalid, "Concat", 13, map[string]*graph.Attribute{"axis": intA(0)}, 1, a, i64([]int{1, 2}, 1, 2))
	wantErr(t, "scalar", kernels.ErrInvalid, "Concat", 13, map[string]*graph.Attribute{"axis": intA(0)}, 1, graph.Scalar(float32(1)))
}

func TestSplit(t *testing.T) {
	x := iota32(7)
	outs := mustRun(t, "Split", 18, map[string]*graph.Attribute{"num_outputs": intA(4)}, 4, x)
	want(t, "uneven0", outs[0], []int{2}, []float32{0, 1})
	want(t, "uneven3", outs[3], []int{1}, []float32{6})
	outs = mustRun(t, "Split", 13, nil, 2, x, vec(3, 4))
	want(t, "input0", outs[0], []int{3}, []float32{0, 1, 2})
	want(t, "input1", outs[1], []int{4}, []float32{3, 4, 5, 6})
	outs = mustRun(t, "Split", 11, map[string]*graph.Attribute{"split": ints(0, 7), "axis": intA(-1)}, 2, x)
	want(t, "attr0", outs[0], []int{0}, []float32{})
	want(t, "attr1", outs[1], []int{7}, x.Data)
	x2 := iota32(2, 4)
	outs = mustRun(t, "Split", 13, map[string]*graph.Attribute{"axis": intA(1)}, 2, x2)
	want(t, "even0", outs[0], []int{2, 2}, []float32{0, 1, 4, 5})
	want(t, "even1", outs[1], []int{2, 2}, []float32{2, 3, 6, 7})
	wantErr(t, "uneven pre-18", kernels.ErrInvalid, "Split", 13, nil, 2, x)
	wantErr(t, "bad sum", kernels.ErrInvalid, "Split", 13, nil, 2, x, vec(3, 3))
	wantErr(t, "bad count", kernels.ErrInvalid, "Split", 13, nil, 2, x, vec(7))
	wantErr(t, "negative last chunk", kernels.ErrInvalid, "Split", 18, map[string]*graph.Attribute{"num_outputs": intA(4)}, 4, iota32(5))
}

func TestSlice(t *testing.T) {
	x := iota32(3, 4)
	const maxI, minI = math.MaxInt64, math.MinInt64
	cases := []struct {
		name                      string
		starts, ends, axes, steps []int64
		shape                     []int
		data                      []float32
	}{
		{"basic", []int64{0, 1}, []int64{2, 3}, nil, nil, []int{2, 2}, []float32{1, 2, 5, 6}},
		{"neg axes", []int64{1}, []int64{maxI}, []int64{-1}, nil, []int{3, 3}, []float32{1, 2, 3, 5, 6, 7, 9, 10, 11}},
		{"reverse", []int64{-1}, []int64{minI}, []int64{1}, []int64{-1}, []int{3, 4}, []float32{3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8}},
		{"step2", []int64{0, 3}, []int64{maxI, 0}, []int64{0, 1}, []int64{2, -2}, []int{2, 2}, []float32{3, 1, 11, 9}},
		{"clamp start", []int64{10}, []int64{20}, []int64{1}, nil, []int{3, 0}, []float32{}},
		{"neg start oob", []int64{-100}, []int64{2}, []int64{0}, nil, []int{2, 4}, []float32{0, 1, 2, 3, 4, 5, 6, 7}},
		{"empty range", []int64{2}, []int64{1}, []int64{0}, nil, []int{0, 4}, []float32{}},
		{"neg step oob start", []int64{100}, []int64{-100}, []int64{0}, []int64{-1}, []int{3, 4}, []float32{8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3}},
		{"neg step 3", []int64{maxI}, []int64{minI}, []int64{1}, []int64{-3}, []int{3, 2}, []float32{3, 0, 7, 4, 11, 8}},
	}
	for _, c := range cases {
		in := []*graph.Tensor{x, vec(c.starts...), vec(c.ends...)}
		if c.axes != nil || c.steps != nil {
			if c.axes == nil {
				in = append(in, nil)
			} else {
				in = append(in, vec(c.axes...))
			}
		}
		if c.steps != nil {
			in = append(in, vec(c.steps...))
		}
		out := mustRun(t, "Slice", 13, nil, 1, in...)
		want(t, c.name, out[0], c.shape, c.data)
	}
	// int32 starts/ends
	s32 := graph.MustFromSlice([]int{1}, []int32{1})
	e32 := graph.MustFromSlice([]int{1}, []int32{math.MaxInt32})
	out := mustRun(t, "Slice", 13, nil, 1, x, s32, e32)
	want(t, "int32", out[0], []int{2, 4}, []float32{4, 5, 6, 7, 8, 9, 10, 11})
	// opset 1-9 attributes
	out = mustRun(t, "Slice", 9, map[string]*graph.Attribute{"starts": ints(1), "ends": ints(1000), "axes": ints(1)}, 1, x)
	want(t, "attrs", out[0], []int{3, 3}, []float32{1, 2, 3, 5, 6, 7, 9, 10, 11})
	wantErr(t, "zero step", kernels.ErrInvalid, "Slice", 13, nil, 1, x, vec(0), vec(1), vec(0), vec(0))
	wantErr(t, "dup axes", kernels.ErrInvalid, "Slice", 13, nil, 1, x, vec(0, 0), vec(1, 1), vec(0, -2))
	wantErr(t, "len mismatch", kernels.ErrInvalid, "Slice", 13, nil, 1, x, vec(0, 0), vec(1))
	wantErr(t, "bad axis", kernels.ErrInvalid, "Slice", 13, nil, 1, x, vec(0), vec(1), vec(2))
}

func TestSqueezeUnsqueeze(t *testing.T) {
	x := iota32(1, 3, 1)
	out := mustRun(t, "Squeeze", 13, nil, 1, x)
	want(t, "all", out[0], []int{3}, x.Data)
	out = mustRun(t, "Squeeze", 13, nil, 1, x, vec(-1))
	want(t, "neg", out[0], []int{1, 3}, x.Data)
	out = mustRun(t, "Squeeze", 11, map[string]*graph.Attribute{"axes": ints(0)}, 1, x)
	want(t, "attr", out[0], []int{3, 1}, x.Data)
	wantErr(t, "not 1", kernels.ErrInvalid, "Squeeze", 13, nil, 1, x, vec(1))
	wantErr(t, "oob", kernels.ErrInvalid, "Squeeze", 13, nil, 1, x, vec(3))

	y := iota32(2, 3)
	out = mustRun(t, "Unsqueeze", 13, nil, 1, y, vec(3, 0))
	want(t, "two", out[0], []int{1, 2, 3, 1}, y.Data)
	out = mustRun(t, "Unsqueeze", 13, nil, 1, y, vec(-1))
	want(t, "neg", out[0], []int{2, 3, 1}, y.Data)
	out = mustRun(t, "Unsqueeze", 11, map[string]*graph.Attribute{"axes": ints(1)}, 1, y)
	want(t, "attr", out[0], []int{2, 1, 3}, y.Data)
	out = mustRun(t, "Unsqueeze", 13, nil, 1, graph.Scalar(true), vec(0))
	want(t, "scalar bool", out[0], []int{1}, []bool{true})
	wantErr(t, "dup", kernels.ErrInvalid, "Unsqueeze", 13, nil, 1, y, vec(0, -4))
	wantErr(t, "oob", kernels.ErrInvalid, "Unsqueeze", 13, nil, 1, y, vec(3))
}

func TestFlatten(t *testing.T) {
	x := iota32(2, 3, 4)
	for _, c := range []struct {
		axis  int64
		shape []int
	}{{0, []int{1, 24}}, {1, []int{2, 12}}, {3, []int{24, 1}}, {-1, []int{6, 4}}, {-3, []int{1, 24}}} {
		out := mustRun(t, "Flatten", 13, map[string]*graph.Attribute{"axis": intA(c.axis)}, 1, x)
		want(t, "flatten", out[0], c.shape, x.Data)
	}
	wantErr(t, "oob", kernels.ErrInvalid, "Flatten", 13, map[string]*graph.Attribute{"axis": intA(4)}, 1, x)
}

func TestShapeSize(t *testing.T) {
	x := iota32(2, 3, 4)
	out := mustRun(t, "Shape", 13, nil, 1, x)
	want(t, "shape", out[0], []int{3}, []int64{2, 3, 4})
	out = mustRun(t, "Shape", 15, map[string]*graph.Attribute{"start": intA(-2)}, 1, x)
	want(t, "start", out[0], []int{2}, []int64{3, 4})
	out = mustRun(t, "Shape", 15, map[string]*graph.Attribute{"start": intA(-10), "end": intA(10)}, 1, x)
	want(t, "clip", out[0], []int{3}, []int64{2, 3, 4})
	out = mustRun(t, "Shape", 15, map[string]*graph.Attribute{"start": intA(2), "end": intA(1)}, 1, x)
	want(t, "empty", out[0], []int{0}, []int64{})
	out = mustRun(t, "Shape", 15, map[string]*graph.Attribute{"end": intA(-1)}, 1, x)
	want(t, "end", out[0], []int{2}, []int64{2, 3})
	out = mustRun(t, "Size", 13, nil, 1, x)
	want(t, "size", out[0], []int{}, []int64{24})
	out = mustRun(t, "Size", 13, nil, 1, iota32(3, 0))
	want(t, "size0", out[0], []int{}, []int64{0})
}

func TestConstant(t *testing.T) {
	v := i64([]int{2}, 5, 6)
	out := mustRun(t, "Constant", 13, map[string]*graph.Attribute{"value": tensA(v)}, 1)
	want(t, "value", out[0], []int{2}, []int64{5, 6})
	if &out[0].Data.([]int64)[0] == &v.Data.([]int64)[0] {
		t.Fatal("Constant shares the attribute's data")
	}
	out = mustRun(t, "Constant", 13, map[string]*graph.Attribute{"value_float": {Type: graph.AttrFloat, F: 1.5}}, 1)
	want(t, "value_float", out[0], []int{}, []float32{1.5})
	out = mustRun(t, "Constant", 13, map[string]*graph.Attribute{"value_ints": ints(1, 2, 3)}, 1)
	want(t, "value_ints", out[0], []int{3}, []int64{1, 2, 3})
	out = mustRun(t, "Constant", 13, map[string]*graph.Attribute{"value_strings": {Type: graph.AttrStrings, Strings: []string{"x"}}}, 1)
	want(t, "value_strings", out[0], []int{1}, []string{"x"})
	wantErr(t, "sparse", kernels.ErrUnsupported, "Constant", 13, map[string]*graph.Attribute{"sparse_value": {Type: graph.AttrSparse}}, 1)
	wantErr(t, "none", kernels.ErrInvalid, "Constant", 13, nil, 1)
	wantErr(t, "two", kernels.ErrInvalid, "Constant", 13, map[string]*graph.Attribute{"value_int": intA(1), "value_ints": ints(1)}, 1)
}

func TestConstantOfShape(t *testing.T) {
	out := mustRun(t, "ConstantOfShape", 20, nil, 1, vec(2, 2))
	want(t, "default", out[0], []int{2, 2}, []float32{0, 0, 0, 0})
	out = mustRun(t, "ConstantOfShape", 20, map[string]*graph.Attribute{"value": tensA(graph.MustFromSlice([]int{1}, []int32{7}))}, 1, vec(3))
	want(t, "int32", out[0], []int{3}, []int32{7, 7, 7})
	out = mustRun(t, "ConstantOfShape", 20, map[string]*graph.Attribute{"value": tensA(graph.MustFromSlice([]int{1}, []bool{true}))}, 1, vec(1, 2))
	want(t, "bool", out[0], []int{1, 2}, []bool{true, true})
	out = mustRun(t, "ConstantOfShape", 20, map[string]*graph.Attribute{"value": tensA(graph.MustFromSlice([]int{1}, []int64{1}))}, 1, vec(0))
	want(t, "zero", out[0], []int{0}, []int64{})
	out = mustRun(t, "ConstantOfShape", 20, nil, 1, vec())
	want(t, "scalar", out[0], []int{}, []float32{0})
	wantErr(t, "neg", kernels.ErrInvalid, "ConstantOfShape", 20, nil, 1, vec(-1))
	wantErr(t, "two values", kernels.ErrInvalid, "ConstantOfShape", 20, map[string]*graph.Attribute{"value": tensA(vec(1, 2))}, 1, vec(1))
}

func TestExpandTile(t *testing.T) {
	x := f32([]int{3, 1}, 1, 2, 3)
	out := mustRun(t, "Expand", 13, nil, 1, x, vec(2, 1, 2))
	want(t, "expand", out[0], []int{2, 3, 2}, []float32{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3})
	out = mustRun(t, "Expand", 13, nil, 1, x, vec(1))
	want(t, "expand smaller", out[0], []int{3, 1}, []float32{1, 2, 3})
	out = mustRun(t, "Expand", 13, nil, 1, x, vec(3, 0))
	want(t, "expand to 0", out[0], []int{3, 0}, []float32{})
	wantErr(t, "expand bad", kernels.ErrInvalid, "Expand", 13, nil, 1, x, vec(2, 2))

	y := f32([]int{2, 2}, 1, 2, 3, 4)
	out = mustRun(t, "Tile", 13, nil, 1, y, vec(2, 3))
	want(t, "tile", out[0], []int{4, 6}, []float32{
		1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4,
		1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4})
	out = mustRun(t, "Tile", 13, nil, 1, y, vec(0, 1))
	want(t, "tile0", out[0], []int{0, 2}, []float32{})
	wantErr(t, "tile rank", kernels.ErrInvalid, "Tile", 13, nil, 1, y, vec(2))
	wantErr(t, "tile neg", kernels.ErrInvalid, "Tile", 13, nil, 1, y, vec(-1, 1))
}

func TestIdentityDropout(t *testing.T) {
	s := graph.MustFromSlice([]int{2}, []string{"a", "b"})
	out := mustRun(t, "Identity", 16, nil, 1, s)
	want(t, "identity", out[0], []int{2}, []string{"a", "b"})
	x := f32([]int{3}, 1, 2, 3)
	outs := mustRun(t, "Dropout", 13, nil, 2, x, graph.Scalar(float32(0.5)))
	want(t, "dropout", outs[0], []int{3}, []float32{1, 2, 3})
	want(t, "mask", outs[1], []int{3}, []bool{true, true, true})
	outs = mustRun(t, "Dropout", 7, map[string]*graph.Attribute{"ratio": {Type: graph.AttrFloat, F: 0.2}}, 2, x)
	want(t, "mask7", outs[1], []int{3}, []float32{1, 1, 1})
	outs = mustRun(t, "Dropout", 13, nil, 2, x, graph.Scalar(float32(0)), graph.Scalar(true))
	want(t, "train ratio 0", outs[1], []int{3}, []bool{true, true, true})
	wantErr(t, "train", kernels.ErrUnsupported, "Dropout", 13, nil, 1, x, graph.Scalar(float32(0.5)), graph.Scalar(true))
}

func TestRange(t *testing.T) {
	out := mustRun(t, "Range", 11, nil, 1, graph.Scalar(int32(10)), graph.Scalar(int32(6)), graph.Scalar(int32(-3)))
	want(t, "int32 neg", out[0], []int{2}, []int32{10, 7})
	out = mustRun(t, "Range", 11, nil, 1, graph.Scalar(float32(1)), graph.Scalar(float32(2)), graph.Scalar(float32(0.25)))
	want(t, "float", out[0], []int{4}, []float32{1, 1.25, 1.5, 1.75})
	out = mustRun(t, "Range", 11, nil, 1, graph.Scalar(int64(0)), graph.Scalar(int64(-5)), graph.Scalar(int64(1)))
	want(t, "empty", out[0], []int{0}, []int64{})
	out = mustRun(t, "Range", 11, nil, 1, graph.Scalar(int64(math.MaxInt64-2)), graph.Scalar(int64(math.MaxInt64)), graph.Scalar(int64(1)))
	want(t, "big", out[0], []int{2}, []int64{math.MaxInt64 - 2, math.MaxInt64 - 1})
	h := func(f float32) *graph.Tensor { return graph.Scalar(graph.F16FromFloat32(f)) }
	out = mustRun(t, "Range", 11, nil, 1, h(1), h(4), h(1.5))
	want(t, "f16", out[0], []int{2}, []graph.F16{graph.F16FromFloat32(1), graph.F16FromFloat32(2.5)})
	wantErr(t, "delta 0", kernels.ErrInvalid, "Range", 11, nil, 1, graph.Scalar(int64(0)), graph.Scalar(int64(5)), graph.Scalar(int64(0)))
	wantErr(t, "huge", kernels.ErrInvalid, "Range", 11, nil, 1, graph.Scalar(int64(math.MinInt64)), graph.Scalar(int64(math.MaxInt64)), graph.Scalar(int64(1)))
	wantErr(t, "nan", kernels.ErrInvalid, "Range", 11, nil, 1, graph.Scalar(float32(0)), graph.Scalar(float32(math.NaN())), graph.Scalar(float32(1)))
	wantErr(t, "mixed", kernels.ErrInvalid, "Range", 11, nil, 1, graph.Scalar(int64(0)), graph.Scalar(int32(5)), graph.Scalar(int64(1)))
}

func TestInferSymbolic(t *testing.T) {
	sym := graph.Shape{{Param: "N"}, {Value: 3}, {Value: 4}}
	in := []kernels.InferInput{{Type: tensorType(graph.Float32, sym)}, {Type: tensorType(graph.Int64, graph.Shape{{Value: 2}}), Const: vec(0, -1)}}
	n := &graph.Node{OpType: "Reshape", Inputs: []string{"x", "s"}, Outputs: []string{"y"}}
	types, err := inferOf(t, "Reshape")(n, 13, in)
	if err != nil || len(types[0].Shape) != 2 || types[0].Shape[0].Param != "N" || types[0].Shape[1].Static() {
		t.Fatalf("reshape infer: %v %v", types, err)
	}
	n = &graph.Node{OpType: "Transpose", Inputs: []string{"x"}, Outputs: []string{"y"}}
	types, _ = inferOf(t, "Transpose")(n, 13, in[:1])
	if types[0].Shape[2].Param != "N" {
		t.Fatalf("transpose infer: %v", types)
	}
	n = &graph.Node{OpType: "Flatten", Inputs: []string{"x"}, Outputs: []string{"y"}}
	types, _ = inferOf(t, "Flatten")(n, 13, in[:1])
	if types[0].Shape[0].Static() || types[0].Shape[1].Value != 12 {
		t.Fatalf("flatten infer: %v", types)
	}
	n = &graph.Node{OpType: "Squeeze", Inputs: []string{"x"}, Outputs: []string{"y"}}
	types, _ = inferOf(t, "Squeeze")(n, 13, in[:1])
	if types[0].Shape != nil {
		t.Fatalf("squeeze infer with symbolic dims should be unknown rank: %v", types)
	}
}

func tensorType(dt graph.DType, s graph.Shape) graph.ValueType {
	return graph.ValueType{Kind: "tensor", DType: dt, Shape: s}
}

// inferOf is the registered shape inference of an op.
func inferOf(t *testing.T, op string) kernels.InferFunc {
	t.Helper()
	s, ok := kernels.Lookup("", op)
	if !ok || s.Infer == nil {
		t.Fatalf("%s has no inference", op)
	}
	return s.Infer
}
