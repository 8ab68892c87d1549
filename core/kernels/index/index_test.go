package index

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func ints(v ...int64) *graph.Attribute                  { return &graph.Attribute{Type: graph.AttrInts, Ints: v} }
func iattr(v int64) *graph.Attribute                    { return &graph.Attribute{Type: graph.AttrInt, I: v} }
func sattr(v string) *graph.Attribute                   { return &graph.Attribute{Type: graph.AttrString, S: v} }
func fattr(v float32) *graph.Attribute                  { return &graph.Attribute{Type: graph.AttrFloat, F: v} }
func t[T graph.Elem](shape []int, v ...T) *graph.Tensor { return graph.MustFromSlice(shape, v) }
func sh(d ...int) []int                                 { return d }

type attrs map[string]*graph.Attribute

func run(op string, opset int64, a attrs, in ...*graph.Tensor) (*graph.Tensor, error) {
	s, ok := kernels.Lookup("", op)
	if !ok {
		return nil, fmt.Errorf("%s not registered", op)
	}
	n := &graph.Node{OpType: op, Attrs: a, Outputs: []string{"y"}}
	for i, x := range in {
		if x == nil {
			n.Inputs = append(n.Inputs, "")
		} else {
			n.Inputs = append(n.Inputs, fmt.Sprint("x", i))
		}
	}
	if err := kernels.CheckNode(n, opset); err != nil {
		return nil, err
	}
	out, err := s.Kernel(&kernels.Context{Opset: opset}, n, in)
	if err != nil {
		return nil, err
	}
	if len(out) != 1 || out[0] == nil {
		return nil, fmt.Errorf("got %d outputs", len(out))
	}
	if err := out[0].Check(); err != nil {
		return nil, err
	}
	return out[0], nil
}

type kcase struct {
	name  string
	op    string
	opset int64
	attrs attrs
	in    []*graph.Tensor
	want  *graph.Tensor
	err   error // ErrInvalid / ErrUnsupported expected instead of want
}

