package misc

import (
	"cmp"
	"sort"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.RegisterKernel("", "Unique", uniqueKernel)
}

// cmpVal orders values with NaN after everything else and equal to NaN.
func cmpVal[T cmp.Ordered](x, y T) int {
	xn, yn := x != x, y != y
	switch {
	case xn && yn:
		return 0
	case xn:
		return 1
	case yn:
		return -1
	}
	return cmp.Compare(x, y)
}

// itemCmp compares item a and item b, where item j of the [outer, d, inner]
// view is the row-major sequence of elements (o, j, i).
func itemCmp[T cmp.Ordered](data []T, outer, d, inner int) func(a, b int) int {
	return func(a, b int) int {
		for o := 0; o < outer; o++ {
			pa, pb := (o*d+a)*inner, (o*d+b)*inner
			for i := 0; i < inner; i++ {
				if c := cmpVal(data[pa+i], data[pb+i]); c != 0 {
					return c
				}
			}
		}
		return 0
	}
}

func toF32[T interface{ Float32() float32 }](d []T) []float32 {
	out := make([]float32, len(d))
	for i, v := range d {
		out[i] = v.Float32()
	}
	return out
}

func comparer(x *graph.Tensor, outer, d, inner int) func(a, b int) int {
	switch v := x.Data.(type) {
	case []float32:
		return itemCmp(v, outer, d, inner)
	case []float64:
		return itemCmp(v, outer, d, inner)
	case []graph.F16:
		return itemCmp(toF32(v), outer, d, inner)
	case []graph.BF16:
		return itemCmp(toF32(v), outer, d, inner)
	case []int8:
		return itemCmp(v, outer, d, inner)
	case []int16:
		return itemCmp(v, outer, d, inner)
	case []int32:
		return itemCmp(v, outer, d, inner)
	case []int64:
		return itemCmp(v, outer, d, inner)
	case []uint8:
		return itemCmp(v, outer, d, inner)
	case []uint16:
		return itemCmp(v, outer, d, inner)
	case []uint32:
		return itemCmp(v, outer, d, inner)
	case []uint64:
		return itemCmp(v, outer, d, inner)
	case []string:
		return itemCmp(v, outer, d, inner)
	case []bool:
		b := make([]uint8, len(v))
		for i, t := range v {
			if t {
				b[i] = 1
			}
		}
		return itemCmp(b, outer, d, inner)
	}
	return nil
}

// uniqueKernel finds the unique elements (or, with axis, the unique slices
// along axis), sorted ascending (sorted=1, the default) or in order of first
// occurrence, with their first indices, the inverse mapping and counts.
func uniqueKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := checkIn(n, x, "X"); err != nil {
		return nil, err
	}
	shape, axis, err := optAxis(n, x)
	if err != nil {
		return nil, err
	}
	outer, d, inner := splitAt(shape, axis)
	cmpf := comparer(x, outer, d, inner)
	if cmpf == nil {
		return nil, kernels.Unsupportedf(n, "dtype %v", x.DType)
	}
	order := make([]int, d)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return cmpf(order[i], order[j]) < 0 })
	// groups of equal items; the stable sort makes each group's first member
	// its first occurrence
	var first, counts []int
	group := make([]int, d) // item -> group (in sorted order)
	for k, it := range order {
		if k == 0 || cmpf(order[k-1], it) != 0 {
			first = append(first, it)
			counts = append(counts, 0)
		}
		g := len(first) - 1
		group[it] = g
		counts[g]++
	}
	u := len(first)
	rank := make([]int, u) // sorted group -> output position
	for g := range rank {
		rank[g] = g
	}
	if n.AttrInt("sorted", 1) == 0 {
		byFirst := make([]int, u)
		for g := range byFirst {
			byFirst[g] = g
		}
		sort.Slice(byFirst, func(i, j int) bool { return first[byFirst[i]] < first[byFirst[j]] })
		for pos, g := range byFirst {
			rank[g] = pos
		}
	}
	pos2g := make([]int, u)
	for g, p := range rank {
		pos2g[p] = g
	}

	yshape := append([]int{}, shape...)
	yshape[axis] = u
	y, err := alloc(ctx, n, x.DType, yshape)
	if err != nil {
		return nil, err
	}
	idx := make([]int, 0, y.Len())
	for o := 0; o < outer; o++ {
		for p := 0; p < u; p++ {
			base := (o*d + first[pos2g[p]]) * inner
			for i := 0; i < inner; i++ {
				idx = append(idx, base+i)
			}
		}
	}
	if err := gather(n, y, x, idx); err != nil {
		return nil, err
	}
	outs := []*graph.Tensor{y}
	if len(n.Outputs) > 1 {
		t, err := alloc(ctx, n, graph.Int64, []int{u})
		if err != nil {
			return nil, err
		}
		for p := range u {
			t.Data.([]int64)[p] = int64(first[pos2g[p]])
		}
		outs = append(outs, t)
	}
	if len(n.Outputs) > 2 {
		t, err := alloc(ctx, n, graph.Int64, []int{d})
		if err != nil {
			return nil, err
		}
		for j := range d {
			t.Data.([]int64)[j] = int64(rank[group[j]])
		}
		outs = append(outs, t)
	}
	if len(n.Outputs) > 3 {
		t, err := alloc(ctx, n, graph.Int64, []int{u})
		if err != nil {
			return nil, err
		}
		for p := range u {
			t.Data.([]int64)[p] = int64(counts[pos2g[p]])
		}
		outs = append(outs, t)
	}
	return outs, nil
}
