package index

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.RegisterKernel("", "Gather", gatherKernel)
	kernels.RegisterKernel("", "GatherElements", gatherElementsKernel)
	kernels.RegisterKernel("", "GatherND", gatherNDKernel)
}

// ---- Gather ----

func gatherKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := checkTensor(n, x, "data"); err != nil {
		return nil, err
	}
	idx, err := indexValues(n, kernels.Input(in, 1), "indices")
	if err != nil {
		return nil, err
	}
	if x.Rank() < 1 {
		return nil, kernels.Invalidf(n, "data must have rank >= 1, got a scalar")
	}
	axis, err := kernels.NormAxis(n.AttrInt("axis", 0), x.Rank())
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	dim := x.Shape[axis]
	pos := make([]int, len(idx))
	for i, v := range idx {
		if pos[i], err = normIndex(n, v, dim, "indices"); err != nil {
			return nil, err
		}
	}
	ishape := in[1].Shape
	shape := append(append(append([]int{}, x.Shape[:axis]...), ishape...), x.Shape[axis+1:]...)
	out, err := ctx.New(x.DType, shape)
	if err != nil {
		return nil, err
	}
	outer := kernels.Prod(x.Shape[:axis])
	inner := kernels.Prod(x.Shape[axis+1:])
	if inner == 0 || len(pos) == 0 {
		return ctx.Outputs(out), nil
	}
	if inner == 1 { // element gather: avoid a block copy per element
		takeSeq(out.Data, x.Data, func(i int) int { return i/len(pos)*dim + pos[i%len(pos)] })
		return ctx.Outputs(out), nil
	}
	o := 0
	for a := 0; a < outer; a++ {
		base := a * dim * inner
		for _, p := range pos {
			graph.CopyRange(out.Data, o, x.Data, base+p*inner, inner)
			o += inner
		}
	}
	return ctx.Outputs(out), nil
}

// ---- GatherElements ----

func gatherElementsKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := checkTensor(n, x, "data"); err != nil {
		return nil, err
	}
	idx, err := indexValues(n, kernels.Input(in, 1), "indices")
	if err != nil {
		return nil, err
	}
	ishape := in[1].Shape
	r := x.Rank()
	if r < 1 {
		return nil, kernels.Invalidf(n, "data must have rank >= 1, got a scalar")
	}
	if len(ishape) != r {
		return nil, kernels.Invalidf(n, "indices rank %d differs from data rank %d", len(ishape), r)
	}
	axis, err := kernels.NormAxis(n.AttrInt("axis", 0), r)
	if err != nil {
		return nil, kernels.Invalidf(n, "%v", err)
	}
	for d := range r {
		if d != axis && ishape[d] > x.Shape[d] {
			return nil, kernels.Invalidf(n, "indices shape %v exceeds data shape %v on axis %d", ishape, x.Shape, d)
		}
	}
	dim := x.Shape[axis]
	pos := make([]int, len(idx))
	for i, v := range idx {
		if pos[i], err = normIndex(n, v, dim, "indices"); err != nil {
			return nil, err
		}
	}
	out, err := ctx.New(x.DType, ishape)
	if err != nil {
		return nil, err
	}
	if len(pos) == 0 {
		return ctx.Outputs(out), nil
	}
	xs := kernels.Strides(x.Shape)
	cnt := make([]int, r)
	base := 0 // offset of the current index position with the axis coordinate 0
	takeSeq(out.Data, x.Data, func(i int) int {
		src := base + pos[i]*xs[axis]
		for d := r - 1; d >= 0; d-- {
			cnt[d]++
			if d != axis {
				base += xs[d]
			}
			if cnt[d] < ishape[d] {
				break
			}
			if d != axis {
				base -= xs[d] * cnt[d]
			}
			cnt[d] = 0
		}
		return src
	})
	return ctx.Outputs(out), nil
}

// ---- GatherND ----

func gatherNDKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x := kernels.Input(in, 0)
	if err := checkTensor(n, x, "data"); err != nil {
		return nil, err
	}
	idx, err := indexValues(n, kernels.Input(in, 1), "indices")
	if err != nil {
		return nil, err
	}
	ishape := in[1].Shape
	b := 0
	if ctx.Opset >= 12 {
		b64 := n.AttrInt("batch_dims", 0)
		if b64 < 0 || b64 > 1<<20 {
			return nil, kernels.Invalidf(n, "batch_dims %d must be non-negative", b64)
		}
		b = int(b64)
	}
	lay, err := ndLayout(n, x.Shape, ishape, b)
	if err != nil {
		return nil, err
	}
	shape := append(append([]int{}, ishape[:len(ishape)-1]...), x.Shape[b+lay.k:]...)
	if _, err := graph.CheckAlloc(x.DType, shape); err != nil {
		return nil, kernels.Invalidf(n, "output: %v", err)
	}
	offs, err := ndOffsets(n, x.Shape, idx, lay)
	if err != nil {
		return nil, err
	}
	out, err := ctx.New(x.DType, shape)
	if err != nil {
		return nil, err
	}
	for j, o := range offs {
		graph.CopyRange(out.Data, j*lay.slice, x.Data, o, lay.slice)
	}
	return ctx.Outputs(out), nil
}

// ndLayout describes how an index tensor addresses a data tensor in
// GatherND/ScatterND: batch dims b, tuple length k, the number of tuples per
// batch, the number of batches and the size of each addressed slice.
type ndInfo struct {
	b, k, tuples, batches, slice int
}

func ndLayout(n *graph.Node, dshape, ishape []int, b int) (ndInfo, error) {
	r, q := len(dshape), len(ishape)
	if r < 1 || q < 1 {
		return ndInfo{}, kernels.Invalidf(n, "data and indices must have rank >= 1 (got %v and %v)", dshape, ishape)
	}
	if b >= q || b >= r {
		return ndInfo{}, kernels.Invalidf(n, "batch_dims %d must be less than the ranks of data %v and indices %v", b, dshape, ishape)
	}
	for d := range b {
		if dshape[d] != ishape[d] {
			return ndInfo{}, kernels.Invalidf(n, "batch dimensions of data %v and indices %v differ", dshape, ishape)
		}
	}
	k := ishape[q-1]
	if k > r-b {
		return ndInfo{}, kernels.Invalidf(n, "indices' last dimension %d exceeds data rank %d minus batch_dims %d", k, r, b)
	}
	return ndInfo{
		b: b, k: k,
		tuples:  kernels.Prod(ishape[b : q-1]),
		batches: kernels.Prod(ishape[:b]),
		slice:   kernels.Prod(dshape[b+k:]),
	}, nil
}

// ndOffsets returns the data offset of the slice each index tuple addresses,
// validating every index.
func ndOffsets(n *graph.Node, dshape []int, idx []int64, lay ndInfo) ([]int, error) {
	ds := kernels.Strides(dshape)
	batchStride := kernels.Prod(dshape[lay.b:])
	offs := make([]int, lay.batches*lay.tuples)
	for bi := 0; bi < lay.batches; bi++ {
		for t := 0; t < lay.tuples; t++ {
			j := bi*lay.tuples + t
			o := bi * batchStride
			for e := 0; e < lay.k; e++ {
				d := lay.b + e
				p, err := normIndex(n, idx[j*lay.k+e], dshape[d], "indices")
				if err != nil {
					return nil, err
				}
				o += p * ds[d]
			}
			offs[j] = o
		}
	}
	return offs, nil
}