func same(a, b *graph.Tensor) bool {
	if a.DType != b.DType || !graph.SameShape(a.Shape, b.Shape) {
		return false
	}
	if a.DType.IsFloat() {
		for i := range a.Len() {
			x, y := a.Float64At(i), b.Float64At(i)
			if x != y && !(math.IsNaN(x) && math.IsNaN(y)) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a.Data, b.Data)
}

func runCases(tb *testing.T, cases []kcase) {
	tb.Helper()
	for _, c := range cases {
		tb.Run(c.name, func(tb *testing.T) {
			snap := make([]*graph.Tensor, len(c.in))
			for i, x := range c.in {
				if x != nil {
					snap[i] = x.Clone()
				}
			}
			got, err := run(c.op, c.opset, c.attrs, c.in...)
			for i, x := range c.in {
				if x != nil && !same(x, snap[i]) {
					tb.Errorf("input %d was modified", i)
				}
			}
			if c.err != nil {
				if !errors.Is(err, c.err) {
					tb.Fatalf("want error %v, got %v (out %v)", c.err, err, got)
				}
				return
			}
			if err != nil {
				tb.Fatal(err)
			}
			if !same(got, c.want) {
				tb.Fatalf("got %v %v, want %v %v", got, got.Data, c.want, c.want.Data)
			}
		})
	}
}

var inv = kernels.ErrInvalid

func TestGather(tb *testing.T) {
	x := t(sh(3, 2), float32(1), 2, 3, 4, 5, 6)
	runCases(tb, []kcase{
		{"axis0", "Gather", 13, nil, []*graph.Tensor{x, t(sh(2), int64(2), 0)}, t(sh(2, 2), float32(5), 6, 1, 2), nil},
		{"negative", "Gather", 13, nil, []*graph.Tensor{x, t(sh(2), int32(-1), -3)}, t(sh(2, 2), float32(5), 6, 1, 2), nil},
		{"axis1 2d", "Gather", 13, attrs{"axis": iattr(1)}, []*graph.Tensor{x, t(sh(1, 2), int64(1), 1)}, t(sh(3, 1, 2), float32(2), 2, 4, 4, 6, 6), nil},
		{"axis-1 scalar", "Gather", 13, attrs{"axis": iattr(-1)}, []*graph.Tensor{x, graph.Scalar(int64(0))}, t(sh(3), float32(1), 3, 5), nil},
		{"empty indices", "Gather", 13, nil, []*graph.Tensor{x, t(sh(0), []int64{}...)}, t(sh(0, 2), []float32{}...), nil},
		{"strings", "Gather", 13, nil, []*graph.Tensor{t(sh(3), "a", "b", "c"), t(sh(2), int64(2), 2)}, t(sh(2), "c", "c"), nil},
		{"bool", "Gather", 1, nil, []*graph.Tensor{t(sh(2), true, false), t(sh(3), int64(1), 0, 1)}, t(sh(3), false, true, false), nil},
		{"out of range", "Gather", 13, nil, []*graph.Tensor{x, t(sh(1), int64(3))}, nil, inv},
		{"out of range neg", "Gather", 13, nil, []*graph.Tensor{x, t(sh(1), int64(-4))}, nil, inv},
		{"bad axis", "Gather", 13, attrs{"axis": iattr(2)}, []*graph.Tensor{x, t(sh(1), int64(0))}, nil, inv},
		{"float indices", "Gather", 13, nil, []*graph.Tensor{x, t(sh(1), float32(0))}, nil, inv},
		{"scalar data", "Gather", 13, nil, []*graph.Tensor{graph.Scalar(float32(1)), t(sh(1), int64(0))}, nil, inv},
	})
}

func TestGatherElements(tb *testing.T) {
	x := t(sh(3, 3), int32(1), 2, 3, 4, 5, 6, 7, 8, 9)
	runCases(tb, []kcase{
		{"axis0", "GatherElements", 13, nil, []*graph.Tensor{x, t(sh(2, 3), int64(1), 2, 0, 2, 0, 0)}, t(sh(2, 3), int32(4), 8, 3, 7, 2, 3), nil},
		{"axis1 neg", "GatherElements", 13, attrs{"axis": iattr(1)}, []*graph.Tensor{x, t(sh(3, 2), int64(0), -1, 1, 1, -3, 2)}, t(sh(3, 2), int32(1), 3, 5, 5, 7, 9), nil},
		{"smaller other dim", "GatherElements", 13, attrs{"axis": iattr(1)}, []*graph.Tensor{x, t(sh(1, 1), int64(2))}, t(sh(1, 1), int32(3)), nil},
		{"oob", "GatherElements", 13, nil, []*graph.Tensor{x, t(sh(1, 1), int64(3))}, nil, inv},
		{"rank mismatch", "GatherElements", 13, nil, []*graph.Tensor{x, t(sh(1), int64(0))}, nil, inv},
		{"too big index shape", "GatherElements", 13, nil, []*graph.Tensor{x, t(sh(1, 4), int64(0), 0, 0, 0)}, nil, inv},
	})
}

func TestGatherND(tb *testing.T) {
	x := t(sh(2, 2, 2), float64(0), 1, 2, 3, 4, 5, 6, 7)
	runCases(tb, []kcase{
		{"full", "GatherND", 11, nil, []*graph.Tensor{t(sh(2, 2), int64(0), 1, 2, 3), t(sh(2, 2), int64(0), 0, 1, 1)}, t(sh(2), int64(0), 3), nil},
		{"slices", "GatherND", 11, nil, []*graph.Tensor{t(sh(2, 2), int64(0), 1, 2, 3), t(sh(2, 1), int64(1), 0)}, t(sh(2, 2), int64(2), 3, 0, 1), nil},
		{"3d", "GatherND", 12, nil, []*graph.Tensor{x, t(sh(2, 2), int64(0), 1, -1, 0)}, t(sh(2, 2), float64(2), 3, 4, 5), nil},
		{"batch", "GatherND", 12, attrs{"batch_dims": iattr(1)}, []*graph.Tensor{x, t(sh(2, 1), int64(1), 0)}, t(sh(2, 2), float64(2), 3, 4, 5), nil},
		{"batch full", "GatherND", 13, attrs{"batch_dims": iattr(1)}, []*graph.Tensor{x, t(sh(2, 1, 2), int64(1), 1, 0, 1)}, t(sh(2, 1), float64(3), 5), nil},
		{"oob", "GatherND", 13, nil, []*graph.Tensor{x, t(sh(1, 3), int64(0), 0, 2)}, nil, inv},
		{"k too large", "GatherND", 13, nil, []*graph.Tensor{x, t(sh(1, 4), int64(0), 0, 0, 0)}, nil, inv},
		{"batch mismatch", "GatherND", 13, attrs{"batch_dims": iattr(1)}, []*graph.Tensor{x, t(sh(3, 1), int64(0), 0, 0)}, nil, inv},
		{"huge empty indices", "GatherND", 13, nil, []*graph.Tensor{x, t(sh(1<<31, 1<<31, 0), []int64{}...)}, nil, inv},
	})
}

func TestScatterElements(tb *testing.T) {
	nan := float32(math.NaN())
	x := t(sh(3, 3), float32(0), 0, 0, 0, 0, 0, 0, 0, 0)
	ind := t(sh(2, 3), int64(1), 0, 2, 0, 2, 1)
	upd := t(sh(2, 3), float32(1), 1.1, 1.2, 2, 2.1, 2.2)
	runCases(tb, []kcase{
		{"axis0", "ScatterElements", 11, nil, []*graph.Tensor{x, ind, upd}, t(sh(3, 3), float32(2), 1.1, 0, 1, 0, 2.2, 0, 2.1, 1.2), nil},
		{"scatter9", "Scatter", 9, nil, []*graph.Tensor{x, ind, upd}, t(sh(3, 3), float32(2), 1.1, 0, 1, 0, 2.2, 0, 2.1, 1.2), nil},
		{"axis1 neg", "ScatterElements", 13, attrs{"axis": iattr(1)}, []*graph.Tensor{t(sh(1, 5), float32(1), 2, 3, 4, 5), t(sh(1, 2), int64(1), -2), t(sh(1, 2), float32(1.1), 2.1)}, t(sh(1, 5), float32(1), 1.1, 3, 2.1, 5), nil},
		{"add dup", "ScatterElements", 16, attrs{"axis": iattr(1), "reduction": sattr("add")}, []*graph.Tensor{t(sh(1, 5), float32(1), 2, 3, 4, 5), t(sh(1, 2), int64(1), 1), t(sh(1, 2), float32(1.1), 2.1)}, t(sh(1, 5), float32(1), 5.2, 3, 4, 5), nil},
		{"mul", "ScatterElements", 16, attrs{"axis": iattr(1), "reduction": sattr("mul")}, []*graph.Tensor{t(sh(1, 3), int32(2), 3, 4), t(sh(1, 2), int64(1), 1), t(sh(1, 2), int32(5), 7)}, t(sh(1, 3), int32(2), 105, 4), nil},
		{"max nan", "ScatterElements", 18, attrs{"axis": iattr(1), "reduction": sattr("max")}, []*graph.Tensor{t(sh(1, 3), float32(2), 3, nan), t(sh(1, 3), int64(0), 1, 2), t(sh(1, 3), float32(5), nan, 1)}, t(sh(1, 3), float32(5), nan, nan), nil},
		{"min", "ScatterElements", 18, attrs{"reduction": sattr("min")}, []*graph.Tensor{t(sh(3), int8(2), 3, 4), t(sh(3), int64(0), 0, 2), t(sh(3), int8(5), -1, 7)}, t(sh(3), int8(-1), 3, 4), nil},
		{"f16 add", "ScatterElements", 18, attrs{"reduction": sattr("add")}, []*graph.Tensor{t(sh(2), graph.F16FromFloat32(1), graph.F16FromFloat32(2)), t(sh(1), int64(1)), t(sh(1), graph.F16FromFloat32(0.5))}, t(sh(2), graph.F16FromFloat32(1), graph.F16FromFloat32(2.5)), nil},
		{"bool add", "ScatterElements", 18, attrs{"reduction": sattr("add")}, []*graph.Tensor{t(sh(2), false, false), t(sh(1), int64(1)), t(sh(1), true)}, t(sh(2), false, true), nil},
		{"string none", "ScatterElements", 13, nil, []*graph.Tensor{t(sh(2), "a", "b"), t(sh(1), int64(0)), t(sh(1), "z")}, t(sh(2), "z", "b"), nil},
		{"string add", "ScatterElements", 18, attrs{"reduction": sattr("add")}, []*graph.Tensor{t(sh(2), "a", "b"), t(sh(1), int64(0)), t(sh(1), "z")}, nil, kernels.ErrUnsupported},
		{"oob", "ScatterElements", 13, nil, []*graph.Tensor{x, t(sh(1, 1), int64(3)), t(sh(1, 1), float32(1))}, nil, inv},
		{"shape mismatch", "ScatterElements", 13, nil, []*graph.Tensor{x, t(sh(1, 1), int64(0)), t(sh(1, 2), float32(1), 2)}, nil, inv},
		{"dtype mismatch", "ScatterElements", 13, nil, []*graph.Tensor{x, t(sh(1, 1), int64(0)), t(sh(1, 1), float64(1))}, nil, inv},
		{"bad reduction", "ScatterElements", 18, attrs{"reduction": sattr("sum")}, []*graph.Tensor{x, ind, upd}, nil, inv},
	})
}

func TestScatterND(tb *testing.T) {
	x := t(sh(8), int64(1), 2, 3, 4, 5, 6, 7, 8)
	ind := t(sh(4, 1), int64(4), 3, 1, 7)
	upd := t(sh(4), int64(9), 10, 11, 12)
	y := t(sh(2, 2, 2), float32(1), 2, 3, 4, 5, 6, 7, 8)
	runCases(tb, []kcase{
		{"1d", "ScatterND", 11, nil, []*graph.Tensor{x, ind, upd}, t(sh(8), int64(1), 11, 3, 10, 9, 6, 7, 12), nil},
		{"slices", "ScatterND", 11, nil, []*graph.Tensor{y, t(sh(1, 1), int64(-1)), t(sh(1, 2, 2), float32(0), 0, 0, 9)}, t(sh(2, 2, 2), float32(1), 2, 3, 4, 0, 0, 0, 9), nil},
		{"add dup", "ScatterND", 16, attrs{"reduction": sattr("add")}, []*graph.Tensor{y, t(sh(2, 2), int64(0), 0, 0, 0), t(sh(2, 2), float32(10), 20, 1, 2)}, t(sh(2, 2, 2), float32(12), 24, 3, 4, 5, 6, 7, 8), nil},
		{"mul", "ScatterND", 16, attrs{"reduction": sattr("mul")}, []*graph.Tensor{x, t(sh(2, 1), int64(1), 1), t(sh(2), int64(3), 4)}, t(sh(8), int64(1), 24, 3, 4, 5, 6, 7, 8), nil},
		{"max", "ScatterND", 18, attrs{"reduction": sattr("max")}, []*graph.Tensor{x, t(sh(2, 1), int64(0), 1), t(sh(2), int64(3), 0)}, t(sh(8), int64(3), 2, 3, 4, 5, 6, 7, 8), nil},
		{"min", "ScatterND", 18, attrs{"reduction": sattr("min")}, []*graph.Tensor{x, t(sh(2, 1), int64(0), 1), t(sh(2), int64(3), 0)}, t(sh(8), int64(1), 0, 3, 4, 5, 6, 7, 8), nil},
		{"oob", "ScatterND", 11, nil, []*graph.Tensor{x, t(sh(1, 1), int64(8)), t(sh(1), int64(0))}, nil, inv},
		{"bad updates", "ScatterND", 11, nil, []*graph.Tensor{x, ind, t(sh(3), int64(9), 10, 11)}, nil, inv},
		{"empty", "ScatterND", 11, nil, []*graph.Tensor{x, t(sh(0, 1), []int64{}...), t(sh(0), []int64{}...)}, x, nil},
	})
}

func TestNonZero(tb *testing.T) {
	nan := float32(math.NaN())
	runCases(tb, []kcase{
		{"bool 2d", "NonZero", 13, nil, []*graph.Tensor{t(sh(2, 2), true, false, true, true)}, t(sh(2, 3), int64(0), 1, 1, 0, 0, 1), nil},
		{"float nan negzero", "NonZero", 9, nil, []*graph.Tensor{t(sh(4), float32(0), nan, float32(math.Copysign(0, -1)), -2)}, t(sh(1, 2), int64(1), 3), nil},
		{"f16", "NonZero", 13, nil, []*graph.Tensor{t(sh(3), graph.F16FromFloat32(0), graph.F16FromFloat32(-0.0001), graph.F16FromFloat32(float32(math.Copysign(0, -1))))}, t(sh(1, 1), int64(1)), nil},
		{"scalar", "NonZero", 13, nil, []*graph.Tensor{graph.Scalar(int32(5))}, t(sh(1, 1), int64(0)), nil},
		{"scalar zero", "NonZero", 13, nil, []*graph.Tensor{graph.Scalar(int32(0))}, t(sh(1, 0), []int64{}...), nil},
		{"empty", "NonZero", 13, nil, []*graph.Tensor{t(sh(2, 0, 3), []uint8{}...)}, t(sh(3, 0), []int64{}...), nil},
		{"3d", "NonZero", 13, nil, []*graph.Tensor{t(sh(1, 2, 2), int64(0), 7, 7, 0)}, t(sh(3, 2), int64(0), 0, 0, 1, 1, 0), nil},
	})
}

func TestOneHot(tb *testing.T) {
	vals := t(sh(2), float32(0), 1)
	runCases(tb, []kcase{
		{"default axis", "OneHot", 11, nil, []*graph.Tensor{t(sh(3), int64(0), 2, -1), graph.Scalar(int64(3)), vals}, t(sh(3, 3), float32(1), 0, 0, 0, 0, 1, 0, 0, 1), nil},
		{"axis0", "OneHot", 11, attrs{"axis": iattr(0)}, []*graph.Tensor{t(sh(2), int64(1), 0), t(sh(1), float32(3)), t(sh(2), int32(5), 9)}, t(sh(3, 2), int32(5), 9, 9, 5, 5, 5), nil},
		{"axis1 of 2d", "OneHot", 11, attrs{"axis": iattr(-2)}, []*graph.Tensor{t(sh(2, 2), int32(0), 1, 1, 0), graph.Scalar(int64(2)), vals}, t(sh(2, 2, 2), float32(1), 0, 0, 1, 0, 1, 1, 0), nil},
		{"out of range", "OneHot", 11, nil, []*graph.Tensor{t(sh(3), int64(3), -4, 1), graph.Scalar(int64(3)), vals}, t(sh(3, 3), float32(0), 0, 0, 0, 0, 0, 0, 1, 0), nil},
		{"opset9 negative", "OneHot", 9, nil, []*graph.Tensor{t(sh(2), int64(-1), 1), graph.Scalar(int64(2)), vals}, t(sh(2, 2), float32(0), 0, 0, 1), nil},
		{"float indices", "OneHot", 11, nil, []*graph.Tensor{t(sh(2), float32(1.7), -1), graph.Scalar(float32(2.5)), vals}, t(sh(2, 2), float32(0), 1, 0, 1), nil},
		{"bad axis", "OneHot", 11, attrs{"axis": iattr(2)}, []*graph.Tensor{t(sh(2), int64(0), 1), graph.Scalar(int64(2)), vals}, nil, inv},
		{"negative depth", "OneHot", 11, nil, []*graph.Tensor{t(sh(2), int64(0), 1), graph.Scalar(int64(-2)), vals}, nil, inv},
		{"bad values", "OneHot", 11, nil, []*graph.Tensor{t(sh(2), int64(0), 1), graph.Scalar(int64(2)), t(sh(3), float32(0), 1, 2)}, nil, inv},
	})
}

func TestTrilu(tb *testing.T) {
	x := t(sh(3, 4), int64(1), 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)
	runCases(tb, []kcase{
		{"upper", "Trilu", 14, nil, []*graph.Tensor{x}, t(sh(3, 4), int64(1), 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12), nil},
		{"upper k=1", "Trilu", 14, nil, []*graph.Tensor{x, graph.Scalar(int64(1))}, t(sh(3, 4), int64(0), 2, 3, 4, 0, 0, 7, 8, 0, 0, 0, 12), nil},
		{"upper k=-1", "Trilu", 14, nil, []*graph.Tensor{x, graph.Scalar(int64(-1))}, t(sh(3, 4), int64(1), 2, 3, 4, 5, 6, 7, 8, 0, 10, 11, 12), nil},
		{"lower", "Trilu", 14, attrs{"upper": iattr(0)}, []*graph.Tensor{x}, t(sh(3, 4), int64(1), 0, 0, 0, 5, 6, 0, 0, 9, 10, 11, 0), nil},
		{"lower k=-5", "Trilu", 14, attrs{"upper": iattr(0)}, []*graph.Tensor{x, graph.Scalar(int64(-5))}, t(sh(3, 4), make([]int64, 12)...), nil},
		{"lower batched bool", "Trilu", 14, attrs{"upper": iattr(0)}, []*graph.Tensor{t(sh(2, 2, 2), true, true, true, true, true, true, true, true)}, t(sh(2, 2, 2), true, false, true, true, true, false, true, true), nil},
		{"omitted k", "Trilu", 14, attrs{"upper": iattr(0)}, []*graph.Tensor{t(sh(1, 2), float32(1), 2), nil}, t(sh(1, 2), float32(1), 0), nil},
		{"zero rows", "Trilu", 14, nil, []*graph.Tensor{t(sh(0, 5), []float32{}...)}, t(sh(0, 5), []float32{}...), nil},
		{"rank1", "Trilu", 14, nil, []*graph.Tensor{t(sh(2), float32(1), 2)}, nil, inv},
	})
}

func TestDepthSpace(tb *testing.T) {
	// x[0, c, 0, 0] = c for 4 channels, 1x1 spatial
	x := t(sh(1, 8, 1, 1), float32(0), 1, 2, 3, 4, 5, 6, 7)
	runCases(tb, []kcase{
		// DCR: out[c, y, x] = in[(y*2+x)*2 + c]
		{"dcr", "DepthToSpace", 13, attrs{"blocksize": iattr(2)}, []*graph.Tensor{x}, t(sh(1, 2, 2, 2), float32(0), 2, 4, 6, 1, 3, 5, 7), nil},
		// CRD: out[c, y, x] = in[c*4 + y*2 + x]
		{"crd", "DepthToSpace", 13, attrs{"blocksize": iattr(2), "mode": sattr("CRD")}, []*graph.Tensor{x}, t(sh(1, 2, 2, 2), float32(0), 1, 2, 3, 4, 5, 6, 7), nil},
		{"opset1 ignores mode", "DepthToSpace", 1, attrs{"blocksize": iattr(2), "mode": sattr("CRD")}, []*graph.Tensor{x}, t(sh(1, 2, 2, 2), float32(0), 2, 4, 6, 1, 3, 5, 7), nil},
		{"s2d", "SpaceToDepth", 13, attrs{"blocksize": iattr(2)}, []*graph.Tensor{t(sh(1, 2, 2, 2), float32(0), 2, 4, 6, 1, 3, 5, 7)}, x, nil},
		{"s2d 2x4", "SpaceToDepth", 13, attrs{"blocksize": iattr(2)}, []*graph.Tensor{t(sh(1, 1, 2, 4), int8(0), 1, 2, 3, 4, 5, 6, 7)}, t(sh(1, 4, 1, 2), int8(0), 2, 1, 3, 4, 6, 5, 7), nil},
		{"bad channels", "DepthToSpace", 13, attrs{"blocksize": iattr(3)}, []*graph.Tensor{x}, nil, inv},
		{"no blocksize", "DepthToSpace", 13, nil, []*graph.Tensor{x}, nil, inv},
		{"bad spatial", "SpaceToDepth", 13, attrs{"blocksize": iattr(2)}, []*graph.Tensor{x}, nil, inv},
		{"bad mode", "DepthToSpace", 13, attrs{"blocksize": iattr(2), "mode": sattr("XYZ")}, []*graph.Tensor{x}, nil, inv},
	})
	// round trip on a larger tensor, both modes of the inverse pair DCR/S2D
	v := make([]float32, 2*8*3*5)
	for i := range v {
		v[i] = float32(i)
	}
	big := t(sh(2, 8, 3, 5), v...)
	d, err := run("DepthToSpace", 13, attrs{"blocksize": iattr(2)}, big)
	if err != nil {
		tb.Fatal(err)
	}
	back, err := run("SpaceToDepth", 13, attrs{"blocksize": iattr(2)}, d)
	if err != nil {
		tb.Fatal(err)
	}
	if !same(back, big) {
		tb.Fatalf("DepthToSpace/SpaceToDepth round trip differs")
	}
}

func TestPad(tb *testing.T) {
	x := t(sh(2, 3), float32(1), 2, 3, 4, 5, 6)
	p := func(v ...int64) *graph.Tensor { return t(sh(len(v)), v...) }
	row := t(sh(4), int32(1), 2, 3, 4)
	runCases(tb, []kcase{
		{"constant", "Pad", 11, nil, []*graph.Tensor{x, p(0, 1, 1, 0), graph.Scalar(float32(9))}, t(sh(3, 4), float32(9), 1, 2, 3, 9, 4, 5, 6, 9, 9, 9, 9), nil},
		{"constant default zero", "Pad", 13, nil, []*graph.Tensor{x, p(1, 0, 0, 0), nil}, t(sh(3, 3), float32(0), 0, 0, 1, 2, 3, 4, 5, 6), nil},
		{"opset2 attrs", "Pad", 2, attrs{"pads": ints(0, 1, 1, 0), "value": fattr(9)}, []*graph.Tensor{x}, t(sh(3, 4), float32(9), 1, 2, 3, 9, 4, 5, 6, 9, 9, 9, 9), nil},
		{"opset1 paddings", "Pad", 1, attrs{"paddings": ints(0, 1, 0, 0), "mode": sattr("edge")}, []*graph.Tensor{x}, t(sh(2, 4), float32(1), 1, 2, 3, 4, 4, 5, 6), nil},
		{"reflect", "Pad", 11, attrs{"mode": sattr("reflect")}, []*graph.Tensor{row, p(2, 2)}, t(sh(8), int32(3), 2, 1, 2, 3, 4, 3, 2), nil},
		{"reflect long", "Pad", 11, attrs{"mode": sattr("reflect")}, []*graph.Tensor{t(sh(3), int32(1), 2, 3), p(5, 0)}, t(sh(8), int32(2), 1, 2, 3, 2, 1, 2, 3), nil},
		{"edge", "Pad", 11, attrs{"mode": sattr("edge")}, []*graph.Tensor{row, p(2, 1)}, t(sh(7), int32(1), 1, 1, 2, 3, 4, 4), nil},
		{"wrap", "Pad", 19, attrs{"mode": sattr("wrap")}, []*graph.Tensor{row, p(3, 6)}, t(sh(13), int32(2), 3, 4, 1, 2, 3, 4, 1, 2, 3, 4, 1, 2), nil},
		{"crop", "Pad", 11, nil, []*graph.Tensor{row, p(-1, -2)}, t(sh(1), int32(2)), nil},
		{"crop and pad", "Pad", 11, nil, []*graph.Tensor{x, p(0, -1, 1, 1), graph.Scalar(float32(7))}, t(sh(3, 3), float32(2), 3, 7, 5, 6, 7, 7, 7, 7), nil},
		{"crop then edge", "Pad", 11, attrs{"mode": sattr("edge")}, []*graph.Tensor{row, p(-1, 2)}, t(sh(5), int32(2), 3, 4, 4, 4), nil},
		{"axes", "Pad", 18, nil, []*graph.Tensor{x, p(1, 1), graph.Scalar(float32(0)), p(-1)}, t(sh(2, 5), float32(0), 1, 2, 3, 0, 0, 4, 5, 6, 0), nil},
		{"bool", "Pad", 13, nil, []*graph.Tensor{t(sh(1), true), p(1, 1), graph.Scalar(true)}, t(sh(3), true, true, true), nil},
		{"string", "Pad", 13, nil, []*graph.Tensor{t(sh(1), "a"), p(1, 0), graph.Scalar("z")}, t(sh(2), "z", "a"), nil},
		{"bf16", "Pad", 13, nil, []*graph.Tensor{t(sh(1), graph.BF16FromFloat32(1)), p(0, 1), graph.Scalar(graph.BF16FromFloat32(2))}, t(sh(2), graph.BF16FromFloat32(1), graph.BF16FromFloat32(2)), nil},
		{"empty constant", "Pad", 13, nil, []*graph.Tensor{t(sh(0), []float32{}...), p(1, 1), graph.Scalar(float32(3))}, t(sh(2), float32(3), 3), nil},
		{"empty edge", "Pad", 13, attrs{"mode": sattr("edge")}, []*graph.Tensor{t(sh(0), []float32{}...), p(1, 1)}, nil, inv},
		{"over-crop", "Pad", 13, nil, []*graph.Tensor{row, p(-3, -2)}, nil, inv},
		{"pads length", "Pad", 13, nil, []*graph.Tensor{x, p(1, 1)}, nil, inv},
		{"dup axes", "Pad", 18, nil, []*graph.Tensor{x, p(1, 1, 1, 1), nil, p(0, -2)}, nil, inv},
		{"value dtype", "Pad", 13, nil, []*graph.Tensor{x, p(1, 1, 1, 1), graph.Scalar(float64(1))}, nil, inv},
		{"bad mode", "Pad", 13, attrs{"mode": sattr("mirror")}, []*graph.Tensor{x, p(1, 1, 1, 1)}, nil, inv},
		{"hostile", "Pad", 13, nil, []*graph.Tensor{x, p(0, 1<<40, 0, 1<<40)}, nil, inv},
	})
}

func TestInfer(tb *testing.T) {
	d := func(v ...int64) graph.Shape {
		s := make(graph.Shape, len(v))
		for i, x := range v {
			s[i] = graph.Dim{Value: x}
		}
		return s
	}
	ty := func(dt graph.DType, s graph.Shape) kernels.InferInput {
		return kernels.InferInput{Type: tensorType(dt, s)}
	}
	cst := func(x *graph.Tensor) kernels.InferInput {
		return kernels.InferInput{Type: tensorType(x.DType, graph.StaticShape(x.Shape...)), Const: x}
	}
	cases := []struct {
		op    string
		opset int64
		attrs attrs
		in    []kernels.InferInput
		want  graph.ValueType
	}{
		{"Gather", 13, attrs{"axis": iattr(1)}, []kernels.InferInput{ty(graph.Float32, d(2, 3, 4)), ty(graph.Int64, d(5, 6))}, tensorType(graph.Float32, d(2, 5, 6, 4))},
		{"GatherElements", 13, nil, []kernels.InferInput{ty(graph.Int8, d(2, 3)), ty(graph.Int64, d(1, 3))}, tensorType(graph.Int8, d(1, 3))},
		{"GatherND", 13, attrs{"batch_dims": iattr(1)}, []kernels.InferInput{ty(graph.Float32, d(2, 3, 4)), ty(graph.Int64, d(2, 5, 1))}, tensorType(graph.Float32, d(2, 5, 4))},
		{"ScatterND", 13, nil, []kernels.InferInput{ty(graph.Float32, d(2, 3)), ty(graph.Int64, d(1, 1)), ty(graph.Float32, d(1, 3))}, tensorType(graph.Float32, d(2, 3))},
		{"NonZero", 13, nil, []kernels.InferInput{ty(graph.Bool, d(2, 3))}, tensorType(graph.Int64, graph.Shape{{Value: 2}, {Value: -1}})},
		{"OneHot", 11, attrs{"axis": iattr(0)}, []kernels.InferInput{ty(graph.Int64, d(3)), cst(graph.Scalar(int64(4))), ty(graph.Float16, d(2))}, tensorType(graph.Float16, d(4, 3))},
		{"Trilu", 14, nil, []kernels.InferInput{ty(graph.Float32, d(3, 3))}, tensorType(graph.Float32, d(3, 3))},
		{"DepthToSpace", 13, attrs{"blocksize": iattr(2)}, []kernels.InferInput{ty(graph.Float32, d(1, 8, 2, 3))}, tensorType(graph.Float32, d(1, 2, 4, 6))},
		{"SpaceToDepth", 13, attrs{"blocksize": iattr(2)}, []kernels.InferInput{ty(graph.Float32, d(1, 2, 4, 6))}, tensorType(graph.Float32, d(1, 8, 2, 3))},
		{"Pad", 13, nil, []kernels.InferInput{ty(graph.Float32, d(2, 3)), cst(t(sh(4), int64(1), 0, 1, -1))}, tensorType(graph.Float32, d(4, 2))},
		{"Pad", 13, nil, []kernels.InferInput{ty(graph.Float32, d(2, 3)), ty(graph.Int64, d(4))}, tensorType(graph.Float32, d(-1, -1))},
		{"Pad", 2, attrs{"pads": ints(1, 1, 1, 1)}, []kernels.InferInput{ty(graph.Float32, d(2, 3))}, tensorType(graph.Float32, d(4, 5))},
	}
	for _, c := range cases {
		s, _ := kernels.Lookup("", c.op)
		n := &graph.Node{OpType: c.op, Attrs: c.attrs, Outputs: []string{"y"}}
		for i := range c.in {
			n.Inputs = append(n.Inputs, fmt.Sprint("x", i))
		}
		got, err := s.Infer(n, c.opset, c.in)
		if err != nil {
			tb.Errorf("%s: %v", c.op, err)
			continue
		}
		if len(got) != 1 || !reflect.DeepEqual(got[0], c.want) {
			tb.Errorf("%s: got %v, want %v", c.op, got, c.want)
		}
	}
	// certainly invalid inputs are reported
	s, _ := kernels.Lookup("", "Gather")
	if _, err := s.Infer(&graph.Node{OpType: "Gather"}, 13, []kernels.InferInput{ty(graph.Float32, d(2)), ty(graph.Float32, d(2))}); err == nil {
		tb.Errorf("Gather with float indices: no error")
	}
}

func tensorType(dt graph.DType, s graph.Shape) graph.ValueType {
	return graph.ValueType{Kind: "tensor", DType: dt, Shape: s}
}
