package index

import (
	indexops "github.com/switchyard-hal/switchyard/core/ops/index"

	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.RegisterKernel("", "ScatterElements", scatterElementsKernel)
	// Scatter is the opset 9–10 name of ScatterElements (deprecated in 11).
	kernels.RegisterKernel("", "Scatter", scatterElementsKernel)
	kernels.RegisterKernel("", "ScatterND", scatterNDKernel)
}

// scatterInputs validates data/indices/updates and returns the output, a
// copy of data.
func scatterInputs(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) (x, upd *graph.Tensor, idx []int64, red indexops.Reduction, err error) {
	x, upd = kernels.Input(in, 0), kernels.Input(in, 2)
	if err = checkTensor(n, x, "data"); err != nil {
		return
	}
	if err = checkTensor(n, upd, "updates"); err != nil {
		return
	}
	if upd.DType != x.DType {
		err = kernels.Invalidf(n, "updates dtype %v differs from data dtype %v", upd.DType, x.DType)
		return
	}
	if idx, err = indexValues(n, kernels.Input(in, 1), "indices"); err != nil {
		return
	}
	// reduction exists from opset 16 (add, mul) and 18 (max, min); an
	// older model carrying it is honoured rather than silently ignored.
	red, err = indexops.ParseReduction(n)
	return
}

func cloneOut(ctx *kernels.Context, x *graph.Tensor) (*graph.Tensor, error) {
	out, err := ctx.New(x.DType, x.Shape)
	if err != nil {
		return nil, err
	}
	graph.CopyData(out.Data, x.Data)
	return out, nil
}

// ---- ScatterElements / Scatter ----

func scatterElementsKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x, upd, idx, red, err := scatterInputs(ctx, n, in)
	if err != nil {
		return nil, err
	}
	if n.OpType == "Scatter" {
		red = indexops.RedNone
	}
	ishape := in[1].Shape
	r := x.Rank()
	if r < 1 {
		return nil, kernels.Invalidf(n, "data must have rank >= 1, got a scalar")
	}
	if !graph.SameShape(ishape, upd.Shape) {
		return nil, kernels.Invalidf(n, "indices shape %v differs from updates shape %v", ishape, upd.Shape)
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
	xs := kernels.Strides(x.Shape)
	offs := make([]int, len(idx))
	if len(idx) > 0 {
		cnt := make([]int, r)
		base := 0
		for i, v := range idx {
			p, err := normIndex(n, v, x.Shape[axis], "indices")
			if err != nil {
				return nil, err
			}
			offs[i] = base + p*xs[axis]
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
		}
	}
	out, err := cloneOut(ctx, x)
	if err != nil {
		return nil, err
	}
	if err := applyScatter(n, red, out, upd, offs, 1); err != nil {
		return nil, err
	}
	return ctx.Outputs(out), nil
}

// ---- ScatterND ----

func scatterNDKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	x, upd, idx, red, err := scatterInputs(ctx, n, in)
	if err != nil {
		return nil, err
	}
	ishape := in[1].Shape
	lay, err := ndLayout(n, x.Shape, ishape, 0)
	if err != nil {
		return nil, err
	}
	want := append(append([]int{}, ishape[:len(ishape)-1]...), x.Shape[lay.k:]...)
	if !graph.SameShape(want, upd.Shape) {
		return nil, kernels.Invalidf(n, "updates shape %v must be %v (indices %v, data %v)", upd.Shape, want, ishape, x.Shape)
	}
	if lay.k == 0 && lay.slice == 0 {
		// no index values and nothing to write (the tuple count is not
		// bounded by any tensor's size here, so do not enumerate it)
		return out1(cloneOut(ctx, x))
	}
	offs, err := ndOffsets(n, x.Shape, idx, lay)
	if err != nil {
		return nil, err
	}
	out, err := cloneOut(ctx, x)
	if err != nil {
		return nil, err
	}
	if err := applyScatter(n, red, out, upd, offs, lay.slice); err != nil {
		return nil, err
	}
	return ctx.Outputs(out), nil
}
