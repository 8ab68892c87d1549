package reduce

import (
	"sort"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.RegisterKernel("", "TopK", topkKernel)
}

// topkK returns k: the attribute before opset 10, the second input (a
// one-element 1-D int64 tensor) from opset 10.
func topkK(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) (int64, error) {
	if ctx.Opset < 10 {
		if !n.HasAttr("k") {
			return 0, kernels.Invalidf(n, "missing attribute k")
		}
		return n.AttrInt("k", 0), nil
	}
	kt := kernels.Input(in, 1)
	if err := checkTensor(n, kt, "K"); err != nil {
		return 0, err
	}
	if !kt.DType.IsInteger() || kt.Len() != 1 || kt.Rank() > 1 {
		return 0, kernels.Invalidf(n, "K must be a one-element int64 tensor, got %v", kt)
	}
	return kt.Int64At(0), nil
}

// topkKernel returns the k largest (or smallest) elements along axis with
// their indices. Equal values keep the lower index first. NaN counts as
// larger than every number (it comes first for largest=1, last for
// largest=0). The output is always sorted, which sorted=0 permits.
func topkKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := in[0]
	if err := checkTensor(n, x, "X"); err != nil {
		return nil, err
	}
	if x.Rank() == 0 {
		return nil, kernels.Invalidf(n, "input must have rank >= 1")
	}
	k, err := topkK(ctx, n, in)
	if err != nil {
		return nil, err
	}
	axis, err := kernels.NormAxis(n.AttrInt("axis", -1), x.Rank())
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	largest := ctx.Opset < 11 || n.AttrInt("largest", 1) != 0
	outer, d, inner := splitAt(x.Shape, axis)
	if k < 0 || k > int64(d) {
		return nil, kernels.Invalidf(n, "k=%d out of range for axis of size %d", k, d)
	}
	kk := int(k)
	shape := append([]int{}, x.Shape...)
	shape[axis] = kk
	var flat []int
	switch v := kernels.ToFloat32(x).Data.(type) {
	case []float32:
		flat = topkIndex(v, outer, d, inner, kk, largest)
	case []float64:
		flat = topkIndex(v, outer, d, inner, kk, largest)
	case []int8:
		flat = topkIndex(v, outer, d, inner, kk, largest)
	case []int16:
		flat = topkIndex(v, outer, d, inner, kk, largest)
	case []int32:
		flat = topkIndex(v, outer, d, inner, kk, largest)
	case []int64:
		flat = topkIndex(v, outer, d, inner, kk, largest)
	case []uint8:
		flat = topkIndex(v, outer, d, inner, kk, largest)
	case []uint16:
		flat = topkIndex(v, outer, d, inner, kk, largest)
	case []uint32:
		flat = topkIndex(v, outer, d, inner, kk, largest)
	case []uint64:
		flat = topkIndex(v, outer, d, inner, kk, largest)
	default:
		return nil, kernels.Unsupportedf(n, "dtype %v", x.DType)
	}
	vals, err := gather(ctx, x, shape, flat)
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	idx, err := ctx.New(graph.Int64, shape)
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	id := idx.Data.([]int64)
	// recover the position along the axis from the flat index
	for i, f := range flat {
		id[i] = int64((f / inner) % d)
	}
	return []*graph.Tensor{vals, idx}, nil
}

// topkIndex returns, in output order, the flat input index of every
// selected element.
func topkIndex[T graph.Numeric](x []T, outer, d, inner, k int, largest bool) []int {
	flat := make([]int, outer*k*inner)
	if k == 0 {
		return flat
	}
	order := make([]int, d)
	for a := 0; a < outer; a++ {
		for c := 0; c < inner; c++ {
			base := a*d*inner + c
			for j := range order {
				order[j] = j
			}
			before := func(i, j int) bool {
				u, v := x[base+order[i]*inner], x[base+order[j]*inner]
				un, vn := u != u, v != v
				if un || vn {
					// NaN is the largest value
					if un && vn {
						return false
					}
					return un == largest
				}
				if largest {
					return u > v
				}
				return u < v
			}
			sort.SliceStable(order, before)
			for j := 0; j < k; j++ {
				flat[(a*k+j)*inner+c] = base + order[j]*inner
			}
		}
	}
	return flat
}
