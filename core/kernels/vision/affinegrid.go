package vision

import (
	"github.com/switchyard-hal/switchyard/core/graph"
	"github.com/switchyard-hal/switchyard/core/kernels"
)

func init() {
	kernels.RegisterKernel("", "AffineGrid", affineGridKernel)
}

// baseCoord is the normalized coordinate of sample i of size along one axis.
func baseCoord(i, size int, align bool) float64 {
	if align {
		if size <= 1 {
			return -1
		}
		return -1 + 2*float64(i)/float64(size-1)
	}
	return (2*float64(i)+1)/float64(size) - 1
}

func affineGridKernel(ctx *kernels.Context, n *graph.Node, in []*graph.Tensor) ([]*graph.Tensor, error) {
	theta, size := kernels.Input(in, 0), kernels.Input(in, 1)
	if theta == nil || size == nil {
		return nil, kernels.Invalidf(n, "theta and size are required")
	}
	if size.DType != graph.Int64 || len(size.Shape) != 1 {
		return nil, kernels.Invalidf(n, "size must be a 1-D int64 tensor, got %v%v", size.DType, size.Shape)
	}
	sz := size.Int64s()
	if len(sz) != 4 && len(sz) != 5 {
		return nil, kernels.Invalidf(n, "size must have 4 or 5 values, got %v", sz)
	}
	r := len(sz) - 2
	for _, v := range sz {
		if v < 0 || v > 1<<40 {
			return nil, kernels.Invalidf(n, "size %v has an out-of-range value", sz)
		}
	}
	N := int(sz[0])
	if len(theta.Shape) != 3 || theta.Shape[0] != N || theta.Shape[1] != r || theta.Shape[2] != r+1 {
		return nil, kernels.Invalidf(n, "theta shape %v does not match size %v (want [%d, %d, %d])", theta.Shape, sz, N, r, r+1)
	}
	align := false
	switch a := n.AttrInt("align_corners", 0); a {
	case 0, 1:
		align = a == 1
	default:
		return nil, kernels.Invalidf(n, "align_corners must be 0 or 1, got %d", a)
	}
	sp := make([]int, r) // spatial sizes, outermost first (D, H, W)
	for i := range sp {
		sp[i] = int(sz[2+i])
	}
	outShape := append(append([]int{N}, sp...), r)
	if _, err := checkScratch(outShape); err != nil {
		return nil, kernels.Errorf(n, "%w", err)
	}
	th := theta.Float64s()
	vals := make([]float64, kernels.Prod(outShape))
	base := make([][]float64, r)
	for a := 0; a < r; a++ {
		base[a] = make([]float64, sp[a])
		for i := range base[a] {
			base[a][i] = baseCoord(i, sp[a], align)
		}
	}
	// the homogeneous source point: (x, y[, z], 1) with x along the
	// innermost axis (W)
	pt := make([]float64, r+1)
	pt[r] = 1
	at := 0
	for b := 0; b < N; b++ {
		m := th[b*r*(r+1) : (b+1)*r*(r+1)]
		for c := newCounter(sp); !c.done; c.next() {
			for a := 0; a < r; a++ {
				pt[a] = base[r-1-a][c.idx[r-1-a]]
			}
			for row := 0; row < r; row++ {
				s := 0.0
				for k := 0; k <= r; k++ {
					s += m[row*(r+1)+k] * pt[k]
				}
				vals[at] = s
				at++
			}
		}
	}
	out, err := newFromFloat64(ctx, theta.DType, outShape, vals)
	if err != nil {
		return nil, err
	}
	return ctx.Outputs(out), nil
}
